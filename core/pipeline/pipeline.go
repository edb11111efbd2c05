package pipeline

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/harnessd/harnessd/core/event"
	"github.com/harnessd/harnessd/core/python"
	"github.com/harnessd/harnessd/core/session"
	"github.com/harnessd/harnessd/core/trim"
)

// Call is one action on its way through the pipeline, as an executor
// sees it.
type Call struct {
	Session *session.Session
	Source  event.Source
	// Action is the action as committed: its Seq is set and its Payload is
	// what runs (after any rewrite by a hook).
	Action event.Event
}

// Outcome is what an executor made of an action.
type Outcome struct {
	// Observation answers the action; nil for an action nothing answers
	// (a message, a finish), which is then the whole record.
	Observation event.Payload
	// Trim holds the trimmer's counts for a command's output; nil for
	// actions that print nothing.
	Trim *trim.Result
}

// Executor carries out one kind of action in a session. An error means the
// executor itself failed (its context ended, the terminal broke); the
// Outcome it returns with the error is still recorded if it has an
// observation, because the action is in the log and must be answered.
type Executor interface {
	Execute(ctx context.Context, c *Call) (Outcome, error)
}

// ExecutorFunc adapts a function to Executor.
type ExecutorFunc func(ctx context.Context, c *Call) (Outcome, error)

// Execute calls f.
func (f ExecutorFunc) Execute(ctx context.Context, c *Call) (Outcome, error) { return f(ctx, c) }

// Result is one action's round trip: the action and its observation as
// recorded, and what the executor reported.
type Result struct {
	// Action is the action as committed; Seq 0 when it was refused before
	// it could be (invalid) .
	Action event.Event
	// Observation answers Action (a cmd_output, or a hook_veto when a hook
	// refused it); nil when nothing answers it.
	Observation *event.Event
	Outcome     Outcome
	// Duration is the time from the action's commit to its observation's.
	Duration time.Duration
}

// Options configures a Pipeline. Zero fields mean: no hooks (every action
// allowed, observations as the executor made them), no one to approve (an
// action a hook asks about is refused, saying so), and no report.
type Options struct {
	Hooks    Hooks
	Approver Approver
	// Done, if set, is called once per Do when it returns, with what it
	// returns: the daemon counts actions and outputs here. A Result whose
	// Action has Seq 0 was refused before anything was recorded.
	Done func(Result, error)
}

// Pipeline is the one path every action takes, whoever sent it. It is safe
// for concurrent use; turn-taking within a session (one action at a time)
// is the caller's.
type Pipeline struct {
	opts Options

	mu    sync.RWMutex
	execs map[event.Kind]Executor

	pendMu  sync.Mutex
	pending map[*session.Session][]event.Event // observations not yet committed, in order
}

// Observation commits are retried this often, after these waits, before
// the observation is kept for later (ErrUnrecorded).
var recordRetries = []time.Duration{100 * time.Millisecond, 400 * time.Millisecond, time.Second}

// New returns a pipeline with the built-in executors: cmd_run runs in the
// session's shell; message and finish are their own record; the file
// actions (package files) run in the session's sandbox; python_run in
// the session's Python, in its sandbox.
func New(opts Options) *Pipeline {
	if opts.Hooks == nil {
		opts.Hooks = NoHooks{}
	}
	p := &Pipeline{opts: opts, execs: map[event.Kind]Executor{}, pending: map[*session.Session][]event.Event{}}
	p.Handle(event.KindCmdRun, ExecutorFunc(runCommand))
	p.Handle(event.KindMessage, ExecutorFunc(recordOnly))
	p.Handle(event.KindFinish, ExecutorFunc(recordOnly))
	handleFiles(p) // file_view, file_create, …: files.go
	p.Handle(python.KindRun, ExecutorFunc(runPython))
	return p
}

// Handle registers e as the executor of kind, replacing any before it.
// kind must be an action kind.
func (p *Pipeline) Handle(kind event.Kind, e Executor) {
	if !kind.IsAction() {
		panic(fmt.Sprintf("pipeline: Handle(%q): not an action kind", kind))
	}
	p.mu.Lock()
	p.execs[kind] = e
	p.mu.Unlock()
}

