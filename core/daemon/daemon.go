package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/harnessd/harnessd/core/config"
	"github.com/harnessd/harnessd/core/event"
	"github.com/harnessd/harnessd/core/live"
	"github.com/harnessd/harnessd/core/pipeline"
	"github.com/harnessd/harnessd/core/sandbox"
	"github.com/harnessd/harnessd/core/sandbox/cgroup"
	"github.com/harnessd/harnessd/core/session"
	"github.com/harnessd/harnessd/core/session/record"
	"github.com/harnessd/harnessd/core/trim"
)

// Session states, as the catalog keeps them.
const (
	StateLive        = record.StateLive
	StateStopped     = record.StateStopped
	StateInterrupted = record.StateInterrupted
)

// Store is what the daemon keeps its sessions in: their events (the log
// the bus sits on) and their metadata. store.Store is one; core never
// imports it.
type Store interface {
	event.Log
	record.Catalog
}

// Options configures a Daemon.
type Options struct {
	Config config.Config // sandbox, terminal, trim and daemon settings
	Store  Store         // required; the daemon does not close it
	// Outputs keeps every command's full output (store.Store.Outputs());
	// required.
	Outputs trim.OutputStore
	// DataDir holds the sessions' workspaces (DataDir/workspaces/ID);
	// required.
	DataDir string
	// RunDir holds runtime files: sandboxes' state and their proxies'
	// sockets. Default DataDir/run.
	RunDir  string
	Metrics *Metrics // nil: a new one
	Logger  *slog.Logger
	// Hooks are the policies every action passes through (the Lua
	// engine, adapted by cmd/harnessd/serve); nil allows everything. If
	// Hooks also has SessionEvent and RedactPage (hooks.Pipeline), session
	// starts and ends are given to it and output pages are redacted by it.
	Hooks pipeline.Hooks
	// ReloadHooks, if set, loads the hook files again (SIGHUP, POST
	// /v1/hooks/reload) and reports what is loaded now.
	ReloadHooks func() (any, error)
	// ProxyHosts maps host names to addresses for every session's egress
	// proxy (network = "proxy"), trusted as given: for tests, and for
	// embedders pointing a name at a local mirror.
	ProxyHosts map[string]string
	// Interrupted, if set, is called by New for each session the last
	// daemon left live, after its unanswered actions are answered and
	// before its sandbox_stopped: what it records with rec comes before
	// that last event. core/agent ends the runs that were going there
	// (agent.Interrupted). An error is logged; the session is still
	// marked interrupted.
	Interrupted func(ctx context.Context, session string, rec func(context.Context, event.Payload) (event.Event, error)) error
}

