package terminal

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/core/event"
	"github.com/harnessd/harnessd/core/terminal/clean"
)

// Options configures a Terminal. The zero value of every field means its
// default.
type Options struct {
	Shell string   // bash binary; default "bash" from PATH
	Dir   string   // initial working directory; default the daemon's
	Env   []string // extra KEY=VALUE pairs, applied over the defaults

	SoftTimeout time.Duration // no new output for this long returns control; default 10s
	HardTimeout time.Duration // a command running this long is interrupted; default 30m
	KillGrace   time.Duration // SIGINT -> SIGKILL -> rebuild, each step waits this; default 2s
	StartWait   time.Duration // how long bash may take to print its first prompt; default 10s

	// MaxWait bounds one call, whatever the program prints: past it Run
	// returns the output so far with Result.Running set. Default 30s.
	MaxWait time.Duration
	// Settle is the quiet period after which a call that sent input to a
	// running program, or that shows a full-screen program, returns: the
	// program has answered. Default 300ms.
	Settle time.Duration

	Cols, Rows int // window size; default 200x50

	// ControlDir holds the files the shell reads commands from, as the
	// terminal reaches it to write them: a directory, or a
	// /proc/self/fd/N path to one, which New opens once and writes
	// through until Close. Default: a new temporary directory, removed
	// on Close.
	ControlDir string
	// ControlDirInside is where the shell finds that directory: a
	// sandbox may show it at a path of its own (sandbox.ControlPath).
	// Default: ControlDir.
	ControlDirInside string

	// Prepare, if set, adjusts the bash command before it starts (a sandbox
	// driver wraps it here).
	Prepare func(*exec.Cmd) error

	// Started, if set, is called with the started process's pid right
	// after it starts (a sandbox driver joins it to its cgroup and lets it
	// go on here). An error kills the process and fails the start.
	Started func(pid int) error

	// InitWrapped means the started process is not bash but a sandbox init
	// whose one child is bash. The terminal then uses bash's pid for the
	// foreground check, /proc/PID/*, signals and Result.PID, and kills the
	// init (and with it the sandbox's processes) on Close and rebuild.
	InitWrapped bool

	Logger *slog.Logger
}

// The defaults of a call's timing, shared by what runs programs the
// terminal's way (core/python's cells).
const (
	DefaultSoftTimeout = 10 * time.Second
	DefaultHardTimeout = 30 * time.Minute
	DefaultKillGrace   = 2 * time.Second
	DefaultMaxWait     = 30 * time.Second
	DefaultSettle      = 300 * time.Millisecond
)

