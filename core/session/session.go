package session

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/harnessd/harnessd/core/event"
	"github.com/harnessd/harnessd/core/files"
	"github.com/harnessd/harnessd/core/live"
	"github.com/harnessd/harnessd/core/python"
	"github.com/harnessd/harnessd/core/sandbox"
	"github.com/harnessd/harnessd/core/terminal"
	"github.com/harnessd/harnessd/core/trim"
)

// Recorder is where a session's events go: an event.Bus (which commits to
// the store and fans out) or the store itself. Append returns only after the
// events are committed, with their seqs assigned.
type Recorder interface {
	Append(ctx context.Context, session string, evs ...event.Event) ([]event.Event, error)
}

// Config configures a session. Zero fields take their package defaults.
type Config struct {
	Terminal terminal.Options
	Trim     trim.Config
	// Events records every action and observation. Nil records nothing
	// (events come back with seq 0), for callers that only want the shell.
	Events Recorder
	// Outputs keeps every command's full output. Nil keeps none.
	Outputs trim.OutputStore
	Logger  *slog.Logger
	// Live, if set, gets each command's output as it is produced, for
	// clients that watch (see CommandFor).
	Live *live.Hub
	// MaxOutput is how many bytes of one command's full output Outputs
	// keeps, MaxSessionOutput of all of the session's; 0 keeps all. The
	// rest is dropped with a note in the observation.
	MaxOutput, MaxSessionOutput int64

	// Sandbox is where the shell runs; nil means on the host (driver
	// "none"). The session owns it: Close destroys it. Its terminal
	// options (Prepare, Started, ControlDir, ControlDirInside, Dir,
	// InitWrapped) replace those in Terminal.
	Sandbox sandbox.Sandbox
	// Driver names the sandbox's driver in sandbox_started ("none" when
	// Sandbox is nil).
	Driver string
	// Profile names the [profiles.NAME] the sandbox was made with, for
	// hooks ("" for [sandbox]'s settings).
	Profile string
	// StartRecorded says the session's sandbox_started (SandboxStarted of
	// Driver and Sandbox) is already in its log: the daemon recorded it
	// with the session's record, in one commit. New then records nothing.
	StartRecorded bool

	// Shell, if set, is an already started terminal (from a warm pool),
	// started with Sandbox's options; Terminal is then not used.
	Shell *terminal.Terminal
}

// Session is one agent's shell, the place its full outputs go, and the log
// its events go to.
type Session struct {
	id      string
	term    *terminal.Terminal
	sb      sandbox.Sandbox
	events  Recorder
	outputs trim.OutputStore
	live    *live.Hub
	trim    trim.Config
	// maxOut and maxTotal cap the full output kept (0: no cap); kept is
	// what this session's outputs hold so far. Commands run one at a
	// time, but kept is read by whoever asks, so it is atomic.
	maxOut, maxTotal int64
	kept             atomic.Int64
	log              *slog.Logger
	dir              string
	profile          string
	fileHistory      files.History    // the file actions' undo history (files.go)
	timing           terminal.Options // the shell's timeouts, which the Python cells take too (python.go)
	pyMu             sync.Mutex
	py               *python.Interp // started by the first python_run
	pyClosed         bool
}

