package cli

import (
	"fmt"
	"strings"

	"github.com/harnessd/harnessd/core/agent"
	"github.com/harnessd/harnessd/core/event"
	"github.com/harnessd/harnessd/core/files"
	"github.com/harnessd/harnessd/core/python"
)

// Replayer checks that a session's history is whole as it is read: seqs
// run 1, 2, 3 … with no gap, and every observation that answers an action
// names an earlier action that has not been answered yet.
type Replayer struct {
	n        uint64
	open     map[uint64]event.Kind // actions awaiting their answer
	answered int
}

// Check takes the next event.
func (r *Replayer) Check(ev event.Event) error {
	if r.open == nil {
		r.open = map[uint64]event.Kind{}
	}
	if ev.Seq != r.n+1 {
		return fmt.Errorf("history broken: event #%d follows #%d", ev.Seq, r.n)
	}
	r.n = ev.Seq
	if ev.IsAction() {
		r.open[ev.Seq] = ev.Kind()
	}
	if ev.Cause != 0 {
		if _, ok := r.open[ev.Cause]; !ok {
			return fmt.Errorf("history broken: event #%d (%s) answers #%d, which is not an unanswered action", ev.Seq, ev.Kind(), ev.Cause)
		}
		delete(r.open, ev.Cause)
		r.answered++
	}
	return nil
}

// Done reports an action left without its observation, which only a
// crash between the two can cause. Messages and finishes are their own
// record: nothing answers them unless a hook refused them.
func (r *Replayer) Done() error {
	for seq, kind := range r.open {
		if kind == event.KindCmdRun || kind == event.KindDelegate || strings.HasPrefix(string(kind), "file_") {
			return fmt.Errorf("action #%d (%s) has no observation (the daemon stopped while it ran)", seq, kind)
		}
	}
	return nil
}

// Transcript renders one event as a terminal session would have shown it.
func Transcript(ev event.Event) string {
	switch p := agent.Unwrap(ev).(type) {
	case agent.RunStarted:
		return fmt.Sprintf("# run %s started: agent %s, task: %s\n", p.Run, p.Agent, p.Task)
	case agent.RunEnded:
		return fmt.Sprintf("# run %s ended: %s after %d steps, %d tokens, cost %.4f\n", p.Run, p.Reason, p.Steps, p.Tokens, p.Cost)
	case agent.AgentStep:
		if p.Thought == "" {
			return ""
		}
		return fmt.Sprintf("# (thinking) %s\n", p.Thought)
	case agent.GuidanceLoaded:
		return fmt.Sprintf("# guidance: %s\n", strings.Join(p.Files, ", "))
	case agent.ContextMasked:
		return fmt.Sprintf("# %d old observations masked to fit the context\n", len(p.Seqs))
	case agent.DelegateResult:
		return fmt.Sprintf("# delegated run %s (%s) ended %s: %s\n", p.Run, p.Agent, p.Reason, p.Message+p.Error)
	case event.Delegate:
		return fmt.Sprintf("# delegating to %s: %s\n", p.Agent, p.Task)
	case event.AgentCrashed:
		return fmt.Sprintf("# agent crashed: %s\n", p.Reason)
	case event.CmdRun:
		if p.IsInput {
			return fmt.Sprintf("⌨ %s\n", p.Command)
		}
		if p.Command == "" {
			return "… (waiting for more output)\n"
		}
		return "$ " + strings.ReplaceAll(p.Command, "\n", "\n> ") + "\n"
	case event.CmdOutput:
		var b strings.Builder
		b.WriteString(p.Output)
		if p.Output != "" && !strings.HasSuffix(p.Output, "\n") {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "[exit %d · %s · %dms", p.ExitCode, p.Cwd, p.DurationMS)
		if p.TimedOut {
			b.WriteString(" · timed out")
		}
		if p.ShellRebuilt {
			b.WriteString(" · shell rebuilt")
		}
		if p.Trimmed != nil && p.Trimmed.OutputID != "" {
			fmt.Fprintf(&b, " · full output: harnessd output %s", p.Trimmed.OutputID)
		}
		b.WriteString("]\n")
		if p.Note != "" {
			fmt.Fprintf(&b, "[note: %s]\n", p.Note)
		}
		return b.String()
	case event.Message:
		return fmt.Sprintf("# %s: %s\n", ev.Source, p.Text)
	case event.Finish:
		return fmt.Sprintf("# finished: %s\n", p.Message)
	case event.InvalidAction:
		return fmt.Sprintf("# invalid action: %s\n", p.Reason)
	case event.HookVeto:
		return fmt.Sprintf("# vetoed by %s: %s\n", p.Hook, p.Reason)
	case event.SandboxStarted:
		return fmt.Sprintf("# session started (%s sandbox %s, in %s)\n", p.Driver, p.SandboxID, p.Workdir)
	case event.SandboxStopped:
		return fmt.Sprintf("# session ended: %s\n", p.Reason)
	case files.View, files.Create, files.StrReplace, files.Insert, files.Undo:
		return fileTranscript(ev.Payload)
	case files.Result:
		return fileResultTranscript(p)
	case python.Run, python.Result:
		return pythonTranscript(ev.Payload)
	case event.NetConnect:
		if p.Closed {
			return fmt.Sprintf("# network: %s:%d closed, %d bytes up, %d down\n", p.Host, p.Port, p.BytesUp, p.BytesDown)
		}
		verdict := "refused"
		if p.Allowed {
			verdict = "allowed"
		}
		return fmt.Sprintf("# network: %s %s:%d %s (%s)\n", p.Method, p.Host, p.Port, verdict, p.Reason)
	}
	return fmt.Sprintf("# %s\n", ev.Kind())
}
