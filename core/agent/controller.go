package agent

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/harnessd/harnessd/core/daemon"
	"github.com/harnessd/harnessd/core/event"
	"github.com/harnessd/harnessd/core/pipeline"
	"github.com/harnessd/harnessd/core/trim"
	pb "github.com/harnessd/harnessd/plugins/proto"
)

// Sessions is what the controller needs of the daemon; *daemon.Daemon is
// one.
type Sessions interface {
	Act(ctx context.Context, id string, src event.Source, p event.Payload) (event.Event, error)
	Reply(ctx context.Context, id string, r pipeline.Reply) (pipeline.ReplyResult, error)
	Record(ctx context.Context, id string, src event.Source, cause uint64, p event.Payload) (event.Event, error)
	Events(ctx context.Context, id string, after uint64, follow bool, fn func(event.Event) error) error
	ReadLines(ctx context.Context, outputID string, from, to int) (trim.Lines, error)
	Workspace(id string) (string, error)
	Ending(id string) <-chan struct{}
	Handle(kind event.Kind, e pipeline.Executor)
}

var _ Sessions = (*daemon.Daemon)(nil)

// Agent is one running agent process; *plugins.Process is one.
type Agent interface {
	// Info is what the agent said of itself when it started.
	Info() *pb.InfoResponse
	// Step asks for the next action. The answer has been checked against
	// the contract (plugins.Validate).
	Step(ctx context.Context, req *pb.StepRequest) (*pb.StepResponse, error)
	// Kill ends the process; safe to call twice.
	Kill()
}

// Host is what a run offers its agent process (plugins.Host).
type Host interface {
	ReadOutput(ctx context.Context, outputID string, from, to int64) (*pb.ReadOutputResponse, error)
	ReadEvents(ctx context.Context, after uint64, limit uint32) (*pb.ReadEventsResponse, error)
	ReportUsage(ctx context.Context, u *pb.Usage) (*pb.ReportUsageResponse, error)
}

// Spec is what a Launcher starts an agent for.
type Spec struct {
	Agent   string // the agent's name in harness.toml
	Session string
	Run     string
	Host    Host
	Logger  *slog.Logger // tagged with session, run and agent
}

// Launcher starts agent processes; *plugins.Launcher is one.
type Launcher interface {
	Launch(ctx context.Context, spec Spec) (Agent, error)
}

// Options configures a Controller.
type Options struct {
	Sessions Sessions // required
	Launcher Launcher // required
	// Agent returns the default limits of the agent called name and
	// whether harness.toml has it. Required.
	Agent func(name string) (Limits, bool)
	// DefaultAgent is the agent of a request that names none.
	DefaultAgent string
	Logger       *slog.Logger
	// Backoff is the wait before the first restart of a failed plugin,
	// doubled for each one after (with jitter, at most 5s). Default 200ms.
	Backoff time.Duration
	// Nudge answers an agent's message in an unattended run; default
	// DefaultNudge.
	Nudge string
	// Runs keeps runs' records (store.Store), written at a run's start,
	// after each step and at its end, so Get and List know runs after a
	// restart; nil keeps them in memory only (the last keepEnded ended
	// ones).
	Runs RunStore
}

// DefaultNudge is what the controller answers an agent's message with
// when no one is watching, as OpenHands' headless mode does.
const DefaultNudge = "[harnessd] This run is unattended: no one will answer. Please continue working on the task on your own; when it is done, or cannot be done, finish with a summary of what you did."

// MaxDepth bounds delegation: a sub-run of a sub-run of a sub-run may not
// delegate again.
const MaxDepth = 3

// keepEnded is how many ended runs Get still knows.
const keepEnded = 1000

// Request asks for a run.
type Request struct {
	Agent  string `json:"agent,omitempty"` // default Options.DefaultAgent
	Task   string `json:"task"`
	Limits Limits `json:"limits,omitzero"`
}

// Run states.
const (
	StateRunning = "running"
	StateEnded   = "ended"
)

// Reasons a run ends with.
const (
	ReasonFinished     = "finished"      // the agent finished
	ReasonMaxSteps     = "max_steps"     // Limits.MaxSteps reached
	ReasonWallClock    = "wall_clock"    // Limits.WallS passed
	ReasonMaxTokens    = "max_tokens"    // Limits.MaxTokens spent
	ReasonMaxCost      = "max_cost"      // Limits.MaxCost spent
	ReasonStopped      = "stopped"       // a user stopped it
	ReasonAgentFailed  = "agent_failed"  // the plugin failed more than MaxRestarts times
	ReasonSessionEnded = "session_ended" // the session was deleted
	ReasonShutdown     = "shutdown"      // the daemon is stopping
	ReasonAwaitingUser = "awaiting_user" // an attended run's agent asked something
	ReasonError        = "error"         // harnessd could not go on (Info.Error says why)
)

