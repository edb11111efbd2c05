package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/harnessd/harnessd/cmd/harnessd/serve"
	"github.com/harnessd/harnessd/core/api"
	"github.com/harnessd/harnessd/core/mcp"
)

// Stdin is what `harnessd mcp` reads its client's messages from; tests
// replace it. (Env has no stdin: no other command reads one.)
var Stdin io.Reader = os.Stdin

// mcp runs `harnessd mcp`: an MCP server on stdin/stdout, a client of
// the running daemon, or with --embedded of a private one.
func (c *cmd) mcp(args []string) int {
	c.name = "mcp"
	fs := flag.NewFlagSet("harnessd mcp", flag.ContinueOnError)
	fs.SetOutput(c.env.Stderr)
	socket := fs.String("socket", "", "daemon socket (default $HARNESSD_SOCKET, else the default socket); not with --embedded")
	embedded := fs.Bool("embedded", false, "start a private daemon with a temporary store for this connection, instead of using a running one")
	cfgPath := fs.String("config", "", "with --embedded: harness.toml for the private daemon (default: built-in defaults)")
	keep := fs.Bool("keep", false, "leave the connection's default session live when the client disconnects")
	workspace := fs.String("workspace", "", "the host directory the default session works in, bound at /workspace (default: a fresh empty one)")
	debug := fs.Bool("debug", false, "log to stderr at debug level")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		return c.usage("unexpected argument %q", fs.Arg(0))
	}
	if *embedded && *socket != "" {
		return c.usage("--socket and --embedded: choose one")
	}
	level := slog.LevelWarn
	if *debug {
		level = slog.LevelDebug
	}
	// stdout is the protocol's: everything else goes to stderr, which MCP
	// clients show or log.
	log := slog.New(slog.NewTextHandler(c.env.Stderr, &slog.HandlerOptions{Level: level}))
	cwd, _ := os.Getwd()
	opts := mcp.Options{Keep: *keep, BaseDir: cwd, Version: c.env.Version, Logger: log}
	if *workspace != "" {
		abs, err := filepath.Abs(*workspace)
		if err != nil {
			return c.fail(err)
		}
		opts.Workspace = abs
	}

	var cl *api.Client
	if *embedded {
		stop, sock, err := c.embeddedDaemon(*cfgPath, log)
		if err != nil {
			return c.fail(err)
		}
		defer stop()
		cl = api.NewClient(sock)
	} else {
		cl = c.client(*socket)
	}
	defer cl.Close()
	t := &mcp.LineTransport{In: Stdin, Out: c.env.Stdout}
	if err := mcp.New(cl, opts).Run(c.ctx, t); err != nil {
		return c.fail(err)
	}
	return 0
}

// embeddedDaemon starts a daemon as `harnessd demo` does: serve.Run on a
// socket and store in a new temporary directory, for this process only.
// stop shuts it down (sessions end, shells are killed) and removes the
// directory.
func (c *cmd) embeddedDaemon(cfgPath string, log *slog.Logger) (stop func(), socket string, err error) {
	cfg, err := LoadConfig(cfgPath, c.env.Getenv)
	if err != nil {
		return nil, "", err
	}
	dir, err := os.MkdirTemp("", "harnessd-mcp-")
	if err != nil {
		return nil, "", fmt.Errorf("embedded daemon: %w", err)
	}
	cfg.Daemon.Socket = filepath.Join(dir, "harnessd.sock")
	cfg.Daemon.DataDir = dir
	cfg.Store.Path = filepath.Join(dir, "harnessd.db")
	if err := cfg.Validate(); err != nil {
		os.RemoveAll(dir)
		return nil, "", err
	}
	// The daemon outlives c.ctx's end by as long as it takes to stop: the
	// MCP server ends the default session through it first.
	ctx, cancel := context.WithCancel(context.WithoutCancel(c.ctx))
	ready := make(chan string, 1)
	served := make(chan error, 1)
	go func() {
		served <- serve.Run(ctx, serve.Options{Config: cfg, Logger: log, Ready: func(s string) { ready <- s }})
	}()
	select {
	case socket = <-ready:
	case err := <-served:
		cancel()
		os.RemoveAll(dir)
		return nil, "", fmt.Errorf("embedded daemon did not start: %w", err)
	}
	return func() {
		cancel()
		if err := <-served; err != nil {
			log.Warn("embedded daemon", "err", err)
		}
		os.RemoveAll(dir)
	}, socket, nil
}
