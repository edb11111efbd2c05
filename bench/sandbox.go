package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/core/api"
	"github.com/harnessd/harnessd/core/config"
	"github.com/harnessd/harnessd/core/daemon"
	"github.com/harnessd/harnessd/core/event"
	"github.com/harnessd/harnessd/core/sandbox"
	"github.com/harnessd/harnessd/core/sandbox/cgroup"
	"github.com/harnessd/harnessd/core/session"
	"github.com/harnessd/harnessd/core/terminal"
)

// Targets of the sandbox section, from the sandbox issue.
const (
	coldTarget       = 20 * time.Millisecond // native create-to-first-prompt p50
	warmTarget       = 2 * time.Millisecond  // API create from the warm pool p50
	concurrentTarget = 100                   // sandboxes created at once, without an error
)

// warmPoolSize is the pooled daemon's [sandbox] pool_size.
const warmPoolSize = 4

// bwrapArgs are bubblewrap's options before the binds of the workspace and
// the terminal's control directory, as the issue names them.
var bwrapArgs = []string{"--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"}

// sandbox is the sandbox section: the native driver's create-to-first-
// prompt beside bubblewrap, plain host bash and docker run; sessions
// created through the API from the warm pool beside cold ones; and
// concurrentTarget sandboxes created at once, then deleted, leaving no
// process behind.
func (b *bench) sandbox(ctx context.Context, s *Section) error {
	dir, err := os.MkdirTemp(b.tmp, "sandbox-")
	if err != nil {
		return err
	}
	cold, err := b.sandboxCold(ctx, s, filepath.Join(dir, "cold"))
	if err != nil {
		return fmt.Errorf("cold start: %w", err)
	}
	return b.sandboxDaemons(ctx, s, dir, cold)
}

// starter is one contender of the cold start: start runs a shell over the
// workspace ws up to its first prompt and returns what ends it again. It
// calls mark at the end of each phase it can see (create, prepare, spawn,
// setup, in order); the time from the last mark to the prompt is "shell".
type starter struct {
	name  string
	skip  string // why it is not measured; "" when it is
	start func(ctx context.Context, ws string, mark func(phase string)) (stop func() error, err error)

	up, down []time.Duration
	phases   map[string][]time.Duration // each timed start's time in each phase it marked

	// A native starter's driver and the Spec it creates over a workspace.
	nat  *sandbox.Native
	spec func(ws string) sandbox.Spec
}

// The phases of a cold start, in order, as starters mark them.
const (
	phaseCreate  = "create"  // sandbox Create: state directories, disk; the cgroup's making begun, which goes on in the background
	phasePrepare = "prepare" // the terminal's PTY and Prepare rewriting bash's command
	phaseSpawn   = "spawn"   // cmd.Start: clone into new namespaces, exec, up to Started
	phaseSetup   = "setup"   // Started: the init's start, root, the cgroup joined, lockdown, bash forked
	phaseShell   = "shell"   // bash's start to its first prompt (bwrap: its setup too)
)

var phaseOrder = []string{phaseCreate, phasePrepare, phaseSpawn, phaseSetup, phaseShell}

// phase is the median of st's timed starts in phase p (0 if it marks none).
func (st *starter) phase(p string) time.Duration { return median(st.phases[p]) }

// marked wraps a terminal's Prepare and Started so that they mark the end
// of the prepare, spawn and setup phases.
func marked(o terminal.Options, mark func(string)) terminal.Options {
	prepare, started := o.Prepare, o.Started
	o.Prepare = func(cmd *exec.Cmd) error {
		var err error
		if prepare != nil {
			err = prepare(cmd)
		}
		mark(phasePrepare)
		return err
	}
	o.Started = func(pid int) error {
		mark(phaseSpawn)
		if started == nil {
			return nil
		}
		err := started(pid)
		mark(phaseSetup)
		return err
	}
	return o
}

// coldWarmUp is how many cold starts of each contender go untimed first.
const coldWarmUp = 3

