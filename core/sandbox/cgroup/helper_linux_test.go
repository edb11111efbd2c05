package cgroup

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// The test binary doubles as a helper process: re-executed with
// CGROUP_TEST_HELPER set, it does one job and prints JSON, so a test can
// run code as another user or in a cgroup of its own without moving the
// test process.
const helperEnv = "CGROUP_TEST_HELPER"

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "":
		os.Exit(m.Run())
	case "rootless":
		os.Exit(helperMain(rootlessHelper))
	case "delegate":
		os.Exit(helperMain(delegateHelper))
	case "join":
		os.Exit(helperMain(joinHelper))
	default:
		fmt.Fprintf(os.Stderr, "unknown %s=%q\n", helperEnv, os.Getenv(helperEnv))
		os.Exit(2)
	}
}

// joinHelper joins the group the way the sandbox init does: on a locked
// thread it writes "0" to each inherited tasks file (fds 3 on, JOIN_FILES
// of them), waits for its stdin to close (the test's AddV2), then forks
// cat from that thread to print the cgroups a child of it starts in.
func joinHelper() (any, error) {
	runtime.LockOSThread()
	n, err := strconv.Atoi(os.Getenv("JOIN_FILES"))
	if err != nil {
		return nil, err
	}
	for fd := 3; fd < 3+n; fd++ {
		if _, err := unix.Write(fd, []byte("0")); err != nil {
			return nil, fmt.Errorf("write 0 to fd %d: %w", fd, err)
		}
		unix.Close(fd)
	}
	if _, err := io.Copy(io.Discard, os.Stdin); err != nil { // the test's AddV2
		return nil, err
	}
	out, err := exec.Command("cat", "/proc/self/cgroup").Output()
	return string(out), err
}

func helperMain(f func() (any, error)) int {
	v, err := f()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := json.NewEncoder(os.Stdout).Encode(v); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// runHelper runs the test binary as helper job, with attr, and decodes
// its JSON into out.
func runHelper(t *testing.T, job string, attr *syscall.SysProcAttr, out any) {
	t.Helper()
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if attr != nil && attr.Credential != nil {
		bin = copyExecutable(t, bin)
	}
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), helperEnv+"="+job)
	cmd.Dir = filepath.Dir(bin)
	cmd.SysProcAttr = attr
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("helper %s: %v\nstderr: %s", job, err, stderr.String())
	}
	if err := json.Unmarshal(stdout.Bytes(), out); err != nil {
		t.Fatalf("helper %s printed %q: %v", job, stdout.String(), err)
	}
	if stderr.Len() > 0 {
		t.Logf("helper %s stderr:\n%s", job, stderr.String())
	}
}

// copyExecutable puts bin where another user can run it: the go test
// build directory is root's alone.
func copyExecutable(t *testing.T, bin string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "cgroup-helper-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	src, err := os.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst := filepath.Join(dir, "cgroup.test")
	f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(f, src); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return dst
}

type rootlessResult struct {
	UID      int
	Report   Report
	Summary  string
	Rlimits  []Rlimit
	KillErr  string
	Destroy  string
	Stats    Stats
	StatsErr string
}

func rootlessHelper() (any, error) {
	m, err := Detect(Options{Parent: "harnessd-test", Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))})
	if err != nil {
		return nil, err
	}
	r := rootlessResult{UID: os.Getuid(), Report: m.Report(), Summary: m.Report().String()}
	g, err := m.New("rootless", Limits{MemoryBytes: 1 << 30, Pids: 64, CPUWeight: 50})
	if err != nil {
		return nil, err
	}
	r.Rlimits = g.Rlimits()
	r.KillErr = fmt.Sprint(g.Kill())
	r.Stats, err = g.Stats()
	r.StatsErr = fmt.Sprint(err)
	r.Destroy = fmt.Sprint(g.Destroy())
	return r, m.Close()
}

func TestRootlessReportsRlimitsOnly(t *testing.T) {
	requireRoot(t)
	var r rootlessResult
	runHelper(t, "rootless", &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}, &r)
	t.Logf("rootless report: %s", r.Summary)
	if r.UID != 65534 {
		t.Fatalf("helper ran as uid %d", r.UID)
	}
	rep := r.Report
	if !rep.RlimitsOnly() || !strings.HasPrefix(r.Summary, "no cgroup limits, rlimits only: ") {
		t.Errorf("report does not say rlimits only: %s", r.Summary)
	}
	if rep.Memory.Mechanism != ByRlimit || rep.Pids.Mechanism != ByRlimit || rep.CPU.Mechanism != NotEnforced || rep.Kill.Mechanism != NotEnforced {
		t.Errorf("mechanisms: %+v", rep)
	}
	for name, e := range map[string]Enforcement{"memory": rep.Memory, "pids": rep.Pids, "cpu": rep.CPU, "kill": rep.Kill} {
		if !strings.Contains(e.Reason, "permission denied") {
			t.Errorf("%s reason %q does not say why", name, e.Reason)
		}
	}
	want := []Rlimit{{unix.RLIMIT_AS, "RLIMIT_AS", 1 << 30}, {unix.RLIMIT_NPROC, "RLIMIT_NPROC", 64}}
	if fmt.Sprint(r.Rlimits) != fmt.Sprint(want) {
		t.Errorf("Rlimits = %v, want %v", r.Rlimits, want)
	}
	if r.KillErr != ErrNotTracked.Error() || r.Destroy != "<nil>" || r.StatsErr != "<nil>" {
		t.Errorf("Kill: %s, Stats: %s, Destroy: %s", r.KillErr, r.StatsErr, r.Destroy)
	}
	if (r.Stats != Stats{MemoryCurrent: -1, MemoryPeak: -1, OOMKills: -1, Pids: -1, CPU: -1}) {
		t.Errorf("Stats = %+v, want all unmeasured", r.Stats)
	}
}

