package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/core/agent"
	"github.com/harnessd/harnessd/core/daemon"
	"github.com/harnessd/harnessd/core/event"
)

// Exit statuses of run.
const (
	ExitRunStopped = 130 // the run was stopped (Ctrl-C)
)

// run is `harnessd run`: start an agent run, print what it does as it
// happens, and exit 0 only if the agent finished.
func (c *cmd) run(args []string) int {
	fs, socket := c.flags("run")
	agentName := fs.String("agent", "", "the agent (one of harness.toml's [agents]; default run.agent)")
	sessionID := fs.String("session", "", "run in this live session (default: a new one)")
	workspace := fs.String("workspace", "", "for a new session: work in this directory (default: a fresh empty one)")
	gitSrc := fs.String("git", "", "for a new session: work in a fresh clone of the repository REPO at REF (REPO[@REF])")
	profile := fs.String("profile", "", "for a new session: its sandbox gets harness.toml's [profiles.NAME] settings")
	maxSteps := fs.Int("max-steps", 0, "step limit (default run.max_steps)")
	wall := fs.Duration("wall", 0, "wall-clock budget (default run.wall)")
	maxCost := fs.Float64("max-cost", 0, "cost budget (default run.max_cost)")
	maxTokens := fs.Int64("max-tokens", 0, "token budget (default run.max_tokens)")
	attended := fs.Bool("attended", false, "end the run when the agent asks something, instead of nudging it on")
	pos, err := parse(fs, args)
	if err != nil {
		return 2
	}
	if len(pos) == 0 {
		return c.usage(`want a task: harnessd run [--agent NAME] "what to do"`)
	}
	if *sessionID != "" && (*workspace != "" || *gitSrc != "" || *profile != "") {
		return c.usage("--workspace, --git and --profile make a new session; they do not go with --session")
	}
	task := strings.Join(pos, " ")
	cl := c.client(*socket)
	defer cl.Close()
	ctx := context.WithoutCancel(c.ctx) // Ctrl-C stops the run; it does not drop the connection
	sid := *sessionID
	if sid == "" {
		req := daemon.CreateRequest{Labels: map[string]string{"by": "harnessd run"}, Profile: *profile}
		if *workspace != "" {
			abs, err := filepath.Abs(*workspace)
			if err != nil {
				return c.fail(err)
			}
			req.Workspace = abs
		}
		if req.Git, err = gitSource(*gitSrc); err != nil {
			return c.fail(err)
		}
		info, err := cl.CreateSession(ctx, req)
		if err != nil {
			return c.fail(err)
		}
		sid = info.ID
		fmt.Fprintf(c.env.Stderr, "[harnessd] session %s (workspace %s)\n", sid, info.Workspace)
	}
	limits := agent.Limits{MaxSteps: *maxSteps, WallS: wall.Seconds(), MaxCost: *maxCost, MaxTokens: *maxTokens, Attended: *attended}
	info, err := cl.StartRun(ctx, sid, agent.Request{Agent: *agentName, Task: task, Limits: limits})
	if err != nil {
		return c.fail(err)
	}
	w := newRunPrinter(c.env.Stdout, c.env.Stderr, info, c.json)
	stopped := make(chan struct{})
	var stopOnce sync.Once
	go func() {
		select {
		case <-c.ctx.Done():
			stopOnce.Do(func() { close(stopped) })
			w.status("stopping the run (Ctrl-C)…")
			sctx, cancel := context.WithTimeout(ctx, 60*time.Second)
			defer cancel()
			if _, err := cl.StopRun(sctx, info.ID); err != nil {
				fmt.Fprintf(c.env.Stderr, "harnessd run: stop: %v\n", err)
			}
		case <-w.done:
		}
	}()
	follow, cancel := context.WithCancel(ctx)
	defer cancel()
	err = cl.Events(follow, sid, info.StartSeq-1, true, func(ev event.Event) error {
		if w.event(ev) {
			cancel() // the run ended: the session goes on, the follow need not
		}
		return nil
	})
	if err != nil && !errors.Is(err, context.Canceled) {
		w.clear()
		return c.fail(err)
	}
	// run_ended is recorded a moment before the run's record says it
	// ended (the session is freed in between): wait for the record.
	var end agent.Info
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if end, err = cl.Run(ctx, info.ID); err != nil {
			w.clear()
			return c.fail(err)
		}
		if end.State == agent.StateEnded || time.Now().After(deadline) {
			break
		}
	}
	w.finish(end)
	select {
	case <-stopped:
		return ExitRunStopped
	default:
	}
	if end.Reason != agent.ReasonFinished {
		return 1
	}
	return 0
}