// sandboxCold times each contender's create-to-first-prompt, in turns
// (the order rotating every round), and its teardown apart. It returns the
// native driver's figures.
func (b *bench) sandboxCold(ctx context.Context, s *Section, dir string) (latencies, error) {
	n := 200
	if b.opts.quick {
		n = 5
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return latencies{}, err
	}
	cfg := config.Default()
	native, closeNative, cgNote, err := nativeStarter(cfg, filepath.Join(dir, "state"), true, "")
	if err != nil {
		return latencies{}, err
	}
	defer closeNative()
	// Two more native contenders split its cost: without cgroups (limits
	// by rlimit), and without cgroups with its state on a tmpfs, as the
	// sandbox package's own go-test benchmark runs it.
	bare, _, _, err := nativeStarter(cfg, filepath.Join(dir, "state-bare"), false, "")
	if err != nil {
		return latencies{}, err
	}
	bare.name = "native, no cgroups"
	// The same as native but for its init: this binary re-executed
	// (/proc/self/exe sandbox-init), as before harnessd carried a
	// program of its own (core/sandbox/initbin); it links what harnessd
	// links, and initialises it all before the init's first mount.
	self, releaseSelf, _, err := nativeStarter(cfg, filepath.Join(dir, "state-self"), true, "/proc/self/exe")
	if err != nil {
		return latencies{}, err
	}
	defer releaseSelf()
	self.name = "native, init re-exec'd from this binary"
	shm := ""
	if tmpfs("/dev/shm") {
		if shm, err = os.MkdirTemp("/dev/shm", "harnessd-bench-"); err != nil {
			return latencies{}, err
		}
		defer os.RemoveAll(shm)
	}
	var tmpfsed *starter
	if shm != "" {
		if tmpfsed, _, _, err = nativeStarter(cfg, shm, false, ""); err != nil {
			return latencies{}, err
		}
		tmpfsed.name = "native, no cgroups, state on tmpfs"
	}
	bwrap := bwrapStarter(cfg, b.bwrap)
	host := &starter{name: "host bash", start: func(ctx context.Context, ws string, mark func(string)) (func() error, error) {
		term, err := terminal.New(ctx, marked(termOptions(cfg, ws), mark))
		if err != nil {
			return nil, err
		}
		return term.Close, nil
	}}
	all := []*starter{native, bwrap, host, bare, self}
	if tmpfsed != nil {
		all = append(all, tmpfsed)
	}

	seq := 0
	once := func(ctx context.Context, st *starter, timed bool) error {
		seq++
		ws := filepath.Join(dir, fmt.Sprintf("ws-%d", seq))
		if err := os.Mkdir(ws, 0o755); err != nil {
			return err
		}
		defer os.RemoveAll(ws)
		t0 := time.Now()
		last, phases := t0, map[string]time.Duration{}
		stop, err := st.start(ctx, ws, func(p string) {
			now := time.Now()
			phases[p], last = now.Sub(last), now
		})
		up := time.Since(t0)
		if err != nil {
			return cause(ctx, err)
		}
		phases[phaseShell] = up - last.Sub(t0)
		t1 := time.Now()
		err = stop()
		down := time.Since(t1)
		if err != nil {
			return fmt.Errorf("stop: %w", err)
		}
		if timed {
			st.up, st.down = append(st.up, up), append(st.down, down)
			if st.phases == nil {
				st.phases = map[string][]time.Duration{}
			}
			for p, d := range phases {
				st.phases[p] = append(st.phases[p], d)
			}
		}
		return nil
	}
	for _, st := range all {
		for i := range coldWarmUp {
			if st.skip != "" {
				break
			}
			if err := once(ctx, st, false); err != nil {
				if st == native || i > 0 || ctx.Err() != nil {
					return latencies{}, fmt.Errorf("%s: warm-up: %w", st.name, err)
				}
				// A baseline that cannot start at all is skipped, not ours to fix.
				st.skip = fmt.Sprintf("skipped: it failed to start: %v", err)
			}
		}
	}
	for round := range n {
		for k := range all {
			st := all[(round+k)%len(all)]
			if st.skip != "" {
				continue
			}
			if err := once(ctx, st, true); err != nil {
				return latencies{}, fmt.Errorf("%s: start %d: %w", st.name, len(st.up)+1, err)
			}
		}
	}
	nAlone := 50
	if b.opts.quick {
		nAlone = 3
	}
	if err := b.initAlone(ctx, s, filepath.Join(dir, "alone"), nAlone, []*starter{native, self}); err != nil {
		return latencies{}, fmt.Errorf("init alone: %w", err)
	}
	split, err := spawnSplit(ctx, n)
	if err != nil {
		return latencies{}, fmt.Errorf("spawn alone: %w", err)
	}
	dk, dnote := b.dockerRun(ctx)

	// Before summarize sorts native.up: starterShell pairs it with create.
	nShell := median(starterShell(native))
	nCreate := native.phase(phaseCreate)
	nu, nd := summarize(native.up), summarize(native.down)
	hu, hd := summarize(host.up), summarize(host.down)
	s.Notes = append(s.Notes,
		fmt.Sprintf("cold: %d timed starts each after %d untimed, taking turns one start at a time (the order rotating every round): from nothing to the shell's first prompt over a fresh workspace (made before the clock starts, as the daemon makes it); stop (terminal.Close, then Destroy) is timed apart.", n, coldWarmUp),
		fmt.Sprintf("native: sandbox.Native Create (Spec from the default harness.toml: network none, protected %v, memory %d MiB, pids %d, tmp %d MiB) + terminal.New through session.SandboxTerminal; state under %s (the disk, as the daemon's data_dir/run is); %s.",
			cfg.Sandbox.Protected, cfg.Sandbox.MemoryMB, cfg.Sandbox.Pids, cfg.Sandbox.TmpMB, dir, cgNote),
		"host bash: the same terminal.New (the same options from the default harness.toml) with no sandbox: the floor every contender shares.",
	)
	if bwrap.skip == "" {
		s.Notes = append(s.Notes, fmt.Sprintf("bwrap: terminal.New with Prepare rewriting bash's command to `bwrap %s --bind WS WS --bind CTL CTL --chdir WS bash …` (CTL the terminal's control directory); stop is terminal.Close.", strings.Join(bwrapArgs, " ")))
	} else {
		s.Notes = append(s.Notes, "bwrap: "+bwrap.skip)
	}
	s.Notes = append(s.Notes, dnote)

	s.Rows = append(s.Rows,
		Row{
			Name: "native cold create-to-first-prompt p50", Figure: dur(nu.p50),
			Baseline: labelled("host bash", dur(hu.p50)),
			Ratio:    ratio(nu.p50.Seconds(), hu.p50.Seconds()), RatioOf: "native/host",
			Target: "< " + formatSeconds(coldTarget.Seconds()), Status: passIf(nu.p50 < coldTarget),
		},
		Row{
			Name: "native cold create-to-first-prompt p99", Figure: dur(nu.p99),
			Baseline: labelled("host bash", dur(hu.p99)),
			Ratio:    ratio(nu.p99.Seconds(), hu.p99.Seconds()), RatioOf: "native/host",
		},
		Row{
			Name: "native - host bash p50 (the sandbox's own cost)", Figure: dur(max(time.Nanosecond, nu.p50-hu.p50)),
		},
		Row{
			Name: "native: Create p50 (state dirs, cgroup begun)", Figure: dur(nCreate),
			Baseline: labelled("native", dur(nu.p50)),
			Ratio:    ratio(nCreate.Seconds(), nu.p50.Seconds()), RatioOf: "part/all",
		},
		Row{
			Name: "native: terminal.New p50 (init, rootfs, seccomp, bash)", Figure: dur(nShell),
			Baseline: labelled("native", dur(nu.p50)),
			Ratio:    ratio(nShell.Seconds(), nu.p50.Seconds()), RatioOf: "part/all",
		},
	)
	if bwrap.skip == "" {
		bu, bd := summarize(bwrap.up), summarize(bwrap.down)
		s.Rows = append(s.Rows,
			Row{
				Name: "vs bwrap --unshare-all p50", Figure: dur(nu.p50),
				Baseline: labelled("bwrap", dur(bu.p50)),
				Ratio:    ratio(nu.p50.Seconds(), bu.p50.Seconds()), RatioOf: "native/bwrap",
				Target: fmt.Sprintf("<= %.1fx bwrap", bwrapGoal), Status: passIf(nu.p50.Seconds() <= bwrapGoal*bu.p50.Seconds()),
			},
			Row{
				Name: "vs bwrap --unshare-all p99", Figure: dur(nu.p99),
				Baseline: labelled("bwrap", dur(bu.p99)),
				Ratio:    ratio(nu.p99.Seconds(), bu.p99.Seconds()), RatioOf: "native/bwrap",
			},
			Row{
				Name: "bwrap --unshare-all p50", Figure: dur(bu.p50),
				Baseline: labelled("host bash", dur(hu.p50)),
				Ratio:    ratio(bu.p50.Seconds(), hu.p50.Seconds()), RatioOf: "bwrap/host",
			},
			Row{
				Name: "stop p50, native (Close + Destroy)", Figure: dur(nd.p50),
				Baseline: labelled("bwrap", dur(bd.p50)),
				Ratio:    ratio(nd.p50.Seconds(), bd.p50.Seconds()), RatioOf: "native/bwrap",
			},
		)
	} else {
		s.Rows = append(s.Rows, Row{Name: "stop p50, native (Close + Destroy)", Figure: dur(nd.p50)})
	}
	s.Rows = append(s.Rows, Row{
		Name: "stop p50, host bash (Close)", Figure: dur(hd.p50),
		Baseline: labelled("native", dur(nd.p50)),
		Ratio:    ratio(nd.p50.Seconds(), hd.p50.Seconds()), RatioOf: "native/host",
	})
	for _, st := range []*starter{bare, tmpfsed, self} {
		if st == nil {
			continue
		}
		u := summarize(st.up)
		s.Rows = append(s.Rows, Row{
			Name: st.name + " p50", Figure: dur(u.p50),
			Baseline: labelled("native", dur(nu.p50)),
			Ratio:    ratio(u.p50.Seconds(), nu.p50.Seconds()), RatioOf: "this/native",
		})
	}
	s.Notes = append(s.Notes, "phases of a cold start, medians: "+phaseNote(native)+"; "+phaseNote(bare)+"; "+phaseNote(self)+"; "+phaseNote(host))
	if bwrap.skip == "" {
		s.Notes = append(s.Notes, phaseNote(bwrap)+"; "+gapNote(native, bare, bwrap, split))
	}
	s.Notes = append(s.Notes, split.note())
	if tmpfsed == nil {
		s.Notes = append(s.Notes, "native on tmpfs: not measured: /dev/shm is not a tmpfs here.")
	}
	if dk != nil {
		s.Rows = append(s.Rows,
			Row{
				Name: "vs docker run p50", Figure: dur(nu.p50),
				Baseline: labelled("docker run", dur(dk.p50)),
				Ratio:    ratio(dk.p50.Seconds(), nu.p50.Seconds()), RatioOf: "docker/native",
			},
			Row{
				Name: "vs docker run p99", Figure: dur(nu.p99),
				Baseline: labelled("docker run", dur(dk.p99)),
				Ratio:    ratio(dk.p99.Seconds(), nu.p99.Seconds()), RatioOf: "docker/native",
			},
		)
	}
	return nu, nil
}