// Info is a run as the API shows it.
type Info struct {
	ID       string  `json:"id"`
	Session  string  `json:"session"`
	Parent   string  `json:"parent,omitempty"`
	Agent    string  `json:"agent"`
	Task     string  `json:"task"`
	Limits   Limits  `json:"limits"`
	State    string  `json:"state"`
	Reason   string  `json:"reason,omitempty"`
	Message  string  `json:"message,omitempty"` // the agent's finish message
	Error    string  `json:"error,omitempty"`
	Steps    int     `json:"steps"`
	Tokens   int64   `json:"tokens"`
	Cost     float64 `json:"cost"`
	Restarts int     `json:"restarts"`
	// PluginPID is the agent process's pid: the one running now, or the
	// last one once the run has ended.
	PluginPID int       `json:"plugin_pid,omitempty"`
	StartSeq  uint64    `json:"start_seq"`         // run_started's seq
	EndSeq    uint64    `json:"end_seq,omitempty"` // run_ended's
	Started   time.Time `json:"started"`
	Ended     time.Time `json:"ended,omitzero"`
}

// Controller runs agents in sessions, one top-level run per session at a
// time. It is safe for concurrent use.
type Controller struct {
	opts Options
	log  *slog.Logger

	mu       sync.Mutex
	runs     map[string]*run // every run still known, by id
	endedIDs []string        // ended runs' ids, oldest first
	active   map[string]*run // the top-level run of each session
	closing  bool
	wg       sync.WaitGroup // the runs' goroutines
}

// New returns a controller and registers it as the executor of delegate
// actions.
func New(opts Options) (*Controller, error) {
	if opts.Sessions == nil || opts.Launcher == nil || opts.Agent == nil {
		return nil, errors.New("agent: Sessions, Launcher and Agent are required")
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Backoff <= 0 {
		opts.Backoff = 200 * time.Millisecond
	}
	if opts.Nudge == "" {
		opts.Nudge = DefaultNudge
	}
	c := &Controller{opts: opts, log: opts.Logger, runs: map[string]*run{}, active: map[string]*run{}}
	if opts.Runs != nil {
		// No run is going yet: a record still marked running is a dead
		// daemon's. Bounded: a store that hangs must not hang the start.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := c.sweep(ctx)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("agent: runs left going: %w", err)
		}
	}
	opts.Sessions.Handle(event.KindDelegate, pipeline.ExecutorFunc(c.delegate))
	return c, nil
}

// Start starts a run in a session and returns once run_started is
// recorded; the run goes on in the background. Errors: ErrBusy,
// ErrUnknownAgent, ErrBadRequest, ErrShuttingDown, or the daemon's
// (daemon.ErrNotFound, daemon.ErrStopped) for a session that is not live.
func (c *Controller) Start(ctx context.Context, session string, req Request) (Info, error) {
	r, err := c.prepare(context.Background(), session, req, nil)
	if err != nil {
		return Info{}, err
	}
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		return Info{}, ErrShuttingDown
	}
	if other := c.active[session]; other != nil {
		c.mu.Unlock()
		return Info{}, fmt.Errorf("%w: run %s (agent %s) is running in session %s; stop it first (DELETE /v1/runs/%s)", ErrBusy, other.id, other.agent, session, other.id)
	}
	c.active[session] = r
	c.runs[r.id] = r
	c.wg.Add(1)
	c.mu.Unlock()
	if err := r.begin(context.WithoutCancel(ctx)); err != nil {
		c.forget(r)
		c.wg.Done()
		return Info{}, err
	}
	go func() {
		defer c.wg.Done()
		r.finish(r.loop())
	}()
	return r.snapshot(), nil
}

// prepare checks a request and makes its run, not yet started. base is
// the context the run's own derives from: a delegate's, for a sub-run
// (the delegate's turn, its parent's stop and deadline). parent is the
// delegating run, or nil.
func (c *Controller) prepare(base context.Context, session string, req Request, parent *run) (*run, error) {
	if req.Agent == "" {
		req.Agent = c.opts.DefaultAgent
	}
	def, ok := c.opts.Agent(req.Agent)
	if !ok {
		return nil, fmt.Errorf("%w %q: add [agents.%s] to harness.toml", ErrUnknownAgent, req.Agent, req.Agent)
	}
	if strings.TrimSpace(req.Task) == "" {
		return nil, fmt.Errorf("%w: the task is empty", ErrBadRequest)
	}
	if len(req.Task) > 64<<10 || !utf8.ValidString(req.Task) {
		return nil, fmt.Errorf("%w: the task must be UTF-8 text of at most 64 KiB", ErrBadRequest)
	}
	if err := req.Limits.Validate(); err != nil {
		return nil, err
	}
	if _, err := c.opts.Sessions.Workspace(session); err != nil {
		return nil, err
	}
	r := &run{
		c:       c,
		id:      newID(),
		session: session,
		agent:   req.Agent,
		task:    req.Task,
		limits:  req.Limits.Or(def),
		done:    make(chan struct{}),
		settled: make(chan struct{}),
		outputs: map[string]bool{},
	}
	if parent != nil {
		r.parent, r.depth = parent.id, parent.depth+1
	}
	r.log = c.log.With("session", session, "run", r.id, "agent", r.agent)
	base, r.cancel = context.WithCancelCause(base)
	r.ctx, r.cancelWall = context.WithDeadlineCause(base, time.Now().Add(r.limits.wall()), stopCause{ReasonWallClock})
	return r, nil
}

