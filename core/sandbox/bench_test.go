package sandbox

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
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

// BenchmarkHeadRuleWorkload is what the init's HEAD rule (seccomp user
// notification, headrule_linux.go) costs a workload that makes files in
// a directory its user named: 2,000 `: > f$i` in bash, git init and a
// commit of 500 files, tar x of 500 files. The same sandbox is made
// twice, with the rule and with the git guard's watch alone; each op
// runs the workload in both (in turn first), and reports each one's
// milliseconds and their ratio (rule / watch). The workspace is on the
// test's temporary directory's disk, or on a tmpfs, where the disk's
// own time does not hide the rule's.
func BenchmarkHeadRuleWorkload(b *testing.B) {
	requireRoot(b)
	if !sharedInitRule() {
		b.Skipf("the init cannot enforce the HEAD rule here: %v", initRuleErr)
	}
	for _, fs := range []string{"disk", "tmpfs"} {
		b.Run(fs, func(b *testing.B) {
			dir := func() string { return b.TempDir() }
			if fs == "tmpfs" {
				dir = func() string { return stateDir(b) } // /dev/shm where it is a tmpfs
			}
			headRuleWorkload(b, dir)
		})
	}
}

func headRuleWorkload(b *testing.B, dir func() string) {
	d := newDriver(b, NativeOptions{})
	modes := []string{"rule", "watch"}
	boxes := map[string]*box{}
	for _, mode := range modes {
		noKernelRule = mode == "watch"
		ws := dir()
		os.Chmod(ws, 0o755)
		os.Chown(ws, userDirOwner, userDirOwner)
		boxes[mode] = newBox(b, d, Spec{Workspace: ws, Owner: &User{UID: userDirOwner, GID: userDirOwner}})
	}
	noKernelRule = false
	for _, bx := range boxes {
		bx.must("mkdir -p /tmp/src && cd /tmp/src && for i in $(seq 1 50); do mkdir d$i; for j in $(seq 1 10); do echo $i$j > d$i/f$j; done; done && tar cf /tmp/src.tar -C /tmp/src .")
	}
	const script = `cd /workspace && rm -rf w && mkdir w && cd w
now() { date +%s%N; }
t0=$(now); mkdir a && cd a && for i in $(seq 1 2000); do : > f$i; done; cd ..
t1=$(now); mkdir g && cd g && for n in 1 2 3; do git init -q -b main 2>/dev/null && break; rm -rf .git; sleep 0.05; done
for i in $(seq 1 500); do echo $i > f$i; done; git add . && git -c user.name=a -c user.email=a@b commit -qm 1; cd ..
t2=$(now); mkdir x && tar xf /tmp/src.tar -C x
t3=$(now); echo "touch=$(( (t1-t0)/1000 )) git=$(( (t2-t1)/1000 )) tar=$(( (t3-t2)/1000 ))"`
	sums := map[string]float64{}
	b.ResetTimer()
	for n := range b.N {
		for i := range modes {
			mode := modes[(i+n)%len(modes)]
			out := boxes[mode].must(script)
			for _, f := range strings.Fields(out) {
				k, v, ok := strings.Cut(f, "=")
				if !ok {
					continue
				}
				us, err := strconv.Atoi(v)
				if err != nil {
					b.Fatalf("%s: %q", mode, out)
				}
				sums[mode+"-"+k] += float64(us) / 1000
			}
		}
	}
	b.StopTimer()
	for _, k := range []string{"touch", "git", "tar"} {
		r, w := sums["rule-"+k]/float64(b.N), sums["watch-"+k]/float64(b.N)
		b.ReportMetric(r, k+"-rule-ms")
		b.ReportMetric(w, k+"-watch-ms")
		b.ReportMetric(r/w, k+"-ratio")
	}
}
