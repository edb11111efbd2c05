package hooks

import (
	"context"
	"runtime"
	"sort"
	"syscall"
	"testing"
	"time"

	"github.com/harnessd/harnessd/core/event"
	"github.com/harnessd/harnessd/hooks/hooksbench"
)

func benchEngines(b *testing.B) map[string]*Engine {
	b.Helper()
	mk := func(dirs ...Dir) *Engine {
		e, err := Load(Options{Dirs: dirs, Budget: time.Second})
		if err != nil {
			b.Fatal(err)
		}
		return e
	}
	return map[string]*Engine{
		"hooks=0":       mk(),
		"hooks=1":       mk(Dir{Path: writeHooks(b, map[string]string{"one.lua": hooksbench.OneHook})}),
		"hooks=builtin": mk(Builtin),
	}
}

// BenchmarkAction measures Engine.Action on typical commands, each of
// them new (parsed), with no hooks, one hook and the shipped policies;
// p50-ns and p99-ns are the latencies of single calls.
func BenchmarkAction(b *testing.B) {
	benchAction(b, hooksbench.NewCommands(1<<13))
}

// BenchmarkActionRepeated is BenchmarkAction on 20 commands over and
// over, as an agent repeats itself: their analyses come from the cache.
func BenchmarkActionRepeated(b *testing.B) {
	benchAction(b, hooksbench.Commands)
}

func benchAction(b *testing.B, cmds []string) {
	engines := benchEngines(b)
	for _, name := range []string{"hooks=0", "hooks=1", "hooks=builtin"} {
		e := engines[name]
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			lat := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			cpu0, thread0 := cpuTime(syscall.RUSAGE_SELF), cpuTime(syscall.RUSAGE_THREAD)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				start := time.Now()
				d, err := e.Action(ctx, testSession, event.CmdRun{Command: cmds[i%len(cmds)]})
				lat = append(lat, time.Since(start))
				if err != nil || d.Verdict == Veto {
					b.Fatalf("%+v %v", d, err)
				}
			}
			b.StopTimer()
			// CPU time is what a shared, loaded machine does not inflate:
			// the process's (GC included) and this thread's (the calls).
			b.ReportMetric(float64((cpuTime(syscall.RUSAGE_SELF)-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64((cpuTime(syscall.RUSAGE_THREAD)-thread0).Nanoseconds())/float64(b.N), "thread-cpu-ns/op")
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
			b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
		})
	}
}

// cpuTime returns the CPU time used by the process (RUSAGE_SELF) or the
// calling thread (RUSAGE_THREAD).
func cpuTime(who int) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(who, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkActionParallel is BenchmarkAction from GOMAXPROCS goroutines
// (-cpu 1,2 shows how throughput scales with cores).
func BenchmarkActionParallel(b *testing.B) {
	engines := benchEngines(b)
	cmds := hooksbench.NewCommands(1 << 13)
	for _, name := range []string{"hooks=0", "hooks=1", "hooks=builtin"} {
		e := engines[name]
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				ctx := context.Background()
				i := 0
				for pb.Next() {
					d, err := e.Action(ctx, testSession, event.CmdRun{Command: cmds[i%len(cmds)]})
					if err != nil || d.Verdict == Veto {
						b.Errorf("%+v %v", d, err)
						return
					}
					i++
				}
			})
		})
	}
}

// BenchmarkObservation measures the shipped observation hooks (trim
// settings and redactions) for a go test run.
func BenchmarkObservation(b *testing.B) {
	e := benchEngines(b)["hooks=builtin"]
	ctx := context.Background()
	obs := event.CmdOutput{ExitCode: 1, Output: "--- FAIL: TestX\nFAIL\n"}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := e.Observation(ctx, testSession, event.CmdRun{Command: "go test ./..."}, obs); err != nil {
			b.Fatal(err)
		}
	}
}