// bwrapGoal is the goal for the native cold start: at most this
// many times bwrap's, measured in the same run.
const bwrapGoal = 1.2

// phaseNote says how long st's starts spent in each phase it marked.
func phaseNote(st *starter) string {
	var parts []string
	for _, p := range phaseOrder {
		if len(st.phases[p]) > 0 {
			parts = append(parts, p+" "+formatSeconds(st.phase(p).Seconds()))
		}
	}
	return st.name + ": " + strings.Join(parts, ", ")
}

// gapNote says what the native start's distance to bwrap's is made of,
// phase by phase (medians, so they need not add up to the difference of
// the totals): the daemon's Create, which bwrap has no counterpart of,
// and its share that is the cgroup's (beside bare, the same without
// cgroups); Prepare; the spawn, split by sp; and the init's setup with
// bash's start against bwrap's setup with the same bash's start.
func gapNote(native, bare, bwrap *starter, sp spawnCosts) string {
	d := func(a, b time.Duration) string {
		s := formatSeconds(math.Abs((a - b).Seconds()))
		if a < b {
			return "-" + s
		}
		return "+" + s
	}
	nRest := native.phase(phaseSetup) + native.phase(phaseShell)
	return fmt.Sprintf("the gap to bwrap, phase by phase: create %s (state directories, and the cgroup's making begun, which goes on behind the spawn and the init's setup until Started sends the init its files: bwrap has none; %s without cgroups), prepare %s (Prepare: the config, the mount clones; bwrap's only rewrites argv), spawn %s (bwrap's is a vfork and exec of bwrap, which makes its namespaces later, in its shell phase here; the init's is a fork of this process into the namespaces and an exec that drops the fork's copy; by the spawn alone note, a fork rather than a vfork costs about %s here and the namespaces %s more, %s of it the network namespace's; bwrap makes the same namespaces, in its setup), setup and shell %s (the init's start, root, cgroup join, lockdown and bash's fork, then bash to its prompt, against bwrap's setup, its namespaces included, and the same bash; with no git guard, as here, the init goes from its setup to bash's fork without waiting for this process, which sends it Go beforehand); the init alone rows give that last part's page faults and CPU.",
		d(native.phase(phaseCreate), 0), formatSeconds(bare.phase(phaseCreate).Seconds()),
		d(native.phase(phasePrepare), bwrap.phase(phasePrepare)),
		d(native.phase(phaseSpawn), bwrap.phase(phaseSpawn)),
		formatSeconds(max(sp.fork-sp.vfork, 0).Seconds()), formatSeconds(max(sp.namespaces-sp.fork, 0).Seconds()),
		formatSeconds(max(sp.namespaces-sp.noNet, 0).Seconds()),
		d(nRest, bwrap.phase(phaseShell)))
}

// spawnCosts are the medians of os/exec starting /bin/true (Start, which
// returns once the child has exec'd) from this process three ways: plain,
// which Go does with CLONE_VM|CLONE_VFORK, sharing this process's memory;
// in a user namespace of its own, which Go must fork for (the parent
// writes the child's uid and gid maps between the clone and the exec), so
// the kernel copies the page tables of this process's resident memory and
// the exec drops them again; in every namespace a native sandbox's init
// starts in (network none's too), with the same maps; and in all of them
// but the network namespace, whose making (a loopback device, every
// protocol's per-namespace state) is the dearest.
type spawnCosts struct {
	vfork, fork, namespaces, noNet time.Duration
	rssAnon                        string // this process's anonymous resident memory, which a fork copies the page tables of
}

func (sp spawnCosts) note() string {
	return fmt.Sprintf("spawn alone: os/exec's Start of /bin/true from this process (resident anonymous memory %s), medians, taking turns: plain (vfork) %s; in a user namespace of its own (a fork: Go cannot vfork a child whose uid and gid maps it writes) %s; in the native init's namespaces, network's included, %s; in them all but the network's, %s. The native spawn pays the network's and more (its child's own steps, a larger exec); a daemon with more resident memory pays more for the fork.",
		sp.rssAnon, formatSeconds(sp.vfork.Seconds()), formatSeconds(sp.fork.Seconds()), formatSeconds(sp.namespaces.Seconds()), formatSeconds(sp.noNet.Seconds()))
}

