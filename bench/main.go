// Command bench prints harnessd's comparative benchmark report: every
// figure is measured beside a baseline in the same run and shown as a
// ratio, so a loaded or slow machine moves both sides together.
//
// # Basics
//
//	go run ./bench                  # the full report (a minute or two)
//	go run ./bench -quick           # small sizes, a smoke run for CI (< 30 s)
//	go run ./bench -json            # the same report as JSON
//	go run ./bench -only roundtrip,tmux -n 5000
//	go run ./bench -only stream -cpuprofile /tmp/cpu.prof   # then go tool pprof
//	go run ./bench -only api -trace /tmp/api.trace          # then go tool trace -pprof=sched /tmp/api.trace
//
// The sections, by -only name:
//
//   - roundtrip: `true` through a warm terminal (terminal.Run) against a
//     fresh `bash -c true` per command, with a raw PTY echo through `cat` as
//     the floor.
//   - tmux: the same round trip through a tmux pane driven the way
//     OpenHands' runtime drives it (send-keys, then capture-pane polling for
//     a marker), polling every 500 ms and every 10 ms.
//   - agents: a Step round trip through go-plugin (an empty action) beside
//     the same call in process and beside `true` in a warm terminal; a
//     plugin's start (exec, handshake with mutual TLS, Info) beside
//     go-plugin's AutoMTLS, no TLS and the exec alone; and a 100-step
//     scripted run end to end (20 under -quick), with the harness's share
//     of its wall time.
//   - lines: 100,000 and 100,001 lines end to end through session.Command
//     (PTY, clean, trim, spill to the bbolt store's outputs) against the same command into
//     /dev/null under `bash -c`, and onto a bare PTY read by a plain loop.
//   - stream: 1 GiB through session.Command against the same producer into
//     `wc -c` and onto a bare PTY: throughput, and this process's peak RSS
//     growth.
//   - hooks: the hooks stage of an action (hooks.Pipeline.BeforeAction on
//     a cmd_run) with no hooks, one hook and the shipped policies, on
//     commands never seen before and on repeated ones, beside `true`
//     through session.Command; and actions a second through the shipped
//     policies from one session and from two at once (scaling with cores).
//   - api: `true` through the daemon's API (client -> socket -> session ->
//     PTY -> store -> back) with strict and with batch durability, beside
//     the in-process terminal and a bare one-key bbolt commit on the same
//     disk (strict's floor is two commits and the terminal), and beside
//     `docker exec` where a Docker engine answers (skipped with a note
//     where not); strict round trips each after 50 ms idle, as an
//     agent's come, beside their floor taken the same way; then what
//     waking costs here: a one-byte round trip to a child process, back
//     to back and after 0.3, 3 and 30 ms asleep.
//   - mcp: `true` through `harnessd mcp` on stdio (this binary re-exec'd
//     as the CLI, driven by the MCP Go SDK's client) beside the same
//     through the API's socket, on one daemon and one session.
//   - sessions: sessions created per second with one client and with 8,
//     and the daemon's RSS per idle session at 100 and 1,000 sessions
//     (20 and 100 under -quick), the daemon being this binary re-exec'd as
//     `harnessd serve` so its memory is its own; then the same with the
//     native sandbox driver at 100 sessions (10 under -quick). -driver
//     native or -driver none measures only that one.
//   - sandbox: a native sandbox's create-to-first-prompt (sandbox.Native
//     Create + terminal.New) beside the same bash under `bwrap
//     --unshare-all` (skipped with a note where bubblewrap is not
//     installed), beside plain host bash, and beside `docker run` where a
//     Docker engine answers; then sessions created through the API of a
//     native daemon with a warm pool (hits, by their sandbox id) beside
//     one without; then 100 sessions created at once (20 under -quick),
//     deleted, and checked to leave no process behind.
//   - files: file_str_replace of one line of a 10,000-line file through
//     the API (performed in the native sandbox by its init) beside the
//     same edit as `sed -i` through cmd_run, alternating.
//   - python: python_run of `1+1` in the session's persistent Python
//     (started by the sandbox's init) beside `python3 -c 'print(1+1)'`
//     through cmd_run, alternating; the first cell (Python's start) apart.
//
// Each target prints PASS or MISS beside it. A MISS never fails the run;
// the exit status is non-zero only when something could not be measured
// (a command failed, output was lost, or the run was interrupted).
//
// # Caveats
//
// The native driver re-executes this binary as the sandbox's init, so
// main dispatches `sandbox-init` before anything else, as harnessd's does.
//
// Linux only: it reads /proc/self/status, resets the peak RSS through
// /proc/self/clear_refs and opens PTYs through /dev/ptmx. RSS figures are
// this process's (the daemon's side), except in the sessions section, where
// they are the re-exec'd daemon's; the shells and the producers are
// separate processes and are not counted (the sessions section reports the
// shells' separately).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"runtime/trace"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/harnessd/harnessd/core/config"
	"github.com/harnessd/harnessd/core/sandbox"
)