type delegateResult struct {
	Moved      bool   // the helper now lives in <dir>/<prefix>-daemon
	Err        string // what delegate returned
	Keys       []string
	OwnAfter   string // v2 line of /proc/self/cgroup after delegate
	ReDetected string // our v2 dir as a second Detect sees it
}

// delegateHelper runs in a cgroup2 group of its own (the test starts it
// there with CLONE_INTO_CGROUP) and asks for the pids controller, which a
// controller-less cgroup2 cannot give: the daemon must move into its leaf
// first, then enabling fails and says so.
func delegateHelper() (any, error) {
	opts := Options{Parent: "harnessd-deltest", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	cgs, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	pc, err := parseProcCgroup(cgs)
	if err != nil {
		return nil, err
	}
	mounts, err := parseMountInfo(mi)
	if err != nil {
		return nil, err
	}
	m := &Manager{log: opts.Logger, prefix: opts.Parent}
	var v2 *hierarchy
	hs := findHierarchies(pc, mounts)
	for i := range hs {
		if hs[i].v2 {
			v2 = &hs[i]
		}
	}
	if v2 == nil {
		return nil, errors.New("no cgroup2")
	}
	keys, err := m.delegate(v2, []string{"pids"})
	r := delegateResult{Err: fmt.Sprint(err)}
	for _, k := range keys {
		r.Keys = append(r.Keys, k.ctrl)
	}
	after, _ := os.ReadFile("/proc/self/cgroup")
	for _, line := range strings.Split(string(after), "\n") {
		if strings.HasPrefix(line, "0::") {
			r.OwnAfter = strings.TrimPrefix(line, "0::")
		}
	}
	r.Moved = r.OwnAfter == v2.own+"/"+m.leaf()
	m2, err := Detect(opts)
	if err != nil {
		return nil, err
	}
	if tr := m2.plan.by[roleTrack]; tr != nil {
		r.ReDetected = tr.dir
	}
	return r, m2.Close()
}

func TestDelegateMovesDaemonIntoLeaf(t *testing.T) {
	m := newTestManager(t, "harnessd-test", hostProbe{})
	tr := m.plan.by[roleTrack]
	if tr == nil {
		t.Skipf("no writable cgroup2 hierarchy: %s", m.Report().Kill.Reason)
	}
	for _, tc := range []struct {
		name      string
		companion bool // another process shares the helper's cgroup
	}{{"alone: moves, then enabling fails", false}, {"with a process not ours: refuses to move it", true}} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := m.New("delegate", Limits{})
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := g.Destroy(); err != nil {
					t.Error(err)
				}
			}()
			if tc.companion {
				sleeper := exec.Command("sleep", "300")
				sleeper.SysProcAttr = &syscall.SysProcAttr{}
				g.Prepare(sleeper.SysProcAttr)
				if err := sleeper.Start(); err != nil {
					t.Fatal(err)
				}
				defer func() { _ = sleeper.Process.Kill(); _ = sleeper.Wait() }()
			}
			attr := &syscall.SysProcAttr{}
			if !g.Prepare(attr) {
				t.Fatal("Prepare")
			}
			var r delegateResult
			runHelper(t, "delegate", attr, &r)
			t.Logf("%+v", r)
			own := strings.TrimPrefix(g.d.track, tr.mount)
			if tc.companion {
				if r.Moved || !strings.Contains(r.Err, "holds processes other than the daemon") || r.OwnAfter != own {
					t.Errorf("with a companion: %+v", r)
				}
			} else {
				if !r.Moved || r.OwnAfter != own+"/harnessd-deltest-daemon" {
					t.Errorf("helper not moved into its leaf: %+v", r)
				}
				// pids is not available on a controller-less cgroup2.
				if r.Err == "<nil>" || len(r.Keys) != 1 || r.Keys[0] != "pids" {
					t.Errorf("enabling pids should fail and rule out pids: %+v", r)
				}
				if r.ReDetected != g.d.track {
					t.Errorf("a second Detect takes %s as own cgroup, want %s (the leaf's parent)", r.ReDetected, g.d.track)
				}
			}
		})
	}
}
