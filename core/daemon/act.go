package daemon

import (
	"context"
	"errors"
	"fmt"

	"github.com/harnessd/harnessd/core/event"
	"github.com/harnessd/harnessd/core/pipeline"
	"github.com/harnessd/harnessd/core/trim"
)

// Reply is a model's turn for the daemon to parse (pipeline.Reply).
type Reply = pipeline.Reply

// ReplyResult is what became of a Reply (pipeline.ReplyResult).
type ReplyResult = pipeline.ReplyResult

// Act takes one action through the pipeline in a session, in the
// session's turn, and returns the event that answers it: a cmd_run's
// cmd_output, a vetoed action's hook_veto; for an action nothing answers
// (message, finish), the action itself as recorded. Actions in one session
// run one at a time, in arrival order; sessions never wait for each other.
func (d *Daemon) Act(ctx context.Context, id string, src event.Source, p event.Payload) (event.Event, error) {
	// Keys for a command another call is waiting on (C-c from a second
	// client) are never queued behind that call: they go now.
	if c, ok := p.(event.CmdRun); ok && c.IsInput && c.Command != "" {
		if ls, busy := d.busy(id); busy {
			defer d.inflight.Done()
			res, err := d.pipe.Do(pipeline.KeysNow(ctx), ls.sess, src, p)
			if res.Observation != nil {
				return *res.Observation, err
			}
			return event.Event{}, err
		}
	}
	res, err := d.do(ctx, id, func(ctx context.Context, ls *liveSession) (pipeline.Result, error) {
		return d.pipe.Do(ctx, ls.sess, src, p)
	})
	switch {
	case res.Observation != nil:
		return *res.Observation, err
	case err != nil:
		return event.Event{}, err // the action is recorded; its answer is what failed
	}
	return res.Action, nil
}