func main() {
	// The native driver re-executes this binary as the sandbox's init
	// (/proc/self/exe sandbox-init): it must take over before anything else.
	if len(os.Args) > 1 && os.Args[1] == sandbox.InitCommand {
		sandbox.InitMain()
	}
	if code, ok := serveChild(); ok {
		os.Exit(code)
	}
	if code, ok := pluginChild(); ok {
		os.Exit(code)
	}
	if code, ok := wakeChild(); ok {
		os.Exit(code)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// options are the parsed flags.
type options struct {
	n     int             // round trips for the warm terminal, bash -c and the PTY floor
	quick bool            // small sizes for a smoke run
	json  bool            // JSON instead of the table
	only  map[string]bool // sections to run; nil means all

	// driver is the [sandbox] driver of the sessions section's daemon:
	// config.DriverNone, config.DriverNative, or "" for both.
	driver string

	// cpuProfile, if set, is where a CPU profile of this process over
	// the whole run goes (go tool pprof): where a gap to a floor is.
	cpuProfile string
	// trace, if set, is where an execution trace of the whole run goes
	// (go tool trace; -pprof=sched, sync, syscall for the waits a CPU
	// profile does not see: hand-offs between goroutines, wake-ups).
	trace string

	// heapFloor is [daemon] heap_floor_mb of the api and mcp sections' daemons,
	// which run in this process; -1 keeps the default.
	heapFloor int
}

// section is one part of the report, run by name.
type section struct {
	name  string
	title string
	run   func(b *bench, ctx context.Context, s *Section) error
}

var sections = []section{
	{"roundtrip", "round trip of `true`", (*bench).roundTrip},
	{"tmux", "round trip of `true` through tmux, OpenHands-style", (*bench).tmux},
	{"hooks", "Lua hooks: overhead per action with 0, 1 and the shipped policies, and throughput", (*bench).hooks},
	// api and sessions run before lines and stream: those leave the disk
	// busy writing back what they spilled, and strict durability's
	// fsyncs would wait for it.
	{"api", "round trip of `true` through the daemon's API", (*bench).api},
	{"sessions", "sessions created per second, and daemon memory per idle session", (*bench).sessions},
	{"sandbox", "session create-to-first-prompt in a native sandbox, cold and from the warm pool", (*bench).sandbox},
	{"mcp", "`true` through `harnessd mcp` on stdio, beside the API", (*bench).mcp},
	{"files", "file_str_replace on a 10,000-line file beside sed -i through cmd_run", (*bench).files},
	{"python", "python_run of 1+1 in the session's Python beside python3 -c through cmd_run", (*bench).python},
	{"agents", "the agent plugin boundary: a Step round trip, a plugin's start, a scripted run", (*bench).agents},
	{"lines", "100,000 lines end to end (PTY -> clean -> trim -> spill)", (*bench).lines},
	{"stream", "a long stream through session.Command", (*bench).stream},
}

// run is the whole command: parse args, measure, print. It returns the
// process's exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	opts, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "bench: %v\n", err)
		return 2
	}
	if opts.cpuProfile != "" {
		f, err := os.Create(opts.cpuProfile)
		if err != nil {
			fmt.Fprintf(stderr, "bench: %v\n", err)
			return 2
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintf(stderr, "bench: %v\n", err)
			return 2
		}
		defer pprof.StopCPUProfile()
	}
	if opts.trace != "" {
		f, err := os.Create(opts.trace)
		if err != nil {
			fmt.Fprintf(stderr, "bench: %v\n", err)
			return 2
		}
		defer f.Close()
		if err := trace.Start(f); err != nil {
			fmt.Fprintf(stderr, "bench: %v\n", err)
			return 2
		}
		defer trace.Stop()
	}
	rep, runErr := collect(ctx, opts, stderr)
	var werr error
	if opts.json {
		werr = writeJSON(stdout, rep)
	} else {
		werr = writeText(stdout, rep)
	}
	if err := errors.Join(runErr, werr); err != nil {
		fmt.Fprintf(stderr, "bench: %v\n", err)
		return 1
	}
	return 0
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var opts options
	var only string
	fs.IntVar(&opts.n, "n", 2000, "iterations for the round trips (warm terminal, bash -c, raw PTY); -quick makes the default 100")
	fs.BoolVar(&opts.quick, "quick", false, "small sizes, for a smoke run in CI")
	fs.BoolVar(&opts.json, "json", false, "print the report as JSON")
	fs.StringVar(&only, "only", "", "comma-separated sections to run: "+sectionNames())
	fs.StringVar(&opts.cpuProfile, "cpuprofile", "", "write a CPU profile of this process over the run to this file (go tool pprof)")
	fs.StringVar(&opts.trace, "trace", "", "write an execution trace of this process over the run to this file (go tool trace)")
	fs.IntVar(&opts.heapFloor, "heap-floor-mb", -1, "[daemon] heap_floor_mb of the api and mcp sections' daemons, which run in this process (-1: the default, 32; 0: Go's own pacing)")
	fs.StringVar(&opts.driver, "driver", "", "[sandbox] driver of the sessions section's daemon: native or none (default both: none at 100 and 1,000 sessions, native at 100)")
	if err := fs.Parse(args); err != nil {
		return opts, err
	}
	if fs.NArg() > 0 {
		return opts, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	nSet := false
	fs.Visit(func(f *flag.Flag) { nSet = nSet || f.Name == "n" })
	if opts.quick && !nSet {
		opts.n = 100
	}
	if opts.driver != "" && opts.driver != config.DriverNative && opts.driver != config.DriverNone {
		return opts, fmt.Errorf("-driver %q: want %s or %s", opts.driver, config.DriverNative, config.DriverNone)
	}
	if opts.n < 1 {
		return opts, fmt.Errorf("-n %d: need at least 1", opts.n)
	}
	if only != "" {
		opts.only = map[string]bool{}
		for _, name := range strings.Split(only, ",") {
			name = strings.TrimSpace(name)
			if !knownSection(name) {
				return opts, fmt.Errorf("-only: unknown section %q (have %s)", name, sectionNames())
			}
			opts.only[name] = true
		}
	}
	return opts, nil
}

func knownSection(name string) bool {
	for _, s := range sections {
		if s.name == name {
			return true
		}
	}
	return false
}

func sectionNames() string {
	names := make([]string, len(sections))
	for i, s := range sections {
		names[i] = s.name
	}
	return strings.Join(names, ",")
}

// bench is the state the sections share: the options, a scratch directory
// and the warm-terminal latencies, measured once and compared against by
// both round-trip sections.
type bench struct {
	opts options
	tmp  string
	warm *latencies

	bwrap string // bubblewrap's binary, looked up in PATH; tests name a missing one
}

// collect runs the selected sections in order, saying on progress which
// one is running. A section that fails keeps its error in the report and
// the others still run; the errors are also returned, joined.
func collect(ctx context.Context, opts options, progress io.Writer) (*Report, error) {
	rep := &Report{Header: newHeader(opts)}
	tmp, err := os.MkdirTemp("", "harnessd-bench-")
	if err != nil {
		return rep, fmt.Errorf("scratch dir: %w", err)
	}
	defer os.RemoveAll(tmp)
	b := &bench{opts: opts, tmp: tmp, bwrap: "bwrap"}
	var errs []error
	for _, sec := range sections {
		if opts.only != nil && !opts.only[sec.name] {
			continue
		}
		if err := ctx.Err(); err != nil {
			errs = append(errs, fmt.Errorf("%s: not run: %w", sec.name, err))
			break
		}
		s := &Section{Name: sec.name, Title: sec.title}
		fmt.Fprintf(progress, "bench: %s ...", sec.name)
		start := time.Now()
		err := sec.run(b, ctx, s)
		s.Seconds = time.Since(start).Seconds()
		fmt.Fprintf(progress, " %.1fs\n", s.Seconds)
		if err != nil {
			s.Error = err.Error()
			errs = append(errs, fmt.Errorf("%s: %w", sec.name, err))
		}
		rep.Sections = append(rep.Sections, s)
	}
	return rep, errors.Join(errs...)
}

// latencies summarises one set of timed round trips.
type latencies struct {
	n        int
	p50, p99 time.Duration
}

// summarize sorts d in place and returns its p50 and p99 (nearest rank).
func summarize(d []time.Duration) latencies {
	if len(d) == 0 {
		return latencies{}
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	rank := func(p float64) time.Duration {
		i := int(float64(len(d))*p+0.999999) - 1
		return d[max(0, min(i, len(d)-1))]
	}
	return latencies{n: len(d), p50: rank(0.50), p99: rank(0.99)}
}

// sleep waits d, or until ctx ends, and returns ctx's error then.
func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// median sorts d in place and returns its middle value.
func median(d []time.Duration) time.Duration {
	return summarize(d).p50
}

// cause is the error a child process's failure is reported with: when the
// run's context has ended, the process was killed for that reason, and
// "signal: killed" would hide it.
func cause(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	return err
}
