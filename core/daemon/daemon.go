package daemon

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sync"
	"time"

	"github.com/harnessd/harnessd/core/config"
	"github.com/harnessd/harnessd/core/event"
	"github.com/harnessd/harnessd/core/parse"
	"github.com/harnessd/harnessd/core/sandbox"
	"github.com/harnessd/harnessd/core/sandbox/cgroup"
	"github.com/harnessd/harnessd/core/session"
	"github.com/harnessd/harnessd/core/trim"
	"github.com/harnessd/harnessd/store"
)

// Session states, as the store keeps them.
const (
	StateLive        = "live"        // its shell is running; actions are accepted
	StateStopped     = "stopped"     // deleted by a client; history readable
	StateInterrupted = "interrupted" // ended by a daemon shutdown or crash; history readable
)

// Options configures a Daemon.
type Options struct {
	Config config.Config // sandbox, terminal, trim and daemon settings
	Store  *store.Store  // required; the daemon does not close it
	// DataDir holds the sessions' workspaces (DataDir/workspaces/ID).
	DataDir string
	// RunDir holds runtime files: sandboxes' state and their proxies'
	// sockets. Default DataDir/run.
	RunDir  string
	Metrics *Metrics // nil: a new one
	Logger  *slog.Logger
	// ProxyHosts maps host names to addresses for every session's egress
	// proxy (network = "proxy"), trusted as given: for tests, and for
	// embedders pointing a name at a local mirror.
	ProxyHosts map[string]string
}

// Daemon owns the live sessions: it creates them, runs their actions one
// at a time each, and records every step in the store through its bus.
type Daemon struct {
	cfg     config.Config
	st      *store.Store
	bus     *event.Bus
	dataDir string
	runDir  string
	metrics *Metrics
	log     *slog.Logger

	driver     sandbox.Driver
	cgroups    *cgroup.Manager // nil when the driver is none or cgroups are unusable
	pool       *pool[*placement]
	proxyHosts map[string]string

	mu       sync.Mutex
	live     map[string]*liveSession
	creating int  // sessions being created, counted against max_sessions
	closing  bool // Shutdown has begun

	inflight sync.WaitGroup // actions running; Shutdown waits for them
}

// liveSession is a session whose shell runs.
type liveSession struct {
	sess      *session.Session
	workspace string
	proxy     *egress       // nil unless network = "proxy"
	turn      chan struct{} // one action at a time: hold the token to act
	gone      chan struct{} // closed once sandbox_stopped is recorded
	mu        sync.Mutex
	ended     bool // Close has been called (under mu)
}

// Info is a session as the API shows it.
type Info struct {
	ID        string            `json:"id"`
	State     string            `json:"state"`
	Created   time.Time         `json:"created"`
	Ended     time.Time         `json:"ended,omitzero"`
	Labels    map[string]string `json:"labels,omitempty"`
	LastSeq   uint64            `json:"last_seq"`
	Workspace string            `json:"workspace,omitempty"` // on the host; only while live
	PID       int               `json:"pid,omitempty"`       // the shell's, only while live
}

// CreateRequest is what a new session is made from. Every field may be
// left empty.
type CreateRequest struct {
	ID     string            `json:"id,omitempty"` // default a new random id
	Labels map[string]string `json:"labels,omitempty"`
}

