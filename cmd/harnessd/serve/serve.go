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
	"path/filepath"
	"sync"
	"time"

	"github.com/harnessd/harnessd/core/agent"
	"github.com/harnessd/harnessd/core/api"
	"github.com/harnessd/harnessd/core/config"
	"github.com/harnessd/harnessd/core/daemon"
	"github.com/harnessd/harnessd/core/systemd"
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
	d, err := daemon.New(ctx, daemon.Options{Config: cfg, Store: st, Outputs: st.Outputs(), DataDir: dataDir, Metrics: metrics, Logger: log, ProxyHosts: opts.ProxyHosts})
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
	})
	if err != nil {
		d.Shutdown(context.Background(), 0)
		closeLn()
		return err
	}
	srv := api.NewServer(d, api.Options{
		MaxBody: int64(cfg.Daemon.MaxBody),
		Allow:   api.AllowUsers(cfg.Daemon.AllowUIDs, cfg.Daemon.AllowGIDs),
		Logger:  log,
		Runs:    ctrl,
	})
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

	var serveErr error
	select {
	case <-ctx.Done():
		log.Info("harnessd stopping", "grace", cfg.Daemon.ShutdownGrace.Duration)
	case serveErr = <-served:
		log.Error("API server stopped", "err", serveErr)
	}
	systemd.Stopping()
	stopWatchdog()
	wg.Wait()
	srv.StopAccepting()
	// Runs first, while their sessions can still record run_ended; their
	// plugins are killed as each ends.
	if err := ctrl.Shutdown(context.Background(), cfg.Daemon.ShutdownGrace.Duration); err != nil {
		log.Warn("agent runs", "err", err)
	}
	derr := d.Shutdown(context.Background(), cfg.Daemon.ShutdownGrace.Duration)
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	srv.Shutdown(sctx)
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
