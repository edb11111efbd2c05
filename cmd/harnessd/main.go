// Command harnessd gives AI coding agents a persistent shell on a real PTY,
// with every action and observation recorded in a bbolt event store. (The
// sandbox is not built yet: the shell runs on the host.)
//
// Usage:
//
//	harnessd demo [--config FILE]   run the scripted walkthrough and print every event
//	harnessd version   print the version
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/harnessd/harnessd/core/config"
	"github.com/harnessd/harnessd/core/demo"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

const usage = `usage: harnessd <command>

commands:
  demo [--config FILE]   run a short scripted task in a persistent terminal and print every event
  version   print the version
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:]))
}

func run(ctx context.Context, args []string) int {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, usage)
		return 2
	}
	switch args[0] {
	case "demo":
		cfg, err := loadConfig(args[1:])
		if err != nil {
			fmt.Fprintln(os.Stderr, "harnessd demo:", err)
			return 2
		}
		if err := demo.Run(ctx, os.Stdout, demo.Options{Config: &cfg}); err != nil {
			fmt.Fprintln(os.Stderr, "harnessd demo:", err)
			return 1
		}
		return 0
	case "version", "--version":
		fmt.Println("harnessd", version)
		return 0
	case "help", "-h", "--help":
		fmt.Print(usage)
		return 0
	}
	fmt.Fprintf(os.Stderr, "harnessd: unknown command %q\n\n%s", args[0], usage)
	return 2
}

// loadConfig reads --config FILE (default: the built-in defaults, which
// harness.toml documents) and applies HARNESSD_* environment overrides.
func loadConfig(args []string) (config.Config, error) {
	fs := flag.NewFlagSet("harnessd", flag.ContinueOnError)
	path := fs.String("config", "", "harness.toml to load (default: built-in defaults)")
	if err := fs.Parse(args); err != nil {
		return config.Config{}, err
	}
	cfg := config.Default()
	if *path != "" {
		c, err := config.Load(*path)
		if err != nil {
			return cfg, err
		}
		cfg = c
	}
	return cfg, cfg.ApplyEnv(os.Getenv)
}