// spawnSplit measures spawnCosts, n times each, in turns.
func spawnSplit(ctx context.Context, n int) (spawnCosts, error) {
	truePath, err := exec.LookPath("true")
	if err != nil {
		return spawnCosts{}, err
	}
	maps := func(a *syscall.SysProcAttr) *syscall.SysProcAttr {
		a.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}}
		a.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}}
		return a
	}
	const all = unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWUTS |
		unix.CLONE_NEWIPC | unix.CLONE_NEWCGROUP | unix.CLONE_NEWNET
	ways := []func() *syscall.SysProcAttr{
		func() *syscall.SysProcAttr { return nil },
		func() *syscall.SysProcAttr { return maps(&syscall.SysProcAttr{Cloneflags: unix.CLONE_NEWUSER}) },
		func() *syscall.SysProcAttr { return maps(&syscall.SysProcAttr{Cloneflags: all}) },
		func() *syscall.SysProcAttr { return maps(&syscall.SysProcAttr{Cloneflags: all &^ unix.CLONE_NEWNET}) },
	}
	took := make([][]time.Duration, len(ways))
	for round := range 1 + n {
		for k := range ways {
			i := (round + k) % len(ways)
			cmd := exec.CommandContext(ctx, truePath)
			cmd.SysProcAttr = ways[i]()
			t0 := time.Now()
			if err := cmd.Start(); err != nil {
				return spawnCosts{}, err
			}
			dt := time.Since(t0)
			if err := cmd.Wait(); err != nil {
				return spawnCosts{}, err
			}
			if round > 0 {
				took[i] = append(took[i], dt)
			}
		}
	}
	sp := spawnCosts{vfork: median(took[0]), fork: median(took[1]), namespaces: median(took[2]), noNet: median(took[3]), rssAnon: "unknown"}
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "RssAnon:"); ok {
				sp.rssAnon = strings.Join(strings.Fields(v), " ")
			}
		}
	}
	return sp, nil
}

// starterShell is each of st's timed starts less its Create.
func starterShell(st *starter) []time.Duration {
	d := make([]time.Duration, len(st.up))
	for i := range st.up {
		d[i] = st.up[i]
		if c := st.phases[phaseCreate]; i < len(c) {
			d[i] -= c[i]
		}
	}
	return d
}

// termOptions are the terminal's options from harness.toml for a shell
// in ws, as the daemon builds them.
func termOptions(cfg config.Config, ws string) terminal.Options {
	o := session.ConfigFrom(cfg, ws).Terminal
	o.Logger = slog.New(slog.DiscardHandler)
	return o
}

// nativeStarter is the native driver set up as the daemon sets it up
// (with cgroups, if asked, when this host has them), with its state under
// stateDir and its init from exe ("": the program harnessd carries). It
// returns a note on the cgroups, and what releases them.
func nativeStarter(cfg config.Config, stateDir string, cgroups bool, exe string) (*starter, func(), string, error) {
	quiet := slog.New(slog.DiscardHandler)
	opts := &sandbox.NativeOptions{StateDir: stateDir, Logger: quiet, Exe: exe}
	release := func() {}
	var note string
	if !cgroups {
		note = "no cgroups: limits by rlimit"
	} else if mgr, err := cgroup.Detect(cgroup.Options{Logger: quiet}); err != nil {
		note = "cgroups unusable, limits by rlimit (" + err.Error() + ")"
	} else {
		opts.Cgroups = sandbox.Cgroups(mgr)
		release = func() { mgr.Close() }
		note = "a cgroup per sandbox (" + mgr.Report().String() + ")"
	}
	nat, err := sandbox.NewNative(opts)
	if err == nil {
		err = nat.CheckHost()
	}
	if err != nil {
		release()
		return nil, nil, "", fmt.Errorf("native driver: %w", err)
	}
	sc := cfg.Sandbox
	spec := func(ws string) sandbox.Spec {
		return sandbox.Spec{
			Workspace: ws,
			Protected: sc.Protected,
			Network:   sandbox.Network(sc.Network),
			Limits: sandbox.Limits{
				MemoryBytes: int64(sc.MemoryMB) << 20,
				Pids:        sc.Pids,
				CPUWeight:   sc.CPUWeight,
				TmpBytes:    int64(sc.TmpMB) << 20,
			},
		}
	}
	st := &starter{name: "native", nat: nat, spec: spec, start: func(ctx context.Context, ws string, mark func(string)) (func() error, error) {
		sb, err := nat.Create(ctx, spec(ws))
		mark(phaseCreate)
		if err != nil {
			return nil, err
		}
		term, err := terminal.New(ctx, marked(session.SandboxTerminal(termOptions(cfg, ws), sb), mark))
		if err != nil {
			sb.Destroy(context.WithoutCancel(ctx))
			return nil, err
		}
		return func() error {
			return errors.Join(term.Close(), sb.Destroy(context.WithoutCancel(ctx)))
		}, nil
	}}

	return st, release, note, nil
}

// bwrapStarter is the same bash inside bubblewrap (the binary name, looked
// up in PATH), or a skipped starter saying why when it is not installed.
func bwrapStarter(cfg config.Config, name string) *starter {
	st := &starter{name: "bwrap"}
	bin, err := exec.LookPath(name)
	if err != nil {
		st.skip = "skipped: bubblewrap is not installed (`" + name + "` not in PATH; Debian package bubblewrap): no baseline."
		return st
	}
	st.start = func(ctx context.Context, ws string, mark func(string)) (func() error, error) {
		o := termOptions(cfg, ws)
		o.Prepare = func(cmd *exec.Cmd) error {
			ctl, err := rcDir(cmd.Args)
			if err != nil {
				return err
			}
			args := append([]string{name}, bwrapArgs...)
			args = append(args, "--bind", ws, ws, "--bind", ctl, ctl, "--chdir", ws, cmd.Path)
			cmd.Args = append(args, cmd.Args[1:]...)
			cmd.Path = bin
			return nil
		}
		term, err := terminal.New(ctx, marked(o, mark))
		if err != nil {
			return nil, err
		}
		return term.Close, nil
	}
	return st
}

// rcDir is the directory of bash's --rcfile: the terminal's control
// directory, which the shell must see at the same path.
func rcDir(args []string) (string, error) {
	for i, a := range args {
		if a == "--rcfile" && i+1 < len(args) {
			return filepath.Dir(args[i+1]), nil
		}
	}
	return "", fmt.Errorf("no --rcfile in bash's arguments %q", args)
}

// dockerRun times `docker run --rm` of dockerImage running `true`, when an
// engine answers and the image is present; otherwise it returns nil and
// says why it was skipped.
func (b *bench) dockerRun(ctx context.Context) (*latencies, string) {
	bin, skip := dockerReady(ctx)
	if skip != "" {
		return nil, "docker run: skipped: " + skip
	}
	n := 20
	if b.opts.quick {
		n = 3
	}
	lat := make([]time.Duration, 0, n)
	for i := range 2 + n {
		t0 := time.Now()
		if out, err := exec.CommandContext(ctx, bin, "run", "--rm", "--network", "none", dockerImage, "true").CombinedOutput(); err != nil {
			return nil, "docker run: failed: " + firstLine(out, cause(ctx, err))
		}
		if i >= 2 {
			lat = append(lat, time.Since(t0))
		}
	}
	d := summarize(lat)
	return &d, fmt.Sprintf("docker run: `docker run --rm --network none %s true` to its exit (a container's create, start, run and removal; no shell prompt), %d timed after 2 untimed, after the others.", dockerImage, d.n)
}

