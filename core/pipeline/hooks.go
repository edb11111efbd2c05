package pipeline

import (
	"context"

	"github.com/harnessd/harnessd/core/event"
	"github.com/harnessd/harnessd/core/session"
)

// Verdict is what the pre-action hooks decided. The order is strictness:
// when several hooks decide, the strictest wins.
type Verdict int

// The verdicts, least strict first.
const (
	Allow   Verdict = iota // run it as it is
	Rewrite                // run Decision.Action instead
	Ask                    // a person decides (Approver)
	Veto                   // do not run it; answer with hook_veto
)

func (v Verdict) String() string {
	switch v {
	case Allow:
		return "allow"
	case Rewrite:
		return "rewrite"
	case Ask:
		return "ask"
	case Veto:
		return "veto"
	}
	return "unknown"
}

// Decision is the pre-action hooks' answer about one action.
type Decision struct {
	Verdict Verdict
	// Hook names the hook that decided (its file and line), for the record.
	Hook   string
	Reason string
	// Action is what runs instead, for Rewrite; the same kind as the
	// action it replaces.
	Action event.Payload
}

// Hooks are the policies an action passes through: the Lua engine plugs in
// here. Both methods run on the action's goroutine, in the session's turn.
type Hooks interface {
	// BeforeAction decides about an action before it is committed. An
	// error is the hooks' own failure, not a verdict; a policy that
	// should fail closed returns Veto instead.
	BeforeAction(ctx context.Context, s *session.Session, src event.Source, a event.Payload) (Decision, error)
	// AfterObservation may change an observation before it is committed
	// and shown to the model: trim it differently, redact it.
	AfterObservation(ctx context.Context, s *session.Session, action event.Event, out *Outcome) error
}

// NoHooks allows every action and leaves every observation as it is.
type NoHooks struct{}

// BeforeAction allows a.
func (NoHooks) BeforeAction(context.Context, *session.Session, event.Source, event.Payload) (Decision, error) {
	return Decision{Verdict: Allow}, nil
}

// AfterObservation changes nothing.
func (NoHooks) AfterObservation(context.Context, *session.Session, event.Event, *Outcome) error {
	return nil
}

// Approver asks a person about a recorded action a hook asked about, and
// waits for the answer: approved or not, and who decided ("" when no one
// did, as on a timeout). It must not hold anything a reader of the session
// needs: the session stays readable while it waits. An error (ctx ended)
// is no decision; the action is answered as refused.
type Approver interface {
	Approve(ctx context.Context, s *session.Session, action event.Event, d Decision) (approved bool, by string, err error)
}

// Approval records a person's yes to an action a hook asked about; a no is
// the hook_veto that answers the action instead.
type Approval struct {
	Approved bool   `json:"approved"`
	By       string `json:"by"`
	Hook     string `json:"hook,omitempty"`
	Reason   string `json:"reason,omitempty"`
}

// KindApproval is Approval's kind: an observation whose cause is the action.
const KindApproval event.Kind = "approval"

// Kind implements event.Payload.
func (Approval) Kind() event.Kind { return KindApproval }

func init() { event.Register[Approval](KindApproval, event.Observation) }
