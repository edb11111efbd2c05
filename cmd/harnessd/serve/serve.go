// Package serve runs `harnessd serve`: it opens the store, starts the
// daemon and its API on the unix socket (or the sockets systemd passed),
// tells systemd when it is ready, and on SIGTERM stops in order: refuse new
// work, let running commands finish within the grace period, record every
// session as interrupted, close the store.
package serve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/harnessd/harnessd/core/agent"
	"github.com/harnessd/harnessd/core/api"
	"github.com/harnessd/harnessd/core/config"
	"github.com/harnessd/harnessd/core/daemon"
	"github.com/harnessd/harnessd/core/heapfloor"
	"github.com/harnessd/harnessd/core/mcp"
	"github.com/harnessd/harnessd/core/systemd"
	"github.com/harnessd/harnessd/hooks"
	"github.com/harnessd/harnessd/plugins/builtin"
	"github.com/harnessd/harnessd/store"
)

// BatchSyncEvery is how often batch durability syncs the store.
const BatchSyncEvery = 5 * time.Millisecond

// Options configures Run.
type Options struct {
	Config config.Config // resolved: file, environment and flags applied

	// Listener, if set, is served instead of creating the socket. Without
	// it, a socket systemd passed (socket activation) is used if there is
	// one, else daemon.socket is created.
	Listener net.Listener

	// Ready, if set, is called once the store is open and the socket is
	// accepting, with the socket's path.
	Ready func(socket string)

	Logger *slog.Logger

	// ProxyHosts is passed to the daemon (daemon.Options.ProxyHosts).
	ProxyHosts map[string]string

	// Reload, if set, reads the configuration again (the file, the
	// environment, the flags) on SIGHUP. Nil: SIGHUP is logged and
	// ignored, never fatal.
	Reload func() (config.Config, error)

	// AgentExe is the binary that serves the built-in agents (`harnessd
	// plugin NAME`); default the running one.
	AgentExe string
}

