package agent

import (
	"context"
	"fmt"

	"github.com/harnessd/harnessd/core/event"
	"github.com/harnessd/harnessd/core/pipeline"
)

// delegate is the executor of delegate actions: the named agent runs the
// task as a sub-run in the same session, inside the delegate's turn, and
// its end answers the action.
func (c *Controller) delegate(ctx context.Context, call *pipeline.Call) (pipeline.Outcome, error) {
	d := call.Action.Payload.(event.Delegate)
	session := call.Session.ID()
	answer := func(res DelegateResult) (pipeline.Outcome, error) {
		return pipeline.Outcome{Observation: Wrap(res)}, nil
	}
	parent, _ := ctx.Value(runKey{}).(*run)
	if parent == nil {
		// A delegate sent through the API: a top-level run, unless one is
		// going on.
		if other, busy := c.Active(session); busy {
			return answer(DelegateResult{Agent: d.Agent, Reason: "refused", Error: fmt.Sprintf("run %s is active in this session", other.ID)})
		}
	} else if parent.depth+1 > MaxDepth {
		return answer(DelegateResult{Agent: d.Agent, Reason: "refused", Error: fmt.Sprintf("delegation is at most %d deep", MaxDepth)})
	}
	sub, err := c.prepare(ctx, session, Request{Agent: d.Agent, Task: d.Task}, parent)
	if err != nil {
		return answer(DelegateResult{Agent: d.Agent, Reason: "refused", Error: err.Error()})
	}
	if parent != nil {
		// A sub-run gets what is left of its parent's budget, at most.
		left := parent.snapshot()
		if parent.limits.MaxTokens > 0 {
			sub.limits.MaxTokens = max(1, min(nonZero(sub.limits.MaxTokens), parent.limits.MaxTokens-left.Tokens))
		}
		if parent.limits.MaxCost > 0 {
			sub.limits.MaxCost = max(1e-9, min(nonZeroF(sub.limits.MaxCost), parent.limits.MaxCost-left.Cost))
		}
	}
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		return answer(DelegateResult{Agent: d.Agent, Reason: "refused", Error: ErrShuttingDown.Error()})
	}
	c.runs[sub.id] = sub
	if parent == nil {
		c.active[session] = sub
	}
	c.wg.Add(1)
	c.mu.Unlock()
	defer c.wg.Done()
	if err := sub.begin(ctx); err != nil {
		c.forget(sub)
		return pipeline.Outcome{}, err
	}
	sub.finish(sub.loop())
	info := sub.snapshot()
	if parent != nil {
		parent.mu.Lock()
		parent.info.Tokens += info.Tokens
		parent.info.Cost += info.Cost
		parent.mu.Unlock()
	}
	return answer(DelegateResult{Run: info.ID, Agent: info.Agent, Reason: info.Reason, Message: info.Message, Error: info.Error,
		Steps: info.Steps, Tokens: info.Tokens, Cost: info.Cost})
}

func nonZero(n int64) int64 {
	if n == 0 {
		return 1 << 62
	}
	return n
}

func nonZeroF(f float64) float64 {
	if f == 0 {
		return 1e18
	}
	return f
}