func (p *Pipeline) executor(kind event.Kind) Executor {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.execs[kind]
}

// Do takes one action through every stage: validate, pre-action hooks
// (veto, ask, rewrite), commit the action, execute it, post-observation
// hooks, commit the observation (which publishes it to followers). The
// action is committed before anything runs, so no effect is ever without
// its record, and a committed action is always answered when it has an
// answer, even if ctx ends while it runs.
//
// Errors wrap ErrInvalid (nothing recorded), ErrNoExecutor (nothing
// recorded), or come from the log or the executor; a Result with a
// recorded Observation may come with an error (the session ended while the
// command ran): the observation says what happened.
func (p *Pipeline) Do(ctx context.Context, s *session.Session, src event.Source, a event.Payload) (res Result, err error) {
	if p.opts.Done != nil {
		defer func() {
			r := res
			if r.Action.Payload == nil {
				r.Action.Payload = a // refused: what was asked for, unrecorded
			}
			p.opts.Done(r, err)
		}()
	}
	return p.do(ctx, s, src, a)
}

func (p *Pipeline) do(ctx context.Context, s *session.Session, src event.Source, a event.Payload) (Result, error) {
	// Validate.
	if err := validate(src, a); err != nil {
		return Result{}, err
	}
	if src == "" {
		src = event.SourceUser
	}
	exec := p.executor(a.Kind())
	if exec == nil {
		return Result{}, fmt.Errorf("%w: %s actions are not carried out by this harnessd", ErrNoExecutor, a.Kind())
	}

	// An observation a full disk kept back answers its action before
	// anything else is recorded in the session.
	if err := p.Flush(ctx, s); err != nil {
		return Result{}, err
	}

	// Pre-action hooks.
	dec, err := p.opts.Hooks.BeforeAction(ctx, s, src, a)
	if err != nil {
		return Result{}, fmt.Errorf("pipeline: action hooks: %w", err)
	}
	switch dec.Verdict {
	case Rewrite:
		if dec.Action == nil || dec.Action.Kind() != a.Kind() {
			return p.veto(ctx, s, src, a, Decision{Verdict: Veto, Hook: dec.Hook, Reason: "the hook's rewrite was not an action of the same kind"})
		}
		if err := validate(src, dec.Action); err != nil {
			return p.veto(ctx, s, src, a, Decision{Verdict: Veto, Hook: dec.Hook, Reason: "the hook's rewrite is not a valid action: " + err.Error()})
		}
		a = rewritten(dec.Action, a, dec.Hook)
	case Ask:
		// A hook may have rewritten the action it then asks about: the
		// person decides on what would run.
		if dec.Action != nil && dec.Action.Kind() == a.Kind() && validate(src, dec.Action) == nil {
			a = rewritten(dec.Action, a, dec.Hook)
		}
	case Veto:
		return p.veto(ctx, s, src, a, dec)
	}

	// Commit the action.
	action, err := s.Record(ctx, src, 0, a)
	if err != nil {
		return Result{}, err
	}

	// An action a hook asked about is in the log, waiting for a person;
	// the decision is recorded, who made it with it.
	if dec.Verdict == Ask {
		if res, done, err := p.ask(ctx, s, action, dec); done {
			return res, err
		}
	}
	begin := time.Now()

	// Execute.
	out, runErr := exec.Execute(ctx, &Call{Session: s, Source: src, Action: action})
	res := Result{Action: action, Outcome: out, Duration: time.Since(begin)}
	if out.Observation == nil {
		return res, runErr
	}

	// Post-observation hooks, then commit the observation. A fresh
	// context when the caller's ended: the action is in the log and must
	// be answered.
	rctx := ctx
	if ctx.Err() != nil {
		var cancel context.CancelFunc
		rctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
	}
	if err := p.opts.Hooks.AfterObservation(rctx, s, action, &res.Outcome); err != nil {
		return res, fmt.Errorf("pipeline: observation hooks: %w", errors.Join(err, runErr))
	}
	obs, err := s.Record(rctx, event.SourceRuntime, action.Seq, res.Outcome.Observation)
	for _, wait := range recordRetries {
		if err == nil || errors.Is(rctx.Err(), context.Canceled) {
			break
		}
		select {
		case <-time.After(wait):
		case <-rctx.Done():
		}
		obs, err = s.Record(rctx, event.SourceRuntime, action.Seq, res.Outcome.Observation)
	}
	if err != nil {
		p.pendMu.Lock()
		p.pending[s] = append(p.pending[s], event.Event{Source: event.SourceRuntime, Cause: action.Seq, Payload: res.Outcome.Observation})
		p.pendMu.Unlock()
		return res, fmt.Errorf("%w (%s, seq %d%s; it is kept and recorded before the session's next action): %w",
			ErrUnrecorded, action.Kind(), action.Seq, summary(res.Outcome.Observation), errors.Join(err, runErr))
	}
	res.Observation = &obs
	res.Duration = time.Since(begin)
	return res, runErr
}

