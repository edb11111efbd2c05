package terminal

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

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

	Cols, Rows int // window size; default 200x50

	// ControlDir holds the files the shell reads commands from. It must be
	// visible at the same path inside the shell's sandbox. Default: a new
	// temporary directory, removed on Close.
	ControlDir string

	// Prepare, if set, adjusts the bash command before it starts (a sandbox
	// driver wraps it here).
	Prepare func(*exec.Cmd) error

	// Started, if set, is called with the started process's pid right
	// after it starts (a sandbox driver joins it to its cgroup and lets it
	// go on here). An error kills the process and fails the start.
	Started func(pid int) error

	// InitWrapped means the started process is not bash but a sandbox init
	// whose one child is bash. The terminal then uses bash's pid for the
	// foreground check, /proc/PID/syscall, signals and Result.PID, and
	// kills the init (and with it the sandbox's processes) on Close and
	// rebuild.
	InitWrapped bool

	Logger *slog.Logger
}

func (o *Options) setDefaults() {
	if o.Shell == "" {
		o.Shell = "bash"
	}
	if o.SoftTimeout <= 0 {
		o.SoftTimeout = 10 * time.Second
	}
	if o.HardTimeout <= 0 {
		o.HardTimeout = 30 * time.Minute
	}
	if o.KillGrace <= 0 {
		o.KillGrace = 2 * time.Second
	}
	if o.StartWait <= 0 {
		o.StartWait = 10 * time.Second
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
		"TERM=dumb",
		"PAGER=cat",
		"GIT_PAGER=cat",
		"MANPAGER=cat",
		"SYSTEMD_PAGER=cat",
		"LESS=-FRX",
		"EDITOR=cat",
		"VISUAL=cat",
		"GIT_EDITOR=cat",
		"GIT_TERMINAL_PROMPT=0",
		"DEBIAN_FRONTEND=noninteractive",
		"PYTHONUNBUFFERED=1",
		"NO_COLOR=1",
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

// Request is one thing to do with the terminal.
type Request struct {
	// Command is bash source, any length, any number of lines. Empty means
	// "read more output of the command that is still running".
	Command string
	// IsInput sends Command to the running program as keyboard input
	// instead of running it: a key name (C-c, C-d, C-z, ...) sends that key,
	// any other text is sent followed by Enter.
	IsInput bool
	// Timeout is the hard timeout for this command; 0 means the default.
	Timeout time.Duration
	// SoftTimeout overrides the soft timeout for this call; 0 means the
	// default.
	SoftTimeout time.Duration
	// Reset rebuilds the shell first (state is lost), then runs Command if
	// there is one.
	Reset bool
}

// Result is what became of a Request.
type Result struct {
	ExitCode int    // the command's exit status; -1 while it is still running
	Cwd      string // the shell's working directory after the command
	PID      int    // the shell's pid (changes only when the shell is rebuilt)
	Running  bool   // the command has not finished (soft timeout or refused input)
	TimedOut bool   // the hard timeout interrupted the command
	Rebuilt  bool   // a new shell was started: cwd, variables and jobs are gone
	Note     string // what happened and what to do next, for a model; empty when nothing needs saying
	Duration time.Duration
}

// Terminal is one persistent bash on a PTY. Its methods are safe for
// concurrent use; commands run one at a time.
type Terminal struct {
	opts    Options
	ctlDir  string
	ownsCtl bool
	cmdFile *os.File
	m       markers

	mu       sync.Mutex // serialises Run, Reset and Close
	sh       *shell
	scan     scanner
	cleaner  *clean.Writer
	sink     swapWriter
	expectN  uint64 // the prompt counter the next real prompt carries
	last     promptMeta
	busy     bool      // a command was started and its prompt not yet seen
	started  time.Time // when the running command started
	deadline time.Time // its hard deadline
	closed   bool

	// quit is cancelled (with ErrClosed) when Close begins, before it
	// waits for mu: a Run in progress stops waiting at once, so Close
	// never waits for a command to finish.
	quit    context.Context
	quitNow context.CancelCauseFunc
}

// New starts a terminal and waits for its first prompt.
func New(ctx context.Context, opts Options) (*Terminal, error) {
	opts.setDefaults()
	t := &Terminal{opts: opts, ctlDir: opts.ControlDir}
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
	f, err := os.OpenFile(filepath.Join(t.ctlDir, "cmd"), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		t.removeCtl()
		return nil, fmt.Errorf("command file: %w", err)
	}
	t.cmdFile = f
	t.cleaner = clean.NewWriter(&t.sink)
	t.scan.out = t.cleaner
	if err := t.start(ctx); err != nil {
		t.cmdFile.Close()
		t.removeCtl()
		return nil, err
	}
	return t, nil
}

func (t *Terminal) removeCtl() {
	if t.ownsCtl {
		os.RemoveAll(t.ctlDir)
	}
}

// start launches a new shell with a new nonce and waits for its first
// prompt. Output before that prompt (there should be none) is discarded.
func (t *Terminal) start(ctx context.Context) error {
	nonce, err := newNonce()
	if err != nil {
		return err
	}
	t.m = newMarkers(nonce)
	t.scan.m = t.m
	t.scan.reset()
	sh, err := startShell(&t.opts, t.m, t.ctlDir)
	if err != nil {
		return err
	}
	t.sh = sh
	t.expectN = 1
	t.busy = false
	t.sink.w = io.Discard
	ctx, cancel := context.WithTimeout(ctx, t.opts.StartWait)
	defer cancel()
	for {
		select {
		case b, ok := <-sh.chunks:
			if !ok {
				sh.close(t.opts.KillGrace)
				return fmt.Errorf("%w: exited before its first prompt (status %d)", ErrShellStart, sh.exitStatus())
			}
			ev, _, err := t.next(b)
			sh.release(b)
			if err != nil {
				sh.close(t.opts.KillGrace)
				return err
			}
			if ev == scanPrompt {
				t.cleaner.Reset(&t.sink)
				return nil
			}
		case <-ctx.Done():
			sh.close(t.opts.KillGrace)
			return fmt.Errorf("%w: no prompt within %s: %w", ErrShellStart, t.opts.StartWait, ctx.Err())
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

// PID is the current shell's pid.
func (t *Terminal) PID() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.sh == nil {
		return 0
	}
	return t.sh.pid
}

// Close kills the shell and everything it started and removes the control
// directory if the terminal made it. Safe to call more than once.
func (t *Terminal) Close() error {
	t.quitNow(ErrClosed) // a Run in progress returns, and lets go of mu
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil
	}
	t.closed = true
	if t.sh != nil {
		t.sh.close(t.opts.KillGrace)
	}
	t.cmdFile.Close()
	t.removeCtl()
	return nil
}

// Run carries out req and streams the command's cleaned output to out.
// It returns when the command finishes, when the soft timeout passes with no
// new output (Result.Running), or after the hard timeout has interrupted
// it. An error means the terminal itself failed (ctx ended, or no shell
// could be started); a command's failure is only its exit code.
//
// Close while Run waits makes Run return at once with ErrClosed (and the
// output so far); Close then kills the command with the shell.
func (t *Terminal) Run(ctx context.Context, req Request, out io.Writer) (Result, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return Result{}, ErrClosed
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(t.quit, func() { cancel(ErrClosed) })
	defer stop()
	res, err := t.run(ctx, req, out)
	if err != nil && errors.Is(context.Cause(ctx), ErrClosed) {
		err = ErrClosed
	}
	return res, err
}

func (t *Terminal) run(ctx context.Context, req Request, out io.Writer) (Result, error) {
	begin := time.Now()
	t.sink.w, t.sink.n = out, 0
	defer func() { t.sink.w = io.Discard }()
	t.cleaner.Reset(&t.sink)

	var notes []string
	rebuilt := false
	if req.Reset || !t.sh.alive() {
		why := "reset requested"
		if !req.Reset {
			why = fmt.Sprintf("the shell had exited (status %d)", t.sh.exitStatus())
		}
		if err := t.rebuild(ctx); err != nil {
			return Result{ExitCode: -1}, err
		}
		rebuilt = true
		notes = append(notes, fmt.Sprintf("%s: started a new shell (pid %d); working directory, variables, functions and background jobs were reset.", why, t.sh.pid))
		if req.Command == "" || req.IsInput {
			return t.result(0, begin, rebuilt, false, notes), nil
		}
	}

	soft := t.opts.SoftTimeout
	if req.SoftTimeout > 0 {
		soft = req.SoftTimeout
	}
	cmd := strings.ReplaceAll(req.Command, "\x00", "")
	switch {
	case req.IsInput:
		if !t.busy {
			notes = append(notes, "no command is running, so the input was not sent; run it as a command instead (is_input=false).")
			return t.result(t.last.ExitCode, begin, rebuilt, false, notes), nil
		}
		if err := t.sendInput(cmd); err != nil {
			return Result{ExitCode: -1}, err
		}
	case cmd == "":
		if !t.busy {
			notes = append(notes, "no command is running and there is no new output.")
			return t.result(t.last.ExitCode, begin, rebuilt, false, notes), nil
		}
	default:
		if t.busy {
			notes = append(notes, "the previous command is still running, so this command was NOT run. Send an empty command to read more output, is_input=true to type into the running program, or C-c (is_input=true) to interrupt it.")
			break
		}
		if err := t.send(cmd); err != nil {
			return Result{ExitCode: -1}, err
		}
		t.busy = true
		t.started = begin
		hard := t.opts.HardTimeout
		if req.Timeout > 0 {
			hard = req.Timeout
		}
		t.deadline = begin.Add(hard)
	}
	return t.wait(ctx, begin, soft, rebuilt, notes)
}

// send writes the command to the control file and types the one short line
// that makes the shell read and eval it. The line restores $? first, so the
// command sees the previous command's exit status as it would at a prompt.
func (t *Terminal) send(cmd string) error {
	data := append([]byte(cmd), 0)
	if _, err := t.cmdFile.WriteAt(data, 0); err != nil {
		return fmt.Errorf("write command: %w", err)
	}
	if err := t.cmdFile.Truncate(int64(len(data))); err != nil {
		return fmt.Errorf("write command: %w", err)
	}
	line := " IFS= read -r -d '' __h_c <" + shellQuote(t.cmdFile.Name()) + `; __h_ret "$__h_ec"; eval "$__h_c"` + "\n"
	if _, err := t.sh.master.WriteString(line); err != nil {
		return fmt.Errorf("type command: %w", err)
	}
	return nil
}

// sendInput types text or a key into the running program.
func (t *Terminal) sendInput(text string) error {
	b, ok := keyBytes(text)
	if !ok {
		b = []byte(text)
		if !strings.HasSuffix(text, "\n") {
			b = append(b, '\n')
		}
	}
	if _, err := t.sh.master.Write(b); err != nil {
		return fmt.Errorf("send input: %w", err)
	}
	return nil
}

// wait reads output until the prompt, the soft timeout, or the hard
// deadline, and runs the interrupt ladder when the deadline passes.
func (t *Terminal) wait(ctx context.Context, begin time.Time, soft time.Duration, rebuilt bool, notes []string) (Result, error) {
	sh := t.sh
	idle := time.NewTimer(soft)
	defer idle.Stop()
	var hardC <-chan time.Time
	if t.busy {
		hard := time.NewTimer(time.Until(t.deadline))
		defer hard.Stop()
		hardC = hard.C
	}
	for {
		select {
		case b, ok := <-sh.chunks:
			if !ok {
				return t.shellGone(ctx, begin, notes)
			}
			ev, meta, err := t.next(b)
			sh.release(b)
			if err != nil {
				return Result{ExitCode: -1}, fmt.Errorf("write output: %w", err)
			}
			switch ev {
			case scanPrompt:
				t.busy = false
				if t.sink.syntaxError() {
					notes = append(notes, "bash could not parse the command (see its error above: often an unclosed quote, bracket or heredoc); lines before the error may have run, the rest did not. Fix it and send the whole command again.")
				}
				return t.result(meta.ExitCode, begin, rebuilt, false, notes), t.cleaner.Flush()
			case scanPS2:
				return t.continuation(ctx, begin, rebuilt, notes)
			}
			if !idle.Stop() {
				select {
				case <-idle.C:
				default:
				}
			}
			idle.Reset(soft)
		case <-idle.C:
			if err := t.flushPartial(); err != nil {
				return Result{ExitCode: -1}, err
			}
			notes = append(notes, fmt.Sprintf("the command is still running (no new output for %s). Send an empty command to read more output, is_input=true to type into it (e.g. answer a prompt), or C-c (is_input=true) to interrupt it.", soft.Round(time.Millisecond)))
			r := t.result(-1, begin, rebuilt, true, notes)
			return r, nil
		case <-hardC:
			return t.interrupt(ctx, begin, rebuilt, notes)
		case <-ctx.Done():
			_ = t.flushPartial()
			return t.result(-1, begin, rebuilt, t.busy, notes), ctx.Err()
		}
	}
}

// next feeds one chunk through the scanner and returns the first event in
// it that counts. A prompt with an old counter is either a program
// replaying a marker (dropped) or bash re-showing its last prompt without
// re-expanding it, which it does after a syntax error in the eval'd
// command. In the second case the shell is idle at its prompt, so an empty
// line makes it draw a fresh prompt with the real exit status and cwd.
// Bytes after a prompt are output of background jobs; they are written
// out rather than lost.
func (t *Terminal) next(b []byte) (scanEvent, promptMeta, error) {
	for {
		ev, meta, rest, err := t.scan.feed(b)
		if err != nil || ev == scanNone {
			return scanNone, promptMeta{}, err
		}
		if ev == scanPrompt && meta.N < t.expectN {
			if meta.N+1 == t.expectN && t.sh.waitIdle(250*time.Millisecond) {
				if _, err := t.sh.master.Write([]byte{'\n'}); err != nil {
					return scanNone, promptMeta{}, fmt.Errorf("redraw prompt: %w", err)
				}
			}
			b = rest
			continue
		}
		if ev == scanPrompt {
			t.last = meta
			t.expectN = meta.N + 1
		}
		for len(rest) > 0 {
			_, _, rest, err = t.scan.feed(rest)
			if err != nil {
				return ev, meta, err
			}
		}
		return ev, meta, nil
	}
}

func (t *Terminal) flushPartial() error {
	if err := t.scan.flushPartial(); err != nil {
		return err
	}
	return t.cleaner.Flush()
}

// interrupt is the hard-timeout ladder: SIGINT to the foreground process
// group, then SIGKILL, then a new shell.
func (t *Terminal) interrupt(ctx context.Context, begin time.Time, rebuilt bool, notes []string) (Result, error) {
	sh := t.sh
	limit := time.Since(t.started).Round(time.Millisecond)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGKILL} {
		pgrp, err := sh.signalForeground(sig)
		if sig == syscall.SIGKILL && pgrp == sh.pid {
			break // killing the shell's own group is a rebuild
		}
		if err != nil {
			t.opts.Logger.Debug("signal foreground", "sig", sig, "err", err)
		}
		r, done, err := t.drainUntilPrompt(ctx, t.opts.KillGrace)
		if err != nil {
			return Result{ExitCode: -1}, err
		}
		if done {
			notes = append(notes, fmt.Sprintf("the command was still running after %s (hard timeout) and was interrupted with %s.", limit, sigName(sig)))
			res := t.result(r.ExitCode, begin, rebuilt, false, notes)
			res.TimedOut = true
			return res, t.cleaner.Flush()
		}
	}
	_ = t.flushPartial()
	old := sh.pid
	if err := t.rebuild(ctx); err != nil {
		return Result{ExitCode: -1, TimedOut: true}, err
	}
	notes = append(notes, fmt.Sprintf("the command was still running after %s (hard timeout) and the shell (pid %d) did not answer SIGINT or SIGKILL of its foreground job; started a new shell (pid %d): working directory, variables, functions and background jobs were reset.", limit, old, t.sh.pid))
	res := t.result(-1, begin, true, false, notes)
	res.TimedOut = true
	return res, nil
}

// drainUntilPrompt reads output for up to d and reports whether the prompt
// came.
func (t *Terminal) drainUntilPrompt(ctx context.Context, d time.Duration) (promptMeta, bool, error) {
	sh := t.sh
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		select {
		case b, ok := <-sh.chunks:
			if !ok {
				return promptMeta{}, false, nil
			}
			ev, meta, err := t.next(b)
			sh.release(b)
			if err != nil {
				return promptMeta{}, false, err
			}
			if ev == scanPrompt {
				t.busy = false
				return meta, true, nil
			}
			if ev == scanPS2 {
				if _, err := sh.master.Write([]byte{0x03}); err != nil {
					return promptMeta{}, false, err
				}
			}
		case <-timer.C:
			return promptMeta{}, false, nil
		case <-ctx.Done():
			return promptMeta{}, false, ctx.Err()
		}
	}
}

// continuation handles the shell's PS2: input ended inside an open quote or
// heredoc. C-c abandons it; the shell prints a fresh prompt.
func (t *Terminal) continuation(ctx context.Context, begin time.Time, rebuilt bool, notes []string) (Result, error) {
	if _, err := t.sh.master.Write([]byte{0x03}); err != nil {
		return Result{ExitCode: -1}, fmt.Errorf("cancel continuation: %w", err)
	}
	if _, done, err := t.drainUntilPrompt(ctx, t.opts.KillGrace); err != nil {
		return Result{ExitCode: -1}, err
	} else if !done {
		if err := t.rebuild(ctx); err != nil {
			return Result{ExitCode: -1}, err
		}
		rebuilt = true
	}
	t.busy = false
	notes = append(notes, "the input is incomplete (an unclosed quote, bracket or heredoc), so the shell asked for more; it was cancelled and nothing more ran. Close the quote or heredoc and send the whole command again.")
	return t.result(2, begin, rebuilt, false, notes), t.cleaner.Flush()
}

// shellGone handles EOF on the PTY: bash exited (exit, exec, set -e). A new
// shell is started so the session goes on.
func (t *Terminal) shellGone(ctx context.Context, begin time.Time, notes []string) (Result, error) {
	_ = t.flushPartial()
	sh := t.sh
	<-sh.exited
	status := sh.exitStatus()
	old := sh.pid
	if err := t.rebuild(ctx); err != nil {
		return Result{ExitCode: status}, err
	}
	notes = append(notes, fmt.Sprintf("the shell (pid %d) exited with status %d; started a new shell (pid %d): working directory, variables, functions and background jobs were reset.", old, status, t.sh.pid))
	return t.result(status, begin, true, false, notes), nil
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

func (t *Terminal) result(code int, begin time.Time, rebuilt, running bool, notes []string) Result {
	if running {
		code = -1
	}
	return Result{
		ExitCode: code,
		Cwd:      t.last.Cwd,
		PID:      t.sh.pid,
		Running:  running,
		Rebuilt:  rebuilt,
		Note:     strings.Join(notes, " "),
		Duration: time.Since(begin),
	}
}

// swapWriter lets one cleaner serve every Run with that Run's writer, and
// remembers the last bytes written so a finished command's closing error
// message can be recognised.
type swapWriter struct {
	w    io.Writer
	tail [256]byte
	n    int // bytes of tail in use
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
	if s.w == nil {
		return len(p), nil
	}
	return s.w.Write(p)
}

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
