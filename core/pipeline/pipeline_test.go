package pipeline

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harnessd/harnessd/core/event"
	"github.com/harnessd/harnessd/core/session"
	"github.com/harnessd/harnessd/core/terminal"
)

// newSession starts a real session (bash on a PTY) over an in-memory log.
func newSession(t *testing.T) (*session.Session, *event.MemLog) {
	t.Helper()
	log := event.NewMemLog()
	s, err := session.New(context.Background(), "p", session.Config{
		Terminal: terminal.Options{Dir: t.TempDir(), KillGrace: 300 * time.Millisecond},
		Events:   log,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background(), "test over") })
	return s, log
}

func kinds(t *testing.T, log *event.MemLog) []event.Kind {
	t.Helper()
	var ks []event.Kind
	if err := log.Read(context.Background(), "p", 0, func(e event.Event) error {
		ks = append(ks, e.Kind())
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return ks
}

// TestEventsAreRecordedInOrder: the action is committed before its
// observation, which names it as cause; a finish is its own record.
func TestEventsAreRecordedInOrder(t *testing.T) {
	s, log := newSession(t)
	p := New(Options{})
	r, err := p.Do(context.Background(), s, event.SourceAgent, event.CmdRun{Command: "echo hi"})
	if err != nil {
		t.Fatal(err)
	}
	out, _ := r.Observation.Payload.(event.CmdOutput)
	if r.Action.Seq != 2 || r.Observation.Seq != 3 || r.Observation.Cause != 2 || out.Output != "hi\n" {
		t.Fatalf("seqs %d/%d cause %d output %q", r.Action.Seq, r.Observation.Seq, r.Observation.Cause, out.Output)
	}
	if r.Outcome.Trim == nil || r.Outcome.Trim.BytesTotal != 3 {
		t.Fatalf("trim counts: %+v", r.Outcome.Trim)
	}
	r, err = p.Do(context.Background(), s, event.SourceAgent, event.Finish{Message: "done"})
	if err != nil || r.Action.Seq != 4 || r.Observation != nil {
		t.Fatalf("finish: %+v, %v", r, err)
	}
	want := []event.Kind{event.KindSandboxStarted, event.KindCmdRun, event.KindCmdOutput, event.KindFinish}
	if got := kinds(t, log); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("kinds %v, want %v", got, want)
	}
}

// TestRefusedBeforeRecord: what is not an action, comes from a source an
// action cannot have, or has no executor is refused with nothing recorded:
// never answered as if it had been done.
func TestRefusedBeforeRecord(t *testing.T) {
	s, log := newSession(t)
	p := New(Options{})
	for _, c := range []struct {
		name string
		src  event.Source
		a    event.Payload
		want error
	}{
		{"nil", event.SourceUser, nil, ErrInvalid},
		{"observation", event.SourceUser, event.CmdOutput{}, ErrInvalid},
		{"runtime source", event.SourceRuntime, event.CmdRun{Command: "true"}, ErrInvalid},
		{"unknown source", "robot", event.CmdRun{Command: "true"}, ErrInvalid},
		{"no executor", event.SourceAgent, event.Delegate{Agent: "x", Task: "y"}, ErrNoExecutor},
	} {
		r, err := p.Do(context.Background(), s, c.src, c.a)
		if !errors.Is(err, c.want) || r.Action.Seq != 0 || r.Observation != nil {
			t.Errorf("%s: %+v, %v; want %v and nothing recorded", c.name, r, err, c.want)
		}
	}
	if got := kinds(t, log); len(got) != 1 {
		t.Fatalf("recorded %v, want only sandbox_started", got)
	}
}

// TestHandleAddsAKind: a registered executor is what carries the kind out.
func TestHandleAddsAKind(t *testing.T) {
	s, _ := newSession(t)
	p := New(Options{})
	p.Handle(event.KindDelegate, ExecutorFunc(func(ctx context.Context, c *Call) (Outcome, error) {
		d := c.Action.Payload.(event.Delegate)
		return Outcome{Observation: event.AgentCrashed{Reason: "no agent " + d.Agent}}, nil
	}))
	r, err := p.Do(context.Background(), s, event.SourceAgent, event.Delegate{Agent: "x", Task: "y"})
	if err != nil || r.Observation == nil || r.Observation.Cause != r.Action.Seq {
		t.Fatalf("%+v, %v", r, err)
	}
}

// hooks is a test policy: veto, ask or rewrite by the command's text.
type hooks struct {
	mu   sync.Mutex
	seen []string
}

func (h *hooks) BeforeAction(_ context.Context, _ *session.Session, _ event.Source, a event.Payload) (Decision, error) {
	c, ok := a.(event.CmdRun)
	if !ok {
		return Decision{}, nil
	}
	h.mu.Lock()
	h.seen = append(h.seen, c.Command)
	h.mu.Unlock()
	switch c.Command {
	case "rm -rf /":
		return Decision{Verdict: Veto, Hook: "policy.lua:3", Reason: "recursive delete of /"}, nil
	case "ask me":
		return Decision{Verdict: Ask, Hook: "policy.lua:9", Reason: "a person decides"}, nil
	case "echo old":
		return Decision{Verdict: Rewrite, Hook: "policy.lua:12", Action: event.CmdRun{Command: "echo new"}}, nil
	case "bad rewrite":
		return Decision{Verdict: Rewrite, Hook: "policy.lua:15", Action: event.Message{Text: "x"}}, nil
	}
	return Decision{}, nil
}

func (h *hooks) AfterObservation(_ context.Context, _ *session.Session, _ event.Event, o *Outcome) error {
	if out, ok := o.Observation.(event.CmdOutput); ok {
		out.Output = "[redacted]\n"
		o.Observation = out
	}
	return nil
}

type approver struct{ yes bool }

func (a approver) Approve(context.Context, *session.Session, event.Event, Decision) (bool, string, error) {
	return a.yes, "uid 1000", nil
}

func TestHooks(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name, cmd string
		approve   *approver
		wantKind  event.Kind
		wantRun   string // the command recorded
		wantText  string // output or veto reason
	}{
		{"allow", "echo hi", nil, event.KindCmdOutput, "echo hi", "[redacted]\n"},
		{"veto", "rm -rf /", nil, event.KindHookVeto, "rm -rf /", "recursive delete of /"},
		{"ask with no approver", "ask me", nil, event.KindHookVeto, "ask me", "needs a person's approval (a person decides), and no one approved it"},
		{"ask denied", "ask me", &approver{false}, event.KindHookVeto, "ask me", "needs a person's approval (a person decides); denied by uid 1000"},
		{"ask approved", "ask me", &approver{true}, event.KindCmdOutput, "ask me", "[redacted]\n"},
		{"rewrite", "echo old", nil, event.KindCmdOutput, "echo new", "[redacted]\n"},
		{"rewrite to another kind", "bad rewrite", nil, event.KindHookVeto, "bad rewrite", "the hook's rewrite was not an action of the same kind"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, _ := newSession(t)
			opts := Options{Hooks: &hooks{}}
			if c.approve != nil {
				opts.Approver = *c.approve
			}
			r, err := New(opts).Do(ctx, s, event.SourceAgent, event.CmdRun{Command: c.cmd})
			if err != nil {
				t.Fatal(err)
			}
			if got := r.Action.Payload.(event.CmdRun).Command; got != c.wantRun {
				t.Errorf("recorded %q, want %q", got, c.wantRun)
			}
			if r.Observation == nil || r.Observation.Kind() != c.wantKind || r.Observation.Cause != r.Action.Seq {
				t.Fatalf("observation %+v, want %s answering seq %d", r.Observation, c.wantKind, r.Action.Seq)
			}
			switch o := r.Observation.Payload.(type) {
			case event.HookVeto:
				if o.Reason != c.wantText || o.Hook == "" || r.Observation.Source != event.SourceHook {
					t.Errorf("veto %+v from %s", o, r.Observation.Source)
				}
			case event.CmdOutput:
				if o.Output != c.wantText {
					t.Errorf("output %q, want %q", o.Output, c.wantText)
				}
			}
		})
	}
}