// Flush commits the observations a failed commit kept back for s, in
// order. The daemon calls it before a session's end is recorded; Do calls
// it before each action.
func (p *Pipeline) Flush(ctx context.Context, s *session.Session) error {
	p.pendMu.Lock()
	defer p.pendMu.Unlock()
	evs := p.pending[s]
	for len(evs) > 0 {
		if _, err := s.Record(ctx, evs[0].Source, evs[0].Cause, evs[0].Payload); err != nil {
			p.pending[s] = evs
			return fmt.Errorf("pipeline: the observation of seq %d is still unrecorded: %w", evs[0].Cause, err)
		}
		evs = evs[1:]
	}
	delete(p.pending, s)
	return nil
}

// summary says in a few words what an unrecorded observation held.
func summary(o event.Payload) string {
	if oo, ok := o.(OutputObservation); ok {
		o = oo.AsCmdOutput()
	}
	if c, ok := o.(event.CmdOutput); ok {
		if c.ExitCode == -1 {
			return ", still running"
		}
		return fmt.Sprintf(", exit code %d", c.ExitCode)
	}
	return ""
}

// Observe records an observation that answers no action: what a
// malformed model reply becomes (invalid_action), for the model to read
// next turn.
func (p *Pipeline) Observe(ctx context.Context, s *session.Session, o event.Payload) (event.Event, error) {
	if o == nil || !o.Kind().IsObservation() {
		return event.Event{}, fmt.Errorf("%w: %v is not an observation", ErrInvalid, kindOf(o))
	}
	return s.Record(ctx, event.SourceRuntime, 0, o)
}

// veto records a refused action and the hook_veto that answers it, so
// the agent sees what it asked for and why it did not run.
func (p *Pipeline) veto(ctx context.Context, s *session.Session, src event.Source, a event.Payload, dec Decision) (Result, error) {
	action, err := s.Record(ctx, src, 0, a)
	if err != nil {
		return Result{}, err
	}
	return p.refuse(ctx, s, action, dec)
}

// refuse answers a recorded action with a hook_veto.
func (p *Pipeline) refuse(ctx context.Context, s *session.Session, action event.Event, dec Decision) (Result, error) {
	obs, err := s.Record(ctx, event.SourceHook, action.Seq, event.HookVeto{Hook: dec.Hook, Reason: dec.Reason})
	if err != nil {
		return Result{Action: action}, err
	}
	return Result{Action: action, Observation: &obs, Outcome: Outcome{Observation: obs.Payload}}, nil
}