// apiDaemon is one daemon of the warm-pool measurement and what it
// measured.
type apiDaemon struct {
	label string
	cfg   childConfig
	d     *child

	hit, miss         []time.Duration // create latency, by where the sandbox came from
	hitTrue, missTrue []time.Duration // create + first `true`
	commits0          map[string]float64
}

// sandboxDaemons measures sessions created through the API of child
// daemons with the native driver: with a warm pool, with one and batch
// durability (to show what the fsyncs cost), and without a pool, in
// turns; then concurrentTarget sessions created at once in the last.
func (b *bench) sandboxDaemons(ctx context.Context, s *Section, dir string, cold latencies) error {
	n, conc := 100, concurrentTarget
	if b.opts.quick {
		// Under -quick, 20 at once: TestQuick runs with the race detector,
		// whose sandbox inits start slowly enough to make 100 take seconds.
		n, conc = 5, 20
	}
	pooled := &apiDaemon{label: "pooled", cfg: childConfig{driver: config.DriverNative, poolSize: warmPoolSize, sessions: 10}}
	batch := &apiDaemon{label: "pooled-batch", cfg: childConfig{driver: config.DriverNative, poolSize: warmPoolSize, sessions: 10, batch: true}}
	unpooled := &apiDaemon{label: "cold", cfg: childConfig{driver: config.DriverNative, sessions: conc}}
	// A cold start forks the daemon (spawn: Go cannot vfork into a user
	// namespace whose maps it writes), and the fork copies the page
	// tables of all it has resident, which the heap floor raises.
	unfloored := &apiDaemon{label: "cold-no-floor", cfg: childConfig{driver: config.DriverNative, sessions: 10, goPacing: true}}
	all := []*apiDaemon{pooled, batch, unpooled, unfloored}
	for _, a := range all {
		ddir := filepath.Join(dir, a.label+"-daemon")
		if err := os.Mkdir(ddir, 0o755); err != nil {
			return err
		}
		d, err := startChild(ctx, ddir, a.cfg)
		if err != nil {
			return fmt.Errorf("%s daemon: %w", a.label, err)
		}
		a.d = d
		defer d.stop(s, a.label+" daemon: ")
	}
	probe, err := openBoltProbe(filepath.Join(dir, "bare.db"))
	if err != nil {
		return err
	}
	defer probe.close()

	// A pool has refilled once every pooled sandbox's state directory is
	// back (sessions are deleted before the next create, so each is the
	// pool's) and a while longer than a cold start takes to reach its
	// first prompt. Every create waits for both pools, so that no refill
	// runs beside it but the one it causes.
	settle := min(300*time.Millisecond, max(20*time.Millisecond, cold.p99))
	waitPools := func() error {
		for _, a := range all {
			if a.cfg.poolSize == 0 {
				continue
			}
			stateDir := filepath.Join(a.d.dataDir, "run", "sandboxes")
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
				ents, err := os.ReadDir(stateDir)
				if err != nil && !errors.Is(err, os.ErrNotExist) {
					return err
				}
				ready := 0
				for _, e := range ents {
					if strings.HasPrefix(e.Name(), "w") {
						ready++
					}
				}
				if ready >= a.cfg.poolSize {
					break
				}
				// Past the deadline the create is timed all the same, and is a miss.
				if err := sleep(ctx, 5*time.Millisecond); err != nil {
					return err
				}
			}
		}
		return sleep(ctx, settle)
	}

	var commits, idleHTTP []time.Duration
	for i := range coldWarmUp + n {
		timed := i >= coldWarmUp
		if i == coldWarmUp {
			for _, a := range all {
				a.commits0, _ = a.d.metrics(ctx)
			}
		}
		for k := range all {
			a := all[(i+k)%len(all)]
			if err := waitPools(); err != nil {
				return err
			}
			c, ct, sbid, err := createAndTrue(ctx, a.d.cl)
			if err != nil {
				return fmt.Errorf("%s daemon: create %d: %w", a.label, i+1, err)
			}
			if !timed {
				continue
			}
			if strings.HasPrefix(sbid, "w") {
				a.hit, a.hitTrue = append(a.hit, c), append(a.hitTrue, ct)
			} else {
				a.miss, a.missTrue = append(a.miss, c), append(a.missTrue, ct)
			}
		}
		t0 := time.Now()
		if err := probe.commit(ctx); err != nil {
			return fmt.Errorf("bare commit: %w", err)
		}
		if timed {
			commits = append(commits, time.Since(t0))
		}
		// What any request costs after the same settle: the machine's
		// threads have gone to sleep, and a request wakes several
		// (client, server, their netpollers) where the bare commit,
		// on this goroutine alone, wakes none.
		if err := waitPools(); err != nil {
			return err
		}
		t0 = time.Now()
		if _, err := pooled.d.cl.Health(ctx); err != nil {
			return fmt.Errorf("pooled daemon: healthz: %w", err)
		}
		if timed {
			idleHTTP = append(idleHTTP, time.Since(t0))
		}
	}
	rss := map[*apiDaemon]int64{}
	for _, a := range []*apiDaemon{unpooled, unfloored} {
		rss[a], _ = vmRSS(a.d.pid)
	}
	hits, hitsTrue := summarize(pooled.hit), summarize(pooled.hitTrue)
	bhits := summarize(batch.hit)
	coldAPI, coldTrue := summarize(unpooled.miss), summarize(unpooled.missTrue)
	bc := summarize(commits)
	floor := bc.p50
	s.Notes = append(s.Notes,
		fmt.Sprintf("warm pool: four daemons (this binary re-exec'd as `harnessd serve`, [sandbox] driver = \"native\"): pool_size = %d in strict durability (pid %d), the same in batch durability (pid %d), pool_size = 0 in strict (pid %d), and the same with heap_floor_mb = 0 (pid %d); %d rounds after %d untimed, each a create in every one, in turns, each create waiting first until both pools are full again (every pooled sandbox's state directory is back, then %s), then api.Client.CreateSession, `true` through Act, and a purging delete.",
			warmPoolSize, pooled.d.pid, batch.d.pid, unpooled.d.pid, unfloored.d.pid, n, coldWarmUp, formatSeconds(settle.Seconds())),
		fmt.Sprintf("the heap floor and a cold start: each cold start forks the daemon (Go forks, not vforks, a child whose user namespace maps it writes), and the fork copies the page tables of all the daemon has resident, then the exec tears them down: on this kind of VM, where page-table changes are dear, the cost grows with the daemon's size. The heap floor (heap_floor_mb = 32) keeps more of the heap resident: after the rounds the cold daemon's VmRSS was %.1f MiB, the one without the floor %.1f MiB (the rows below give what that costs a cold create). A fork server or a small spawner (runc's nsexec, in C) would take the daemon's size out of a cold start; neither exists yet.",
			float64(rss[unpooled])/(1<<20), float64(rss[unfloored])/(1<<20)),
		fmt.Sprintf("a create is a pool hit when its sandbox_started event's sandbox_id starts with \"w\" (a pooled sandbox; a cold one is named after its session): strict pool %d hits, %d misses; batch pool %d hits, %d misses; no pool %d hits, %d misses.",
			len(pooled.hit), len(pooled.miss), len(batch.hit), len(batch.miss), len(unpooled.hit), len(unpooled.miss)),
		fmt.Sprintf("a pool hit commits once before it answers (the session record with its sandbox_started, in one transaction; a cold create commits the record first, then sandbox_started once its sandbox is up), fsynced in strict durability: its floor is a bare bbolt commit in the same directory, once a round, p50 %s; %s.",
			formatSeconds(bc.p50.Seconds()), commitNote(ctx, pooled)),
		"a hit takes a sandbox from the pool and wakes its filler once the create has answered: the hit's first command shares the machine with that refill, the create does not.",
		fmt.Sprintf("what a hit is made of: the commit (above); an HTTP request with nothing behind it (GET /healthz), made after the same settle as a create, p50 %s (back to back, as the api section times it in its own process, the same request costs tens of µs); the session's own setup around the commit. Timed inside the pooled daemon in one instrumented run (2026-12-07; time.Now between the steps of Daemon.Create, which this run does not do), Create took 1.37 ms p50 of a 3.38 ms hit: the commit 1.10 ms (the bare commit's p50 was 0.85 ms), the rest 0.27 ms (the id's lookup 37 µs, the sandbox settings and the pool's take 78 µs, the session's start 56 µs, the session.start hooks 14 µs, the metrics, log line and answer 93 µs). So about 2 ms of a hit is the request's way to the daemon and back, and that is not the machine's wake-ups alone: the api section's wake-up rows put a one-byte round trip between two idle processes near 0.1 ms, while a separate daemon answered /healthz (api.Client, 40 a step) in 0.11-0.17 ms back to back and 0.44-0.59 ms after 20-100 ms idle, with 7.5-8.5 context switches and 0.33-0.35 ms of CPU a request (perf stat; driver none, and native with a pool of 4, alike). An idle daemon's request is dearer in CPU, not only in waiting: perf stat of that daemon (2026-12-07) counted 0.59 ms of CPU a request after 100 ms idle against 0.17 ms back to back, with about as many context switches (8.8 against 7.1) and page faults (1.2 against 1.1) a request, and a profile of the idle requests finds a third of their samples in the kernel's pvm_irq_enable (this VM's paravirtual hooks) and the rest spread thin over the Go runtime, net/http and bbolt: every page the request touches seems dear again after the daemon slept.",
			formatSeconds(summarize(idleHTTP).p50.Seconds())),
	)
	for _, a := range []*apiDaemon{pooled, batch} {
		if len(a.miss) > 0 {
			m := summarize(a.miss)
			s.Notes = append(s.Notes, fmt.Sprintf("the %s daemon's misses: p50 %s, p99 %s.", a.label, formatSeconds(m.p50.Seconds()), formatSeconds(m.p99.Seconds())))
		}
	}
	if hits.n > 0 {
		s.Rows = append(s.Rows,
			Row{
				Name: "API create p50, pool hit", Figure: dur(hits.p50),
				Baseline: labelled("cold (pool off)", dur(coldAPI.p50)),
				Ratio:    ratio(hits.p50.Seconds(), coldAPI.p50.Seconds()), RatioOf: "hit/cold",
				Target: "< " + formatSeconds(warmTarget.Seconds()), Status: passIf(hits.p50 < warmTarget),
			},
			Row{
				Name: "API create p99, pool hit", Figure: dur(hits.p99),
				Baseline: labelled("cold (pool off)", dur(coldAPI.p99)),
				Ratio:    ratio(hits.p99.Seconds(), coldAPI.p99.Seconds()), RatioOf: "hit/cold",
			},
			Row{
				Name: "API create p50, pool hit, vs its floor", Figure: dur(hits.p50),
				Baseline: labelled("floor: 1 commit", dur(floor)),
				Ratio:    ratio(hits.p50.Seconds(), floor.Seconds()), RatioOf: "hit/floor",
			},
			Row{
				Name: "API create p50, pool hit, vs commit + idle request", Figure: dur(hits.p50),
				Baseline: labelled("commit + healthz after settle", dur(floor+summarize(idleHTTP).p50)),
				Ratio:    ratio(hits.p50.Seconds(), (floor + summarize(idleHTTP).p50).Seconds()), RatioOf: "hit/(commit+request)",
			},
		)
	}
	if bhits.n > 0 {
		s.Rows = append(s.Rows, Row{
			Name: "API create p50, pool hit, batch durability", Figure: dur(bhits.p50),
			Baseline: labelled("strict", dur(hits.p50)),
			Ratio:    ratio(bhits.p50.Seconds(), hits.p50.Seconds()), RatioOf: "batch/strict",
		})
	}
	if hits.n > 0 {
		s.Rows = append(s.Rows,
			Row{
				Name: "create + first `true` p50, pool hit", Figure: dur(hitsTrue.p50),
				Baseline: labelled("cold (pool off)", dur(coldTrue.p50)),
				Ratio:    ratio(hitsTrue.p50.Seconds(), coldTrue.p50.Seconds()), RatioOf: "hit/cold",
			},
			Row{
				Name: "create + first `true` p99, pool hit", Figure: dur(hitsTrue.p99),
				Baseline: labelled("cold (pool off)", dur(coldTrue.p99)),
				Ratio:    ratio(hitsTrue.p99.Seconds(), coldTrue.p99.Seconds()), RatioOf: "hit/cold",
			},
		)
	}
	s.Rows = append(s.Rows,
		Row{
			Name: "pool hits, strict", Figure: count(len(pooled.hit)),
			Baseline: labelled("creates", count(len(pooled.hit)+len(pooled.miss))),
			Ratio:    ratio(float64(len(pooled.hit)), float64(len(pooled.hit)+len(pooled.miss))), RatioOf: "hits/creates",
		},
		Row{
			Name: "API create p50, cold (pool off)", Figure: dur(coldAPI.p50),
			Baseline: labelled("driver alone", dur(cold.p50)),
			Ratio:    ratio(coldAPI.p50.Seconds(), cold.p50.Seconds()), RatioOf: "api/driver",
		},
	)
	if nf := summarize(unfloored.miss); nf.n > 0 {
		s.Rows = append(s.Rows, Row{
			Name: "API create p50, cold, heap_floor_mb = 0", Figure: dur(nf.p50),
			Baseline: labelled("cold, heap_floor_mb = 32", dur(coldAPI.p50)),
			Ratio:    ratio(nf.p50.Seconds(), coldAPI.p50.Seconds()), RatioOf: "no floor/floor",
		})
	}
	return b.sandboxConcurrent(ctx, s, unpooled.d, conc, coldAPI)
}