// New starts a session's terminal and records sandbox_started.
func New(ctx context.Context, id string, cfg Config) (*Session, error) {
	if cfg.Trim.Head == 0 && cfg.Trim.Tail == 0 && cfg.Trim.LineCap == 0 {
		cfg.Trim = trim.DefaultConfig()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	term := cfg.Shell
	if term == nil {
		opts := cfg.Terminal
		if cfg.Sandbox != nil {
			opts = SandboxTerminal(opts, cfg.Sandbox)
		}
		var err error
		if term, err = terminal.New(ctx, opts); err != nil {
			return nil, fmt.Errorf("session %s: %w", id, err)
		}
	}
	s := &Session{id: id, term: term, sb: cfg.Sandbox, events: cfg.Events, outputs: cfg.Outputs, live: cfg.Live, trim: cfg.Trim, maxOut: cfg.MaxOutput, maxTotal: cfg.MaxSessionOutput, log: cfg.Logger, dir: cfg.Terminal.Dir, profile: cfg.Profile, timing: cfg.Terminal}
	if cfg.StartRecorded && cfg.Sandbox != nil {
		return s, nil
	}
	started := event.SandboxStarted{Driver: "none", SandboxID: fmt.Sprint(term.PID()), Workdir: cfg.Terminal.Dir}
	if cfg.Sandbox != nil {
		started = SandboxStarted(cfg.Driver, cfg.Sandbox)
	}
	if _, err := s.Record(ctx, event.SourceRuntime, 0, started); err != nil {
		s.shutdown(ctx)
		return nil, err
	}
	return s, nil
}

// SandboxStarted is the first event of a session whose shell runs in sb,
// made by driver.
func SandboxStarted(driver string, sb sandbox.Sandbox) event.SandboxStarted {
	return event.SandboxStarted{Driver: driver, SandboxID: sb.ID(), Workdir: sb.Workdir()}
}

// SandboxTerminal returns opts with the sandbox's hooks in place, so that
// the terminal's bash starts inside sb.
func SandboxTerminal(opts terminal.Options, sb sandbox.Sandbox) terminal.Options {
	opts.Prepare = sb.Prepare
	opts.Started = sb.Started
	opts.ControlDir = sb.ControlDir()
	opts.ControlDirInside = sb.ControlDirInside()
	opts.Dir = sb.Workdir()
	opts.InitWrapped = sb.InitWrapped()
	return opts
}

// shutdown ends the shell, then the sandbox and everything left in it.
func (s *Session) shutdown(ctx context.Context) error {
	s.closePython()
	err := s.term.Close()
	if s.sb != nil {
		if derr := s.sb.Destroy(context.WithoutCancel(ctx)); derr != nil && err == nil {
			err = derr
		}
	}
	return err
}

// Stop kills the session's shell, everything it started and its sandbox,
// and records nothing: a Run in progress returns at once (and records its
// observation, with a note). Close records the end; Stop before Close lets
// the caller wait for that observation in between.
func (s *Session) Stop(ctx context.Context) error { return s.shutdown(ctx) }

// Sandbox is the session's sandbox; nil when it runs on the host.
func (s *Session) Sandbox() sandbox.Sandbox { return s.sb }

// Workdir is where the session's shell starts, as the shell sees it
// (/workspace in a sandbox).
func (s *Session) Workdir() string {
	if s.sb != nil {
		return s.sb.Workdir()
	}
	return s.dir
}

// Profile is the name of the profile the session's sandbox was made
// with, "" for [sandbox]'s settings.
func (s *Session) Profile() string { return s.profile }

// ID is the session's id.
func (s *Session) ID() string { return s.id }

// PID is the pid of the session's shell.
func (s *Session) PID() int { return s.term.PID() }

// Record appends one event to the session's log and returns it as stored.
func (s *Session) Record(ctx context.Context, src event.Source, cause uint64, p event.Payload) (event.Event, error) {
	ev := event.Event{Session: s.id, Source: src, Cause: cause, Payload: p, Time: time.Now().UTC()}
	if s.events == nil {
		return ev, nil
	}
	evs, err := s.events.Append(ctx, s.id, ev)
	if err != nil {
		return ev, fmt.Errorf("session %s: record %s: %w", s.id, p.Kind(), err)
	}
	return evs[0], nil
}

// Command runs c in the session's shell and returns the cmd_output that
// answers it, with the trimmer's counts (some of which the event does not
// carry). It records nothing: the pipeline commits c before calling it and
// the observation after. The full output goes to the session's output
// store as it is produced.
//
// An error means the terminal itself failed (ctx ended, the shell could
// not be started); the output is still filled in as far as it got, with a
// note, because the action is in the log and must be answered.
func (s *Session) Command(ctx context.Context, c event.CmdRun) (event.CmdOutput, trim.Result, error) {
	return s.CommandFor(ctx, 0, c)
}

// CommandFor is Command for the action recorded as seq cause: while the
// command runs, its output also goes to the session's live hub as that
// action's, so clients watching the session see it as it is printed.
// Cause 0 publishes nothing.
func (s *Session) CommandFor(ctx context.Context, cause uint64, c event.CmdRun) (event.CmdOutput, trim.Result, error) {
	w, finish := s.capture(ctx, cause)
	res, runErr := s.term.Run(ctx, c, w)
	tres, trimmed, notes := finish()
	out := event.CmdOutput{
		ExitCode:     res.ExitCode,
		Cwd:          res.Cwd,
		Output:       tres.Text,
		DurationMS:   res.Duration.Milliseconds(),
		TimedOut:     res.TimedOut,
		PID:          res.PID,
		Note:         res.Note,
		ShellRebuilt: res.Rebuilt,
		Trimmed:      trimmed,
	}
	if res.Rebuilt && s.sb != nil {
		// A rebuilt shell gets a fresh sandbox init over the same
		// workspace: its private /tmp is new too.
		out.Note = joinNote(out.Note, "In the sandbox, /tmp was wiped as well (the workspace is kept).")
	}
	out.Note = joinNote(out.Note, notes)
	if runErr != nil {
		out.Note = joinNote(out.Note, "the harness stopped waiting: "+runErr.Error())
		return out, tres, fmt.Errorf("session %s: %w", s.id, runErr)
	}
	return out, tres, nil
}

// capture is where one action's output goes while it runs: the
// trimmer, the full output (within the session's caps) and, for a cause
// other than 0, the live hub. finish ends it and returns the trimmer's
// result, what to put in the observation's trimmed field, and notes on
// what of the full output could not be kept.
func (s *Session) capture(ctx context.Context, cause uint64) (io.Writer, func() (trim.Result, *event.Trimmed, string)) {
	spill := &lazySpill{ctx: ctx, session: s.id, store: s.outputs, limit: -1}
	if s.maxOut > 0 {
		spill.limit, spill.why = s.maxOut, "store.max_output_mb: "+sizeText(s.maxOut)+" per command"
	}
	if s.maxTotal > 0 {
		if left := max(0, s.maxTotal-s.kept.Load()); spill.limit < 0 || left < spill.limit {
			spill.limit, spill.why = left, "store.max_session_output_mb: "+sizeText(s.maxTotal)+" for all of this session's outputs"
		}
	}
	tr := trim.New(s.trim, spill)
	var w io.Writer = tr
	var lw io.WriteCloser
	if s.live != nil && cause != 0 {
		lw = s.live.NewWriter(s.id, cause)
		w = io.MultiWriter(tr, lw)
	}
	return w, func() (trim.Result, *event.Trimmed, string) {
		if lw != nil {
			lw.Close()
		}
		id, spillErr := spill.close()
		s.kept.Add(spill.n)
		tres := tr.Result(id)
		note := ""
		if spillErr != nil {
			// The command ran and the model still gets its view; say what is
			// missing rather than lose the observation.
			s.log.Warn("full output not kept", "session", s.id, "err", spillErr)
			note = joinNote(note, "the full output could not be kept: "+spillErr.Error())
		}
		switch {
		case spill.dropped > 0 && spill.n == 0:
			note = joinNote(note, fmt.Sprintf("None of the full output (%d bytes) was stored (%s): it cannot be paged; the view above is all there is.", spill.dropped, spill.why))
		case spill.dropped > 0:
			note = joinNote(note, fmt.Sprintf("Only the first %d bytes of the full output were stored (%s); the last %d bytes were not, so pages past them do not exist. The view above still shows the end.",
				spill.n, spill.why, spill.dropped))
		}
		var trimmed *event.Trimmed
		if tres.Trimmed || tres.LinesCut > 0 {
			trimmed = &event.Trimmed{
				LinesTotal:   tres.LinesTotal,
				LinesOmitted: tres.LinesOmitted,
				BytesOmitted: tres.BytesOmitted,
				OutputID:     id,
			}
		}
		return tres, trimmed, note
	}
}

// Running reports whether a command is still running in the shell (one
// that returned at the soft timeout or max wait, say). It never waits for
// a command.
func (s *Session) Running() bool { return s.term.Running() }

// SendKeys sends keys (terminal key syntax, no Enter added) to the command
// running in the shell, at once, even while another call waits on it;
// terminal.ErrNotRunning when none runs.
func (s *Session) SendKeys(ctx context.Context, keys string) error { return s.term.SendKeys(ctx, keys) }

// Close ends the session's shell and everything it started (if Stop has
// not already), and records sandbox_stopped.
func (s *Session) Close(ctx context.Context, reason string) error {
	id := fmt.Sprint(s.term.PID())
	if s.sb != nil {
		id = s.sb.ID()
	}
	err := s.shutdown(ctx)
	if _, rerr := s.Record(ctx, event.SourceRuntime, 0, event.SandboxStopped{SandboxID: id, Reason: reason}); rerr != nil && err == nil {
		err = rerr
	}
	return err
}

// sizeText is n bytes in MiB, or KiB or bytes where it is less.
func sizeText(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + " " + b
}

// lazySpill creates the stored output on the first byte, so the many
// commands that print nothing cost no storage, and keeps at most limit
// bytes of it.
type lazySpill struct {
	ctx     context.Context
	session string
	store   trim.OutputStore
	w       trim.OutputWriter
	err     error
	limit   int64  // bytes that may be kept; < 0: no limit
	why     string // the setting that set limit
	n       int64  // bytes kept
	dropped int64  // bytes not kept because of limit
}

func (l *lazySpill) Write(p []byte) (int, error) {
	if l.store == nil || l.err != nil {
		return len(p), nil // not kept; the trimmer's view goes on
	}
	whole := len(p)
	if l.limit >= 0 && l.n+int64(len(p)) > l.limit {
		keep := max(0, l.limit-l.n)
		l.dropped += int64(len(p)) - keep
		p = p[:keep]
		if len(p) == 0 {
			return whole, nil
		}
	}
	if l.w == nil {
		l.w, l.err = l.store.Create(l.ctx, l.session)
		if l.err != nil {
			return len(p), nil
		}
	}
	if _, err := l.w.Write(p); err != nil {
		l.err = err
		return whole, nil
	}
	l.n += int64(len(p))
	return whole, nil
}

// close finishes the stored output and returns its id ("" if nothing was
// kept) and the first error met while keeping it.
func (l *lazySpill) close() (string, error) {
	if l.w == nil {
		return "", l.err
	}
	if err := l.w.Close(); err != nil && l.err == nil {
		l.err = err
	}
	if l.err != nil {
		return "", l.err
	}
	return l.w.ID(), nil
}
