// Package demo is harnessd's scripted walkthrough: a canned agent sends a
// handful of replies through the real parser, a real terminal and the
// trimmer, and every action and observation is printed as it happens. Each
// act checks what it shows, so the demo fails loudly if a pillar breaks.
package demo

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/harnessd/harnessd/core/config"
	"github.com/harnessd/harnessd/core/event"
	"github.com/harnessd/harnessd/core/parse"
	"github.com/harnessd/harnessd/core/session"
	"github.com/harnessd/harnessd/core/terminal"
	"github.com/harnessd/harnessd/core/trim"
	"github.com/harnessd/harnessd/store"
)

// Options configures a demo run. The zero value is the README's demo.
type Options struct {
	// Dir is where the demo keeps its workspace and outputs; default a new
	// temporary directory, kept so the store can be inspected afterwards.
	Dir string
	// Config supplies the terminal and trim settings; the zero value means
	// config.Default().
	Config *config.Config
}

// sessionConfig turns the file's settings into a session's.
func sessionConfig(c config.Config, dir string) session.Config {
	env := make([]string, 0, len(c.Terminal.Env))
	for k, v := range c.Terminal.Env {
		env = append(env, k+"="+v)
	}
	sort.Strings(env)
	return session.Config{
		Terminal: terminal.Options{
			Shell:       c.Terminal.Shell,
			Dir:         dir,
			Env:         env,
			SoftTimeout: c.Terminal.SoftTimeout.Duration,
			HardTimeout: c.Terminal.HardTimeout.Duration,
			KillGrace:   c.Terminal.KillGrace.Duration,
			Cols:        c.Terminal.Cols,
			Rows:        c.Terminal.Rows,
		},
		Trim: trim.Config{
			Head:     c.Trim.Head,
			Tail:     c.Trim.Tail,
			MaxKeep:  c.Trim.MaxKeep,
			Keywords: c.Trim.Keywords,
			LineCap:  c.Trim.LineCap,
		},
	}
}

// act is one step of the script: what the model says and what must be true
// of the outcome.
type act struct {
	title   string
	replies []string                    // model replies, in order (a malformed one, then its fix)
	want    string                      // what the act shows, printed when it holds
	ok      func(o session.Result) bool // whether it holds
	timeout time.Duration
}