// commitNote is the mean of the daemon's own bbolt commits over the timed
// rounds, from its /metrics.
func commitNote(ctx context.Context, a *apiDaemon) string {
	now, err := a.d.metrics(ctx)
	const sum, cnt = "harnessd_store_commit_seconds_sum", "harnessd_store_commit_seconds_count"
	if err != nil || a.commits0 == nil || now[cnt] <= a.commits0[cnt] {
		return "the daemon's own commits: not read"
	}
	n := now[cnt] - a.commits0[cnt]
	return fmt.Sprintf("the %s daemon's own %.0f commits over the timed rounds (its /metrics) took %s on average",
		a.label, n, formatSeconds((now[sum]-a.commits0[sum])/n))
}

// createAndTrue creates a session, runs `true` in it, finds which sandbox
// it got and deletes it (purging). It returns the create's latency, the
// create's and the `true`'s together, and the sandbox's id.
func createAndTrue(ctx context.Context, cl *api.Client) (create, withTrue time.Duration, sandboxID string, err error) {
	t0 := time.Now()
	info, err := cl.CreateSession(ctx, daemon.CreateRequest{})
	create = time.Since(t0)
	if err != nil {
		return 0, 0, "", err
	}
	err = actTrue(ctx, cl, info.ID)
	withTrue = time.Since(t0)
	if err == nil {
		sandboxID, err = startedSandbox(ctx, cl, info.ID)
	}
	return create, withTrue, sandboxID, errors.Join(err, cl.DeleteSession(ctx, info.ID, true))
}