// Run serves until ctx ends, then shuts down cleanly and returns nil; an
// error means it could not start or could not stop cleanly.
func Run(ctx context.Context, opts Options) error {
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	cfg := opts.Config
	ln := opts.Listener
	if ln == nil {
		// Take systemd's sockets first, before anything can start a child
		// that would inherit LISTEN_FDS.
		lns, err := systemd.Listeners()
		if err != nil {
			return fmt.Errorf("socket activation: %w", err)
		}
		if len(lns) > 1 {
			for _, l := range lns {
				l.Close()
			}
			return fmt.Errorf("socket activation: %d sockets passed; harnessd serves one (check harnessd.socket)", len(lns))
		}
		if len(lns) == 1 {
			ln = lns[0]
			log.Info("socket activated", "addr", ln.Addr())
		}
	}
	closeLn := func() {
		if ln != nil {
			ln.Close()
		}
	}
	dataDir := cfg.DataPath(nil)
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		closeLn()
		return fmt.Errorf("data directory: %w", err)
	}
	tighten(dataDir, cfg.SocketPath(nil), log)
	// A GOGC in the environment is the operator's own pacing, which the
	// floor would override while the heap is small.
	if gogc := os.Getenv("GOGC"); gogc == "" {
		defer heapfloor.Set(uint64(cfg.Daemon.HeapFloorMB) << 20)()
	} else if cfg.Daemon.HeapFloorMB > 0 {
		log.Info("daemon.heap_floor_mb not applied: GOGC is set", "GOGC", gogc)
	}
	metrics := daemon.NewMetrics()
	storePath := cfg.StorePath(nil)
	if err := os.MkdirAll(filepath.Dir(storePath), 0o700); err != nil {
		closeLn()
		return fmt.Errorf("store directory: %w", err)
	}
	sopts := &store.Options{OnCommit: metrics.ObserveCommit}
	if cfg.Store.Durability == config.DurabilityBatch {
		sopts.SyncEvery = BatchSyncEvery
	}
	st, err := store.Open(storePath, sopts)
	if err != nil {
		closeLn()
		return err
	}
	stClosed := false
	defer func() {
		if !stClosed {
			st.Close()
		}
	}()
	// Listen before the daemon starts anything: api.Listen narrows the
	// process's umask for an instant, which must not race the warm pool
	// making directories.
	socket := cfg.SocketPath(nil)
	if ln == nil {
		if ln, err = api.Listen(socket); err != nil {
			return err
		}
	} else if a, ok := ln.Addr().(*net.UnixAddr); ok {
		socket = a.Name
	}
	eng, err := loadHooks(cfg.Hooks, log)
	if err != nil {
		closeLn()
		return err
	}
	dopts := daemon.Options{Config: cfg, Store: st, Outputs: st.Outputs(), DataDir: dataDir, Metrics: metrics, Logger: log, ProxyHosts: opts.ProxyHosts}
	if eng != nil {
		dopts.Hooks = &hooks.Pipeline{Engine: eng, Outputs: st.Outputs(), Logger: log}
		dopts.ReloadHooks = func() (any, error) { return eng.Reload() }
	}
	// Runs a dead daemon was driving end (run_ended) before their
	// sessions' sandbox_stopped.
	dopts.Interrupted = agent.Interrupted(st, log)
	d, err := daemon.New(ctx, dopts)
	if err != nil {
		closeLn()
		return err
	}
	ctrl, err := agent.New(agent.Options{
		Sessions:     d,
		Launcher:     builtin.Launcher(cfg, opts.AgentExe),
		Agent:        builtin.Defaults(cfg),
		DefaultAgent: cfg.Run.Agent,
		Logger:       log,
		Runs:         st,
	})
	if err != nil {
		d.Shutdown(context.Background(), 0)
		closeLn()
		return err
	}
	srv := api.NewServer(d, api.Options{
		MaxBody:         int64(cfg.Daemon.MaxBody),
		BodyTimeout:     cfg.Daemon.BodyTimeout.Duration,
		MaxConnsPerPeer: cfg.Daemon.MaxConnsPerPeer,
		Allow:           api.AllowUsers(cfg.Daemon.AllowUIDs, cfg.Daemon.AllowGIDs),
		Logger:          log,
		Runs:            ctrl,
	})
	// MCP over Streamable HTTP at /mcp: core/mcp is a client of the API,
	// so the API cannot build it; each MCP session acts through an
	// in-process client as the peer that started it.
	mcpHandler := mcp.NewHTTPHandler(srv.ClientFor, mcp.Options{Version: api.Version, Logger: log})
	srv.HandleMCP(mcpHandler)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	log.Info("harnessd serving", "socket", socket, "store", storePath, "durability", cfg.Store.Durability,
		"data", dataDir, "pid", os.Getpid())
	if sent, err := systemd.Ready(); err != nil {
		log.Warn("sd_notify READY", "err", err)
	} else if sent {
		systemd.Status("serving on %s", socket)
	}
	if opts.Ready != nil {
		opts.Ready(socket)
	}
	wdCtx, stopWatchdog := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := systemd.Watchdog(wdCtx, d.Healthy); err != nil {
			log.Warn("systemd watchdog", "err", err)
		}
	})

	// SIGHUP reloads what can change live; by default it would kill us.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)

	var serveErr error
