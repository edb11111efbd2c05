package pipeline

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/harnessd/harnessd/core/event"
	"github.com/harnessd/harnessd/core/parse"
	"github.com/harnessd/harnessd/core/session"
)

// Reply is a model's turn, to be parsed: either Text (a reply with a fenced
// command or a <finish> tag) or a tool call (Tool and its JSON Arguments).
// Exactly one of Text and Tool is set.
type Reply struct {
	Text      string          `json:"text,omitempty"`
	Tool      string          `json:"tool,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Source    event.Source    `json:"source,omitempty"` // default agent
}

// ReplyResult is what became of a Reply: the action it was parsed into
// (nil when it was malformed) and the observation that answers it (nil
// for a message or finish, which nothing answers).
type ReplyResult struct {
	Action      *event.Event `json:"action"`
	Observation *event.Event `json:"observation"`
}

// Parse checks r's shape and parses it with core/parse, which never fails:
// the payload is an action, or an invalid_action observation for a reply
// the model must resend. The error is for a Reply that is not one (both or
// neither of Text and Tool, a source a reply cannot have).
func (r Reply) Parse() (event.Source, event.Payload, error) {
	if (r.Text == "") == (r.Tool == "") {
		return "", nil, fmt.Errorf("%w: a reply has either text or tool (with arguments)", ErrInvalid)
	}
	src := r.Source
	if src == "" {
		src = event.SourceAgent
	}
	if !src.Valid() || src == event.SourceRuntime {
		return "", nil, fmt.Errorf("%w: source %q: a reply comes from agent, user or hook", ErrInvalid, src)
	}
	if r.Tool != "" {
		return src, invalidAsObserved(parse.ToolCall(r.Tool, r.Arguments)), nil
	}
	return src, invalidAsObserved(parse.Text(r.Text)), nil
}

// invalidAsObserved turns an action parsed from a reply that Do would
// refuse (a NUL byte in its command, say) into the invalid_action it is:
// malformed model output is answered for the model to read next turn,
// never refused with nothing recorded.
func invalidAsObserved(a event.Payload) event.Payload {
	v, ok := a.(interface{ Validate() error })
	if !ok {
		return a
	}
	if err := v.Validate(); err != nil {
		return event.InvalidAction{
			Reason:   fmt.Sprintf("invalid %s: %v", a.Kind(), err),
			Guidance: "Nothing was run. Resend the action with that fixed.",
		}
	}
	return a
}

// DoReply takes a parsed reply through the pipeline: an action goes through
// Do; an invalid_action is recorded as the observation the model reads
// next turn.
func (p *Pipeline) DoReply(ctx context.Context, s *session.Session, src event.Source, a event.Payload) (ReplyResult, error) {
	if a.Kind() == event.KindInvalidAction {
		ev, err := p.Observe(ctx, s, a)
		if err != nil {
			return ReplyResult{}, err
		}
		return ReplyResult{Observation: &ev}, nil
	}
	res, err := p.Do(ctx, s, src, a)
	var out ReplyResult
	if res.Action.Seq != 0 {
		out.Action = &res.Action
	}
	out.Observation = res.Observation
	return out, err
}