// Run plays the script and writes a readable transcript to w: every event
// as the bus delivers it, after the store has committed it.
func Run(ctx context.Context, w io.Writer, opts Options) error {
	dir := opts.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "harnessd-demo-")
		if err != nil {
			return err
		}
		dir = d
	}
	ws := filepath.Join(dir, "workspace")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		return err
	}
	dbPath := filepath.Join(dir, "harnessd.db")
	st, err := store.Open(dbPath, nil)
	if err != nil {
		return err
	}
	defer st.Close()
	bus := event.NewBus(st, nil)
	defer bus.Close()
	const id = "demo"
	if _, err := st.CreateSession(ctx, store.Session{ID: id, Labels: map[string]string{"agent": "scripted"}}); err != nil {
		return err
	}
	subCtx, stopSub := context.WithCancel(ctx)
	defer stopSub()
	events, subErrs := bus.Subscribe(subCtx, id, 0)

	p := &printer{w: w, events: events, errs: subErrs}
	p.f("== harnessd demo: a persistent bash on a real PTY, every event committed to bbolt ==\n")
	p.f("[harness] store %s\n", dbPath)

	cfg := config.Default()
	if opts.Config != nil {
		cfg = *opts.Config
	}
	scfg := sessionConfig(cfg, dir)
	scfg.Events, scfg.Outputs = bus, st.Outputs()
	sess, err := session.New(ctx, id, scfg)
	if err != nil {
		return err
	}
	closed := false
	defer func() {
		if !closed {
			sess.Close(context.WithoutCancel(ctx), "demo aborted")
		}
	}()
	pid := sess.PID()
	p.f("[harness] shell pid=%d, workspace %s; every command below goes to this same shell\n", pid, ws)
	if err := p.until(1); err != nil {
		return err
	}

	acts := []act{
		{
			title:   "Act 1 · create a workspace and export a variable",
			replies: []string{"I'll set things up.\n```bash\nmkdir -p " + ws + " && cd " + ws + " && export ENV_KEY=harnessd && echo READY\n```"},
			want:    "exit 0, cwd " + ws + ", output READY",
			ok: func(o session.Result) bool {
				return o.Output.ExitCode == 0 && o.Output.Cwd == ws && o.Output.Output == "READY\n"
			},
		},
		{
			title:   "Act 2 · the next command sees the same directory and variable",
			replies: []string{"```bash\npwd && echo \"ENV_KEY=$ENV_KEY\"\n```"},
			want:    fmt.Sprintf("cwd and ENV_KEY inherited by the same shell (pid %d)", pid),
			ok: func(o session.Result) bool {
				return o.Output.Output == ws+"\nENV_KEY=harnessd\n" && o.Output.PID == pid
			},
		},
		{
			title:   "Act 3 · `false` reports its exit code",
			replies: []string{"```sh\nfalse\n```"},
			want:    "exit code 1",
			ok:      func(o session.Result) bool { return o.Output.ExitCode == 1 },
		},
		{
			title: "Act 4 · 100,001 lines of log with a Traceback in the middle",
			replies: []string{"```bash\nfor i in $(seq 1 100000); do echo \"log line $i\"; " +
				"if [ \"$i\" = 50000 ]; then echo 'Traceback (most recent call last): simulated failure'; fi; done\n```"},
			want: "100,001 lines trimmed to head + tail + the Traceback line, with exact counts",
			ok: func(o session.Result) bool {
				t := o.Trim
				return t.LinesTotal == 100001 && t.Trimmed && t.KeptKeyword == 1 &&
					strings.Contains(o.Output.Output, "Traceback (most recent call last)") &&
					strings.HasPrefix(o.Output.Output, "log line 1\n") && strings.HasSuffix(o.Output.Output, "log line 100000\n")
			},
		},
		{
			title: "Act 5 · a malformed reply becomes an observation the model corrects",
			replies: []string{
				"Okay, let me check the environment:\n```bash\nls -la " + ws,
				"Sorry, the fence was not closed. Resending:\n```bash\nls -la " + ws + " | head -3\n```",
			},
			want: "invalid_action first, then the corrected command ran",
			ok: func(o session.Result) bool {
				return o.Output.ExitCode == 0 && strings.HasPrefix(o.Output.Output, "total")
			},
		},
		{
			title:   "Act 6 · `sleep 5` under a 300 ms hard timeout is interrupted; the shell survives",
			replies: []string{"```bash\nsleep 5\n```"},
			timeout: 300 * time.Millisecond,
			want:    fmt.Sprintf("timed out and interrupted; same shell pid %d", pid),
			ok: func(o session.Result) bool {
				return o.Output.TimedOut && !o.Output.ShellRebuilt && o.Output.PID == pid && o.Output.DurationMS < 3000
			},
		},
		{
			title:   "Act 7 · the shell is still the same one",
			replies: []string{"```bash\necho \"pid=$$ cwd=$PWD\"\n```"},
			want:    fmt.Sprintf("same pid %d and cwd after all of the above", pid),
			ok: func(o session.Result) bool {
				return o.Output.Output == fmt.Sprintf("pid=%d cwd=%s\n", pid, ws)
			},
		},
	}

	var failed []string
	var bigOutput string
	for _, a := range acts {
		p.f("\n──────── %s ────────\n", a.title)
		var last session.Result
		ran := false
		for _, reply := range a.replies {
			p.f("  [model]   %s\n", oneLine(reply, 100))
			var ev event.Event
			switch act := parse.Text(reply).(type) {
			case parse.Malformed:
				ev, err = sess.Record(ctx, event.SourceRuntime, 0, event.InvalidAction{Reason: act.Reason, Guidance: act.Guidance})
			case parse.RunBash:
				timeout := a.timeout
				if act.Timeout > 0 {
					timeout = act.Timeout
				}
				last, err = sess.Run(ctx, event.SourceAgent, event.CmdRun{Command: act.Command, IsInput: act.IsInput, TimeoutS: timeout.Seconds(), Reset: act.Reset})
				ev, ran = last.Observation, true
				if t := last.Output.Trimmed; t != nil && t.LinesTotal > 100000 {
					bigOutput = t.OutputID
				}
			case parse.Message:
				ev, err = sess.Record(ctx, event.SourceAgent, 0, event.Message{Text: act.Text})
			case parse.Finish:
				ev, err = sess.Record(ctx, event.SourceAgent, 0, event.Finish{Message: act.Message})
			}
			if err != nil {
				return err
			}
			if err := p.until(ev.Seq); err != nil {
				return err
			}
		}
		switch {
		case !ran:
			failed = append(failed, a.title+": no command ran")
		case a.ok(last):
			p.f("  ✓ %s\n", a.want)
		default:
			p.f("  ✗ expected %s\n", a.want)
			failed = append(failed, a.title)
		}
	}
	fin, err := sess.Record(ctx, event.SourceAgent, 0, event.Finish{Message: "demo complete"})
	if err != nil {
		return err
	}
	if err := p.until(fin.Seq); err != nil {
		return err
	}
	closed = true
	if err := sess.Close(ctx, "demo finished"); err != nil {
		return err
	}
	if err := p.until(fin.Seq + 1); err != nil {
		return err
	}

	if bigOutput != "" {
		lines, err := st.Outputs().ReadLines(ctx, bigOutput, 50000, 50002)
		if err != nil {
			return fmt.Errorf("read back output %s: %w", bigOutput, err)
		}
		p.f("\n[outputs] the full 100,001-line output is kept as %s; lines %d-%d of %d read back:\n", bigOutput, lines.From, lines.To, lines.Total)
		for _, l := range strings.SplitAfter(strings.TrimSuffix(lines.Text, "\n"), "\n") {
			p.f("      | %s\n", strings.TrimSuffix(l, "\n"))
		}
	}

	// Replay from the store alone: the same events, byte for byte, as the
	// bus delivered live.
	replayed := 0
	kinds := map[event.Kind]int{}
	if err := st.Read(ctx, id, 0, func(e event.Event) error {
		replayed++
		kinds[e.Kind()]++
		live, ok := p.seen[e.Seq]
		if !ok {
			return fmt.Errorf("replay: event %d was never delivered live", e.Seq)
		}
		a, err := e.MarshalJSON()
		if err != nil {
			return err
		}
		if b, err := live.MarshalJSON(); err != nil || string(a) != string(b) {
			return fmt.Errorf("replay: event %d differs from what was delivered", e.Seq)
		}
		return nil
	}); err != nil {
		return err
	}
	p.f("\n-------- summary --------\n")
	p.f("%d events replayed from %s, identical to the live stream: %d cmd_run, %d cmd_output, %d invalid_action; shell pid %d throughout\n",
		replayed, dbPath, kinds[event.KindCmdRun], kinds[event.KindCmdOutput], kinds[event.KindInvalidAction], pid)
	p.f("inspect it later: the store and outputs stay in %s\n", dir)
	if p.err != nil {
		return p.err
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d act(s) failed: %s", len(failed), strings.Join(failed, "; "))
	}
	p.f("all %d acts passed\n", len(acts))
	return p.err
}