// Daemon owns the live sessions: it creates them, runs their actions one
// at a time each, and records every step in the store through its bus.
type Daemon struct {
	cfgMu       sync.RWMutex
	cfg         config.Config // read with conf(); Reload replaces it
	st          Store
	outputs     trim.OutputStore
	bus         *event.Bus
	hub         *live.Hub // commands' output as it is produced, for watchers
	pipe        *pipeline.Pipeline
	hooks       pipeline.Hooks
	reloadHooks func() (any, error)
	interrupted func(ctx context.Context, session string, rec func(context.Context, event.Payload) (event.Event, error)) error
	// approvals holds the actions hooks asked a person about.
	approvals *approvals
	dataDir   string
	runDir    string
	metrics   *Metrics
	log       *slog.Logger

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
	if opts.Outputs == nil {
		return nil, errors.New("daemon: no output store")
	}
	if opts.DataDir == "" {
		return nil, errors.New("daemon: no data directory")
	}
	if opts.RunDir == "" {
		opts.RunDir = filepath.Join(opts.DataDir, "run")
	}
	if err := os.MkdirAll(opts.RunDir, 0o700); err != nil {
		return nil, fmt.Errorf("daemon: %w", err)
	}
	// Symlinks resolved (the administrator's, trusted): the workspaces'
	// paths then have none, and what reads a workspace on the host as
	// root (agent.LoadGuidance) can refuse any it meets as one a client
	// planted after its directory was checked.
	for _, dir := range []*string{&opts.DataDir, &opts.RunDir} {
		if r, err := filepath.EvalSymlinks(*dir); err == nil {
			*dir = r
		}
	}
	d := &Daemon{
		cfg:     opts.Config,
		st:      opts.Store,
		outputs: opts.Outputs,
		bus:     event.NewBus(opts.Store, nil),
		hub:     live.NewHub(),
		dataDir: opts.DataDir,
		runDir:  opts.RunDir,
		metrics: opts.Metrics,
		log:     opts.Logger,
		live:    make(map[string]*liveSession),

		proxyHosts: opts.ProxyHosts,
	}
	d.approvals = newApprovals(func() time.Duration { return d.conf().Hooks.AskTimeout.Duration })
	d.pipe = pipeline.New(pipeline.Options{Done: d.actionDone, Approver: d.approvals, Hooks: opts.Hooks})
	d.hooks, d.reloadHooks = opts.Hooks, opts.ReloadHooks
	d.interrupted = opts.Interrupted
	if w, ok := opts.Store.(WriteChecker); ok {
		d.metrics.watchStore(w.WriteErr)
	}
	d.sweepClones()
	if err := d.recover(ctx); err != nil {
		d.bus.Close()
		return nil, err
	}
	if err := d.setupSandboxes(); err != nil {
		d.bus.Close()
		return nil, err
	}
	if d.pooled() {
		d.pool = newPool(d.conf().Sandbox.PoolSize, func(ctx context.Context) (*placement, error) {
			name := newPlacementName()
			return d.place(ctx, name, filepath.Join(d.dataDir, "workspaces", name), nil, nil)
		}, (*placement).close, d.metrics.observePoolTake, d.log)
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
		open, err := d.unanswered(ctx, s.ID)
		if err != nil {
			return fmt.Errorf("daemon: session %s: %w", s.ID, err)
		}
		now := time.Now().UTC()
		var evs []event.Event
		for _, a := range open {
			// Every action in the log gets its answer, even if all it can
			// say is that no one saw the end.
			evs = append(evs, event.Event{Session: s.ID, Source: event.SourceRuntime, Time: now, Cause: a.Seq,
				Payload: event.CmdOutput{ExitCode: -1, Note: "harnessd stopped (crashed or was killed) while this action ran; " +
					"its output and exit code were not recorded, and the session's shell is gone"}})
		}
		if d.interrupted != nil {
			if len(evs) > 0 {
				if _, err := d.bus.Append(ctx, s.ID, evs...); err != nil {
					return fmt.Errorf("daemon: mark session %s interrupted: %w", s.ID, err)
				}
				evs = nil
			}
			rec := func(ctx context.Context, p event.Payload) (event.Event, error) {
				stored, err := d.bus.Append(ctx, s.ID, event.Event{Session: s.ID, Source: event.SourceRuntime, Time: now, Payload: p})
				if err != nil {
					return event.Event{}, err
				}
				return stored[0], nil
			}
			if err := d.interrupted(ctx, s.ID, rec); err != nil {
				d.log.Warn("interrupted session: what was going in it is not all recorded", "session", s.ID, "err", err)
			}
		}
		evs = append(evs, event.Event{Session: s.ID, Source: event.SourceRuntime, Time: now,
			Payload: event.SandboxStopped{Reason: "interrupted: harnessd stopped (crashed or was killed) while the session was live"}})
		if _, err := d.bus.Append(ctx, s.ID, evs...); err != nil {
			return fmt.Errorf("daemon: mark session %s interrupted: %w", s.ID, err)
		}
		if err := d.setState(ctx, s.ID, StateInterrupted); err != nil {
			return err
		}
		d.log.Info("session interrupted by the last daemon's end", "session", s.ID)
	}
	return nil
}

// unanswered returns a session's actions that expect an observation and
// have none: what ran when the last daemon died.
func (d *Daemon) unanswered(ctx context.Context, id string) ([]event.Event, error) {
	var open []event.Event
	err := d.bus.Read(ctx, id, 0, func(ev event.Event) error {
		switch {
		case ev.IsAction() && ev.Kind() != event.KindMessage && ev.Kind() != event.KindFinish:
			open = append(open, ev)
		case ev.IsObservation() && ev.Cause != 0:
			for i := len(open) - 1; i >= 0; i-- {
				if open[i].Seq == ev.Cause {
					open = append(open[:i], open[i+1:]...)
					break
				}
			}
		}
		return nil
	})
	return open, err
}

