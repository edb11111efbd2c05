package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/harnessd/harnessd/core/config"
	"github.com/harnessd/harnessd/core/event"
	"github.com/harnessd/harnessd/core/pipeline"
	"github.com/harnessd/harnessd/core/sandbox"
	"github.com/harnessd/harnessd/core/sandbox/cgroup"
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
	// ProxyHosts maps host names to addresses for every session's egress
	// proxy (network = "proxy"), trusted as given: for tests, and for
	// embedders pointing a name at a local mirror.
	ProxyHosts map[string]string
}

// Daemon owns the live sessions: it creates them, runs their actions one
// at a time each, and records every step in the store through its bus.
type Daemon struct {
	cfg     config.Config
	st      Store
	outputs trim.OutputStore
	bus     *event.Bus
	pipe    *pipeline.Pipeline
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
	d := &Daemon{
		cfg:     opts.Config,
		st:      opts.Store,
		outputs: opts.Outputs,
		bus:     event.NewBus(opts.Store, nil),
		dataDir: opts.DataDir,
		runDir:  opts.RunDir,
		metrics: opts.Metrics,
		log:     opts.Logger,
		live:    make(map[string]*liveSession),

		proxyHosts: opts.ProxyHosts,
	}
	d.pipe = pipeline.New(pipeline.Options{Done: d.actionDone})
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
			return d.place(ctx, name, filepath.Join(d.dataDir, "workspaces", name), nil)
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
	return ctx.Err()
}

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
