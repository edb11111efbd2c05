package sandbox

import (
	"context"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/harnessd/harnessd/core/terminal"
)

// firstPrompt measures b.N sessions from nothing to the shell's first
// prompt and back to nothing, with start making one in a fresh workspace
// (made before the clock starts: the daemon makes workspaces), and reports
// p50 and p99 in milliseconds beside ns/op.
func firstPrompt(b *testing.B, start func(ws string) (stop func(), err error)) {
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		ws := b.TempDir()
		b.StartTimer()
		t0 := time.Now()
		stop, err := start(ws)
		if err != nil {
			b.Fatal(err)
		}
		stop()
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	slices.Sort(lat)
	ms := func(q float64) float64 { return float64(lat[int(q*float64(len(lat)-1))].Microseconds()) / 1000 }
	b.ReportMetric(ms(0.5), "p50-ms")
	b.ReportMetric(ms(0.99), "p99-ms")
}

// BenchmarkNativeFirstPrompt is one session's sandbox: Create, a terminal
// in it up to its first prompt, Close, Destroy.
func BenchmarkNativeFirstPrompt(b *testing.B) {
	requireRoot(b)
	nativeFirstPrompt(b, newDriver(b, NativeOptions{}), Limits{})
}

// BenchmarkNativeFirstPromptDisk is BenchmarkNativeFirstPrompt with a
// 1 GiB disk of its own for the workspace (sandbox.disk_mb's loop ext4):
// beside it, what the disk adds to a cold start.
func BenchmarkNativeFirstPromptDisk(b *testing.B) {
	requireRoot(b)
	nativeFirstPrompt(b, newDriver(b, NativeOptions{DiskDir: diskDir(b)}), Limits{DiskBytes: 1 << 30})
}

// nativeFirstPrompt times d's sandboxes with lim to their shell's first
// prompt.
func nativeFirstPrompt(b *testing.B, d *Native, lim Limits) {
	ctx := context.Background()
	firstPrompt(b, func(ws string) (func(), error) {
		sb, err := d.Create(ctx, Spec{Workspace: ws, Limits: lim})
		if err != nil {
			return nil, err
		}
		term, err := terminal.New(ctx, termOptions(sb))
		if err != nil {
			sb.Destroy(ctx)
			return nil, err
		}
		return func() { term.Close(); sb.Destroy(ctx) }, nil
	})
}

// BenchmarkBwrapFirstPrompt is the same bash to its first prompt inside
// bubblewrap with every namespace unshared, a read-only host root, a fresh
// /dev and /proc: the baseline for the native driver.
func BenchmarkBwrapFirstPrompt(b *testing.B) {
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		b.Skip("bwrap not installed (Debian package bubblewrap): no baseline")
	}
	ctx := context.Background()
	firstPrompt(b, func(ws string) (func(), error) {
		term, err := terminal.New(ctx, terminal.Options{
			Dir: ws,
			Prepare: func(cmd *exec.Cmd) error {
				cmd.Args = append([]string{"bwrap", "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/",
					"--dev", "/dev", "--proc", "/proc", "--bind", ws, ws, "--chdir", ws, cmd.Path}, cmd.Args[1:]...)
				cmd.Path = bwrap
				return nil
			},
		})
		if err != nil {
			return nil, err
		}
		return func() { term.Close() }, nil
	})
}

// BenchmarkHostFirstPrompt is the same bash to its first prompt with no
// sandbox at all.
func BenchmarkHostFirstPrompt(b *testing.B) {
	ctx := context.Background()
	firstPrompt(b, func(ws string) (func(), error) {
		term, err := terminal.New(ctx, terminal.Options{Dir: ws})
		if err != nil {
			return nil, err
		}
		return func() { term.Close() }, nil
	})
}
