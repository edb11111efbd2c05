package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/harnessd/harnessd/core/daemon"
	"github.com/harnessd/harnessd/core/event"
	"github.com/harnessd/harnessd/core/files"
	"github.com/harnessd/harnessd/core/pipeline"
	pb "github.com/harnessd/harnessd/plugins/proto"
)

// run is one run of an agent in a session.
type run struct {
	c                *Controller
	id, parent       string
	session          string
	agent, task      string
	depth            int
	limits           Limits
	log              *slog.Logger
	ctx              context.Context
	cancel           context.CancelCauseFunc
	cancelWall       context.CancelFunc
	soft             atomic.Bool // stop before the next step (shutdown)
	done             chan struct{}
	guidance         []*pb.Guidance
	lastUserMessage  string
	started, stopped time.Time

	// saving is the outcome of the last record write queued without
	// waiting (save); only the run's own goroutine touches it.
	saving <-chan error

	// finishing is set as finish begins to record run_ended, and settled
	// closed once the run's Info says how it ended: a client that saw
	// run_ended on the event stream and asks for the run at once gets the
	// ended run, not the running one (settledSnapshot).
	finishing atomic.Bool
	settled   chan struct{}

	mu      sync.Mutex
	info    Info
	outputs map[string]bool // output ids seen in the session's events
}

// runKey marks the context of a run's action, so that a delegate action
// knows its parent run.
type runKey struct{}

func (r *run) snapshot() Info {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.info
}

// settleDelay widens, for tests, the moment between run_ended's commit
// and the run's Info saying it ended.
var settleDelay time.Duration

// settledSnapshot is snapshot, once a run that is finishing has settled
// (or ctx ends).
func (r *run) settledSnapshot(ctx context.Context) Info {
	if r.finishing.Load() {
		select {
		case <-r.settled:
		case <-ctx.Done():
		}
	}
	return r.snapshot()
}

// begin records run_started.
func (r *run) begin(ctx context.Context) error {
	r.started = time.Now()
	r.info = Info{ID: r.id, Session: r.session, Parent: r.parent, Agent: r.agent, Task: r.task, Limits: r.limits,
		State: StateRunning, Started: r.started.UTC()}
	ev, err := r.record(ctx, RunStarted{Run: r.id, Parent: r.parent, Agent: r.agent, Task: r.task, Limits: r.limits})
	if err != nil {
		r.cancel(err)
		r.cancelWall()
		return err
	}
	r.mu.Lock()
	r.info.StartSeq = ev.Seq
	r.mu.Unlock()
	r.save(ctx, true)
	r.log.Info("run started", "task", oneLine(r.task, 200), "max_steps", r.limits.MaxSteps)
	return nil
}

// outcome is how a run ended.
type outcome struct {
	reason, message string
	err             error
}

// finish records run_ended and lets the run go.
func (r *run) finish(o outcome) {
	defer close(r.done)
	defer r.cancelWall()
	r.finishing.Store(true)
	r.cancel(stopCause{o.reason})
	info := r.snapshot()
	end := RunEnded{Run: r.id, Parent: r.parent, Reason: o.reason, Message: o.message, Steps: info.Steps,
		Tokens: info.Tokens, Cost: info.Cost, DurationMS: time.Since(r.started).Milliseconds()}
	if o.err != nil {
		end.Error = o.err.Error()
	}
	// Recorded whatever stopped the run; within the delegate's turn for a
	// sub-run (the context keeps its values).
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.ctx), 10*time.Second)
	defer cancel()
	ev, err := r.record(ctx, end)
	if err != nil {
		r.log.Warn("run_ended not recorded", "err", err)
	}
	if settleDelay > 0 {
		time.Sleep(settleDelay)
	}
	// The session is free for another run before anyone can see this
	// one ended (a client that polls Get starts the next at once).
	r.c.ended(r)
	r.mu.Lock()
	r.info.State, r.info.Reason, r.info.Message, r.info.Error = StateEnded, end.Reason, end.Message, end.Error
	r.info.EndSeq, r.info.Ended = ev.Seq, time.Now().UTC()
	r.mu.Unlock()
	close(r.settled)
	r.save(ctx, true)
	r.log.Info("run ended", "reason", end.Reason, "steps", end.Steps, "tokens", end.Tokens, "cost", end.Cost, "err", end.Error)
}