wait:
	for {
		select {
		case <-ctx.Done():
			log.Info("harnessd stopping", "grace", d.Grace())
			break wait
		case serveErr = <-served:
			log.Error("API server stopped", "err", serveErr)
			break wait
		case <-hup:
			reload(opts.Reload, d, srv, log)
		}
	}
	systemd.Stopping()
	stopWatchdog()
	wg.Wait()
	srv.StopAccepting()
	// A second SIGTERM or SIGINT during the grace period ends it, as
	// systemd's and most daemons' users expect.
	sctxGrace, endGrace := context.WithCancel(context.Background())
	again := make(chan os.Signal, 1)
	signal.Notify(again, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		select {
		case <-again:
			log.Warn("second signal: ending the shutdown grace period now")
			endGrace()
		case <-sctxGrace.Done():
		}
	}()
	// Runs first, while their sessions can still record run_ended; their
	// plugins are killed as each ends.
	if err := ctrl.Shutdown(sctxGrace, d.Grace()); err != nil {
		log.Warn("agent runs", "err", err)
	}
	derr := d.Shutdown(sctxGrace, d.Grace())
	endGrace()
	signal.Stop(again)
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	srv.Shutdown(sctx)
	mcpHandler.Close()
	if serveErr == nil {
		serveErr = <-served
	}
	stClosed = true
	cerr := st.Close()
	if err := errors.Join(serveErr, derr, cerr); err != nil {
		return err
	}
	log.Info("harnessd stopped")
	return nil
}

// tighten narrows an existing data directory to 0700: it holds every
// session's workspace and history, which no other local user should read
// or plant files in. One the daemon does not own, or that holds the
// socket other users must reach, is left as it is, and said so.
func tighten(dir, socket string, log *slog.Logger) {
	fi, err := os.Stat(dir)
	if err != nil || fi.Mode().Perm()&0o077 == 0 {
		return
	}
	if rel, err := filepath.Rel(dir, socket); err == nil && filepath.IsLocal(rel) {
		log.Warn("data directory is open to other users; left so because the socket is in it (set daemon.socket elsewhere)", "dir", dir, "mode", fi.Mode().Perm())
		return
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != os.Geteuid() {
		log.Warn("data directory is open to other users and not ours to narrow", "dir", dir, "mode", fi.Mode().Perm())
		return
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		log.Warn("data directory: could not narrow its mode", "dir", dir, "err", err)
		return
	}
	log.Info("data directory narrowed to 0700", "dir", dir, "was", fi.Mode().Perm())
}

// reload applies a new configuration on SIGHUP: the daemon's and the API's
// live settings; what needs a restart is named in the log and kept.
func reload(load func() (config.Config, error), d *daemon.Daemon, srv *api.Server, log *slog.Logger) {
	if load == nil {
		log.Warn("SIGHUP: no configuration to reload (embedded daemon); ignored")
		return
	}
	cfg, err := load()
	if err != nil {
		log.Error("SIGHUP: configuration not reloaded; the running one stays", "err", err)
		return
	}
	applied, restart := d.Reload(cfg)
	if _, err := d.ReloadHooks(); err != nil && !errors.Is(err, daemon.ErrBadRequest) {
		log.Error("SIGHUP: hooks not reloaded", "err", err)
	}
	dm := cfg.Daemon
	srv.SetLimits(api.AllowUsers(dm.AllowUIDs, dm.AllowGIDs), int64(dm.MaxBody), dm.BodyTimeout.Duration, dm.MaxConnsPerPeer)
	if len(restart) > 0 {
		log.Warn("SIGHUP: these settings changed but take effect only after a restart", "keys", restart)
	}
	log.Info("SIGHUP: configuration reloaded", "applied", applied)
}

// loadHooks loads the hook files harness.toml names: the built-in policies
// (hooks.builtin), then hooks.dirs in order. None at all: nil. A file that
// does not load stops the start, naming it with its line.
func loadHooks(hc config.Hooks, log *slog.Logger) (*hooks.Engine, error) {
	var dirs []hooks.Dir
	if hc.Builtin {
		dirs = append(dirs, hooks.Builtin)
	}
	for _, p := range hc.Dirs {
		dirs = append(dirs, hooks.Dir{Path: p, FailOpen: slices.Contains(hc.FailOpen, p)})
	}
	if len(dirs) == 0 {
		return nil, nil
	}
	eng, err := hooks.Load(hooks.Options{Dirs: dirs, Budget: hc.Budget.Duration, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("hooks: %w", err)
	}
	r := eng.Report()
	log.Info("hooks loaded", "files", len(r.Files), "handlers", r.Handlers)
	return eng, nil
}