// Get returns a run, running or ended: from memory while this controller
// knows it, else from Options.Runs (a run of an earlier daemon, or one
// ended long ago).
func (c *Controller) Get(ctx context.Context, id string) (Info, error) {
	c.mu.Lock()
	r := c.runs[id]
	c.mu.Unlock()
	if r != nil {
		return r.settledSnapshot(ctx), nil
	}
	if c.opts.Runs == nil {
		return Info{}, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	return stored(ctx, c.opts.Runs, id)
}

// List returns a session's runs, sub-runs too, oldest first: those
// Options.Runs keeps, with the ones going now as they are now. Without a
// RunStore, only the runs this controller still knows.
func (c *Controller) List(ctx context.Context, session string) ([]Info, error) {
	c.mu.Lock()
	mem := map[string]Info{}
	for _, r := range c.runs {
		if r.session == session {
			mem[r.id] = r.snapshot()
		}
	}
	c.mu.Unlock()
	var out []Info
	if c.opts.Runs != nil {
		var err error
		if out, err = storedRuns(ctx, c.opts.Runs, session, c.log); err != nil {
			return nil, err
		}
	}
	for i, info := range out {
		if m, ok := mem[info.ID]; ok {
			out[i] = m
			delete(mem, info.ID)
		}
	}
	for _, m := range mem {
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b Info) int {
		return cmp.Or(a.Started.Compare(b.Started), cmp.Compare(a.StartSeq, b.StartSeq))
	})
	return out, nil
}

// Active returns the run going on in a session, if any.
func (c *Controller) Active(session string) (Info, bool) {
	c.mu.Lock()
	r := c.active[session]
	c.mu.Unlock()
	if r == nil {
		return Info{}, false
	}
	return r.snapshot(), true
}

// Wait waits for a run to end, or for ctx.
func (c *Controller) Wait(ctx context.Context, id string) (Info, error) {
	c.mu.Lock()
	r := c.runs[id]
	c.mu.Unlock()
	if r == nil {
		return Info{}, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	select {
	case <-r.done:
		return r.snapshot(), nil
	case <-ctx.Done():
		return r.snapshot(), ctx.Err()
	}
}

// Stop stops a run (and the sub-run it is waiting on): a step or command
// in progress is interrupted, run_ended is recorded with reason stopped,
// and the plugin is killed. It returns the run as it ended, or as it is
// when ctx ends first. Stopping an ended run changes nothing.
func (c *Controller) Stop(ctx context.Context, id string) (Info, error) {
	c.mu.Lock()
	r := c.runs[id]
	c.mu.Unlock()
	if r == nil {
		return Info{}, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	r.cancel(stopCause{ReasonStopped})
	return c.Wait(ctx, id)
}

// Shutdown stops every run: new runs are refused at once; running ones
// stop after their current action within grace, then are cancelled; each
// records run_ended with reason shutdown and its plugin is killed.
// Shutdown returns when every run has ended, or when ctx ends.
func (c *Controller) Shutdown(ctx context.Context, grace time.Duration) error {
	c.mu.Lock()
	c.closing = true
	var all []*run
	for _, r := range c.runs {
		all = append(all, r)
	}
	c.mu.Unlock()
	for _, r := range all {
		r.soft.Store(true)
	}
	done := make(chan struct{})
	go func() { c.wg.Wait(); close(done) }()
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-done:
		return nil
	case <-t.C:
	case <-ctx.Done():
	}
	for _, r := range all {
		r.cancel(stopCause{ReasonShutdown})
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// forget drops a run that never started.
func (c *Controller) forget(r *run) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.runs, r.id)
	if c.active[r.session] == r {
		delete(c.active, r.session)
	}
}

// ended moves a run to the ended ones, keeping at most keepEnded.
func (c *Controller) ended(r *run) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.active[r.session] == r {
		delete(c.active, r.session)
	}
	c.endedIDs = append(c.endedIDs, r.id)
	for len(c.endedIDs) > keepEnded {
		delete(c.runs, c.endedIDs[0])
		c.endedIDs = c.endedIDs[1:]
	}
}

func newID() string {
	var b [5]byte
	_, _ = rand.Read(b[:])
	return "r" + hex.EncodeToString(b[:])
}

// stopCause is why a run's context ended.
type stopCause struct{ reason string }

func (s stopCause) Error() string { return "run " + s.reason }
