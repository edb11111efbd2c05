// Command faults attacks a real `harnessd serve` process and checks that
// what its clients were told is what happened: the harness issue 17 asked
// for, to rerun before a change to the daemon, the store or the API is
// trusted. docs/faults.md says how to read its report.
//
// # Basics
//
//	go run ./bench/faults                     # every part (about a minute)
//	go run ./bench/faults -only kill -cycles 40 -load 5s
//	go run ./bench/faults -only disk,slow -json
//	go run ./bench/faults -native             # sessions in native sandboxes
//
// It builds harnessd (go build ./cmd/harnessd) into a temporary directory,
// or takes -harnessd PATH, and runs it as a subprocess with a harness.toml
// of its own (sandbox.driver = "none" unless -native) and its data in that
// directory. The parts, by -only name:
//
//   - kill: -cycles SIGKILL cycles, the first half with strict durability,
//     the rest with batch (HARNESSD_DURABILITY=batch). Each cycle puts
//     load on the daemon (four sessions, two clients in each running
//     cmd_run actions through core/api's client, one events follower per
//     session, a client creating sessions), SIGKILLs it at a random moment
//     up to -load into the load, opens and verifies the store file itself,
//     restarts the daemon and accounts: every event whose append a client
//     saw acknowledged (an observation Act returned, with its action; every
//     event a follower received) is in the store unchanged; every
//     session's seqs run from 1 with no gap or duplicate; every action has
//     exactly one answer (the restart answers the ones that were running
//     with a cmd_output whose note says the daemon stopped); every session
//     is interrupted; no shell or sandbox init outlives its daemon by more
//     than 5 seconds.
//   - disk: for each durability mode, the data directory on an 8 MiB tmpfs
//     (mounted here; skipped only if the kernel refuses the mount), filled
//     until the store cannot write, under load from three sessions. Every
//     command touches its own marker file: an action answered 507
//     store_full must not have run, one answered 507 record_incomplete
//     must have; /healthz must say 507 and /metrics
//     harnessd_store_writable 0 while full; once the space is freed,
//     /healthz is 200 again, actions run, and the log holds exactly the
//     commands that ran, each answered once. Then a command fills the disk
//     itself while it runs, and the same holds.
//   - slow: 300 connections (-conns) trickle a request body a byte a
//     second against a daemon with daemon.body_timeout = 2s: each must be
//     closed by the daemon within the body timeout and 3 s, while a
//     follower and ordinary actions keep working and no descriptor leaks;
//     then, with daemon.max_conns_per_peer = 8, connections past the cap
//     are closed at once and one is served again when a held one closes.
//   - garbage: about 150 malformed requests (bad JSON, huge numbers, NUL
//     in commands, out-of-range timeouts, after=2^64-1, path traversal,
//     wrong methods, wrong content, broken framing, truncated bodies): none
//     may be answered 500 (or any 5xx by harnessd itself) or change the
//     session, and the daemon must not exit or panic.
//
// Each part prints a table of figures; the checked ones say PASS or FAIL.
// The exit status is 1 if any check failed or a part could not finish,
// 2 for bad flags. The directory with the daemons' data and logs is kept
// when something failed (and with -keep).
//
// # Caveats
//
// It must run as root on Linux (the tmpfs mount; /proc to find shells
// left behind). Every part is bounded in time (a part that overruns
// fails) and in count, and only unix sockets are used. Timing figures
// (restart times, close times, latencies) are taken on whatever else the
// machine is doing: the header prints the load average at the start and
// the end. A SIGKILL of harnessd is a process crash: what a power loss or
// a kernel crash does to batch durability is not tested here.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// options are the parsed flags.
type options struct {
	cycles   int
	only     map[string]bool // nil: every part
	json     bool
	native   bool
	harnessd string        // a harnessd binary to use instead of building one
	conns    int           // slow part's trickling connections
	load     time.Duration // kill part: the latest moment of a cycle's SIGKILL
	seed     uint64
	keep     bool
}