// Reply parses a model's reply (core/parse never fails) and takes what it
// became through the pipeline: a command runs as Act runs it, a message or
// finish is recorded, and a malformed reply is answered with an
// invalid_action observation that says what was wrong and how to resend,
// for the model to read next turn.
func (d *Daemon) Reply(ctx context.Context, id string, r Reply) (ReplyResult, error) {
	src, a, err := r.Parse()
	if err != nil {
		return ReplyResult{}, fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	if a.Kind() == event.KindInvalidAction {
		d.metrics.invalidActions.Inc()
	}
	var out ReplyResult
	_, err = d.do(ctx, id, func(ctx context.Context, ls *liveSession) (pipeline.Result, error) {
		var err error
		out, err = d.pipe.DoReply(ctx, ls.sess, src, a)
		res := pipeline.Result{Observation: out.Observation}
		if out.Action != nil {
			res.Action = *out.Action
		}
		return res, err
	})
	return out, err
}

// Record appends an event that is not an action (an agent run's
// run_started, say) to a session, in the session's turn, and returns it as
// recorded. Actions go through Act.
func (d *Daemon) Record(ctx context.Context, id string, src event.Source, cause uint64, p event.Payload) (event.Event, error) {
	if p == nil || p.Kind().IsAction() {
		return event.Event{}, fmt.Errorf("%w: Record takes no actions (%v); use Act", ErrBadRequest, p)
	}
	if !src.Valid() {
		return event.Event{}, fmt.Errorf("%w: source %q", ErrBadRequest, src)
	}
	res, err := d.do(ctx, id, func(ctx context.Context, ls *liveSession) (pipeline.Result, error) {
		ev, err := ls.sess.Record(ctx, src, cause, p)
		if err != nil {
			return pipeline.Result{}, err
		}
		return pipeline.Result{Observation: &ev}, nil
	})
	if res.Observation == nil {
		return event.Event{}, err
	}
	return *res.Observation, err
}

// Handle registers e as the executor of an action kind in every session
// (pipeline.Handle): the agent controller carries out delegate this way.
// An executor runs in the session's turn, and whatever it does in the same
// session through Act, Reply or Record with the context it was given runs
// in that turn too, without waiting for it.
func (d *Daemon) Handle(kind event.Kind, e pipeline.Executor) { d.pipe.Handle(kind, e) }

// turnKey marks a context whose holder has a session's turn: its value is
// the *liveSession.
type turnKey struct{}

// do runs fn in the session's turn and maps what went wrong to the
// daemon's errors. The context fn gets says that it holds the turn, so
// that an executor acting in its own session (a delegated run) does not
// wait for itself.
func (d *Daemon) do(ctx context.Context, id string, fn func(context.Context, *liveSession) (pipeline.Result, error)) (pipeline.Result, error) {
	ls, held, err := d.acquire(ctx, id)
	if err != nil {
		return pipeline.Result{}, err
	}
	if !held {
		defer d.release(ls)
		ctx = context.WithValue(ctx, turnKey{}, ls)
	}
	res, err := fn(ctx, ls)
	if res.Observation != nil {
		if o, ok := res.Observation.Payload.(event.CmdOutput); ok && res.Action.Kind() == event.KindCmdRun {
			if o.ExitCode == -1 {
				if c := res.Action.Payload.(event.CmdRun); !c.IsInput && c.Command != "" || ls.running.Load() == 0 {
					ls.running.Store(res.Action.Seq)
				}
			} else {
				ls.running.Store(0)
			}
		}
	}
	switch {
	case err == nil:
	case errors.Is(err, pipeline.ErrInvalid), errors.Is(err, pipeline.ErrNoExecutor):
		err = fmt.Errorf("%w: %w", ErrBadRequest, err)
	case errors.Is(err, pipeline.ErrUnrecorded):
	case res.Observation != nil || res.Action.Seq != 0:
		ls.mu.Lock()
		ended := ls.ended
		ls.mu.Unlock()
		if ended {
			err = fmt.Errorf("%w: session %s ended while its command ran: %w", ErrStopped, id, err)
		}
	}
	return res, err
}

// actionDone counts an action the pipeline took.
func (d *Daemon) actionDone(r pipeline.Result, err error) {
	kind := string(r.Action.Kind())
	if kind == "" {
		kind = "none"
	}
	switch {
	case r.Action.Seq == 0:
		d.metrics.actions.WithLabelValues(kind, "refused").Inc()
		return
	case r.Observation != nil && r.Observation.Kind() == event.KindHookVeto:
		d.metrics.actions.WithLabelValues(kind, "vetoed").Inc()
		return
	case err != nil:
		d.metrics.actions.WithLabelValues(kind, "failed").Inc()
	default:
		d.metrics.actions.WithLabelValues(kind, "done").Inc()
	}
	if out, ok := r.Outcome.Observation.(event.CmdOutput); ok && r.Outcome.Trim != nil {
		d.metrics.observeOutput(out, r.Outcome.Trim.BytesTotal, r.Outcome.Trim.BytesOmitted, r.Duration)
	}
}

// ReadLines reads lines from..to of a stored output, 1-based and
// inclusive; to <= 0 means to the end. The store may return fewer lines
// than asked (a page); the result's To says where it stopped.
func (d *Daemon) ReadLines(ctx context.Context, outputID string, from, to int) (trim.Lines, error) {
	l, err := d.outputs.ReadLines(ctx, outputID, from, to)
	if r, ok := d.hooks.(interface {
		RedactPage(context.Context, string, string) (string, error)
	}); ok && err == nil {
		// Pages are shown as the model is shown outputs: redacted. A
		// failing hook withholds the page rather than show a secret.
		if l.Text, err = r.RedactPage(ctx, "", l.Text); err != nil {
			return trim.Lines{}, fmt.Errorf("output %s: withheld, a redaction hook failed: %w", outputID, err)
		}
	}
	switch {
	case errors.Is(err, trim.ErrNotFound), errors.Is(err, trim.ErrInvalidID):
		return l, fmt.Errorf("%w: output %s", ErrNotFound, outputID)
	case errors.Is(err, trim.ErrRange):
		return l, fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	return l, err
}