// errFound ends an Events walk early.
var errFound = errors.New("found")

// startedSandbox is the sandbox_id of a session's sandbox_started event.
func startedSandbox(ctx context.Context, cl *api.Client, id string) (string, error) {
	var sbid string
	err := cl.Events(ctx, id, 0, false, func(ev event.Event) error {
		if st, ok := ev.Payload.(event.SandboxStarted); ok {
			sbid = st.SandboxID
			return errFound
		}
		return nil
	})
	if errors.Is(err, errFound) {
		return sbid, nil
	}
	if err == nil {
		err = errors.New("no sandbox_started event")
	}
	return "", fmt.Errorf("events of %s: %w", id, err)
}

// sandboxConcurrent creates n sessions at once (one api.Client each,
// released together) in d, a native daemon without a pool; then deletes
// them all and checks that none of their processes remains.
func (b *bench) sandboxConcurrent(ctx context.Context, s *Section, d *child, n int, seq latencies) error {
	var (
		mu    sync.Mutex
		infos []daemon.Info
		lat   []time.Duration
		errs  []error
		wg    sync.WaitGroup
		ready sync.WaitGroup
	)
	goCh := make(chan struct{})
	ready.Add(n)
	for range n {
		cl := api.NewClient(d.socket)
		wg.Go(func() {
			defer cl.Close()
			ready.Done()
			<-goCh
			t := time.Now()
			info, err := cl.CreateSession(ctx, daemon.CreateRequest{})
			dt := time.Since(t)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			infos, lat = append(infos, info), append(lat, dt)
		})
	}
	ready.Wait()
	t0 := time.Now()
	close(goCh)
	wg.Wait()
	wall := time.Since(t0)

	// Every shell, by pid and start time (so a reused pid is not taken
	// for a survivor), and every process under the daemon.
	starts := map[int]string{}
	for _, in := range infos {
		if st, ok := procStart(in.PID); ok {
			starts[in.PID] = st
		}
	}
	alive := len(starts)
	under := len(descendants(d.pid))

	var next atomic.Int64
	var dwg sync.WaitGroup
	var derrs []error
	var dmu sync.Mutex
	t1 := time.Now()
	for range concurrentClients {
		dwg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(infos) {
					return
				}
				if err := d.cl.DeleteSession(ctx, infos[i].ID, true); err != nil {
					dmu.Lock()
					derrs = append(derrs, fmt.Errorf("delete %s: %w", infos[i].ID, err))
					dmu.Unlock()
				}
			}
		})
	}
	dwg.Wait()
	delWall := time.Since(t1)

	// Delete returns once the session's shell and sandbox are closed; the
	// last of their processes may still be being reaped. Wait up to 5 s.
	left, leftUnder := 0, 0
	var goneIn time.Duration
	for deadline := time.Now().Add(5 * time.Second); ; {
		left = 0
		for pid, st := range starts {
			if now, ok := procStart(pid); ok && now == st {
				left++
			}
		}
		leftUnder = len(descendants(d.pid))
		goneIn = time.Since(t1)
		if (left == 0 && leftUnder == 0) || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}

	cl := summarize(lat)
	s.Notes = append(s.Notes,
		fmt.Sprintf("concurrent: %d api.Clients, each creating one session in the cold daemon (native, pool off, max_sessions %d), released together: %d created and %d failed in %s; %d of their shells (Info.PID) were alive after, with %d processes under the daemon (each sandbox is an init and its bash).",
			n, d.maxSessions, len(infos), len(errs), wall.Round(time.Millisecond), alive, under),
		fmt.Sprintf("then deleted (purging) by %d clients in %s; %d shells and %d processes under the daemon were left %s after the deletes began.",
			concurrentClients, delWall.Round(time.Millisecond), left, leftUnder, goneIn.Round(time.Millisecond)),
	)
	if len(errs) > 0 {
		s.Notes = append(s.Notes, "first create error: "+errs[0].Error())
	}
	s.Rows = append(s.Rows,
		Row{
			Name: fmt.Sprintf("sandboxes created at once (%d asked)", n), Figure: count(len(infos)),
			Baseline: labelled("asked", count(n)),
			Ratio:    ratio(float64(len(infos)), float64(n)), RatioOf: "ok/asked",
			Target: fmt.Sprintf("%d, 0 errors", concurrentTarget), Status: passIf(n >= concurrentTarget && len(infos) == n && len(errs) == 0),
		},
		Row{
			Name: fmt.Sprintf("wall time, %d at once", n), Figure: dur(wall),
			Baseline: labelled(fmt.Sprintf("%d x cold p50", n), dur(time.Duration(n)*seq.p50)),
			Ratio:    ratio(wall.Seconds(), float64(n)*seq.p50.Seconds()), RatioOf: "wall/serial",
		},
		Row{
			Name: fmt.Sprintf("create p99, %d at once", n), Figure: dur(cl.p99),
			Baseline: labelled("one at a time", dur(seq.p99)),
			Ratio:    ratio(cl.p99.Seconds(), seq.p99.Seconds()), RatioOf: "at once/alone",
		},
		Row{
			Name: "shells gone after delete", Figure: count(len(starts) - left),
			Baseline: labelled("alive before", count(len(starts))),
			Ratio:    ratio(float64(len(starts)-left), float64(len(starts))), RatioOf: "gone/alive",
			Target: "all, none under the daemon", Status: passIf(len(starts) > 0 && left == 0 && leftUnder == 0),
		},
	)
	// A create that failed is this figure's MISS, not a failure to
	// measure; a delete that failed is.
	return errors.Join(derrs...)
}