// part is one attack, run by name.
type part struct {
	name  string
	title string
	run   func(h *harness, ctx context.Context, p *Part) error
	// bound is how long the part may take at most; past it, it fails.
	bound func(options) time.Duration
}

func fixed(d time.Duration) func(options) time.Duration {
	return func(options) time.Duration { return d }
}

var parts = []part{
	{"kill", "SIGKILL cycles under load, acknowledged events accounted", (*harness).kill,
		func(o options) time.Duration { return 2*time.Minute + time.Duration(o.cycles)*(time.Minute+o.load) }},
	{"disk", "a full disk (data dir on an 8 MiB tmpfs)", (*harness).disk, fixed(10 * time.Minute)},
	{"slow", "slow clients and the per-peer connection cap", (*harness).slow, fixed(5 * time.Minute)},
	{"garbage", "malformed requests", (*harness).garbage, fixed(5 * time.Minute)},
}

// harness is one run: its options, binary, directory and randomness.
type harness struct {
	opts options
	bin  string
	// ownBin is bin when this run built it (a binary nothing else runs),
	// so that processes running it after their daemon is gone are ours
	// to count and kill; "" with -harnessd.
	ownBin   string
	dir      string
	driver   string
	token    string // in every shell's environment, to find shells left behind
	rng      *rand.Rand
	progress io.Writer
}

func (h *harness) logf(format string, args ...any) {
	fmt.Fprintf(h.progress, "faults: "+format+"\n", args...)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("faults", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.IntVar(&o.cycles, "cycles", 20, "SIGKILL cycles (the first half strict durability, the rest batch)")
	only := fs.String("only", "", "comma-separated parts to run: kill, disk, slow, garbage (default all)")
	fs.BoolVar(&o.json, "json", false, "print the report as JSON")
	fs.BoolVar(&o.native, "native", false, `run sessions in native sandboxes (sandbox.driver = "native") instead of "none"`)
	fs.StringVar(&o.harnessd, "harnessd", "", "attack this harnessd binary instead of building ./cmd/harnessd")
	fs.IntVar(&o.conns, "conns", 300, "trickling connections in the slow part")
	fs.DurationVar(&o.load, "load", 2500*time.Millisecond, "kill: each cycle's SIGKILL comes at a random moment up to this long into its load")
	fs.Uint64Var(&o.seed, "seed", 0, "random seed (0: from the clock); the report prints it")
	fs.BoolVar(&o.keep, "keep", false, "keep the directory with the daemons' data and logs")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "faults: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if o.cycles < 1 || o.cycles > 10000 || o.conns < 1 || o.conns > 10000 {
		fmt.Fprintln(stderr, "faults: -cycles and -conns must be 1 to 10000")
		return 2
	}
	if o.load <= 0 || o.load > 10*time.Minute {
		fmt.Fprintln(stderr, "faults: -load must be more than 0 and at most 10m")
		return 2
	}
	if *only != "" {
		o.only = map[string]bool{}
		for n := range strings.SplitSeq(*only, ",") {
			n = strings.TrimSpace(n)
			if !knownPart(n) {
				fmt.Fprintf(stderr, "faults: -only: unknown part %q (kill, disk, slow, garbage)\n", n)
				return 2
			}
			o.only[n] = true
		}
	}
	if o.seed == 0 {
		o.seed = uint64(time.Now().UnixNano())
	}
	if os.Geteuid() != 0 {
		fmt.Fprintln(stderr, "faults: run as root (the disk part mounts a tmpfs; shells are found through /proc)")
		return 2
	}

	h := &harness{opts: o, driver: "none", rng: rand.New(rand.NewPCG(o.seed, 17)), progress: stderr}
	if o.native {
		h.driver = "native"
	}
	h.token = fmt.Sprintf("%x", h.rng.Uint64())
	dir, err := os.MkdirTemp("", "harnessd-faults-")
	if err != nil {
		fmt.Fprintln(stderr, "faults:", err)
		return 1
	}
	h.dir = dir
	rep := &Report{Header: newHeader()}
	rep.Header.Seed, rep.Header.Driver, rep.Header.Dir = o.seed, h.driver, dir
	if h.bin, err = h.binary(ctx); err != nil {
		fmt.Fprintln(stderr, "faults:", err)
		return 1
	}
	rep.Header.Harnessd = h.bin
	if o.harnessd == "" {
		h.ownBin = h.bin
	}

	for _, pt := range parts {
		if o.only != nil && !o.only[pt.name] {
			continue
		}
		if ctx.Err() != nil {
			break
		}
		p := &Part{Name: pt.name, Title: pt.title}
		h.logf("%s: %s", pt.name, pt.title)
		t0 := time.Now()
		pctx, cancel := context.WithTimeout(ctx, pt.bound(o))
		err := pt.run(h, pctx, p)
		cancel()
		if err != nil {
			var skip skipError
			if errors.As(err, &skip) {
				p.Skipped = skip.why
			} else {
				p.Error = err.Error()
			}
		}
		p.Seconds = time.Since(t0).Seconds()
		rep.Parts = append(rep.Parts, p)
	}
	rep.Header.LoadEnd = loadAvg()
	rep.Pass = ctx.Err() == nil
	for _, p := range rep.Parts {
		rep.Pass = rep.Pass && p.Pass()
	}
	if ctx.Err() != nil {
		fmt.Fprintln(stderr, "faults: interrupted")
	}
	if o.json {
		if err := rep.writeJSON(stdout); err != nil {
			fmt.Fprintln(stderr, "faults:", err)
			return 1
		}
	} else {
		rep.writeText(stdout)
	}
	// A leftover shell would be ours: never leave one running.
	if n := waitGone(h.token, h.ownBin, 0); n > 0 {
		fmt.Fprintf(stderr, "faults: killed %d process(es) the daemons left\n", n)
	}
	if !rep.Pass {
		fmt.Fprintf(stderr, "faults: FAIL; daemons' data and logs kept in %s\n", dir)
		return 1
	}
	if o.keep {
		fmt.Fprintf(stderr, "faults: daemons' data and logs kept in %s\n", dir)
	} else {
		os.RemoveAll(dir)
	}
	return 0
}