func (d *Daemon) setState(ctx context.Context, id, state string) error {
	_, err := d.st.UpdateSession(ctx, id, func(s *record.Session) error {
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
	if _, err := d.st.Session(ctx, "healthz"); err != nil && !errors.Is(err, record.ErrNotFound) {
		return fmt.Errorf("store: %w", err)
	}
	if w, ok := d.st.(WriteChecker); ok && w.WriteErr() != nil {
		// The last commit failed (a full disk): see whether the store can
		// write again, which clears it, rather than wait for an action.
		if err := w.CheckWrite(ctx); err != nil {
			return fmt.Errorf("%w: %w", ErrStoreCannotWrite, err)
		}
	}
	return ctx.Err()
}

// WriteChecker is a Store that knows whether it can write (store.Store).
type WriteChecker interface {
	// WriteErr is the last commit's error, nil after a success.
	WriteErr() error
	// CheckWrite tries an empty commit.
	CheckWrite(ctx context.Context) error
}

// conf is the daemon's configuration now.
func (d *Daemon) conf() config.Config {
	d.cfgMu.RLock()
	defer d.cfgMu.RUnlock()
	return d.cfg
}

// Reload takes the settings of c that a running daemon can change: the
// terminal's timeouts and the trimming for sessions created from now on,
// max_sessions, shutdown_grace (the API's own settings are the server's
// to take). It returns the keys it applied and those that differ but need
// a restart (config.RestartOnly: kept as they were).
func (d *Daemon) Reload(c config.Config) (applied, restart []string) {
	d.cfgMu.Lock()
	defer d.cfgMu.Unlock()
	next := c
	next.Daemon.Socket, next.Daemon.DataDir = d.cfg.Daemon.Socket, d.cfg.Daemon.DataDir
	next.Store, next.Sandbox = d.cfg.Store, d.cfg.Sandbox
	for _, k := range config.Changed(d.cfg, c) {
		if config.RestartOnly(k) {
			restart = append(restart, k)
		} else {
			applied = append(applied, k)
		}
	}
	d.cfg = next
	return applied, restart
}

// ReloadHooks loads the hook files again; on an error the previous set
// stays active. The result says what is loaded.
func (d *Daemon) ReloadHooks() (any, error) {
	if d.reloadHooks == nil {
		return nil, fmt.Errorf("%w: this harnessd runs no hooks", ErrBadRequest)
	}
	r, err := d.reloadHooks()
	if err != nil {
		d.log.Error("hooks not reloaded; the previous set stays active", "err", err)
		return nil, fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	d.log.Info("hooks reloaded", "report", r)
	return r, nil
}

// sessionHook tells the hooks a session started or is ending.
func (d *Daemon) sessionHook(ctx context.Context, s *session.Session, name string) {
	h, ok := d.hooks.(interface {
		SessionEvent(context.Context, *session.Session, string) error
	})
	if !ok {
		return
	}
	if err := h.SessionEvent(ctx, s, name); err != nil {
		d.log.Warn("session hook failed", "session", s.ID(), "event", name, "err", err)
	}
}

// finish waits, within ctx, for a command that runs with no call waiting
// on it, reading its output as a call would, and records what it printed
// as a cmd_output answering seq. It reports whether the command ended.
func (d *Daemon) finish(ctx context.Context, ls *liveSession, seq uint64) bool {
	for ctx.Err() == nil && ls.sess.Running() {
		out, _, err := ls.sess.Command(ctx, event.CmdRun{Command: ""})
		if err != nil {
			break
		}
		if out.ExitCode != -1 || out.Output != "" {
			out.Note = strings.TrimSpace("Read during harnessd's shutdown grace. " + out.Note)
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			if _, err := ls.sess.Record(rctx, event.SourceRuntime, seq, out); err != nil {
				d.log.Warn("shutdown: output not recorded", "session", ls.sess.ID(), "err", err)
			}
			cancel()
		}
		if out.ExitCode != -1 {
			return true
		}
	}
	return !ls.sess.Running()
}

// Grace is daemon.shutdown_grace as configured now.
func (d *Daemon) Grace() time.Duration { return d.conf().Daemon.ShutdownGrace.Duration }

// Bus is the daemon's event bus, for followers.
func (d *Daemon) Bus() *event.Bus { return d.bus }

// Metrics are the daemon's series.
func (d *Daemon) Metrics() *Metrics { return d.metrics }

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
	gctx, cancel := context.WithTimeout(ctx, grace)
	defer cancel()
	select {
	case <-done:
	case <-gctx.Done():
	}
	d.mu.Lock()
	live := d.live
	d.live = map[string]*liveSession{}
	d.mu.Unlock()
	rctx := context.WithoutCancel(ctx)
	var wg sync.WaitGroup
	for id, ls := range live {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// A command still running after its call returned (soft
			// timeout, max wait) gets the rest of the grace too; its
			// output meanwhile answers the cmd_run it belongs to.
			reason := "harnessd shut down (SIGTERM); no command was running"
			if seq := ls.running.Load(); seq != 0 && ls.sess.Running() {
				if d.finish(gctx, ls, seq) {
					reason = "harnessd shut down (SIGTERM); the session's running command finished within the grace period first"
				} else {
					reason = fmt.Sprintf("harnessd shut down (SIGTERM); the session's command, still running after the %s grace period (or a second signal), was interrupted", grace)
				}
			} else if gctx.Err() != nil && len(ls.turn) > 0 {
				reason = fmt.Sprintf("harnessd shut down (SIGTERM); the session's command, still running after the %s grace period (or a second signal), was interrupted", grace)
			}
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
