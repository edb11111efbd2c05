// Command harnessd gives AI coding agents a persistent shell on a real PTY,
// one session per agent, behind an HTTP/JSON API on a unix socket, with
// every action and observation recorded in a bbolt event store. The same
// binary is the daemon (`harnessd serve`) and its command-line client.
//
// Run `harnessd help` for the commands; cmd/harnessd/cli implements them.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/harnessd/harnessd/cmd/harnessd/cli"
	"github.com/harnessd/harnessd/cmd/harnessd/demo"
	"github.com/harnessd/harnessd/core/api"
	"github.com/harnessd/harnessd/core/sandbox"
	"github.com/harnessd/harnessd/plugins/builtin"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

func main() {
	// The sandbox's init is this binary re-executed (runc's pattern)
	// where harnessd carries no init program of its own for this
	// architecture (core/sandbox/initbin): it must take over before
	// anything else runs.
	if len(os.Args) > 1 && os.Args[1] == sandbox.InitCommand {
		sandbox.InitMain()
	}
	// So are the built-in agents (`harnessd plugin NAME`): go-plugin takes
	// the process's stdout for its handshake.
	if len(os.Args) > 1 && os.Args[1] == builtin.Command {
		os.Exit(builtin.Main(os.Args[2:]))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	api.Version = version
	os.Exit(cli.Main(ctx, os.Args[1:], cli.Env{Stdout: os.Stdout, Stderr: os.Stderr, Version: version, Demo: runDemo}))
}

func runDemo(ctx context.Context, args []string) int {
	fs := flag.NewFlagSet("harnessd demo", flag.ContinueOnError)
	path := fs.String("config", "", "harness.toml to load (default: built-in defaults)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	cfg, err := cli.LoadConfig(*path, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "harnessd demo:", err)
		return 2
	}
	if err := demo.Run(ctx, os.Stdout, demo.Options{Config: &cfg}); err != nil {
		fmt.Fprintln(os.Stderr, "harnessd demo:", err)
		return 1
	}
	return 0
}