// tmpfs reports whether dir is on a tmpfs.
func tmpfs(dir string) bool {
	var st unix.Statfs_t
	return unix.Statfs(dir, &st) == nil && st.Type == unix.TMPFS_MAGIC
}

// procStart is a process's start time (field 22 of /proc/PID/stat), and
// whether it exists and is not a zombie.
func procStart(pid int) (string, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", false
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return "", false
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); field 22 is f[19].
	if len(f) < 20 || f[0] == "Z" {
		return "", false
	}
	return f[19], true
}

// usage is what a process and everything it reaped cost: page faults
// (minor and major) and CPU time (user and system), from wait4's rusage.
type usage struct {
	faults []int64
	cpu    []time.Duration
}

func (u *usage) add(ps *os.ProcessState) {
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok {
		return
	}
	u.faults = append(u.faults, ru.Minflt+ru.Majflt)
	u.cpu = append(u.cpu, time.Duration(ru.Utime.Nano()+ru.Stime.Nano()))
}

func (u *usage) medians() (int64, time.Duration) {
	if len(u.faults) == 0 {
		return 0, 0
	}
	f := slices.Clone(u.faults)
	slices.Sort(f)
	return f[len(f)/2], median(u.cpu)
}

// initAlone measures what a sandbox's start costs its own processes, with
// no terminal and /bin/true for the shell: each native starter's init
// (Create, Prepare, start, Started, to the init's exit after true's) and
// `bwrap … true`, in page faults and CPU time, beside true alone, taking
// turns, n times each after one untimed.
func (b *bench) initAlone(ctx context.Context, s *Section, dir string, n int, natives []*starter) error {
	truePath, err := exec.LookPath("true")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	type contender struct {
		name string
		run  func(ws string) (*os.ProcessState, error)
		u    usage
	}
	wait := func(cmd *exec.Cmd, started func(int) error) (*os.ProcessState, error) {
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		if started != nil {
			if err := started(cmd.Process.Pid); err != nil {
				cmd.Process.Kill()
				cmd.Wait()
				return nil, err
			}
		}
		err := cmd.Wait()
		return cmd.ProcessState, err
	}
	var all []*contender
	for _, st := range natives {
		if st == nil || st.nat == nil {
			continue
		}
		all = append(all, &contender{name: st.name, run: func(ws string) (*os.ProcessState, error) {
			sb, err := st.nat.Create(ctx, st.spec(ws))
			if err != nil {
				return nil, err
			}
			defer sb.Destroy(context.WithoutCancel(ctx))
			cmd := exec.CommandContext(ctx, truePath)
			cmd.Dir = sb.Workdir()
			if err := sb.Prepare(cmd); err != nil {
				return nil, err
			}
			return wait(cmd, sb.Started)
		}})
	}
	if bin, err := exec.LookPath(b.bwrap); err == nil {
		all = append(all, &contender{name: "bwrap", run: func(ws string) (*os.ProcessState, error) {
			// --as-pid-1: without it bwrap's own pid 1 reports true's
			// status by an eventfd and is never reaped, so its rusage
			// and true's would be missing; with it bwrap has one process
			// fewer, so this floor is if anything lower.
			args := append(slices.Clone(bwrapArgs), "--as-pid-1", "--bind", ws, ws, "--chdir", ws, truePath)
			return wait(exec.CommandContext(ctx, bin, args...), nil)
		}})
	}
	all = append(all, &contender{name: "true", run: func(string) (*os.ProcessState, error) {
		return wait(exec.CommandContext(ctx, truePath), nil)
	}})
	seq := 0
	for round := range 1 + n {
		for k := range all {
			c := all[(round+k)%len(all)]
			seq++
			ws := filepath.Join(dir, fmt.Sprintf("alone-%d", seq))
			if err := os.Mkdir(ws, 0o755); err != nil {
				return err
			}
			ps, err := c.run(ws)
			os.RemoveAll(ws)
			if err != nil {
				return fmt.Errorf("%s with true: %w", c.name, cause(ctx, err))
			}
			if round > 0 {
				c.u.add(ps)
			}
		}
	}
	byName := map[string]*contender{}
	for _, c := range all {
		byName[c.name] = c
	}
	tf, tc := byName["true"].u.medians()
	bw := byName["bwrap"]
	var bf int64
	var bc time.Duration
	if bw != nil {
		bf, bc = bw.u.medians()
	}
	s.Notes = append(s.Notes, fmt.Sprintf("init alone: each native driver's sandbox (Create, Prepare, start, Started) around /bin/true instead of bash, with no terminal, to the init's exit, beside `bwrap %s --as-pid-1 --bind WS WS --chdir WS true` and true alone; page faults (minor+major) and CPU (user+system) of the process and all it reaped, from wait4's rusage; %d each after one untimed, taking turns; medians. Both include true's own %d faults and %s.",
		strings.Join(bwrapArgs, " "), n, tf, formatSeconds(tc.Seconds())))
	for _, c := range all {
		if c.name == "true" || c.name == "bwrap" {
			continue
		}
		f, cpu := c.u.medians()
		fRow := Row{Name: "init alone page faults, " + c.name, Figure: count(int(f))}
		cRow := Row{Name: "init alone CPU, " + c.name, Figure: dur(cpu)}
		if bw != nil {
			fRow.Baseline, fRow.Ratio, fRow.RatioOf = labelled("bwrap", count(int(bf))), ratio(float64(f), float64(bf)), "init/bwrap"
			cRow.Baseline, cRow.Ratio, cRow.RatioOf = labelled("bwrap", dur(bc)), ratio(cpu.Seconds(), bc.Seconds()), "init/bwrap"
		}
		s.Rows = append(s.Rows, fRow, cRow)
	}
	return nil
}