// ask waits for a person's decision on a recorded action a hook asked
// about, and records it. With no approver there is no one to ask, and the
// answer is no. done means the action is answered (refused) or failed;
// otherwise it was approved and runs.
func (p *Pipeline) ask(ctx context.Context, s *session.Session, action event.Event, dec Decision) (Result, bool, error) {
	ok, who := false, ""
	if p.opts.Approver != nil {
		var err error
		ok, who, err = p.opts.Approver.Approve(ctx, s, action, dec)
		if err != nil {
			// The caller went away or the daemon is stopping: answer the
			// action on a fresh context, so the log stays whole.
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			res, rerr := p.refuse(rctx, s, action, Decision{Verdict: Veto, Hook: dec.Hook, Reason: "needs a person's approval (" + dec.Reason + "); no decision: " + err.Error()})
			return res, true, errors.Join(err, rerr)
		}
	}
	if !ok {
		res, err := p.refuse(ctx, s, action, Decision{Verdict: Veto, Hook: dec.Hook, Reason: deniedReason(dec.Reason, who)})
		return res, true, err
	}
	if _, err := s.Record(ctx, event.SourceUser, action.Seq, Approval{Approved: true, By: who, Hook: dec.Hook, Reason: dec.Reason}); err != nil {
		return Result{Action: action}, true, err
	}
	return Result{}, false, nil
}

func deniedReason(reason, who string) string {
	switch who {
	case "":
		return "needs a person's approval (" + reason + "), and no one approved it"
	default:
		return "needs a person's approval (" + reason + "); denied by " + who
	}
}

// rewritten marks a rewrite with the action it replaced, where the kind
// keeps one (event.CmdRun.Rewritten), so the log shows both.
func rewritten(next, orig event.Payload, hook string) event.Payload {
	if w, ok := next.(interface {
		WithOriginal(event.Payload, string) event.Payload
	}); ok {
		return w.WithOriginal(orig, hook)
	}
	return next
}

// validate checks what every action must be, whatever its kind.
func validate(src event.Source, a event.Payload) error {
	if a == nil || !a.Kind().IsAction() {
		return fmt.Errorf("%w: %v is not an action (one of %v)", ErrInvalid, kindOf(a), actionKinds())
	}
	if src != "" && (!src.Valid() || src == event.SourceRuntime) {
		return fmt.Errorf("%w: source %q: an action comes from agent, user or hook", ErrInvalid, src)
	}
	if v, ok := a.(interface{ Validate() error }); ok {
		if err := v.Validate(); err != nil {
			return fmt.Errorf("%w: %s: %w", ErrInvalid, a.Kind(), err)
		}
	}
	return nil
}

func kindOf(p event.Payload) string {
	if p == nil {
		return "nothing"
	}
	return string(p.Kind())
}

func actionKinds() []event.Kind {
	var ks []event.Kind
	for _, k := range event.Kinds() {
		if k.IsAction() {
			ks = append(ks, k)
		}
	}
	return ks
}

type keysNowKey struct{}

// KeysNow marks ctx for an is_input cmd_run that must not wait for the
// command a call is already waiting on (a C-c from a second client): its
// keys go to the running program at once, and the waiting call reports
// what they caused.
func KeysNow(ctx context.Context) context.Context { return context.WithValue(ctx, keysNowKey{}, true) }

// runCommand is cmd_run's executor: the session's shell.
func runCommand(ctx context.Context, c *Call) (Outcome, error) {
	cmd := c.Action.Payload.(event.CmdRun)
	if now, _ := ctx.Value(keysNowKey{}).(bool); now && cmd.IsInput {
		err := c.Session.SendKeys(ctx, cmd.Command)
		out := event.CmdOutput{ExitCode: -1, Note: "The keys were sent to the running command at once; " +
			"its output and exit code come with the observation of the call already waiting on it."}
		if err != nil {
			out.ExitCode = 0
			out.Note = "The keys were not sent: " + err.Error()
		}
		return Outcome{Observation: out}, nil
	}
	out, tr, err := c.Session.CommandFor(ctx, c.Action.Seq, cmd)
	return Outcome{Observation: out, Trim: &tr}, err
}

// recordOnly is the executor of actions that are their own record: a
// message to the person, a finish.
func recordOnly(context.Context, *Call) (Outcome, error) { return Outcome{}, nil }
