package hooks

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	lua "github.com/yuin/gopher-lua"

	"github.com/harnessd/harnessd/core/event"
)

// Verdict is what the action hooks decided, ordered from most to least
// permissive: when several hooks decide, the greatest wins.
type Verdict int

// The verdicts.
const (
	Allow   Verdict = iota // nothing to say: the action runs as it is
	Rewrite                // the action runs as Decision.Action
	Ask                    // a person must approve the action first
	Veto                   // the action does not run
	numVerdicts
)

var verdictNames = [numVerdicts]string{"allow", "rewrite", "ask", "veto"}

// String returns "allow", "rewrite", "ask" or "veto".
func (v Verdict) String() string {
	if v >= 0 && v < numVerdicts {
		return verdictNames[v]
	}
	return fmt.Sprintf("verdict(%d)", int(v))
}

// MarshalText implements encoding.TextMarshaler.
func (v Verdict) MarshalText() ([]byte, error) {
	if v < 0 || v >= numVerdicts {
		return nil, fmt.Errorf("unknown verdict %d", int(v))
	}
	return []byte(v.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (v *Verdict) UnmarshalText(b []byte) error {
	p, err := ParseVerdict(string(b))
	if err != nil {
		return err
	}
	*v = p
	return nil
}

// ParseVerdict reads "allow", "rewrite", "ask" or "veto".
func ParseVerdict(s string) (Verdict, error) {
	for i, n := range verdictNames {
		if n == s {
			return Verdict(i), nil
		}
	}
	return 0, fmt.Errorf("unknown verdict %q: want allow, rewrite, ask or veto", s)
}

// Decision is the outcome of the action hooks for one action.
type Decision struct {
	Verdict Verdict
	// Hook is the file:line that decided (where harness.veto, ask or
	// rewrite was called, or where a failing hook failed); "" for Allow.
	Hook string
	// Reason is the hook's reason, for the person or the agent.
	Reason string
	// Action is the rewritten action when a hook rewrote it: for Rewrite,
	// and for Ask when a hook rewrote it too (run Action if the person
	// approves). Otherwise nil.
	Action event.Payload
	// Err is set when the verdict was given because a hook failed (it
	// wraps ErrHook and names file:line); the Reason then says so too.
	Err error
}

// failDecision is the Veto given when a hook or the engine fails.
func failDecision(err error) Decision {
	d := Decision{Verdict: Veto, Hook: "hooks", Reason: "hook failed: " + err.Error(), Err: err}
	var fe *FileError
	if errors.As(err, &fe) {
		d.Hook = fe.Where()
		d.Reason = "hook failed: " + fe.Msg
	}
	return d
}

// action runs the action hooks (of file only, or of all files when only
// is -1) on a. See Engine.Action.
func (w *worker) action(ctx context.Context, s Session, a event.Payload, only int) (Decision, error) {
	w.setSession(s)
	cur := a
	var ask *Decision
	var rw *Decision
	for round := 0; round < maxRounds; round++ {
		changed := false
		for _, hi := range w.byClass[classAction] {
			h := &w.handlers[hi]
			if (only >= 0 && h.file != only) || (h.kind != "" && h.kind != cur.Kind()) {
				continue
			}
			c := &w.callBuf
			*c = call{class: classAction, action: cur}
			w.call = c
			ret, err := w.invoke(ctx, h, w.payloadTable(cur))
			w.call = nil
			if err == nil && ret != lua.LNil && !w.isMarker(ret) {
				w.broken = true
				err = &FileError{File: w.set.files[h.file].name, Line: h.line, Err: ErrHook,
					Msg: fmt.Sprintf("action hook returned a %s: return harness.veto(…), harness.ask(…), harness.rewrite{…} or nothing", ret.Type())}
			}
			if err != nil {
				if ctx.Err() != nil {
					return Decision{Verdict: Veto, Hook: "hooks", Reason: "cancelled: " + ctx.Err().Error(), Err: ctx.Err()}, ctx.Err()
				}
				if w.set.files[h.file].failOpen {
					w.set.eng.log.Warn("hook failed; its source is fail-open, so it allows", "err", err, "session", s.ID)
					continue
				}
				return failDecision(err), nil
			}
			switch c.verdict {
			case Veto:
				return Decision{Verdict: Veto, Hook: c.hook, Reason: c.reason}, nil
			case Ask:
				if ask == nil {
					ask = &Decision{Verdict: Ask, Hook: c.hook, Reason: c.reason}
				}
			}
			if c.rewritten != nil && !reflect.DeepEqual(c.rewritten, cur) {
				cur = c.rewritten
				changed = true
				rw = &Decision{Verdict: Rewrite, Hook: c.rwHook, Reason: c.rwReason}
			}
		}
		if !changed {
			var out Decision
			switch {
			case ask != nil:
				out = *ask
			case rw != nil:
				out = *rw
			default:
				return Decision{Verdict: Allow}, nil
			}
			if rw != nil {
				out.Action = cur
			}
			return out, nil
		}
	}
	return Decision{Verdict: Veto, Hook: rw.Hook,
		Reason: fmt.Sprintf("the action hooks kept rewriting the action (%d rounds): a rewrite must leave an action it already rewrote unchanged", maxRounds)}, nil
}

// isMarker reports whether v is what harness.veto, ask or rewrite return.
func (w *worker) isMarker(v lua.LValue) bool {
	for _, m := range w.marker {
		if v == m {
			return true
		}
	}
	return false
}

// checkExample runs a file's action hooks on one of its examples.
func (w *worker) checkExample(fileIdx int, ex example) error {
	ctx := context.Background()
	d, err := w.action(ctx, Session{ID: "example", Workspace: "/workspace", Profile: "example"},
		event.CmdRun{Command: ex.command}, fileIdx)
	if err == nil && d.Verdict == ex.want && d.Err == nil {
		return nil
	}
	got := d.Verdict.String()
	if d.Err != nil {
		got = "a failure: " + d.Err.Error()
	} else if d.Reason != "" {
		got += " (" + d.Hook + ": " + d.Reason + ")"
	}
	return &FileError{File: w.set.files[fileIdx].name, Line: ex.line, Err: ErrLoad,
		Msg: fmt.Sprintf("example %s %q failed: got %s", ex.want, ex.command, got)}
}