// printer writes the transcript and remembers the first write error. Events
// are printed as the bus delivers them.
type printer struct {
	w      io.Writer
	err    error
	events <-chan event.Event
	errs   <-chan error
	seen   map[uint64]event.Event
}

func (p *printer) f(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, args...)
	}
}

// until prints delivered events up to and including seq.
func (p *printer) until(seq uint64) error {
	if p.seen == nil {
		p.seen = map[uint64]event.Event{}
	}
	for {
		if _, ok := p.seen[seq]; ok {
			return nil
		}
		select {
		case e, ok := <-p.events:
			if !ok {
				return fmt.Errorf("event stream ended before event %d: %w", seq, <-p.errs)
			}
			p.seen[e.Seq] = e
			p.event(e)
		case <-time.After(10 * time.Second):
			return fmt.Errorf("event %d was not delivered within 10s", seq)
		}
	}
}

func (p *printer) event(e event.Event) {
	head := fmt.Sprintf("  #%-3d %-7s %-15s", e.Seq, e.Source, e.Kind())
	switch pl := e.Payload.(type) {
	case event.CmdRun:
		p.f("%s %s\n", head, oneLine(pl.Command, 90))
	case event.CmdOutput:
		p.cmdOutput(head, e.Cause, pl)
	case event.InvalidAction:
		p.f("%s %s\n        guidance: %s\n", head, pl.Reason, oneLine(pl.Guidance, 150))
	case event.Message:
		p.f("%s %s\n", head, oneLine(pl.Text, 90))
	case event.Finish:
		p.f("%s %s\n", head, oneLine(pl.Message, 90))
	case event.SandboxStarted:
		p.f("%s driver=%s (no isolation yet: the shell runs on the host) pid=%s\n", head, pl.Driver, pl.SandboxID)
	case event.SandboxStopped:
		p.f("%s pid=%s %s\n", head, pl.SandboxID, pl.Reason)
	default:
		p.f("%s\n", head)
	}
}

func (p *printer) cmdOutput(head string, cause uint64, o event.CmdOutput) {
	state := fmt.Sprintf("exit=%d", o.ExitCode)
	if o.ExitCode == -1 {
		state = "running"
	}
	if o.TimedOut {
		state += " timed_out"
	}
	if o.ShellRebuilt {
		state += " shell_rebuilt"
	}
	p.f("%s (answers #%d) %s cwd=%s pid=%d %dms", head, cause, state, o.Cwd, o.PID, o.DurationMS)
	if t := o.Trimmed; t != nil {
		p.f(" [%d lines, %d omitted, full output %s]", t.LinesTotal, t.LinesOmitted, t.OutputID)
	}
	p.f("\n")
	text := strings.TrimSuffix(o.Output, "\n")
	if text != "" {
		lines := strings.Split(text, "\n")
		for i, l := range lines {
			if len(lines) > 14 && i >= 6 && i < len(lines)-6 {
				if i == 6 {
					p.f("        | … (the model sees %d more lines here; the placeholder and kept lines follow)\n", len(lines)-12)
				}
				if !strings.HasPrefix(l, "[") && !strings.Contains(l, "Traceback") {
					continue
				}
			}
			p.f("        | %s\n", oneLine(l, 160))
		}
	}
	if o.Note != "" {
		p.f("        note: %s\n", o.Note)
	}
}

// oneLine shortens s to one line of at most n runes for the transcript.
func oneLine(s string, n int) string {
	s = strings.ReplaceAll(strings.TrimSpace(s), "\n", " ⏎ ")
	r := []rune(s)
	if len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