// New returns a Daemon over an open store. Sessions the store says are
// live belong to a daemon that is gone (it crashed, or was killed before
// it could say so): each is marked interrupted, with a sandbox_stopped
// event saying why, so its history reads to the end.
func New(ctx context.Context, opts Options) (*Daemon, error) {
	if opts.Store == nil {
		return nil, errors.New("daemon: no store")
	}
	if opts.Metrics == nil {
		opts.Metrics = NewMetrics()
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.DataDir == "" {
		opts.DataDir = filepath.Dir(opts.Store.Path())
	}
	if opts.RunDir == "" {
		opts.RunDir = filepath.Join(opts.DataDir, "run")
	}
	if err := os.MkdirAll(opts.RunDir, 0o700); err != nil {
		return nil, fmt.Errorf("daemon: %w", err)
	}
	d := &Daemon{
		cfg:     opts.Config,
		st:      opts.Store,
		bus:     event.NewBus(opts.Store, nil),
		dataDir: opts.DataDir,
		runDir:  opts.RunDir,
		metrics: opts.Metrics,
		log:     opts.Logger,
		live:    make(map[string]*liveSession),

		proxyHosts: opts.ProxyHosts,
	}
	if err := d.recover(ctx); err != nil {
		d.bus.Close()
		return nil, err
	}
	if err := d.setupSandboxes(); err != nil {
		d.bus.Close()
		return nil, err
	}
	if d.pooled() {
		d.pool = newPool(d.cfg.Sandbox.PoolSize, func(ctx context.Context) (*placement, error) {
			name := newPlacementName()
			return d.place(ctx, name, filepath.Join(d.dataDir, "workspaces", name))
		}, (*placement).close, d.log)
	}
	return d, nil
}

// recover marks the sessions a previous daemon left live as interrupted.
func (d *Daemon) recover(ctx context.Context) error {
	all, err := d.st.Sessions(ctx)
	if err != nil {
		return fmt.Errorf("daemon: list sessions: %w", err)
	}
	for _, s := range all {
		if s.State != StateLive && s.State != "" {
			continue
		}
		ev := event.Event{Session: s.ID, Source: event.SourceRuntime, Time: time.Now().UTC(),
			Payload: event.SandboxStopped{Reason: "interrupted: harnessd stopped (crashed or was killed) while the session was live"}}
		if _, err := d.bus.Append(ctx, s.ID, ev); err != nil {
			return fmt.Errorf("daemon: mark session %s interrupted: %w", s.ID, err)
		}
		if err := d.setState(ctx, s.ID, StateInterrupted); err != nil {
			return err
		}
		d.log.Info("session interrupted by the last daemon's end", "session", s.ID)
	}
	return nil
}

func (d *Daemon) setState(ctx context.Context, id, state string) error {
	_, err := d.st.UpdateSession(ctx, id, func(s *store.Session) error {
		s.State = state
		if state != StateLive && s.Ended.IsZero() {
			s.Ended = time.Now().UTC()
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("daemon: session %s: set state %s: %w", id, state, err)
	}
	return nil
}

// Healthy reports whether the daemon can still do its work: the store
// answers a read and the daemon's own lock is free within ctx. The
// systemd watchdog pings only while it passes.
func (d *Daemon) Healthy(ctx context.Context) error {
	locked := make(chan struct{})
	go func() {
		d.mu.Lock()
		d.mu.Unlock()
		close(locked)
	}()
	select {
	case <-locked:
	case <-ctx.Done():
		return fmt.Errorf("daemon lock: %w", ctx.Err())
	}
	if _, err := d.st.Session(ctx, "healthz"); err != nil && !errors.Is(err, store.ErrSessionNotFound) {
		return fmt.Errorf("store: %w", err)
	}
	return ctx.Err()
}

// Bus is the daemon's event bus, for followers.
func (d *Daemon) Bus() *event.Bus { return d.bus }

// Metrics are the daemon's series.
func (d *Daemon) Metrics() *Metrics { return d.metrics }

var validID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// Create starts a new session: its workspace, its shell, its first event
// (sandbox_started).
func (d *Daemon) Create(ctx context.Context, req CreateRequest) (Info, error) {
	id := req.ID
	if id == "" {
		var b [5]byte
		_, _ = rand.Read(b[:])
		id = "s" + hex.EncodeToString(b[:])
	} else if !validID.MatchString(id) {
		return Info{}, fmt.Errorf("%w: session id %q: use 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit", ErrBadRequest, id)
	}
	d.mu.Lock()
	switch {
	case d.closing:
		d.mu.Unlock()
		return Info{}, ErrShuttingDown
	case len(d.live)+d.creating >= d.cfg.Daemon.MaxSessions:
		d.mu.Unlock()
		return Info{}, fmt.Errorf("%w: %d live (daemon.max_sessions)", ErrTooMany, d.cfg.Daemon.MaxSessions)
	}
	d.creating++
	d.inflight.Add(1) // Shutdown waits for a create in progress
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		d.creating--
		d.mu.Unlock()
		d.inflight.Done()
	}()

	var warm *placement
	ws := filepath.Join(d.dataDir, "workspaces", id)
	if d.pool != nil {
		if p, ok := d.pool.take(); ok {
			warm, ws = p, p.ws
			defer d.pool.refill()
		}
	}
	rec, err := d.st.CreateSession(ctx, store.Session{ID: id, State: StateLive, Labels: req.Labels, Workspace: ws})
	if err != nil {
		if warm != nil {
			warm.close()
		}
		if errors.Is(err, store.ErrSessionExists) {
			return Info{}, fmt.Errorf("%w: session %s", ErrExists, id)
		}
		return Info{}, fmt.Errorf("daemon: create session %s: %w", id, err)
	}
	ls, err := d.start(ctx, id, ws, warm)
	if err != nil {
		// The record stays: it says the session never started.
		d.bus.Append(context.WithoutCancel(ctx), id, event.Event{Session: id, Source: event.SourceRuntime, Time: time.Now().UTC(),
			Payload: event.SandboxStopped{Reason: "failed to start: " + err.Error()}})
		d.setState(context.WithoutCancel(ctx), id, StateInterrupted)
		return Info{}, fmt.Errorf("daemon: start session %s: %w", id, err)
	}
	d.metrics.sessionsCreated.Inc()
	d.metrics.sessionsLive.Inc()
	d.mu.Lock()
	if d.closing {
		d.mu.Unlock()
		d.end(ctx, id, ls, StateInterrupted, "harnessd is shutting down")
		return Info{}, ErrShuttingDown
	}
	d.live[id] = ls
	d.mu.Unlock()
	d.log.Info("session created", "session", id, "workspace", ls.workspace, "pid", ls.sess.PID())
	rec.LastSeq = 1
	return d.info(rec, ls), nil
}

// start starts a session's shell: in warm's sandbox if the pool had one,
// else in a new sandbox (or on the host with driver none) with its
// workspace at ws.
func (d *Daemon) start(ctx context.Context, id, ws string, warm *placement) (*liveSession, error) {
	cfg := session.ConfigFrom(d.cfg, ws)
	cfg.Events, cfg.Outputs, cfg.Logger = d.bus, d.st.Outputs(), d.log
	cfg.Pipeline = d.cfg.Store.Durability == config.DurabilityBatch
	cfg.Driver = d.driver.Name()
	if d.cfg.Sandbox.Driver == config.DriverNone {
		if err := os.MkdirAll(ws, 0o755); err != nil {
			return nil, err
		}
	} else {
		if warm == nil {
			var err error
			if warm, err = d.place(ctx, id, ws); err != nil {
				return nil, err
			}
		}
		cfg.Sandbox, cfg.Shell = warm.sb, warm.term
	}
	sess, err := session.New(ctx, id, cfg)
	if err != nil {
		if warm != nil {
			warm.close()
		}
		return nil, err
	}
	ls := &liveSession{sess: sess, workspace: ws, turn: make(chan struct{}, 1), gone: make(chan struct{})}
	if warm != nil && warm.proxy != nil {
		ls.proxy = warm.proxy
		ls.proxy.attach(sess, d.log)
	}
	return ls, nil
}

func (d *Daemon) info(s store.Session, ls *liveSession) Info {
	in := Info{ID: s.ID, State: s.State, Created: s.Created, Ended: s.Ended, Labels: s.Labels, LastSeq: s.LastSeq}
	if in.State == "" {
		in.State = StateLive
	}
	if ls != nil {
		in.Workspace = ls.workspace
		in.PID = ls.sess.PID()
	}
	return in
}

// Get returns one session, live or ended.
func (d *Daemon) Get(ctx context.Context, id string) (Info, error) {
	s, err := d.st.Session(ctx, id)
	if err != nil {
		if errors.Is(err, store.ErrSessionNotFound) {
			return Info{}, fmt.Errorf("%w: session %s", ErrNotFound, id)
		}
		return Info{}, err
	}
	d.mu.Lock()
	ls := d.live[id]
	d.mu.Unlock()
	return d.info(s, ls), nil
}

// List returns every session the store holds, oldest first.
func (d *Daemon) List(ctx context.Context) ([]Info, error) {
	all, err := d.st.Sessions(ctx)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	live := maps.Clone(d.live)
	d.mu.Unlock()
	out := make([]Info, 0, len(all))
	for _, s := range all {
		out = append(out, d.info(s, live[s.ID]))
	}
	slices.SortStableFunc(out, func(a, b Info) int { return a.Created.Compare(b.Created) })
	return out, nil
}

// Delete ends a session: its shell and everything it started are killed
// (a running command with them), sandbox_stopped is recorded, and the
// session becomes stopped, its history still readable. With purge, its
// history, outputs and workspace are removed too.
func (d *Daemon) Delete(ctx context.Context, id string, purge bool) error {
	d.mu.Lock()
	if d.closing {
		d.mu.Unlock()
		return ErrShuttingDown
	}
	ls := d.live[id]
	delete(d.live, id)
	d.inflight.Add(1) // Shutdown waits for this end to be recorded
	d.mu.Unlock()
	defer d.inflight.Done()
	rec, err := d.st.Session(ctx, id)
	if err != nil && ls == nil {
		if errors.Is(err, store.ErrSessionNotFound) {
			return fmt.Errorf("%w: session %s", ErrNotFound, id)
		}
		return err
	}
	if ls != nil {
		d.end(ctx, id, ls, StateStopped, "deleted by a client")
	}
	if !purge {
		return nil
	}
	ws := rec.Workspace
	if err := d.st.DeleteSession(ctx, id); err != nil && !errors.Is(err, store.ErrSessionNotFound) {
		return fmt.Errorf("daemon: purge session %s: %w", id, err)
	}
	if ws != "" {
		if err := os.RemoveAll(ws); err != nil {
			return fmt.Errorf("daemon: purge session %s: %w", id, err)
		}
	}
	return nil
}

// end stops a live session once: its shell and sandbox are killed (a
// running command with them), the action in flight, if any, records its
// observation, the egress proxy records its last decisions, and then
// sandbox_stopped is recorded and the final state set, so that
// sandbox_stopped is always the session's last event.
func (d *Daemon) end(ctx context.Context, id string, ls *liveSession, state, reason string) {
	ls.mu.Lock()
	if ls.ended {
		ls.mu.Unlock()
		return
	}
	ls.ended = true
	ls.mu.Unlock()
	ctx = context.WithoutCancel(ctx) // the end is recorded whoever asked for it
	if err := ls.sess.Stop(ctx); err != nil {
		d.log.Warn("session stop", "session", id, "err", err)
	}
	select {
	case ls.turn <- struct{}{}: // the action in flight has answered
		<-ls.turn // waiters see ended and give up
	case <-time.After(30 * time.Second):
		d.log.Warn("session end: the action in flight did not finish", "session", id)
	}
	if ls.proxy != nil {
		ls.proxy.close()
	}
	if err := ls.sess.Close(ctx, reason); err != nil {
		d.log.Warn("session close", "session", id, "err", err)
	}
	if err := d.setState(ctx, id, state); err != nil {
		d.log.Warn("session state", "session", id, "err", err)
	}
	close(ls.gone)
	d.metrics.sessionsLive.Dec()
	d.log.Info("session ended", "session", id, "state", state, "reason", reason)
}

// Act runs one action in a session and returns the event that answers it:
// a cmd_run's cmd_output observation; for message, finish and delegate,
// which run nothing, the action itself as recorded. Actions in one session
// run one at a time, in arrival order; sessions never wait for each other.
func (d *Daemon) Act(ctx context.Context, id string, src event.Source, p event.Payload) (event.Event, error) {
	if p == nil || !p.Kind().IsAction() {
		kind := "nothing"
		if p != nil {
			kind = string(p.Kind())
		}
		return event.Event{}, fmt.Errorf("%w: %s is not an action (cmd_run, message, finish or delegate)", ErrBadRequest, kind)
	}
	if src == "" {
		src = event.SourceUser
	}
	if !src.Valid() || src == event.SourceRuntime {
		return event.Event{}, fmt.Errorf("%w: source %q: an action comes from agent, user or hook", ErrBadRequest, src)
	}
	ls, err := d.acquire(ctx, id)
	if err != nil {
		return event.Event{}, err
	}
	defer d.release(ls)

	c, ok := p.(event.CmdRun)
	if !ok {
		ev, err := ls.sess.Record(ctx, src, 0, p)
		return ev, err
	}
	begin := time.Now()
	res, err := ls.sess.Run(ctx, src, c)
	if res.Observation.Seq != 0 {
		d.metrics.observeOutput(res.Output, res.Trim.BytesTotal, res.Trim.BytesOmitted, time.Since(begin))
	}
	if err != nil {
		ls.mu.Lock()
		ended := ls.ended
		ls.mu.Unlock()
		if ended {
			return res.Observation, fmt.Errorf("%w: session %s ended while its command ran", ErrStopped, id)
		}
		return res.Observation, err
	}
	return res.Observation, nil
}

// acquire waits for a session's turn.
func (d *Daemon) acquire(ctx context.Context, id string) (*liveSession, error) {
	d.mu.Lock()
	if d.closing {
		d.mu.Unlock()
		return nil, ErrShuttingDown
	}
	ls := d.live[id]
	if ls != nil {
		d.inflight.Add(1)
	}
	d.mu.Unlock()
	if ls == nil {
		if _, err := d.Get(ctx, id); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%w: session %s has ended; its events can still be read", ErrStopped, id)
	}
	select {
	case ls.turn <- struct{}{}:
	case <-ctx.Done():
		d.inflight.Done()
		return nil, ctx.Err()
	}
	ls.mu.Lock()
	ended := ls.ended
	ls.mu.Unlock()
	if ended {
		d.release(ls)
		return nil, fmt.Errorf("%w: session %s has ended", ErrStopped, id)
	}
	return ls, nil
}

func (d *Daemon) release(ls *liveSession) {
	<-ls.turn
	d.inflight.Done()
}

// ReadLines reads lines from..to of a stored output, 1-based and
// inclusive; to <= 0 means to the end. The store may return fewer lines
// than asked (a page); the result's To says where it stopped.
func (d *Daemon) ReadLines(ctx context.Context, outputID string, from, to int) (trim.Lines, error) {
	l, err := d.st.Outputs().ReadLines(ctx, outputID, from, to)
	switch {
	case errors.Is(err, trim.ErrNotFound), errors.Is(err, trim.ErrInvalidID):
		return l, fmt.Errorf("%w: output %s", ErrNotFound, outputID)
	case errors.Is(err, trim.ErrRange):
		return l, fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	return l, err
}

// Events calls fn with a session's events after seq after, in order. With
// follow it then waits for new ones, and returns nil after the session's
// last event (sandbox_stopped), at once for a session that has ended, or
// an error when ctx ends.
func (d *Daemon) Events(ctx context.Context, id string, after uint64, follow bool, fn func(event.Event) error) error {
	if _, err := d.Get(ctx, id); err != nil {
		return err
	}
	d.mu.Lock()
	ls := d.live[id]
	d.mu.Unlock()
	if !follow || ls == nil {
		return d.bus.Read(ctx, id, after, fn)
	}
	sub, cancel := context.WithCancel(ctx)
	defer cancel()
	evs, errs := d.bus.Subscribe(sub, id, after)
	last := after
	for {
		select {
		case ev, ok := <-evs:
			if !ok {
				return <-errs
			}
			if err := fn(ev); err != nil {
				return err
			}
			last = ev.Seq
			if ev.Kind() == event.KindSandboxStopped {
				return nil
			}
		case err := <-errs:
			return err
		case <-ls.gone:
			// Ended (sandbox_stopped is recorded): the rest of the
			// history, then done, whatever the subscription has yet
			// to deliver.
			cancel()
			return d.bus.Read(ctx, id, last, fn)
		}
	}
}

// Shutdown stops the daemon: new work is refused at once; running actions
// may finish within grace; then every live session's shell is stopped,
// which interrupts what still runs, and each is recorded as interrupted.
// The bus is closed; the store is the caller's to close. Shutdown returns
// when every session has been recorded.
func (d *Daemon) Shutdown(ctx context.Context, grace time.Duration) error {
	d.mu.Lock()
	d.closing = true
	d.mu.Unlock()

	done := make(chan struct{})
	go func() { d.inflight.Wait(); close(done) }()
	t := time.NewTimer(grace)
	defer t.Stop()
	finished := true
	select {
	case <-done:
	case <-t.C:
		finished = false
	case <-ctx.Done():
		finished = false
	}
	d.mu.Lock()
	live := d.live
	d.live = map[string]*liveSession{}
	d.mu.Unlock()
	reason := "harnessd shut down (SIGTERM); the session's running command, if any, finished first"
	if !finished {
		reason = fmt.Sprintf("harnessd shut down (SIGTERM); a command still running after the %s grace period was interrupted", grace)
	}
	rctx := context.WithoutCancel(ctx)
	var wg sync.WaitGroup
	for id, ls := range live {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d.end(rctx, id, ls, StateInterrupted, reason)
		}()
	}
	wg.Wait()
	<-done // the interrupted actions have recorded their observations
	if d.pool != nil {
		d.pool.close()
	}
	if d.cgroups != nil {
		if err := d.cgroups.Close(); err != nil {
			d.log.Warn("cgroups", "err", err)
		}
	}
	return d.bus.Close()
}

// Reply is a model's turn given to the daemon to parse: either Text (a
// reply with a fenced command or a <finish> tag) or a tool call (Tool and
// its JSON Arguments). Exactly one of Text and Tool is set.
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

// Reply parses a model's reply with core/parse, which never fails: a
// command runs as Act runs it, a message or finish is recorded, and a
// malformed reply is answered with an invalid_action observation that says
// what was wrong and how to resend, for the model to read next turn.
func (d *Daemon) Reply(ctx context.Context, id string, r Reply) (ReplyResult, error) {
	if (r.Text == "") == (r.Tool == "") {
		return ReplyResult{}, fmt.Errorf("%w: a reply has either text or tool (with arguments)", ErrBadRequest)
	}
	src := r.Source
	if src == "" {
		src = event.SourceAgent
	}
	if !src.Valid() || src == event.SourceRuntime {
		return ReplyResult{}, fmt.Errorf("%w: source %q: a reply comes from agent, user or hook", ErrBadRequest, src)
	}
	var a parse.Action
	if r.Tool != "" {
		a = parse.ToolCall(r.Tool, r.Arguments)
	} else {
		a = parse.Text(r.Text)
	}
	ls, err := d.acquire(ctx, id)
	if err != nil {
		return ReplyResult{}, err
	}
	defer d.release(ls)
	switch a := a.(type) {
	case parse.Malformed:
		d.metrics.invalidActions.Inc()
		ev, err := ls.sess.Record(ctx, event.SourceRuntime, 0, event.InvalidAction{Reason: a.Reason, Guidance: a.Guidance})
		return ReplyResult{Observation: &ev}, err
	case parse.Message:
		ev, err := ls.sess.Record(ctx, src, 0, event.Message{Text: a.Text})
		return ReplyResult{Action: &ev}, err
	case parse.Finish:
		ev, err := ls.sess.Record(ctx, src, 0, event.Finish{Message: a.Message})
		return ReplyResult{Action: &ev}, err
	case parse.RunBash:
		begin := time.Now()
		res, err := ls.sess.Run(ctx, src, event.CmdRun{Command: a.Command, IsInput: a.IsInput, TimeoutS: a.Timeout.Seconds(), Reset: a.Reset})
		out := ReplyResult{}
		if res.Action.Seq != 0 {
			out.Action = &res.Action
		}
		if res.Observation.Seq != 0 {
			out.Observation = &res.Observation
			d.metrics.observeOutput(res.Output, res.Trim.BytesTotal, res.Trim.BytesOmitted, time.Since(begin))
		}
		return out, err
	}
	return ReplyResult{}, fmt.Errorf("daemon: parser returned %T", a)
}