// record appends one of the controller's events to the session.
func (r *run) record(ctx context.Context, p event.Payload) (event.Event, error) {
	return r.c.opts.Sessions.Record(ctx, r.session, event.SourceRuntime, 0, Wrap(p))
}

// reason says why the run must stop before its next step, or "".
func (r *run) reason() string {
	if cause := context.Cause(r.ctx); cause != nil {
		var sc stopCause
		if errors.As(cause, &sc) {
			return sc.reason
		}
		return ReasonStopped
	}
	if r.soft.Load() {
		return ReasonShutdown
	}
	info := r.snapshot()
	switch {
	case info.Steps >= r.limits.MaxSteps:
		return ReasonMaxSteps
	case r.limits.MaxTokens > 0 && info.Tokens >= r.limits.MaxTokens:
		return ReasonMaxTokens
	case r.limits.MaxCost > 0 && info.Cost >= r.limits.MaxCost:
		return ReasonMaxCost
	}
	return ""
}

// loop runs the steps until the run ends.
func (r *run) loop() outcome {
	// A session that begins to end takes its run with it, even while the
	// agent thinks.
	go func() {
		select {
		case <-r.c.opts.Sessions.Ending(r.session):
			r.cancel(stopCause{ReasonSessionEnded})
		case <-r.ctx.Done():
		}
	}()
	r.loadGuidance()
	var (
		proc Agent
		seen uint64 // the last event the current process was given
	)
	defer func() {
		if proc != nil {
			proc.Kill()
		}
	}()
	for {
		if why := r.reason(); why != "" {
			return outcome{reason: why}
		}
		if proc == nil {
			p, err := r.launch()
			if err != nil {
				if why := r.reason(); why != "" {
					return outcome{reason: why}
				}
				if o, over := r.crashed(err); over {
					return o
				}
				continue
			}
			proc, seen = p, 0
			if pp, ok := p.(interface{ PID() int }); ok {
				r.mu.Lock()
				r.info.PluginPID = pp.PID()
				r.mu.Unlock()
			}
		}
		evs, last, err := r.eventsAfter(seen)
		if err != nil {
			return r.failed(err)
		}
		info := r.snapshot()
		req := &pb.StepRequest{
			Session: r.session, Run: r.id, ParentRun: r.parent, Task: r.task, Guidance: r.guidance,
			Events: evs, Step: uint32(info.Steps + 1), MaxSteps: uint32(r.limits.MaxSteps),
		}
		sctx, cancel := context.WithTimeoutCause(r.ctx, r.limits.stepTimeout(), errStepTimeout)
		begin := time.Now()
		resp, err := proc.Step(sctx, req)
		timedOut := context.Cause(sctx) == errStepTimeout
		cancel()
		if err != nil {
			if why := r.reason(); why != "" {
				return outcome{reason: why}
			}
			if timedOut || errors.Is(err, context.DeadlineExceeded) {
				err = fmt.Errorf("no answer within the step timeout (%s): %w", r.limits.stepTimeout(), err)
			}
			proc.Kill()
			proc = nil
			if o, over := r.crashed(err); over {
				return o
			}
			continue
		}
		seen = last
		if o, done := r.step(resp, time.Since(begin)); done {
			return o
		}
	}
}

var errStepTimeout = errors.New("step timeout")

// launch starts the agent's process.
func (r *run) launch() (Agent, error) {
	begin := time.Now()
	a, err := r.c.opts.Launcher.Launch(r.ctx, Spec{Agent: r.agent, Session: r.session, Run: r.id, Host: r, Logger: r.log})
	if err == nil {
		pid := 0
		if pp, ok := a.(interface{ PID() int }); ok {
			pid = pp.PID()
		}
		r.log.Info("agent started", "pid", pid, "name", a.Info().GetName(), "version", a.Info().GetVersion(), "took", time.Since(begin).Round(time.Millisecond))
	}
	return a, err
}

