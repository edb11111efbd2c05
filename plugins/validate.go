package plugins

import (
	"fmt"
	"math"
	"regexp"
	"unicode/utf8"

	"github.com/harnessd/harnessd/core/agent"
	pb "github.com/harnessd/harnessd/plugins/proto"
)

// Limits on what a plugin may return, in bytes.
const (
	MaxCommand  = 1 << 20   // a command, a message, a reply, its arguments
	MaxThought  = 256 << 10 // a thought
	MaxTask     = 64 << 10  // a delegated task
	MaxName     = 128       // an agent's or a model's name
	MaxMasked   = 100000    // seqs in one Masked
	maxTokens   = 1 << 40
	maxCost     = 1e9
	maxTimeoutS = 7 * 24 * 3600
)

// Action kinds a plugin may declare in InfoResponse.actions.
var actionKinds = map[string]bool{"cmd_run": true, "message": true, "finish": true, "delegate": true, "think": true}

var agentName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// ValidateInfo checks an InfoResponse.
func ValidateInfo(in *pb.InfoResponse) error {
	if in == nil {
		return fmt.Errorf("%w: no info", ErrGarbage)
	}
	if err := text("name", in.GetName(), MaxName); err != nil {
		return err
	}
	if in.GetName() == "" {
		return fmt.Errorf("%w: info has no name", ErrGarbage)
	}
	if err := text("version", in.GetVersion(), MaxName); err != nil {
		return err
	}
	for _, a := range in.GetActions() {
		if !actionKinds[a] {
			return fmt.Errorf("%w: info names action %q (want cmd_run, message, finish, delegate or think)", ErrGarbage, a)
		}
	}
	return nil
}

// Kind names what a step response asks for (agent.StepKind).
func Kind(r *pb.StepResponse) string { return agent.StepKind(r) }

// Validate checks a StepResponse against the contract and the actions the
// agent declared (nil or empty: any). It checks shapes and bounds, not
// meaning: the pipeline validates the action itself.
func Validate(r *pb.StepResponse, allowed []string) error {
	if r == nil {
		return fmt.Errorf("%w: no response", ErrGarbage)
	}
	kind := Kind(r)
	if kind != "reply" && len(allowed) > 0 {
		ok := false
		for _, a := range allowed {
			ok = ok || a == kind
		}
		if !ok {
			return fmt.Errorf("%w: a %s, which the agent's info does not list (%v)", ErrGarbage, kind, allowed)
		}
	}
	if err := text("thought", r.GetThought(), MaxThought); err != nil {
		return err
	}
	switch a := r.GetAction().(type) {
	case *pb.StepResponse_CmdRun:
		c := a.CmdRun
		if c == nil {
			return fmt.Errorf("%w: empty cmd_run", ErrGarbage)
		}
		if err := text("command", c.GetCommand(), MaxCommand); err != nil {
			return err
		}
		if t := c.GetTimeoutS(); math.IsNaN(t) || t < 0 || t > maxTimeoutS {
			return fmt.Errorf("%w: timeout_s %v (want 0 to %d)", ErrGarbage, t, maxTimeoutS)
		}
	case *pb.StepResponse_Message:
		if err := text("message", a.Message.GetText(), MaxCommand); err != nil {
			return err
		}
	case *pb.StepResponse_Finish:
		if err := text("finish", a.Finish.GetMessage(), MaxCommand); err != nil {
			return err
		}
	case *pb.StepResponse_Delegate:
		if !agentName.MatchString(a.Delegate.GetAgent()) {
			return fmt.Errorf("%w: delegate to %q: not an agent name", ErrGarbage, a.Delegate.GetAgent())
		}
		if err := text("task", a.Delegate.GetTask(), MaxTask); err != nil {
			return err
		}
	case *pb.StepResponse_Reply:
		rp := a.Reply
		if err := text("reply text", rp.GetText(), MaxCommand); err != nil {
			return err
		}
		if err := text("tool", rp.GetTool(), MaxName); err != nil {
			return err
		}
		if err := text("arguments", rp.GetArguments(), MaxCommand); err != nil {
			return err
		}
	case nil:
		if r.GetThought() == "" {
			return fmt.Errorf("%w: neither an action nor a thought", ErrGarbage)
		}
	}
	if u := r.GetUsage(); u != nil {
		if err := validUsage(u); err != nil {
			return err
		}
	}
	if m := r.GetMasked(); m != nil {
		if len(m.GetSeqs()) > MaxMasked {
			return fmt.Errorf("%w: %d masked seqs", ErrGarbage, len(m.GetSeqs()))
		}
		if m.GetTokensBefore() < 0 || m.GetTokensAfter() < 0 || m.GetTokensBefore() > maxTokens || m.GetTokensAfter() > maxTokens {
			return fmt.Errorf("%w: masked token counts %d, %d", ErrGarbage, m.GetTokensBefore(), m.GetTokensAfter())
		}
	}
	return nil
}

// validUsage checks token counts and cost.
func validUsage(u *pb.Usage) error {
	if u == nil {
		return fmt.Errorf("%w: no usage", ErrGarbage)
	}
	for _, n := range []int64{u.GetPromptTokens(), u.GetCompletionTokens()} {
		if n < 0 || n > maxTokens {
			return fmt.Errorf("%w: token count %d", ErrGarbage, n)
		}
	}
	if c := u.GetCost(); math.IsNaN(c) || c < 0 || c > maxCost {
		return fmt.Errorf("%w: cost %v", ErrGarbage, c)
	}
	return text("model", u.GetModel(), MaxName)
}

func text(field, s string, max int) error {
	if len(s) > max {
		return fmt.Errorf("%w: %s is %d bytes (at most %d)", ErrGarbage, field, len(s), max)
	}
	if !utf8.ValidString(s) {
		return fmt.Errorf("%w: %s is not UTF-8", ErrGarbage, field)
	}
	return nil
}