func knownPart(name string) bool {
	for _, p := range parts {
		if p.name == name {
			return true
		}
	}
	return false
}

// skipError is a part that could not run here, and why.
type skipError struct{ why string }

func (e skipError) Error() string { return "skipped: " + e.why }

// binary returns the harnessd to attack: -harnessd, or one built now from
// the module this command belongs to.
func (h *harness) binary(ctx context.Context) (string, error) {
	if h.opts.harnessd != "" {
		return filepath.Abs(h.opts.harnessd)
	}
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("not inside the harnessd module: run from the repository, or pass -harnessd")
	}
	bin := filepath.Join(h.dir, "harnessd")
	h.logf("go build -o %s ./cmd/harnessd", bin)
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/harnessd")
	cmd.Dir = filepath.Dir(mod)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/harnessd: %w\n%s", err, out)
	}
	return bin, nil
}

// newSpec makes a directory for one daemon setup under the run's.
// launch starts a daemon of its own for a part: its directory, its
// harness.toml with extra appended, and `harnessd serve` answering. The
// caller defers the proc's cleanup.
func (h *harness) launch(ctx context.Context, name, extra string) (*proc, error) {
	spec, err := h.newSpec(name)
	if err != nil {
		return nil, err
	}
	if err := spec.writeConfig(h.driver, h.token, extra); err != nil {
		return nil, err
	}
	d, _, err := spec.start(ctx)
	return d, err
}

func (h *harness) newSpec(name string, env ...string) (*daemonSpec, error) {
	dir := filepath.Join(h.dir, name)
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o700); err != nil {
		return nil, err
	}
	return &daemonSpec{bin: h.bin, dir: dir, data: filepath.Join(dir, "data"), env: env}, nil
}