// crashed records a failure of the plugin and waits before the restart;
// over when there is to be none.
func (r *run) crashed(err error) (outcome, bool) {
	r.mu.Lock()
	r.info.Restarts++
	n := r.info.Restarts
	r.mu.Unlock()
	r.log.Warn("agent failed", "attempt", n, "err", err)
	reason := fmt.Sprintf("agent %s (run %s): %v", r.agent, r.id, err)
	if _, rerr := r.c.opts.Sessions.Record(r.ctx, r.session, event.SourceRuntime, 0, event.AgentCrashed{Reason: reason}); rerr != nil {
		return r.failed(rerr), true
	}
	if n > r.limits.MaxRestarts {
		return outcome{reason: ReasonAgentFailed, err: fmt.Errorf("the agent failed %d times; the last: %w", n, err)}, true
	}
	wait := min(r.c.opts.Backoff<<(n-1), 5*time.Second)
	wait += time.Duration(rand.Int64N(int64(wait)/2 + 1)) // jitter
	select {
	case <-time.After(wait):
	case <-r.ctx.Done():
	}
	return outcome{}, false
}

// failed ends the run for an error of harnessd's, unless the run was
// stopped, which explains the error.
func (r *run) failed(err error) outcome {
	if why := r.reason(); why != "" {
		return outcome{reason: why}
	}
	switch {
	case errors.Is(err, daemon.ErrStopped), errors.Is(err, daemon.ErrNotFound):
		return outcome{reason: ReasonSessionEnded, err: err}
	case errors.Is(err, daemon.ErrShuttingDown):
		return outcome{reason: ReasonShutdown}
	}
	return outcome{reason: ReasonError, err: err}
}

// eventsAfter returns the session's events after seq, as stored, and the
// last one's seq; it notes the output ids it sees, for ReadOutput.
func (r *run) eventsAfter(seq uint64) ([][]byte, uint64, error) {
	var out [][]byte
	last := seq
	err := r.c.opts.Sessions.Events(r.ctx, r.session, seq, false, func(ev event.Event) error {
		b, err := ev.AppendJSON(nil)
		if err != nil {
			return err
		}
		out = append(out, b)
		last = ev.Seq
		var tr *event.Trimmed
		switch o := ev.Payload.(type) {
		case event.CmdOutput:
			tr = o.Trimmed
		case files.Result: // a long file view, kept whole
			tr = o.Trimmed
		}
		if tr != nil && tr.OutputID != "" {
			r.mu.Lock()
			r.outputs[tr.OutputID] = true
			r.mu.Unlock()
		}
		return nil
	})
	return out, last, err
}

// step records a step's agent_step (and context_masked) and carries out
// its action; done when the run ends with it.
func (r *run) step(resp *pb.StepResponse, took time.Duration) (outcome, bool) {
	u := resp.GetUsage()
	r.mu.Lock()
	r.info.Steps++
	n := r.info.Steps
	r.info.Tokens += u.GetPromptTokens() + u.GetCompletionTokens()
	r.info.Cost += u.GetCost()
	r.mu.Unlock()
	// Before the action, which may run long: a daemon that dies during it
	// leaves a record that counts this step. Queued, not waited for: it
	// is committed with agent_step, which follows.
	r.save(r.ctx, false)
	kind := StepKind(resp)
	rec := AgentStep{Run: r.id, Step: n, Action: kind, Model: u.GetModel(), PromptTokens: u.GetPromptTokens(),
		CompletionTokens: u.GetCompletionTokens(), Cost: u.GetCost(), Thought: resp.GetThought(), DurationMS: took.Milliseconds()}
	if _, err := r.record(r.ctx, rec); err != nil {
		return r.failed(err), true
	}
	if m := resp.GetMasked(); m != nil && len(m.GetSeqs()) > 0 {
		if _, err := r.record(r.ctx, ContextMasked{Run: r.id, Step: n, Seqs: m.GetSeqs(), TokensBefore: m.GetTokensBefore(), TokensAfter: m.GetTokensAfter()}); err != nil {
			return r.failed(err), true
		}
	}
	ctx := context.WithValue(r.ctx, runKey{}, r)
	var did event.Payload // what ran: nil for a think step or a malformed reply
	switch a := resp.GetAction().(type) {
	case nil:
		return outcome{}, false
	case *pb.StepResponse_Reply:
		rep := pipeline.Reply{Text: a.Reply.GetText(), Source: event.SourceAgent}
		if a.Reply.GetTool() != "" {
			rep = pipeline.Reply{Tool: a.Reply.GetTool(), Arguments: []byte(a.Reply.GetArguments()), Source: event.SourceAgent}
		}
		if rep.Text == "" && rep.Tool == "" {
			// Nothing to parse: the model said nothing.
			_, err := r.c.opts.Sessions.Record(ctx, r.session, event.SourceRuntime, 0, event.InvalidAction{
				Reason: "the reply was empty", Guidance: "Reply with one action: a ```bash block with a command, or <finish>summary</finish> when the task is done."})
			if err != nil {
				return r.failed(err), true
			}
			return outcome{}, false
		}
		res, err := r.c.opts.Sessions.Reply(ctx, r.session, rep)
		if err != nil {
			return r.actFailed(err)
		}
		if res.Action != nil {
			did = res.Action.Payload
		}
	default:
		p := payload(resp)
		if _, err := r.c.opts.Sessions.Act(ctx, r.session, event.SourceAgent, p); err != nil {
			return r.actFailed(err)
		}
		did = p
	}
	switch p := did.(type) {
	case event.Finish:
		return outcome{reason: ReasonFinished, message: p.Message}, true
	case event.Message:
		if r.limits.Attended {
			return outcome{reason: ReasonAwaitingUser, message: p.Text}, true
		}
		return r.nudge()
	}
	return outcome{}, false
}