// TestObservationRecordedAfterCancel: a command whose caller goes away
// is still answered in the log.
func TestObservationRecordedAfterCancel(t *testing.T) {
	s, log := newSession(t)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	r, err := New(Options{}).Do(ctx, s, event.SourceAgent, event.CmdRun{Command: "sleep 3"})
	if err == nil || r.Observation == nil || r.Observation.Cause != r.Action.Seq {
		t.Fatalf("%+v, %v: want an error and a recorded observation", r, err)
	}
	want := []event.Kind{event.KindSandboxStarted, event.KindCmdRun, event.KindCmdOutput}
	if got := kinds(t, log); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("kinds %v, want %v", got, want)
	}
}

// TestReply: a parsed reply goes through Do; a malformed one is answered
// with invalid_action and nothing runs.
func TestReply(t *testing.T) {
	s, _ := newSession(t)
	p := New(Options{})
	src, a, err := Reply{Text: "```bash\necho hi"}.Parse()
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.DoReply(context.Background(), s, src, a)
	if err != nil || res.Action != nil || res.Observation == nil || res.Observation.Kind() != event.KindInvalidAction {
		t.Fatalf("%+v, %v", res, err)
	}
	src, a, err = Reply{Tool: "bash", Arguments: []byte(`{"command":"echo hi"}`)}.Parse()
	if err != nil {
		t.Fatal(err)
	}
	res, err = p.DoReply(context.Background(), s, src, a)
	if err != nil || res.Action == nil || res.Action.Source != event.SourceAgent || res.Observation.Payload.(event.CmdOutput).Output != "hi\n" {
		t.Fatalf("%+v, %v", res, err)
	}
	// A reply that parses into an action Do would refuse is malformed
	// model output too: answered with invalid_action, nothing run.
	for _, r := range []Reply{
		{Text: "```bash\necho a\x00b\n```"},
		{Tool: "bash", Arguments: []byte(`{"command":"echo \u0000"}`)},
	} {
		src, a, err := r.Parse()
		if err != nil {
			t.Fatal(err)
		}
		res, err := p.DoReply(context.Background(), s, src, a)
		if err != nil || res.Action != nil || res.Observation == nil {
			t.Fatalf("%+v: %+v, %v; want an invalid_action and no action", r, res, err)
		}
		if ia, ok := res.Observation.Payload.(event.InvalidAction); !ok || !strings.Contains(ia.Reason, "NUL") {
			t.Fatalf("%+v: observation %+v, want an invalid_action naming the NUL", r, res.Observation)
		}
	}
	for _, r := range []Reply{{}, {Text: "x", Tool: "bash"}, {Text: "x", Source: event.SourceRuntime}} {
		if _, _, err := r.Parse(); !errors.Is(err, ErrInvalid) {
			t.Errorf("%+v: %v, want ErrInvalid", r, err)
		}
	}
}