// runPrinter prints a run's events as they come, with a progress line
// on a terminal.
type runPrinter struct {
	out, errw io.Writer
	json      bool
	tty       bool
	info      agent.Info
	started   time.Time
	done      chan struct{}

	mu      sync.Mutex
	step    int
	tokens  int64
	cost    float64
	line    string // the progress line on screen
	depth   int    // sub-runs open
	tick    *time.Ticker
	stopped bool
}

func newRunPrinter(out, errw io.Writer, info agent.Info, asJSON bool) *runPrinter {
	p := &runPrinter{out: out, errw: errw, json: asJSON, info: info, started: time.Now(), done: make(chan struct{})}
	if f, ok := errw.(*os.File); ok {
		if _, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS); err == nil {
			p.tty = true
		}
	}
	if p.tty && !asJSON {
		p.tick = time.NewTicker(time.Second)
		go func() {
			for {
				select {
				case <-p.tick.C:
					p.mu.Lock()
					p.progress()
					p.mu.Unlock()
				case <-p.done:
					return
				}
			}
		}()
	}
	return p
}

// event prints one event; true once the run has ended.
func (p *runPrinter) event(ev event.Event) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	end := false
	switch v := agent.Unwrap(ev).(type) {
	case agent.RunStarted:
		if v.Run != p.info.ID {
			p.depth++
		}
	case agent.RunEnded:
		if v.Run == p.info.ID {
			end = true
		} else if p.depth > 0 {
			p.depth--
		}
	case agent.AgentStep:
		if v.Run == p.info.ID {
			p.step = v.Step
		}
		p.tokens += v.PromptTokens + v.CompletionTokens
		p.cost += v.Cost
	}
	if p.json {
		b, _ := ev.MarshalJSON()
		fmt.Fprintf(p.out, "%s\n", b)
	} else if s := p.format(ev); s != "" {
		p.clearLocked()
		indent := strings.Repeat("  ", p.depth)
		for _, l := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
			fmt.Fprintf(p.out, "%s%s\n", indent, l)
		}
	}
	if end {
		p.stop()
	} else {
		p.progress()
	}
	return end
}

// format is an event as the run's transcript shows it; "" skips it.
func (p *runPrinter) format(ev event.Event) string {
	switch v := agent.Unwrap(ev).(type) {
	case agent.RunStarted:
		s := fmt.Sprintf("▶ run %s · agent %s · %d steps max", v.Run, v.Agent, v.Limits.MaxSteps)
		if v.Parent != "" {
			s = fmt.Sprintf("▶ sub-run %s of %s · agent %s", v.Run, v.Parent, v.Agent)
		}
		return s + "\n  task: " + oneLine(v.Task, 200)
	case agent.GuidanceLoaded:
		s := "· guidance: " + strings.Join(v.Files, ", ")
		if len(v.Skipped) > 0 {
			s += " (skipped: " + strings.Join(v.Skipped, "; ") + ")"
		}
		return s
	case agent.AgentStep:
		if v.Thought == "" {
			return ""
		}
		return fmt.Sprintf("[%d] 💭 %s", v.Step, oneLine(v.Thought, 300))
	case agent.ContextMasked:
		return fmt.Sprintf("· context: %d old observations masked (%d → %d tokens)", len(v.Seqs), v.TokensBefore, v.TokensAfter)
	case agent.DelegateResult:
		return fmt.Sprintf("◀ delegated run %s (%s): %s", v.Run, v.Reason, oneLine(v.Message+v.Error, 200))
	case agent.RunEnded:
		if v.Run == p.info.ID {
			return "" // finish prints the summary
		}
		return fmt.Sprintf("■ sub-run %s ended: %s · %d steps", v.Run, v.Reason, v.Steps)
	case event.CmdRun:
		who := ""
		if ev.Source != event.SourceAgent {
			who = " (" + string(ev.Source) + ")"
		}
		if v.IsInput {
			return fmt.Sprintf("[%d] ⌨ %s%s", p.step, oneLine(v.Command, 200), who)
		}
		if v.Command == "" {
			return fmt.Sprintf("[%d] … waiting for more output%s", p.step, who)
		}
		return fmt.Sprintf("[%d] $ %s%s", p.step, indentMore(v.Command), who)
	case event.CmdOutput:
		var b strings.Builder
		lines := strings.Split(strings.TrimSuffix(v.Output, "\n"), "\n")
		if v.Output == "" {
			lines = nil
		}
		for i, l := range lines {
			if len(lines) > 24 && i == 10 {
				fmt.Fprintf(&b, "    │ … %d lines …\n", len(lines)-20)
			}
			if len(lines) > 24 && i >= 10 && i < len(lines)-10 {
				continue
			}
			fmt.Fprintf(&b, "    │ %s\n", oneLine(l, 200))
		}
		state := fmt.Sprintf("exit %d", v.ExitCode)
		if v.ExitCode == -1 {
			state = "still running"
		}
		if v.TimedOut {
			state += ", timed out"
		}
		fmt.Fprintf(&b, "    └ %s · %s · %dms", state, v.Cwd, v.DurationMS)
		if v.Trimmed != nil {
			fmt.Fprintf(&b, " · %d of %d lines trimmed (harnessd output %s)", v.Trimmed.LinesOmitted, v.Trimmed.LinesTotal, v.Trimmed.OutputID)
		}
		return b.String()
	case event.Message:
		if ev.Source == event.SourceAgent {
			return fmt.Sprintf("[%d] 💬 %s", p.step, v.Text)
		}
		return "    ↳ " + oneLine(v.Text, 300)
	case event.InvalidAction:
		return fmt.Sprintf("[%d] ✗ unusable reply: %s", p.step, oneLine(v.Reason, 200))
	case event.HookVeto:
		return fmt.Sprintf("    ✗ refused by %s: %s", v.Hook, oneLine(v.Reason, 200))
	case event.AgentCrashed:
		return "⚠ agent crashed: " + oneLine(v.Reason, 300)
	case event.Delegate:
		return fmt.Sprintf("[%d] → delegating to %s: %s", p.step, v.Agent, oneLine(v.Task, 200))
	case event.Finish:
		return fmt.Sprintf("[%d] ✔ finish: %s", p.step, v.Message)
	case event.SandboxStopped:
		return "■ the session ended: " + oneLine(v.Reason, 200)
	}
	return ""
}