// nudge answers an agent's message in an unattended run; it counts as a
// step.
func (r *run) nudge() (outcome, bool) {
	if why := r.reason(); why != "" {
		return outcome{reason: why}, true
	}
	r.mu.Lock()
	r.info.Steps++
	r.mu.Unlock()
	if _, err := r.c.opts.Sessions.Act(r.ctx, r.session, event.SourceUser, event.Message{Text: r.c.opts.Nudge}); err != nil {
		return r.actFailed(err)
	}
	return outcome{}, false
}

// actFailed handles an action the pipeline did not carry out: one it
// refused is answered with invalid_action, for the agent to correct;
// anything else ends the run.
func (r *run) actFailed(err error) (outcome, bool) {
	if why := r.reason(); why != "" {
		return outcome{reason: why}, true
	}
	if errors.Is(err, daemon.ErrBadRequest) {
		_, rerr := r.c.opts.Sessions.Record(r.ctx, r.session, event.SourceRuntime, 0, event.InvalidAction{
			Reason: err.Error(), Guidance: "The action was refused before it ran; correct it and send it again."})
		if rerr != nil {
			return r.failed(rerr), true
		}
		return outcome{}, false
	}
	return r.failed(err), true
}

// payload turns a step's typed action into an event payload.
func payload(resp *pb.StepResponse) event.Payload {
	switch a := resp.GetAction().(type) {
	case *pb.StepResponse_CmdRun:
		c := a.CmdRun
		return event.CmdRun{Command: c.GetCommand(), IsInput: c.GetIsInput(), TimeoutS: c.GetTimeoutS(), Reset: c.GetReset_()}
	case *pb.StepResponse_Message:
		return event.Message{Text: a.Message.GetText()}
	case *pb.StepResponse_Finish:
		return event.Finish{Message: a.Finish.GetMessage()}
	case *pb.StepResponse_Delegate:
		return event.Delegate{Agent: a.Delegate.GetAgent(), Task: a.Delegate.GetTask()}
	}
	return nil
}

// StepKind names what a step response asks for, as agent_step records it:
// an action kind, "reply" for a reply the host parses, or "think" for a
// thought alone.
func StepKind(r *pb.StepResponse) string {
	switch r.GetAction().(type) {
	case *pb.StepResponse_CmdRun:
		return "cmd_run"
	case *pb.StepResponse_Message:
		return "message"
	case *pb.StepResponse_Finish:
		return "finish"
	case *pb.StepResponse_Delegate:
		return "delegate"
	case *pb.StepResponse_Reply:
		return "reply"
	}
	return "think"
}