func (o *Options) setDefaults() {
	if o.Shell == "" {
		o.Shell = "bash"
	}
	if o.SoftTimeout <= 0 {
		o.SoftTimeout = DefaultSoftTimeout
	}
	if o.HardTimeout <= 0 {
		o.HardTimeout = DefaultHardTimeout
	}
	if o.KillGrace <= 0 {
		o.KillGrace = DefaultKillGrace
	}
	if o.StartWait <= 0 {
		o.StartWait = 10 * time.Second
	}
	if o.MaxWait <= 0 {
		o.MaxWait = DefaultMaxWait
	}
	if o.Settle <= 0 {
		o.Settle = DefaultSettle
	}
	if o.Cols <= 0 {
		o.Cols = 200
	}
	if o.Rows <= 0 {
		o.Rows = 50
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// environ is the shell's whole environment: a small fixed base, so nothing
// of the daemon's own environment leaks in, with pagers and editors that can
// never take over the terminal.
func (o *Options) environ() []string {
	home := os.Getenv("HOME")
	if home == "" {
		home = "/root"
	}
	path := os.Getenv("PATH")
	if path == "" {
		path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	}
	base := []string{
		"PATH=" + path,
		"HOME=" + home,
		"LANG=C.UTF-8",
		// A capable terminal, so full-screen programs (top, htop, watch,
		// less, vi) draw their screen, which the display renders; the
		// cleaner removes the colours and cursor motion line programs
		// add. PYTHON_BASIC_REPL keeps python3.13+'s REPL the plain one.
		"TERM=xterm-256color",
		"PYTHON_BASIC_REPL=1",
		"PAGER=cat",
		"GIT_PAGER=cat",
		"MANPAGER=cat",
		"SYSTEMD_PAGER=cat",
		// -d: where terminal.env sets TERM=dumb, less still shows the file
		// and its prompt (q quits) instead of stopping at "terminal is not
		// fully functional, press RETURN".
		"LESS=-FRXd",
		"EDITOR=cat",
		"VISUAL=cat",
		"GIT_EDITOR=cat",
		"GIT_TERMINAL_PROMPT=0",
		"DEBIAN_FRONTEND=noninteractive",
		"PYTHONUNBUFFERED=1",
		"NO_COLOR=1",
		// The prompt is harnessd's; virtualenv's activate leaves it alone.
		"VIRTUAL_ENV_DISABLE_PROMPT=1",
	}
	return mergeEnv(base, o.Env)
}

// mergeEnv applies extra over base; a later KEY replaces an earlier one.
func mergeEnv(base, extra []string) []string {
	idx := make(map[string]int, len(base)+len(extra))
	out := make([]string, 0, len(base)+len(extra))
	for _, kv := range append(base, extra...) {
		k, _, _ := strings.Cut(kv, "=")
		if i, ok := idx[k]; ok {
			out[i] = kv
			continue
		}
		idx[k] = len(out)
		out = append(out, kv)
	}
	return out
}

// RunOption adjusts one call of Run.
type RunOption func(*runConfig)

type runConfig struct {
	soft, maxWait, settle time.Duration
}

// WithSoftTimeout overrides Options.SoftTimeout for one call.
func WithSoftTimeout(d time.Duration) RunOption {
	return func(c *runConfig) {
		if d > 0 {
			c.soft = d
		}
	}
}

// WithMaxWait overrides Options.MaxWait for one call.
func WithMaxWait(d time.Duration) RunOption {
	return func(c *runConfig) {
		if d > 0 {
			c.maxWait = d
		}
	}
}

// WithSettle overrides Options.Settle for one call.
func WithSettle(d time.Duration) RunOption {
	return func(c *runConfig) {
		if d > 0 {
			c.settle = d
		}
	}
}

// Timeout converts a cmd_run's timeout_s to a duration; zero, negative,
// NaN and out-of-range values mean "the default" (0).
func Timeout(s float64) time.Duration {
	if !(s > 0) || s >= math.MaxInt64/float64(time.Second) {
		return 0
	}
	return time.Duration(s * float64(time.Second))
}

// Result is what became of a call.
type Result struct {
	ExitCode int    // the command's exit status; -1 while it is still running
	Cwd      string // the shell's working directory after the command
	PID      int    // the shell's pid (changes only when the shell is rebuilt)
	Running  bool   // the command has not finished (soft timeout, max wait, settle, or refused input)
	TimedOut bool   // the hard timeout interrupted the command
	// Rebuilt means a new shell was started: variables, functions, cwd and
	// background jobs are gone. Where the shell runs in a sandbox, the
	// caller should add what else a rebuild loses (a fresh /tmp).
	Rebuilt bool
	// Screen is set when the program draws a full screen (vi, less, top):
	// the output then ends with this screen's text instead of the raw
	// redraws.
	Screen   *Screen
	Note     string // what happened and what to do next, for a model; empty when nothing needs saying
	Duration time.Duration
}

// Terminal is one persistent bash on a PTY. Run calls are serialised;
// Interrupt, SendKeys, PID and Running may be called at any time, also
// while a Run waits.
type Terminal struct {
	opts    Options
	ctlDir  string
	ownsCtl bool
	ctl     *os.Root // the control directory, where the terminal writes
	files   ctlFiles // as the shell names them

	mu      sync.Mutex // one call at a time: Run, the watcher's interrupt, Close
	sh      *shell
	m       markers
	scan    scanner
	cut     cutter
	disp    display
	cleaner *clean.Writer
	sink    swapWriter
	lastSeq uint64     // the last chunk of sh consumed
	last    promptMeta // the last prompt that counted
	// idleReads is bash's read count (syscr) when a call last left it at
	// its prompt: a marker that comes while no command runs counts only
	// if bash has read a line since.
	idleReads uint64
	// doneReads is the read count of the look that last found bash back
	// at its prompt (doneOK): bash has read nothing since, so result takes
	// it as idleReads without reading /proc again.
	doneReads uint64
	doneOK    bool
	busy      bool      // a command was started and not seen to finish
	cs        cmdState  // the running command's state
	started   time.Time // when the running command started
	limit     time.Duration
	carry     *carried // what happened while no call was waiting
	stdout    bool     // bash's stdout was seen away from the terminal (noted once)
	// restricted is set once the shell was seen restricted (set -r, which
	// cannot be undone): commands in files are handed over with eval.
	restricted bool
	wd         int32 // the control directory's watch in opens; -1 none
	closed     bool

	// Read without mu.
	pid       atomic.Int64
	live      atomic.Pointer[shell]
	running   atomic.Bool
	appCursor atomic.Bool  // the program asked for application cursor keys
	deadline  atomic.Int64 // unix nanoseconds of the running command's hard deadline; 0 none
	armed     atomic.Int64 // the deadline the watcher's timer is set for; 0 none

	// cwd is the shell's $PWD at the last prompt a call saw (Cwd).
	cwd atomic.Pointer[string]

	// quit is cancelled (with ErrClosed) when Close begins, before it
	// waits for mu: a Run in progress stops waiting at once, so Close
	// never waits for a command to finish.
	quit    context.Context
	quitNow context.CancelCauseFunc
	kick    chan struct{} // wakes the watcher when the deadline changes
	wg      sync.WaitGroup
}

// ctlFiles are the files in the control directory that bash sources, by
// their paths inside the shell's sandbox.
type ctlFiles struct {
	rc     string // the prompt protocol; --rcfile, and sourced again after exec bash
	cmd    string // the command text
	status string // "return N": restores $? where harnessd ran something first
}

// The control files' names.
const (
	rcName     = "rc"
	cmdName    = "command"
	statusName = "status"
)

// cmdState is what the terminal knows about the running command.
type cmdState struct {
	base   int    // \# of the prompt before the command was typed
	syscr0 uint64 // bash's read count just before it was typed
	got    *promptMeta
	top    promptMeta // the prompt marker with the highest \#
	cont   bool       // bash showed PS2
	bad    bool       // a marker with our nonce did not parse (PS1 not expanded)
	marked bool       // a new marker arrived since the last check
	cont2  bool       // SIGCONT was sent already
	direct string     // the command, when it was typed as it is
	file   string     // the command, when it was handed over in a file
	gated  bool       // file: bash has not been seen to open it yet; output goes to stray
	stray  bytes.Buffer
	tries  int  // file: how often it was handed over again after bash did not read it
	seen   bool // a prompt marker arrived after the line was typed
	napped bool // doneSoon waited for bash to reach its read once already
}

// fresh is the prompt that ends the command: the last marker with the
// command's own number, else the last one that arrived after the line was
// typed (a line bash could not parse does not count as a command).
func (c *cmdState) fresh() *promptMeta {
	if c.got != nil {
		return c.got
	}
	if c.seen {
		return &c.top
	}
	return nil
}

// carried is the end of a command that came while no call was waiting.
type carried struct {
	res Result
	out bytes.Buffer // the tail of its output
	cut int          // bytes of output dropped from the front
}

const maxCarry = 64 << 10

func (c *carried) Write(p []byte) (int, error) {
	c.out.Write(p)
	if over := c.out.Len() - maxCarry; over > 0 {
		c.cut += over
		rest := append([]byte(nil), c.out.Bytes()[over:]...)
		c.out.Reset()
		c.out.Write(rest)
	}
	return len(p), nil
}

// New starts a terminal and waits for its first prompt.
func New(ctx context.Context, opts Options) (*Terminal, error) {
	opts.setDefaults()
	t := &Terminal{opts: opts, ctlDir: opts.ControlDir, kick: make(chan struct{}, 1)}
	t.quit, t.quitNow = context.WithCancelCause(context.Background())
	if t.ctlDir == "" {
		d, err := os.MkdirTemp("", "harnessd-term-")
		if err != nil {
			return nil, fmt.Errorf("control dir: %w", err)
		}
		t.ctlDir, t.ownsCtl = d, true
	} else if err := os.MkdirAll(t.ctlDir, 0o700); err != nil {
		return nil, fmt.Errorf("control dir: %w", err)
	}
	// Written through a descriptor of the terminal's own: a
	// /proc/self/fd/N path a sandbox hands out names another directory
	// once its N is closed and reused, and a write after Close fails
	// rather than land there.
	var err error
	if t.ctl, err = os.OpenRoot(t.ctlDir); err != nil {
		t.removeCtl()
		return nil, fmt.Errorf("control dir: %w", err)
	}
	inside := opts.ControlDirInside
	if inside == "" {
		inside = t.ctlDir
	}
	t.files = ctlFiles{
		rc:     filepath.Join(inside, rcName),
		cmd:    filepath.Join(inside, cmdName),
		status: filepath.Join(inside, statusName),
	}
	if t.wd, err = opens.watch(t.ctlDir, cmdName); err != nil {
		opts.Logger.Warn("terminal: a command handed over in a file is taken as read", "err", err)
	}
	t.cleaner = clean.NewWriter(&t.sink)
	t.disp = display{lines: t.cleaner, sink: &t.sink, cols: opts.Cols, rows: opts.Rows, reply: t.reply, app: &t.appCursor}
	t.cut = cutter{needle: []byte(t.files.cmd + ": "), out: &t.disp}
	t.scan.out = gateWriter{t}
	t.sink.w = io.Discard
	if err := t.start(ctx); err != nil {
		t.closeIno()
		t.removeCtl()
		return nil, err
	}
	t.wg.Add(1)
	go t.watch()
	return t, nil
}

func (t *Terminal) closeIno() {
	if t.wd >= 0 {
		opens.unwatch(t.wd)
		t.wd = -1
	}
}

func (t *Terminal) removeCtl() {
	if t.ctl != nil {
		t.ctl.Close()
	}
	if t.ownsCtl {
		os.RemoveAll(t.ctlDir)
	}
}

// rcText is bash's --rcfile: the prompt protocol and a predictable,
// non-interactive environment. It defines no variables and no functions of
// harnessd's: the prompt strings carry everything.
func (t *Terminal) rcText() string {
	return strings.Join([]string{
		"set +o history +o histexpand +o vi +o emacs -m",
		"unset HISTFILE MAILCHECK PROMPT_COMMAND",
		"HISTCONTROL=ignorespace",
		"shopt -s expand_aliases checkwinsize promptvars",
		"PS0=",
		"PS1=" + shellQuote(t.m.ps1()),
		"PS2=" + shellQuote(t.m.ps2()),
		"",
	}, "\n")
}

// start launches a new shell with a new nonce and waits for its first
// prompt, where it learns what bash looks like waiting for a line.
func (t *Terminal) start(ctx context.Context) error {
	nonce, err := newNonce()
	if err != nil {
		return err
	}
	t.m = newMarkers(nonce)
	t.scan.m = t.m
	t.scan.reset()
	t.cut.reset()
	t.disp.reset()
	t.cleaner.Reset(&t.sink)
	if err := t.writeCtl(rcName, []byte(t.rcText())); err != nil {
		return fmt.Errorf("write shell rc: %w", err)
	}
	sh, err := startShell(&t.opts, t.files.rc)
	if err != nil {
		return err
	}
	t.sh, t.lastSeq = sh, 0
	t.live.Store(nil) // published once its pid is known for sure
	t.commandOver()
	t.last = promptMeta{}
	t.restricted = false
	out := t.sink.w
	t.sink.w = io.Discard
	defer func() { t.sink.w = out }()
	t.cs = cmdState{base: 0}
	fail := func(err error) error {
		sh.close(t.opts.KillGrace)
		t.live.Store(nil)
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, t.opts.StartWait)
	defer cancel()
	poll := time.NewTimer(time.Millisecond)
	defer poll.Stop()
	var prompted time.Time
	for {
		select {
		case c := <-sh.chunks:
			if err := t.consume(c); err != nil {
				return fail(err)
			}
		case <-poll.C:
			if f := t.cs.fresh(); f != nil {
				if prompted.IsZero() {
					prompted = time.Now()
				}
				v := sh.look()
				if !v.fg {
					// A wrapper (bwrap, a sandbox init not declared
					// InitWrapped) stands between us and bash: bash is
					// the job in the foreground, in the same session.
					if pg, err := sh.foreground(); err == nil && pg > 0 && pg != sh.pid && sameSession(pg, sh.leader) {
						sh.pid = pg
						v = sh.look()
					}
				}
				learned := v.fg && (sh.learn(v) || !v.ok)
				if !learned && time.Since(prompted) > 500*time.Millisecond {
					// bash cannot be watched (no job control, no /proc):
					// fall back to trusting its prompt.
					sh.markerOnly, learned = true, true
					t.opts.Logger.Warn("terminal: bash's state cannot be read; trusting its prompt alone", "pid", sh.pid)
				}
				if learned {
					t.last = *f
					t.idleReads = v.syscr
					if f.Cwd != "" {
						cwd := f.Cwd
						t.cwd.Store(&cwd)
					}
					t.flushOutput()
					t.cleaner.Reset(&t.sink)
					sh.nofile = sh.nofileLimit()
					t.live.Store(sh)
					t.pid.Store(int64(sh.pid))
					return nil
				}
			}
			poll.Reset(2 * time.Millisecond)
		case <-sh.exited:
			return fail(fmt.Errorf("%w: exited before its first prompt (status %d)", ErrShellStart, sh.exitStatus()))
		case <-ctx.Done():
			return fail(fmt.Errorf("%w: no prompt within %s: %w", ErrShellStart, t.opts.StartWait, ctx.Err()))
		}
	}
}

func newNonce() (string, error) {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("nonce: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// Cwd is the shell's working directory at the last prompt a call saw
// (the first prompt, or the end of the last command); "" before any. A
// command still running may have changed it since. It never waits for a
// running command.
func (t *Terminal) Cwd() string {
	if p := t.cwd.Load(); p != nil {
		return *p
	}
	return ""
}

// PID is the current shell's pid. It never waits for a running command.
func (t *Terminal) PID() int { return int(t.pid.Load()) }

// Running reports whether a command was started and has not been seen to
// finish. It never waits for a running command.
func (t *Terminal) Running() bool { return t.running.Load() }

// Interrupt sends SIGINT to the terminal's foreground process group now,
// whether or not a Run is waiting: the command (or the shell's builtin
// loop) is interrupted as by C-c, and the Run that waits for it, or the
// next one, reports how it ended. It returns ErrNotRunning when bash is
// at its prompt, where SIGINT would only disturb it.
func (t *Terminal) Interrupt(ctx context.Context) error {
	sh := t.live.Load()
	if sh == nil || !t.running.Load() {
		return ErrNotRunning
	}
	if v := sh.look(); sh.prompt().procOK && sh.atPrompt(v) {
		return ErrNotRunning
	}
	if err := sh.interrupt(); err != nil {
		return fmt.Errorf("interrupt: %w", err)
	}
	return nil
}

// SendKeys types keys (the syntax of is_input, see the package doc) into
// the running program now, whether or not a Run is waiting; the output
// is read by the Run that waits, or by the next one. It returns
// ErrNotRunning when bash is at its prompt: keys meant for a program must
// never become a command line.
func (t *Terminal) SendKeys(ctx context.Context, keys string) error {
	sh := t.live.Load()
	if sh == nil || !t.running.Load() {
		return ErrNotRunning
	}
	if v := sh.look(); sh.prompt().procOK && sh.atPrompt(v) {
		return ErrNotRunning
	}
	// Keys are sent as written: Enter only where they say so.
	in := parseInput(keys, t.appCursor.Load())
	var err error
	if string(in.bytes) == "\x03" && sh.isig() {
		err = sh.interrupt()
	} else {
		err = sh.write(in.bytes)
	}
	if err != nil {
		return fmt.Errorf("send keys: %w", err)
	}
	return nil
}

// Close kills the shell and everything it started and removes the control
// directory if the terminal made it. Safe to call more than once.
func (t *Terminal) Close() error {
	t.quitNow(ErrClosed) // a Run in progress returns, and lets go of mu
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	if t.sh != nil {
		t.sh.close(t.opts.KillGrace)
	}
	t.live.Store(nil)
	t.running.Store(false)
	t.disp.close()
	t.closeIno()
	t.removeCtl()
	t.mu.Unlock()
	t.wg.Wait()
	return nil
}

// Run carries out c and streams the command's cleaned output to w as it
// arrives: each line is written when the terminal delivers it, a partial
// line (a prompt, a progress bar) when it ends or when Run returns. Run
// returns when the command finishes, when the soft timeout passes with no
// new output, after Options.MaxWait in any case (Result.Running), or after
// the hard timeout has interrupted it. An error means the terminal itself
// failed (ctx ended, or no shell could be started); a command's failure is
// only its exit code.
//
// c.TimeoutS is the command's hard timeout in seconds (0 or invalid: the
// default). Close while Run waits makes Run return at once with ErrClosed
// (and the output so far); Close then kills the command with the shell.
func (t *Terminal) Run(ctx context.Context, c event.CmdRun, w io.Writer, opts ...RunOption) (Result, error) {
	cfg := runConfig{soft: t.opts.SoftTimeout, maxWait: t.opts.MaxWait, settle: t.opts.Settle}
	for _, o := range opts {
		o(&cfg)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return Result{}, ErrClosed
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(t.quit, func() { cancel(ErrClosed) })
	defer stop()
	res, err := t.run(ctx, c, w, cfg)
	if err != nil && errors.Is(context.Cause(ctx), ErrClosed) {
		err = ErrClosed
	}
	return res, err
}

// call is one Run in progress.
type call struct {
	begin   time.Time
	cfg     runConfig
	input   bool // the call sent input: it returns once output settles
	rebuilt bool
	// refused: the call's command was not run, since the previous one
	// still ran; what the call returns is that one's (see result).
	refused bool
	notes   []string
}

func (k *call) note(format string, a ...any) {
	k.notes = append(k.notes, fmt.Sprintf(format, a...))
}

func (t *Terminal) run(ctx context.Context, c event.CmdRun, w io.Writer, cfg runConfig) (Result, error) {
	k := &call{begin: time.Now(), cfg: cfg}
	t.sink.w, t.sink.n = w, 0
	defer func() { t.sink.w = io.Discard }()

	if c.Reset || !t.sh.alive() {
		why := "reset requested"
		if !c.Reset {
			why = fmt.Sprintf("the shell had exited (status %d)", t.sh.exitStatus())
		}
		t.carry = nil
		if err := t.rebuild(ctx); err != nil {
			return Result{ExitCode: -1}, err
		}
		k.rebuilt = true
		k.note("%s: %s", why, rebuiltNote(t.sh.pid))
		if c.Command == "" || c.IsInput {
			return t.result(0, k, false), nil
		}
	}
	if cr := t.carry; cr != nil {
		t.carry = nil
		if c.Command == "" && !c.IsInput {
			// The read that was due: it gets what came while nobody waited.
			if _, err := w.Write(cr.out.Bytes()); err != nil {
				return Result{ExitCode: -1}, fmt.Errorf("write output: %w", err)
			}
			if cr.cut > 0 {
				k.note("(%d earlier bytes of output were dropped while no call was waiting.)", cr.cut)
			}
			r := cr.res
			r.Note = strings.Join(append([]string{r.Note}, k.notes...), " ")
			r.Duration = time.Since(k.begin)
			r.PID = t.sh.pid
			r.Rebuilt = r.Rebuilt || k.rebuilt
			return r, nil
		}
		k.note("Before this: %s%s", cr.res.Note, tailNote(cr))
	}

	cmd := strings.ReplaceAll(c.Command, "\x00", "")
	switch {
	case c.IsInput:
		if !t.busy {
			if err := t.drainIdle(k); err != nil {
				return Result{ExitCode: -1}, err
			}
			k.note("no command is running, so the input was not sent; run it as a command instead (is_input=false).")
			return t.result(t.last.ExitCode, k, false), nil
		}
		if err := t.sync(); err != nil {
			return Result{ExitCode: -1}, err
		}
		if t.isDone(t.sh.look()) {
			res, err := t.complete(ctx, k)
			if err == nil {
				res.Note = strings.TrimSpace(res.Note + " The input was not sent: the command had already finished.")
			}
			return res, err
		}
		in := parseInput(cmd, t.appCursor.Load())
		b := in.bytes
		if !in.hasKey && !in.endsLine && t.disp.mode == lineMode {
			b = append(b, '\r')
		}
		var err error
		if string(b) == "\x03" && t.sh.isig() {
			err = t.sh.interrupt() // what the terminal would do, without its race
		} else {
			err = t.sh.write(b)
		}
		if err != nil {
			return Result{ExitCode: -1}, fmt.Errorf("send input: %w", err)
		}
		k.input = true
	case cmd == "":
		if !t.busy {
			if err := t.drainIdle(k); err != nil {
				return Result{ExitCode: -1}, err
			}
			if t.sink.n > 0 {
				k.note("no command is running; the output above came from background jobs since the last command.")
			} else {
				k.note("no command is running and there is no new output.")
			}
			return t.result(t.last.ExitCode, k, false), nil
		}
	default:
		if t.busy {
			done, err := t.finishedMeanwhile(ctx, k)
			if err != nil {
				return Result{ExitCode: -1}, err
			}
			if !done {
				k.refused = true
				return t.wait(ctx, k)
			}
		}
		if err := t.prepare(ctx, k); err != nil {
			return Result{ExitCode: -1}, err
		}
		limit := Timeout(c.TimeoutS)
		if limit <= 0 {
			limit = t.opts.HardTimeout
		}
		if err := t.send(cmd, limit); err != nil {
			return Result{ExitCode: -1}, err
		}
	}
	return t.wait(ctx, k)
}

// finishedMeanwhile checks, when a command was running at the last look,
// whether it has ended since. If so its unread output and its end go to a
// note (they belong to it, not to this call's command) and done is true;
// if not, what was read is this call's output.
func (t *Terminal) finishedMeanwhile(ctx context.Context, k *call) (bool, error) {
	held := &carried{}
	out := t.sink.w
	t.sink.w = held
	defer func() { t.sink.w = out }()
	if err := t.sync(); err != nil {
		return false, err
	}
	if !t.isDone(t.sh.look()) {
		if _, err := out.Write(held.out.Bytes()); err != nil {
			return false, fmt.Errorf("write output: %w", err)
		}
		return false, nil
	}
	res, err := t.complete(ctx, &call{begin: k.begin, cfg: k.cfg})
	if err != nil {
		return true, err
	}
	if res.Running {
		// bash had not read it, and it was handed over again (notSourced):
		// it runs now.
		if _, err := out.Write(held.out.Bytes()); err != nil {
			return false, fmt.Errorf("write output: %w", err)
		}
		return false, nil
	}
	msg := fmt.Sprintf("The previous command finished after the last look, with exit code %d.", res.ExitCode)
	if res.Note != "" {
		msg += " " + res.Note
	}
	k.note("%s%s", msg, tailNote(held))
	k.rebuilt = k.rebuilt || res.Rebuilt
	return true, nil
}

// tailNote quotes the end of output that no observation showed.
func tailNote(c *carried) string {
	b := bytes.TrimRight(c.out.Bytes(), "\n")
	if len(b) == 0 {
		return ""
	}
	const max = 2000
	cut := c.cut
	if len(b) > max {
		cut += len(b) - max
		b = b[len(b)-max:]
	}
	s := " Its output that no observation showed"
	if cut > 0 {
		s += fmt.Sprintf(" (the last %d bytes)", len(b))
	}
	return s + ":\n" + string(b)
}

// send hands the command to bash. A short single line is typed as it is,
// as a person would: xtrace, DEBUG traps, history and error messages see
// the command itself, and $? is the last command's. Anything else (several
// lines, long, control characters, which the terminal's line discipline
// would cut or act on) goes through a file the shell sources, typed as one
// short line; sourcing also keeps $?, and defines nothing.
func (t *Terminal) send(cmd string, limit time.Duration) error {
	var err error
	if line, ok := typeable(cmd); ok {
		err = t.typeLine(line + "\n")
		t.cs.direct = cmd
	} else {
		err = t.sendFile(cmd)
	}
	if err != nil {
		return err
	}
	t.busy = true
	t.running.Store(true)
	t.started = time.Now()
	t.limit = limit
	d := t.started.Add(limit).UnixNano()
	t.deadline.Store(d)
	// A watcher armed for this deadline or an earlier one finds this one
	// when its timer fires and arms again: it is woken (a goroutine
	// switch, a visible part of a short command's round trip) only to
	// fire sooner. See watch for why this read cannot miss it.
	if a := t.armed.Load(); a == 0 || a > d {
		select {
		case t.kick <- struct{}{}:
		default:
		}
	}
	return nil
}

// maxTyped is the longest command typed as it is; the terminal's canonical
// mode cuts lines at 4095 bytes.
const maxTyped = 1024

// commandOver records that no command runs any more: nothing to wait
// for, interrupt or time out.
func (t *Terminal) commandOver() {
	t.busy = false
	t.running.Store(false)
	t.deadline.Store(0)
}

// typeable reports whether cmd can be typed as one line, and the line.
func typeable(cmd string) (string, bool) {
	line := strings.TrimRight(cmd, "\n")
	if line == "" || len(line) > maxTyped {
		return "", false
	}
	for i := 0; i < len(line); i++ {
		if c := line[i]; c < 0x20 && c != '\t' || c == 0x7f {
			return "", false
		}
	}
	return line, true
}

// source is how harnessd's typed lines source its files: the backslash
// keeps an alias named builtin from expanding, and builtin skips a
// function named . or source (a command's own, which it keeps).
const source = `\builtin . `

// sendFile writes the command to the control file and types the line that
// sources it. With xtrace on, the line turns it off quietly first and the
// file turns it back on, so the trace shows only the command itself. In a
// restricted shell (set -r), where . takes no path with a slash, the line
// evals the file's text instead, and puts $? back itself: eval sees the
// command substitution's.
//
// Whether bash read the file is the kernel's word (an open of it, seen by
// inotify), not the output's: until then what arrives is held back (see
// gate), and a command that was never read is handed over again or
// reported as not run (notSourced).
func (t *Terminal) sendFile(cmd string) error {
	text := cmd
	src := source + shellQuote(t.files.cmd)
	restore := source + shellQuote(t.files.status)
	if t.restricted {
		src = `\builtin eval "$(< ` + shellQuote(t.files.cmd) + `)"`
		restore = fmt.Sprintf("(exit %d)", t.last.ExitCode)
		if t.last.ExitCode != 0 {
			text = restore + "; " + cmd
		}
	}
	line := " " + src + "\n"
	if t.last.opt("xtrace") {
		if err := t.writeCtl(statusName, fmt.Appendf(nil, "return %d\n", t.last.ExitCode)); err != nil {
			return fmt.Errorf("write command: %w", err)
		}
		text = "{ set -x; " + restore + "; } 2>/dev/null; " + cmd
		line = " { set +x; } 2>/dev/null; " + src + "\n"
	}
	if err := t.writeCtl(cmdName, []byte(text)); err != nil {
		return fmt.Errorf("write command: %w", err)
	}
	t.drainOpens() // harnessd's own open, just now
	if err := t.typeLine(line); err != nil {
		return err
	}
	t.cs.file, t.cs.gated = cmd, t.wd >= 0
	return nil
}

// drainOpens reports whether bash opened the command file since the last
// call (true when that cannot be watched).
func (t *Terminal) drainOpens() bool {
	return t.wd < 0 || opens.take(t.wd)
}

// gateWriter is the scanner's output: the display, or, while a command
// handed over in a file has not been read by bash, the command state's
// stray buffer. bash opens the file before it runs any of it, so bytes
// that were in the terminal before the open came from something else: a
// function named builtin, or bash's error that it could not source.
type gateWriter struct{ t *Terminal }

func (g gateWriter) Write(p []byte) (int, error) {
	cs := &g.t.cs
	if cs.gated && cs.stray.Len()+len(p) <= maxStray {
		return cs.stray.Write(p)
	}
	// So much before any open is output after all (a program bash ran
	// some other way); holding more would be memory without bound.
	if err := g.t.gate(true); err != nil {
		return 0, err
	}
	return g.t.cut.Write(p)
}

// maxStray bounds what is held back before bash opens the command file.
const maxStray = 1 << 20

// gate opens the gate once bash has opened the command file (or when
// force says so), and passes on what was held: bytes read from the
// terminal before the open was seen may hold the command's first output.
func (t *Terminal) gate(force bool) error {
	if !t.cs.gated || !force && !t.drainOpens() {
		return nil
	}
	t.cs.gated = false
	if t.cs.stray.Len() == 0 {
		return nil
	}
	_, err := t.cut.Write(t.cs.stray.Bytes())
	t.cs.stray.Reset()
	return err
}

// typeLine starts a new command state and types line into bash, which is
// at its prompt.
func (t *Terminal) typeLine(line string) error {
	syscr0, _ := t.sh.reads()
	t.cs = cmdState{base: t.last.N, syscr0: syscr0}
	t.disp.reset()
	t.sh.flushInput()
	if err := t.sh.write([]byte(line)); err != nil {
		return fmt.Errorf("type command: %w", err)
	}
	return nil
}

// consume feeds one chunk from the reader through the scanner.
func (t *Terminal) consume(c chunk) error {
	t.lastSeq = c.seq
	err := t.feed(c.b)
	t.sh.release(c.b)
	return err
}

// feed scans bytes for markers and passes the rest on to the output.
func (t *Terminal) feed(b []byte) error {
	if err := t.gate(false); err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	for {
		ev, meta, rest, err := t.scan.feed(b)
		if err != nil {
			return fmt.Errorf("write output: %w", err)
		}
		switch ev {
		case scanNone:
			return nil
		case scanPrompt:
			t.cs.marked = true
			if meta.N >= t.cs.base {
				if meta.N == t.cs.base+1 {
					m := meta
					t.cs.got = &m
				}
				t.cs.top, t.cs.seen = meta, true
			}
		case scanPS2:
			t.cs.cont, t.cs.marked = true, true
		case scanBad:
			t.cs.bad, t.cs.marked = true, true
		}
		b = rest
	}
}

// sync reads everything the PTY holds now through feed. Every byte bash
// wrote before sync was called has been consumed when it returns: a
// non-blocking read that finds the master empty (after the kernel has
// pushed its pending buffers, which read does) ends it, and chunks the
// reader took before that are drained from the queue in order.
func (t *Terminal) sync() error {
	sh := t.sh
	rc, err := sh.master.SyscallConn()
	if err != nil {
		return nil
	}
	bp := sh.pool.Get().(*[]byte)
	defer sh.pool.Put(bp)
	for {
		var n int
		var seq uint64
		var rerr error
		if err := rc.Control(func(fd uintptr) { n, seq, rerr = sh.readOnce(int(fd), *bp) }); err != nil {
			return nil // closed
		}
		want := seq
		if n > 0 {
			want = seq - 1
		}
		for t.lastSeq < want {
			c, ok := <-sh.chunks
			if !ok {
				return nil
			}
			if err := t.consume(c); err != nil {
				return err
			}
		}
		if n == 0 {
			return nil
		}
		t.lastSeq = seq
		if err := t.feed((*bp)[:n]); err != nil {
			return err
		}
		if rerr != nil && rerr != syscall.EINTR {
			return nil // the read that ended it found the master empty (or closed)
		}
	}
}

// drainIdle reads what came while bash sat at its prompt (background jobs'
// output) into this call's output, and follows prompts bash showed for
// lines it got from elsewhere (injected input).
func (t *Terminal) drainIdle(k *call) error {
	t.cs = cmdState{base: t.last.N}
	if err := t.sync(); err != nil {
		return err
	}
	if f := t.cs.top; t.cs.seen {
		// bash shows a prompt only after it read a line, and each line
		// takes at least one read: a marker that came with no new read
		// (or more new command numbers than reads) was printed by
		// something else, a background job that rendered ${PS1@P}.
		// (With no marker, bash's reads are not looked at: the baseline
		// stays where the last command left it.)
		v := t.sh.lookReads()
		reads := v.syscr - t.idleReads
		ignore := v.ok && (v.syscr <= t.idleReads || uint64(f.N-t.last.N) > reads)
		if v.ok {
			t.idleReads = v.syscr
		}
		switch {
		case ignore:
			t.opts.Logger.Debug("terminal: ignored a prompt marker bash did not print", "n", f.N, "last", t.last.N, "reads", reads)
		default:
			if f.N > t.last.N {
				k.note("bash ran %d command line(s) that did not come from harnessd (input injected into the terminal, e.g. with TIOCSTI); their output is above.", f.N-t.last.N)
			}
			t.last = f
		}
	}
	t.flushOutput()
	return nil
}

// flushOutput ends the current line output.
func (t *Terminal) flushOutput() {
	_ = t.scan.flushPartial()
	_ = t.cut.flush()
	_ = t.cleaner.Flush()
}

// prepare gets the shell ready for a command: what came since the last
// prompt is read, the terminal's settings and input are put right, and
// what the last command did to the shell that would hide its next prompt
// or garble the command line is repaired, each with a note.
func (t *Terminal) prepare(ctx context.Context, k *call) error {
	if err := t.drainIdle(k); err != nil {
		return err
	}
	sh := t.sh
	if !sh.fdOnTTY(0) {
		// bash reads its command lines from fd 0: whatever harnessd types
		// would wait unread, and a line that came from there later would
		// read as the command's result. Nothing typed can reach bash to
		// repair it.
		old := sh.pid
		if err := t.rebuild(ctx); err != nil {
			return err
		}
		k.rebuilt = true
		k.note("bash's stdin no longer came from the terminal (exec 0<…, exec <file), so bash (pid %d) read its command lines from there and could not be handed this command: %s Redirect one command's stdin instead (cmd <file).", old, rebuiltNote(t.sh.pid))
		sh = t.sh
	}
	// A stopped bash is continued by the wait that follows, with a note.
	if changed, err := fixTermios(sh.tfd); err == nil && changed {
		k.note("the terminal's settings had been changed (stty or reset); harnessd put back its own (no echo, line mode, signals).")
	}
	if sh.nofile > 0 {
		if cur := sh.nofileLimit(); cur < 16 && cur < sh.nofile {
			if err := t.raiseNofile(ctx, k, cur); err != nil {
				return err
			}
			sh = t.sh // it may have been rebuilt
		}
	}
	var fixes, what []string
	if t.last.editing() {
		fixes = append(fixes, "set +o vi +o emacs")
		what = append(what, "line editing (set -o vi/emacs) was turned off again: harnessd hands bash its commands as plain lines")
	}
	if t.last.N > 0 && !t.last.opt("monitor") {
		fixes = append(fixes, "set -m")
		what = append(what, "job control (set -m) was turned back on: harnessd finds and interrupts commands by their process group")
	}
	if t.last.N > 0 && t.last.PS1Len != len(t.m.ps1()) {
		fixes = append(fixes, "PS1="+shellQuote(t.m.ps1()), "PS2="+shellQuote(t.m.ps2()))
		what = append(what, "the prompt (PS1) had been changed; harnessd put its own back")
	}
	if len(fixes) > 0 {
		if err := t.repair(ctx, k, fixes, strings.Join(what, "; ")); err != nil {
			return err
		}
		sh = t.sh // a repair that failed rebuilt the shell
	}
	if !sh.fdOnTTY(1) {
		if !t.stdout {
			k.note("bash's stdout does not go to the terminal (exec >…), so output written to stdout is not seen; `exec >/dev/tty` puts it back.")
		}
		t.stdout = true
	} else {
		t.stdout = false
	}
	return nil
}

// raiseNofile puts bash's open-files limit back where it was: harnessd
// hands commands over in a file, and bash could not open it.
func (t *Terminal) raiseNofile(ctx context.Context, k *call, cur uint64) error {
	want := t.sh.nofile
	line := fmt.Sprintf(" ulimit -S -n %d || ulimit -n %d\n", want, want)
	if _, ok, err := t.typeAndWait(ctx, line); err != nil {
		return err
	} else if ok && t.sh.nofileLimit() >= 16 {
		k.note("the open-files limit was %d (ulimit -n), too low for bash to open the file harnessd hands each command over in; it was raised back to %d.", cur, t.sh.nofileLimit())
		return t.restoreStatus(ctx)
	}
	old := t.sh.pid
	if err := t.rebuild(ctx); err != nil {
		return err
	}
	k.rebuilt = true
	k.note("the open-files limit was %d (ulimit -n) and could not be raised, so bash (pid %d) could not open the commands harnessd hands it: %s", cur, old, rebuiltNote(t.sh.pid))
	return nil
}

// restoreStatus makes $? what the last command left, after harnessd ran
// something of its own at the prompt.
func (t *Terminal) restoreStatus(ctx context.Context) error {
	want := t.last.ExitCode
	if err := t.writeCtl(statusName, fmt.Appendf(nil, "return %d\n", want)); err != nil {
		return err
	}
	line := " " + source + shellQuote(t.files.status) + "\n"
	if t.restricted {
		line = fmt.Sprintf(" (exit %d)\n", want) // . takes no path with a slash
	}
	_, _, err := t.typeAndWait(ctx, line)
	t.last.ExitCode = want
	return err
}

// repair types fixes at the prompt (typed, not sourced: a file sourced
// while readline is on leaves bash half in line editing), then puts $?
// back. If bash does not come back to a prompt harnessd can see, the shell
// is rebuilt.
func (t *Terminal) repair(ctx context.Context, k *call, fixes []string, what string) error {
	_, ok, err := t.typeAndWait(ctx, " "+strings.Join(fixes, "; ")+"\n")
	if err != nil {
		return err
	}
	if ok {
		k.note("%s.", what)
		return t.restoreStatus(ctx)
	}
	old := t.sh.pid
	if err := t.rebuild(ctx); err != nil {
		return err
	}
	k.rebuilt = true
	k.note("%s, but bash (pid %d) did not come back to a prompt harnessd could see: %s", what, old, rebuiltNote(t.sh.pid))
	return nil
}

// typeAndWait types a line of harnessd's own at the prompt and waits for
// the prompt after it, discarding its output. ok is false if bash did not
// come back to a prompt that harnessd can see within the kill grace.
func (t *Terminal) typeAndWait(ctx context.Context, line string) (*promptMeta, bool, error) {
	out := t.sink.w
	t.flushOutput()
	t.sink.w = io.Discard
	defer func() {
		t.flushOutput()
		t.cleaner.Reset(&t.sink)
		t.sink.w = out
	}()
	if err := t.typeLine(line); err != nil {
		return nil, false, err
	}
	end := time.NewTimer(max(t.opts.KillGrace, 2*time.Second))
	defer end.Stop()
	poll := time.NewTimer(time.Millisecond)
	defer poll.Stop()
	delay := time.Millisecond
	stopped := false
	for {
		select {
		case c, ok := <-t.sh.chunks:
			if !ok {
				return nil, false, ErrClosed
			}
			if err := t.consume(c); err != nil {
				return nil, false, err
			}
			if t.cs.marked {
				t.cs.marked = false
				delay = 50 * time.Microsecond
				poll.Reset(delay)
			}
		case <-poll.C:
			v := t.sh.look()
			if v.state == 'T' && v.fg && !stopped {
				// bash stopped itself before it read harnessd's line
				// (kill -STOP $$ from a job): continue it, as wait does.
				stopped = true
				_ = syscall.Kill(t.sh.pid, syscall.SIGCONT)
			}
			if t.isDone(v) {
				if err := t.sync(); err != nil {
					return nil, false, err
				}
				f := t.cs.fresh()
				if f == nil {
					return nil, false, nil
				}
				t.last = *f
				return f, true, nil
			}
			delay = min(2*delay, 50*time.Millisecond)
			poll.Reset(delay)
		case <-t.sh.exited:
			return nil, false, nil
		case <-end.C:
			return nil, false, nil
		case <-ctx.Done():
			return nil, false, ctx.Err()
		}
	}
}

// isDone reports whether v shows the running line over: bash back at its
// prompt, by the kernel's account. A prompt marker alone never decides
// it; it counts only with readline on (set -o vi), where bash waits in
// select rather than its own reader, or where /proc cannot be read.
func (t *Terminal) isDone(v procView) bool {
	sh := t.sh
	if sh.markerOnly {
		return t.cs.fresh() != nil
	}
	if !v.ok || !sh.prompt().procOK {
		return t.cs.fresh() != nil && v.fg
	}
	if v.syscr <= t.cs.syscr0 || !v.fg || v.state == 'T' {
		return false
	}
	done := sh.atPrompt(v)
	if !done {
		f := t.cs.fresh()
		done = f != nil && f.editing() && sh.waitingInput(v) && v.startcode == sh.prompt().image ||
			sh.otherPrompt(v) && sh.interactiveBash()
	}
	if done {
		t.doneReads, t.doneOK = v.syscr, true
	}
	return done
}

// promptWait bounds how long doneSoon keeps looking while bash runs on
// after a prompt marker, once per command, and promptNap is its pause
// between looks.
const (
	promptWait = 500 * time.Microsecond
	promptNap  = 20 * time.Microsecond
)

// doneSoon is isDone after a prompt marker arrived. bash prints its prompt
// a moment before it reads, a moment that grows when bash waits for a CPU:
// while a look finds bash in the foreground and running (in no syscall, so
// on its way to its read), it looks again after a nap of promptNap, up to
// promptWait. The poll timer would fire after a millisecond however short
// it is set (the netpoller sleeps in whole milliseconds), and that wait was
// the p99 of a `true`. The nap is a nanosleep of this thread, not a Go
// timer, and leaves the CPU to bash. It naps for one marker per command:
// a command that prints forged markers from a loop in bash itself (which
// runs in no syscall either) costs the poll's wait, not naps, per chunk.
func (t *Terminal) doneSoon() bool {
	var end time.Time
	for {
		v := t.sh.look()
		if t.isDone(v) {
			return true
		}
		if t.cs.napped || !v.fg || v.nr != -1 || v.state == 'T' {
			return false
		}
		now := time.Now()
		if end.IsZero() {
			end = now.Add(promptWait)
		} else if now.After(end) {
			t.cs.napped = true
			return false
		}
		nap := unix.NsecToTimespec(int64(promptNap))
		_ = unix.Nanosleep(&nap, nil)
	}
}

// wait reads output until the command is over, the call's time is up, or
// the hard deadline passes.
func (t *Terminal) wait(ctx context.Context, k *call) (Result, error) {
	sh := t.sh
	quiet := k.cfg.soft
	if k.input || t.disp.mode != lineMode {
		quiet = k.cfg.settle
	}
	idle := time.NewTimer(quiet)
	defer idle.Stop()
	maxT := time.NewTimer(k.cfg.maxWait - time.Since(k.begin))
	defer maxT.Stop()
	hard := time.NewTimer(time.Until(t.started.Add(t.limit)))
	defer hard.Stop()
	delay := time.Millisecond
	poll := time.NewTimer(delay)
	defer poll.Stop()
	for {
		select {
		case c, ok := <-sh.chunks:
			if !ok {
				return t.result(-1, k, true), ErrClosed
			}
			if err := t.consume(c); err != nil {
				return Result{ExitCode: -1}, err
			}
			if t.cs.marked {
				// bash prints its prompt a moment before it reads:
				// look now, then again soon.
				t.cs.marked = false
				if t.doneSoon() {
					return t.complete(ctx, k)
				}
				delay = 50 * time.Microsecond
				poll.Reset(delay)
			}
			if k.input || t.disp.mode != lineMode {
				quiet = k.cfg.settle
			}
			idle.Reset(quiet)
		case <-poll.C:
			v := sh.look()
			if v.state == 'T' && v.fg && !t.cs.cont2 {
				t.cs.cont2 = true
				_ = syscall.Kill(sh.pid, syscall.SIGCONT)
				k.note("bash stopped itself (SIGSTOP, e.g. kill -STOP $$) and was continued with SIGCONT; nothing was lost.")
			}
			if t.isDone(v) {
				return t.complete(ctx, k)
			}
			t.cs.marked = false
			delay = min(2*delay, 100*time.Millisecond)
			poll.Reset(delay)
		case <-idle.C:
			return t.still(k, fmt.Sprintf("no new output for %s", quiet.Round(time.Millisecond)))
		case <-maxT.C:
			return t.still(k, fmt.Sprintf("the call's limit of %s (max wait) was reached", k.cfg.maxWait.Round(time.Millisecond)))
		case <-hard.C:
			return t.interrupt(ctx, k)
		case <-sh.exited:
			return t.shellGone(ctx, k)
		case <-ctx.Done():
			t.flushOutput()
			return t.result(-1, k, t.busy), context.Cause(ctx)
		}
	}
}

// still ends a call while the command runs on.
func (t *Terminal) still(k *call, why string) (Result, error) {
	if err := t.scan.flushPartial(); err != nil {
		return Result{ExitCode: -1}, err
	}
	_ = t.cut.flush()
	if err := t.cleaner.Flush(); err != nil {
		return Result{ExitCode: -1}, fmt.Errorf("write output: %w", err)
	}
	t.disp.settled(true)
	scr := t.disp.screen()
	if scr != nil {
		if _, err := io.WriteString(t.sink.w, scr.Text()); err != nil {
			return Result{ExitCode: -1}, fmt.Errorf("write output: %w", err)
		}
		where := "alternate screen"
		if !scr.Alt {
			where = "cursor addressing"
		}
		k.note("the program is drawing a full screen (%dx%d, %s); the output ends with the screen as it is now, cursor at row %d, column %d. Send keys with is_input=true, e.g. q, :q<Enter>, <Esc>, <Up>, <C-c>.", scr.Cols, scr.Rows, where, scr.CursorRow+1, scr.CursorCol+1)
	} else {
		k.note("the command is still running (%s). Send an empty command to read more output, is_input=true to type into it (e.g. answer a prompt), or C-c (is_input=true) to interrupt it.", why)
	}
	r := t.result(-1, k, true)
	r.Screen = scr
	return r, nil
}

// complete ends a command that the kernel shows is over: it reads the
// rest of its output, takes its prompt's metadata, and repairs the shell
// if its prompt could not be seen.
func (t *Terminal) complete(ctx context.Context, k *call) (Result, error) {
	if err := t.sync(); err != nil {
		return Result{ExitCode: -1}, err
	}
	sh := t.sh
	if err := t.gate(false); err != nil {
		return Result{ExitCode: -1}, fmt.Errorf("write output: %w", err)
	}
	if t.cs.cont {
		if err := t.gate(true); err != nil {
			return Result{ExitCode: -1}, fmt.Errorf("write output: %w", err)
		}
		return t.continuation(ctx, k)
	}
	f := t.cs.fresh()
	if f == nil && sh.fdMayDetour(2) {
		// Give a prompt that takes a detour (stderr through a pipe, exec
		// 2> >(tee log)) a moment to arrive. Only then: with stderr on the
		// terminal bash wrote its prompt before it read, and with stderr
		// in a file or /dev/null no prompt comes, so a marker that arrives
		// now was printed by something else (a forgery by a background
		// job) and must not be taken for the command's.
		for end := time.Now().Add(300 * time.Millisecond); f == nil && time.Now().Before(end); f = t.cs.fresh() {
			time.Sleep(10 * time.Millisecond)
			if err := t.sync(); err != nil {
				return Result{ExitCode: -1}, err
			}
		}
	}
	var v procView
	if f == nil {
		v = sh.look()
	}
	if f != nil && t.cs.gated {
		return t.notSourced(ctx, k)
	}
	if err := t.gate(true); err != nil {
		return Result{ExitCode: -1}, fmt.Errorf("write output: %w", err)
	}
	switch {
	case f != nil:
		if t.cs.top.N > t.cs.base+1 {
			k.note("bash then ran %d more command line(s) that did not come from harnessd (input the command injected into the terminal, e.g. with TIOCSTI); their output is included above, and the last one's exit code was %d.", t.cs.top.N-t.cs.base-1, t.cs.top.ExitCode)
		}
		t.last = t.cs.top
		t.commandOver()
		if err := t.endScreen(k); err != nil {
			return Result{ExitCode: -1}, err
		}
		t.disp.settled(false)
		if !sh.fdOnTTY(0) {
			k.note("bash's stdin is no longer the terminal (exec 0<…), so bash reads its command lines from there and harnessd cannot hand it more: the next command runs in a new shell, without this one's variables, functions, cwd and background jobs.")
		}
		if t.sink.syntaxError() {
			k.note("bash could not parse the command (see its error above: often an unclosed quote, bracket or heredoc); lines before the error may have run, the rest did not. Fix it and send the whole command again.")
		}
		t.flushOutput()
		return t.result(f.ExitCode, k, false), nil
	case sh.prompt().procOK && v.fg && sh.prompt().image != v.startcode:
		return t.reinit(ctx, k)
	}
	return t.invisible(ctx, k)
}

// notSourced handles a command handed over in a file that bash never
// opened: the line that sources it ran something else (a function named
// builtin), or bash refused (. disabled with enable -n, a restricted shell).
// Nothing of the command ran, so it is handed over once more after a
// repair; if bash still does not read it, the shell is rebuilt and the
// result says the command was not run.
func (t *Terminal) notSourced(ctx context.Context, k *call) (Result, error) {
	cmd, tries, prev := t.cs.file, t.cs.tries, t.last.ExitCode
	said := strings.TrimSpace(clean.String(t.cs.stray.String()))
	if len(said) > 500 {
		said = said[:500] + "…"
	}
	t.last = t.cs.top
	t.last.ExitCode = prev // nothing ran: $? is still the last command's
	t.cs.gated = false
	if tries == 0 {
		m, ok, err := t.typeAndWait(ctx, " [[ $- == *r* ]]\n")
		if err != nil {
			return Result{ExitCode: -1}, err
		}
		if ok && m.ExitCode == 0 {
			t.restricted = true
			k.note("the shell is restricted (set -r), where . sources no path with a slash; harnessd hands this shell's multi-line commands over with eval instead (bash had said: %q).", said)
		} else {
			if _, _, err := t.typeAndWait(ctx, " \\builtin enable . source\n"); err != nil {
				return Result{ExitCode: -1}, err
			}
			k.note("bash did not read the file harnessd hands this command over in (bash said: %q; `.` disabled with enable -n, or builtin redefined?); harnessd ran `builtin enable . source` and handed the command over again.", said)
		}
		t.last.ExitCode = prev
		if !t.restricted {
			if err := t.restoreStatus(ctx); err != nil {
				return Result{ExitCode: -1}, err
			}
		}
		if err := t.sendFile(cmd); err != nil {
			return Result{ExitCode: -1}, err
		}
		t.cs.tries = tries + 1
		return t.wait(ctx, k)
	}
	t.commandOver()
	t.disp.settled(false)
	t.flushOutput()
	old := t.sh.pid
	if err := t.rebuild(ctx); err != nil {
		return Result{ExitCode: -1}, err
	}
	k.rebuilt = true
	k.note("the command was NOT run: bash did not read the file harnessd hands multi-line commands over in, also after a repair (bash said: %q). bash (pid %d) was replaced: %s Send the command again.", said, old, rebuiltNote(t.sh.pid))
	return t.result(-1, k, false), nil
}

// endScreen writes the alternate screen's text for a command that ended
// without leaving it (a full-screen program that did not restore the
// screen, or printf '\033[?1049h'): what it printed there went only to
// the screen model, which settled then drops.
func (t *Terminal) endScreen(k *call) error {
	if t.disp.mode != altMode {
		return nil
	}
	scr := t.disp.screen()
	if scr == nil {
		return nil
	}
	t.flushOutput()
	if _, err := io.WriteString(t.sink.w, scr.Text()); err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	k.note("the command ended with the terminal still in the alternate screen; the output ends with that screen's text (%dx%d).", scr.Cols, scr.Rows)
	return nil
}

// invisible handles bash back at its prompt without a prompt harnessd
// could see: the command moved stderr, changed PS1 or promptvars, or its
// prompt was not expanded. The repair keeps $?, so its prompt carries the
// command's exit code.
func (t *Terminal) invisible(ctx context.Context, k *call) (Result, error) {
	if err := t.endScreen(k); err != nil {
		return Result{ExitCode: -1}, err
	}
	t.flushOutput()
	t.disp.settled(false)
	fixes := []string{"shopt -s promptvars", "PS1=" + shellQuote(t.m.ps1()), "PS2=" + shellQuote(t.m.ps2())}
	why := "its prompt did not reach harnessd (PS1, PS2 or promptvars changed)"
	if !t.sh.fdOnTTY(2) {
		fixes = append([]string{"exec 2>&0"}, fixes...)
		why = "bash's stderr, where it writes its prompt, had been redirected away from the terminal (exec 2>…); it was pointed back at the terminal (redirect one command's stderr instead: cmd 2>file)"
	}
	if cur := t.sh.nofileLimit(); t.sh.nofile > 0 && cur < 16 && cur < t.sh.nofile {
		fixes = append([]string{fmt.Sprintf("ulimit -S -n %d", t.sh.nofile)}, fixes...)
	}
	// One typed line, no file: a restricted shell (set -r) sources no
	// path with a slash, and bash may be short of descriptors. $? is
	// expanded, as the command's exit code, before eval runs the fixes,
	// and (exit N) gives it back to the prompt after them.
	line := " \\builtin eval " + shellQuote(strings.Join(fixes, "; ")+"; (exit ") + "$?')'\n"
	m, ok, err := t.typeAndWait(ctx, line)
	if err != nil {
		return Result{ExitCode: -1}, err
	}
	t.commandOver()
	if !ok || m == nil {
		old := t.sh.pid
		if err := t.rebuild(ctx); err != nil {
			return Result{ExitCode: -1}, err
		}
		k.rebuilt = true
		k.note("the command finished, but %s, and the shell still showed no prompt harnessd could see after a repair (readonly PS1?); bash (pid %d) was replaced: %s The command's exit code is unknown.", why, old, rebuiltNote(t.sh.pid))
		return t.result(-1, k, false), nil
	}
	k.note("the command finished, but %s; harnessd repaired the shell's prompt, and nothing was lost.", why)
	return t.result(m.ExitCode, k, false), nil
}

// reinit handles bash replaced by a new bash (exec bash), now at a prompt
// of its own: it is given harnessd's prompt again.
func (t *Terminal) reinit(ctx context.Context, k *call) (Result, error) {
	if err := t.endScreen(k); err != nil {
		return Result{ExitCode: -1}, err
	}
	t.flushOutput()
	t.disp.settled(false)
	sh := t.sh
	sh.forgetImage()     // the new image: learned below
	t.restricted = false // a new bash is not, unless it says so again
	out := t.sink.w
	t.sink.w = io.Discard
	// Line editing goes off in the typed line: turned off inside a
	// sourced file, bash would stay half in readline.
	err := t.typeLine(" set +o vi +o emacs; " + source + shellQuote(t.files.rc) + "\n")
	t.cs.base = 0 // the new bash counts its commands from 1
	var learned bool
	for end := time.Now().Add(max(t.opts.KillGrace, 2*time.Second)); err == nil && time.Now().Before(end) && !learned; {
		select {
		case c, ok := <-sh.chunks:
			if !ok {
				err = ErrClosed
				break
			}
			err = t.consume(c)
		case <-time.After(2 * time.Millisecond):
		case <-ctx.Done():
			err = ctx.Err()
		}
		if f := t.cs.fresh(); err == nil && f != nil {
			if v := sh.look(); v.fg && v.syscr > t.cs.syscr0 && sh.learn(v) {
				t.last = *f
				learned = true
			}
		}
	}
	t.flushOutput()
	t.cleaner.Reset(&t.sink)
	t.sink.w = out
	if err != nil {
		return Result{ExitCode: -1}, err
	}
	t.commandOver()
	if !learned {
		old := sh.pid
		if err := t.rebuild(ctx); err != nil {
			return Result{ExitCode: -1}, err
		}
		k.rebuilt = true
		k.note("the command replaced bash with a program harnessd could not set up (exec); bash (pid %d) was replaced: %s", old, rebuiltNote(t.sh.pid))
		return t.result(0, k, false), nil
	}
	k.note("the command replaced bash with a new bash (exec bash): the old shell's unexported variables, its functions, aliases and background jobs are gone, while the working directory and exported variables stayed; harnessd set up its prompt in the new shell.")
	return t.result(0, k, false), nil
}

// interrupt is the hard-timeout ladder: SIGINT to the foreground process
// group, then SIGKILL, then a new shell.
func (t *Terminal) interrupt(ctx context.Context, k *call) (Result, error) {
	sh := t.sh
	limit := time.Since(t.started).Round(time.Millisecond)
	// The command may have ended before its deadline was acted on (no
	// call waited, or one waited on output that never showed the prompt:
	// stderr sent away). A signal now would reach bash at its prompt, or
	// the next command, and a finished command would be reported killed.
	if t.isDone(sh.look()) {
		return t.complete(ctx, k)
	}
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGKILL} {
		if v := sh.look(); v.state == 'T' {
			_ = syscall.Kill(sh.pid, syscall.SIGCONT)
		}
		var pgrp int
		var err error
		if sig == syscall.SIGINT {
			err = sh.interrupt()
		} else if pgrp, err = sh.signalForeground(sig); pgrp == sh.pid {
			break // killing the shell's own group is a rebuild
		}
		if err != nil {
			t.opts.Logger.Debug("signal foreground", "sig", sig, "err", err)
		}
		done, err := t.waitDone(ctx, t.opts.KillGrace)
		if err != nil {
			return Result{ExitCode: -1}, err
		}
		if done {
			res, err := t.complete(ctx, k)
			if err != nil {
				return res, err
			}
			res.TimedOut = true
			res.Note = strings.TrimSpace(fmt.Sprintf("the command was still running after %s (hard timeout) and was interrupted with %s. %s", limit, sigName(sig), res.Note))
			return res, nil
		}
	}
	t.flushOutput()
	old := sh.pid
	if err := t.rebuild(ctx); err != nil {
		return Result{ExitCode: -1, TimedOut: true}, err
	}
	k.rebuilt = true
	k.note("the command was still running after %s (hard timeout) and the shell (pid %d) did not answer SIGINT or SIGKILL of its foreground job; %s", limit, old, rebuiltNote(t.sh.pid))
	res := t.result(-1, k, false)
	res.TimedOut = true
	return res, nil
}

// waitDone reads output for up to d and reports whether bash came back to
// its prompt.
func (t *Terminal) waitDone(ctx context.Context, d time.Duration) (bool, error) {
	sh := t.sh
	timer := time.NewTimer(d)
	defer timer.Stop()
	delay := time.Millisecond
	poll := time.NewTimer(delay)
	defer poll.Stop()
	for {
		select {
		case c, ok := <-sh.chunks:
			if !ok {
				return false, ErrClosed
			}
			if err := t.consume(c); err != nil {
				return false, err
			}
			if t.cs.cont {
				_ = sh.write([]byte{0x03})
				t.cs.cont = false
			}
		case <-poll.C:
			if t.isDone(sh.look()) {
				return true, nil
			}
			delay = min(2*delay, 20*time.Millisecond)
			poll.Reset(delay)
		case <-sh.exited:
			return false, nil
		case <-timer.C:
			return false, nil
		case <-ctx.Done():
			return false, context.Cause(ctx)
		}
	}
}

// continuation handles the shell's PS2: a typed line ended inside an open
// quote, bracket or heredoc. C-c abandons it (nothing of it ran); the
// command then goes through a file, where bash says what is wrong with it
// instead of asking for more.
func (t *Terminal) continuation(ctx context.Context, k *call) (Result, error) {
	direct, ours := t.cs.direct, t.cs.got
	t.cs.cont = false
	t.cs.syscr0 = t.sh.look().syscr // before C-c: bash may act on it at once
	if err := t.sh.write([]byte{0x03}); err != nil {
		return Result{ExitCode: -1}, fmt.Errorf("cancel continuation: %w", err)
	}
	done, err := t.waitDone(ctx, t.opts.KillGrace)
	if err != nil {
		return Result{ExitCode: -1}, err
	}
	if done {
		if err := t.sync(); err != nil {
			return Result{ExitCode: -1}, err
		}
		if f := t.cs.fresh(); f != nil {
			t.last = *f
		}
		if ours != nil {
			// The command had ended at its own prompt; the open quote
			// came from input it injected into the terminal.
			t.commandOver()
			t.flushOutput()
			k.note("after the command, bash read a line that did not come from harnessd (input injected into the terminal, e.g. with TIOCSTI) and was left waiting for the rest of it; that was cancelled with C-c.")
			return t.result(ours.ExitCode, k, false), nil
		}
		if direct != "" {
			if err := t.sendFile(direct); err != nil {
				return Result{ExitCode: -1}, err
			}
			return t.wait(ctx, k)
		}
	} else {
		if err := t.rebuild(ctx); err != nil {
			return Result{ExitCode: -1}, err
		}
		k.rebuilt = true
	}
	t.commandOver()
	t.flushOutput()
	k.note("the input is incomplete (an unclosed quote, bracket or heredoc), so the shell asked for more; it was cancelled and nothing more ran. Close the quote or heredoc and send the whole command again.")
	return t.result(2, k, false), nil
}

// shellGone handles bash exiting (exit, exec of a program that ended, set
// -e). A new shell is started so the session goes on.
func (t *Terminal) shellGone(ctx context.Context, k *call) (Result, error) {
	_ = t.sync()
	t.flushOutput()
	sh := t.sh
	status := sh.exitStatus()
	old := sh.pid
	if err := t.rebuild(ctx); err != nil {
		return Result{ExitCode: status}, err
	}
	k.rebuilt = true
	k.note("the shell (pid %d) exited with status %d; %s", old, status, rebuiltNote(t.sh.pid))
	return t.result(status, k, false), nil
}

// rebuiltNote says what a new shell means for the model.
func rebuiltNote(pid int) string {
	return fmt.Sprintf("the shell was rebuilt: its variables, functions, cwd and background jobs were lost (new pid %d).", pid)
}

// rebuild replaces the shell with a new one.
func (t *Terminal) rebuild(ctx context.Context) error {
	if t.sh != nil {
		t.sh.close(t.opts.KillGrace)
	}
	out := t.sink.w
	err := t.start(ctx)
	t.sink.w = out
	t.cleaner.Reset(&t.sink)
	if err != nil {
		return fmt.Errorf("rebuild shell: %w", err)
	}
	return nil
}

func (t *Terminal) result(code int, k *call, running bool) Result {
	if running {
		code = -1
	}
	if t.last.Cwd != "" || t.last.CwdCut {
		cwd := t.last.Cwd
		t.cwd.Store(&cwd)
	}
	if !running {
		// bash is at its prompt: what it reads from now on is input
		// that did not come from harnessd (see drainIdle).
		if t.doneOK {
			t.idleReads = t.doneReads
		} else if v := t.sh.lookReads(); v.ok {
			t.idleReads = v.syscr
		}
	}
	t.doneOK = false
	if t.last.CwdCut && !running {
		k.note("The working directory is over %d KiB long, more than harnessd reads from bash's prompt, so Cwd is empty; `pwd` prints it.", maxMeta>>10)
	}
	notes := k.notes
	if k.refused {
		// The exit code and output are the previous command's: say so
		// first, whether it still runs or ended while this call waited.
		first := "the previous command is still running, so this command was NOT run. Send an empty command to read more output, is_input=true to type into the running program, or C-c (is_input=true) to interrupt it."
		if !running {
			first = fmt.Sprintf("this command was NOT run: the previous command was still running when it came, and has since finished, with exit code %d; the output, exit code and directory here are that command's. Send this command again to run it.", code)
		}
		notes = append([]string{first}, notes...)
	}
	return Result{
		ExitCode: code,
		Cwd:      t.last.Cwd,
		PID:      t.sh.pid,
		Running:  running,
		Rebuilt:  k.rebuilt,
		Note:     strings.Join(notes, " "),
		Duration: time.Since(k.begin),
	}
}

// reply forwards the screen model's answers to a program's queries (cursor
// position, device attributes) to the program, never to bash's prompt.
func (t *Terminal) reply(b []byte) {
	sh := t.live.Load()
	if sh == nil {
		return
	}
	if pg, err := sh.foreground(); err != nil || pg == sh.pid {
		return
	}
	rc, err := sh.master.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Write(func(fd uintptr) bool {
		_, _ = syscall.Write(int(fd), b)
		return true // best effort: never wait for a program that does not read
	})
}

// watch enforces the hard timeout of a command that no call is waiting
// for: at the deadline it takes the terminal and runs the interrupt
// ladder; the next Run reports what happened.
func (t *Terminal) watch() {
	defer t.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		timer.Stop()
		// armed is published before deadline is read again: a send
		// that stores a deadline after that read sees this armed value
		// (sequentially consistent atomics) and kicks if it must.
		d := t.deadline.Load()
		t.armed.Store(d)
		if t.deadline.Load() != d {
			continue
		}
		if d != 0 {
			timer.Reset(time.Until(time.Unix(0, d)))
		}
		select {
		case <-t.quit.Done():
			return
		case <-t.kick:
			continue
		case <-timer.C:
		}
		t.mu.Lock()
		if !t.closed && t.busy && t.deadline.Load() != 0 && !time.Now().Before(time.Unix(0, t.deadline.Load())) {
			t.expire()
		}
		t.mu.Unlock()
	}
}

// expire runs the hard-timeout ladder with no caller; mu is held.
func (t *Terminal) expire() {
	cr := &carried{}
	t.sink.w, t.sink.n = cr, 0
	defer func() { t.sink.w = io.Discard }()
	k := &call{begin: time.Now(), cfg: runConfig{soft: t.opts.SoftTimeout, maxWait: t.opts.MaxWait, settle: t.opts.Settle}}
	res, err := t.interrupt(t.quit, k)
	if err != nil {
		t.deadline.Store(0)
		return
	}
	t.flushOutput()
	if res.TimedOut {
		res.Note = "the command hit its hard timeout while no call was waiting: " + res.Note
	}
	cr.res = res
	t.carry = cr
}

// swapWriter lets one cleaner serve every call with that call's writer,
// holds output back while the display decides between lines and a screen,
// and remembers the last bytes written so a finished command's closing
// error message can be recognised.
type swapWriter struct {
	w       io.Writer
	holding bool
	held    bytes.Buffer
	err     error
	tail    [256]byte
	n       int // bytes of tail in use
}

func (s *swapWriter) Write(p []byte) (int, error) {
	if len(p) >= len(s.tail) {
		s.n = copy(s.tail[:], p[len(p)-len(s.tail):])
	} else {
		if s.n+len(p) > len(s.tail) {
			drop := s.n + len(p) - len(s.tail)
			copy(s.tail[:], s.tail[drop:s.n])
			s.n -= drop
		}
		s.n += copy(s.tail[s.n:], p)
	}
	if s.holding {
		s.held.Write(p)
		return len(p), nil
	}
	if s.err != nil {
		return 0, s.err
	}
	if s.w == nil {
		return len(p), nil
	}
	return s.w.Write(p)
}

// hold starts holding output back, or stops and writes what was held.
func (s *swapWriter) hold(on bool) {
	if on || !s.holding {
		s.holding = on
		return
	}
	s.holding = false
	if s.held.Len() > 0 && s.w != nil && s.err == nil {
		if _, err := s.w.Write(s.held.Bytes()); err != nil {
			s.err = err
		}
	}
	s.held.Reset()
}

// dropHeld forgets the held output (a screen replaces it).
func (s *swapWriter) dropHeld() { s.held.Reset() }

// parseErrors are bash's messages for a command it could not parse.
var parseErrors = []string{
	"unexpected EOF while looking for matching",
	"syntax error: unexpected end of file",
	"syntax error near unexpected token",
	"here-document at line",
}

// syntaxError reports whether the output ended with bash's parse error.
func (s *swapWriter) syntaxError() bool {
	tail := string(s.tail[:s.n])
	for _, e := range parseErrors {
		if strings.Contains(tail, "bash: ") && strings.Contains(tail, e) {
			return true
		}
	}
	return false
}

// cutter removes every occurrence of needle from a byte stream split
// anywhere: bash names the sourced command file in its messages ("bash:
// /…/command: line 2: syntax error"), which then read as typed commands'
// ("bash: line 2: …").
type cutter struct {
	needle  []byte
	out     io.Writer
	pending []byte
}

func (c *cutter) Write(p []byte) (int, error) {
	buf := p
	if len(c.pending) > 0 {
		c.pending = append(c.pending, p...)
		buf = c.pending
	}
	for {
		i := bytes.Index(buf, c.needle)
		if i < 0 {
			break
		}
		if _, err := c.out.Write(buf[:i]); err != nil {
			return 0, err
		}
		buf = buf[i+len(c.needle):]
	}
	keep := partialSuffix(buf, c.needle)
	if _, err := c.out.Write(buf[:len(buf)-keep]); err != nil {
		return 0, err
	}
	rest := append([]byte(nil), buf[len(buf)-keep:]...)
	c.pending = append(c.pending[:0], rest...)
	return len(p), nil
}

// flush writes a held partial match.
func (c *cutter) flush() error {
	if len(c.pending) == 0 {
		return nil
	}
	_, err := c.out.Write(c.pending)
	c.pending = c.pending[:0]
	return err
}

func (c *cutter) reset() { c.pending = c.pending[:0] }

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func sigName(s syscall.Signal) string {
	switch s {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGKILL:
		return "SIGKILL"
	}
	return s.String()
}

// writeCtl writes one of the shell's control files, readable by all: the
// control directory is the gate (0700, owned by the sandbox's user when
// the shell runs as one), and a sandboxed bash runs as a user who is not
// the daemon's, so a file only the daemon could read would be unreadable
// to it ("bash: Permission denied" for every sourced command).
func (t *Terminal) writeCtl(name string, data []byte) error {
	f, err := t.ctl.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return t.ctl.Chmod(name, 0o644) // an older file keeps its mode through O_TRUNC
}
