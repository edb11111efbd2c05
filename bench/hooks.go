package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/harnessd/harnessd/core/event"
	"github.com/harnessd/harnessd/core/pipeline"
	"github.com/harnessd/harnessd/core/session"
	"github.com/harnessd/harnessd/core/terminal"
	"github.com/harnessd/harnessd/hooks"
	"github.com/harnessd/harnessd/hooks/hooksbench"
)

// hookTarget is the most the shipped policies may add to an action, p50.
const hookTarget = 20 * time.Microsecond

// hooks measures the Lua hooks: what they add to an action with none,
// one and the shipped policies loaded, beside `true` through a session,
// and the actions a second through them from one session and from two at
// once.
func (b *bench) hooks(ctx context.Context, s *Section) error {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	dir := filepath.Join(b.tmp, "hooks")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "one.lua"), []byte(hooksbench.OneHook), 0o644); err != nil {
		return err
	}
	load := func(dirs ...hooks.Dir) (*hooks.Pipeline, error) {
		e, err := hooks.Load(hooks.Options{Dirs: dirs, Logger: quiet})
		if err != nil {
			return nil, fmt.Errorf("load hooks: %w", err)
		}
		return &hooks.Pipeline{Engine: e, Logger: quiet}, nil
	}
	none, err := load()
	if err != nil {
		return err
	}
	one, err := load(hooks.Dir{Path: dir})
	if err != nil {
		return err
	}
	shipped, err := load(hooks.Builtin)
	if err != nil {
		return err
	}

	// Two real sessions: the hooks are told about theirs, and the round
	// trip of `true` through the first is the baseline.
	var sess [2]*session.Session
	for i := range sess {
		sess[i], err = session.New(ctx, "bench-hooks-"+strconv.Itoa(i), session.Config{
			Terminal: terminal.Options{Dir: b.tmp, SoftTimeout: 2 * time.Minute}, Logger: quiet,
		})
		if err != nil {
			return fmt.Errorf("session: %w", err)
		}
		defer sess[i].Close(context.WithoutCancel(ctx), "bench")
	}
	var rt []time.Duration
	for i := range warmUp + b.opts.n {
		_, d, err := runChecked(ctx, sess[0], "true")
		if err != nil {
			return err
		}
		if i >= warmUp {
			rt = append(rt, d)
		}
	}
	trip := summarize(rt)

	n := 10 * b.opts.n
	fresh := hooksbench.NewCommands(max(n, 1<<12))
	// lat returns the latencies of the hooks stage and the CPU time this
	// process spent per action meanwhile (GC included), which a loaded
	// machine inflates less than the wall clock.
	lat := func(p *hooks.Pipeline, cmds []string) (latencies, time.Duration, error) {
		for i := range warmUp {
			if _, err := beforeAction(ctx, p, sess[0], cmds[i%len(cmds)]); err != nil {
				return latencies{}, 0, err
			}
		}
		runtime.GC()
		d := make([]time.Duration, 0, n)
		cpu0 := processCPU()
		for i := range n {
			took, err := beforeAction(ctx, p, sess[0], cmds[(warmUp+i)%len(cmds)])
			if err != nil {
				return latencies{}, 0, err
			}
			d = append(d, took)
		}
		return summarize(d), (processCPU() - cpu0) / time.Duration(n), nil
	}
	l0, _, err := lat(none, fresh)
	if err != nil {
		return err
	}
	l1, c1, err := lat(one, fresh)
	if err != nil {
		return err
	}
	lb, cb, err := lat(shipped, fresh)
	if err != nil {
		return err
	}
	lr, _, err := lat(shipped, hooksbench.Commands)
	if err != nil {
		return err
	}

	// Throughput of the shipped policies: one session, then two at once,
	// each with commands of its own.
	rate := func(sessions int) (float64, error) {
		runtime.GC()
		var wg sync.WaitGroup
		errs := make([]error, sessions)
		start := time.Now()
		for g := range sessions {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range n {
					if _, err := beforeAction(ctx, shipped, sess[g], fresh[(i*sessions+g)%len(fresh)]); err != nil {
						errs[g] = err
						return
					}
				}
			}()
		}
		wg.Wait()
		took := time.Since(start)
		for _, err := range errs {
			if err != nil {
				return 0, err
			}
		}
		return float64(sessions*n) / took.Seconds(), nil
	}
	r1, err := rate(1)
	if err != nil {
		return err
	}
	r2, err := rate(2)
	if err != nil {
		return err
	}

	files := shipped.Engine.Report()
	s.Notes = append(s.Notes,
		fmt.Sprintf("per action: hooks.Pipeline.BeforeAction (the pipeline's hooks stage: Engine.Action and its verdict) on a cmd_run of a real session, %d timed after %d untimed, each a typical agent command never seen before (so parsed); with no hooks, with one (rm -r of / vetoed, as in the package doc) and with the shipped policies (%d files, %d handlers; dangerous.lua's judges actions); wall clock around the call; CPU: this process's user and system time over the timed calls, GC included, per call.", l0.n, warmUp, len(files.Files), files.Handlers),
		fmt.Sprintf("round trip: `true` through session.Command on the same session (driver none, no events recorded), %d timed after %d untimed; the ratios are the hooks' share of it.", trip.n, warmUp),
		"repeated: the same 20 commands over and over, as an agent repeats itself: their analyses come from each Lua state's cache.",
		fmt.Sprintf("throughput: the shipped policies from 1 session, then 2 sessions at once (a goroutine each, %d actions each, commands never seen); %d CPUs, GOMAXPROCS %d.", n, runtime.NumCPU(), runtime.GOMAXPROCS(0)),
	)
	tp50 := trip.p50.Seconds()
	s.Rows = append(s.Rows,
		Row{
			Name: "no hooks p50", Figure: dur(l0.p50),
			Baseline: labelled("`true` round trip", dur(trip.p50)),
			Ratio:    ratio(l0.p50.Seconds(), tp50), RatioOf: "hooks/true",
		},
		Row{
			Name: "1 hook p50", Figure: dur(l1.p50),
			Baseline: labelled("`true` round trip", dur(trip.p50)),
			Ratio:    ratio(l1.p50.Seconds(), tp50), RatioOf: "hooks/true",
		},
		Row{
			Name: "shipped policies p50", Figure: dur(lb.p50),
			Baseline: labelled("`true` round trip", dur(trip.p50)),
			Ratio:    ratio(lb.p50.Seconds(), tp50), RatioOf: "hooks/true",
			Target: "< 20 µs", Status: passIf(lb.p50 < hookTarget),
		},
		Row{
			Name: "shipped policies, CPU per action", Figure: dur(cb),
			Baseline: labelled("1 hook", dur(c1)),
			Ratio:    ratio(cb.Seconds(), c1.Seconds()), RatioOf: "shipped/1",
		},
		Row{
			Name: "shipped policies p99", Figure: dur(lb.p99),
			Baseline: labelled("`true` round trip", dur(trip.p99)),
			Ratio:    ratio(lb.p99.Seconds(), trip.p99.Seconds()), RatioOf: "hooks/true",
		},
		Row{
			Name: "shipped policies p50, repeated commands", Figure: dur(lr.p50),
			Baseline: labelled("`true` round trip", dur(trip.p50)),
			Ratio:    ratio(lr.p50.Seconds(), tp50), RatioOf: "hooks/true",
		},
		Row{
			Name: "shipped policies, 1 session", Figure: perSecond(r1),
			Baseline: labelled("`true` round trips", perSecond(1/tp50)),
			Ratio:    ratio(r1, 1/tp50), RatioOf: "actions/round trips",
		},
	)
	scale := Row{
		Name: "shipped policies, 2 sessions at once", Figure: perSecond(r2),
		Baseline: labelled("1 session", perSecond(r1)),
		Ratio:    ratio(r2, r1), RatioOf: "2/1",
	}
	if runtime.GOMAXPROCS(0) >= 2 {
		scale.Target, scale.Status = ">= 1.5x", passIf(ratio(r2, r1) >= 1.5)
	} else {
		s.Notes = append(s.Notes, "scaling: one CPU, so two sessions cannot go faster than one; no target.")
	}
	s.Rows = append(s.Rows, scale)
	return nil
}

// beforeAction runs the hooks stage on one cmd_run and times it; any
// verdict but allow is an error (the commands are harmless).
func beforeAction(ctx context.Context, p *hooks.Pipeline, s *session.Session, cmd string) (time.Duration, error) {
	t0 := time.Now()
	d, err := p.BeforeAction(ctx, s, event.SourceAgent, event.CmdRun{Command: cmd})
	took := time.Since(t0)
	if err != nil {
		return took, fmt.Errorf("hooks on %q: %w", cmd, err)
	}
	if d.Verdict != pipeline.Allow {
		return took, fmt.Errorf("hooks on %q: %v by %s: %s", cmd, d.Verdict, d.Hook, d.Reason)
	}
	return took, nil
}

// processCPU is the CPU time this process has used, user and system.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