func indentMore(cmd string) string {
	return strings.ReplaceAll(strings.TrimSuffix(cmd, "\n"), "\n", "\n    ")
}

// progress redraws the progress line: step n/max, tokens, cost, elapsed.
func (p *runPrinter) progress() {
	if !p.tty || p.json || p.stopped {
		return
	}
	s := fmt.Sprintf("⏵ step %d/%d · %d tokens · $%.4f · %s", p.step, p.info.Limits.MaxSteps, p.tokens, p.cost, time.Since(p.started).Round(time.Second))
	p.clearLocked()
	fmt.Fprint(p.errw, s)
	p.line = s
}

// status replaces the progress line with a message, until the next event.
func (p *runPrinter) status(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clearLocked()
	fmt.Fprintf(p.errw, "[harnessd] %s\n", s)
}

func (p *runPrinter) clearLocked() {
	if p.line != "" {
		fmt.Fprint(p.errw, "\r\033[K")
		p.line = ""
	}
}

func (p *runPrinter) clear() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clearLocked()
	p.stop()
}

func (p *runPrinter) stop() {
	if !p.stopped {
		p.stopped = true
		if p.tick != nil {
			p.tick.Stop()
		}
		close(p.done)
	}
}

// finish prints the run's summary.
func (p *runPrinter) finish(end agent.Info) {
	p.clear()
	if p.json {
		return
	}
	took := end.Ended.Sub(end.Started).Round(100 * time.Millisecond)
	fmt.Fprintf(p.out, "■ run %s ended: %s · %d steps · %d tokens · $%.4f · %s\n", end.ID, end.Reason, end.Steps, end.Tokens, end.Cost, took)
	if end.Message != "" {
		fmt.Fprintf(p.out, "  %s\n", end.Message)
	}
	if end.Error != "" {
		fmt.Fprintf(p.out, "  error: %s\n", end.Error)
	}
	fmt.Fprintf(p.errw, "[harnessd] the session %s stays live: harnessd events %s, harnessd session rm %s\n", end.Session, end.Session, end.Session)
}

// gitSource reads --git REPO[@REF]: the ref follows the last '@', unless
// the whole argument is a directory (a path with an '@' in it). The path
// is made absolute here: the daemon has its own working directory.
func gitSource(arg string) (*daemon.GitSource, error) {
	if arg == "" {
		return nil, nil
	}
	repo, ref := arg, ""
	if i := strings.LastIndexByte(arg, '@'); i > 0 {
		if st, err := os.Stat(arg); err != nil || !st.IsDir() {
			repo, ref = arg[:i], arg[i+1:]
		}
	}
	abs, err := filepath.Abs(repo)
	if err != nil {
		return nil, err
	}
	return &daemon.GitSource{Repo: abs, Ref: ref}, nil
}
