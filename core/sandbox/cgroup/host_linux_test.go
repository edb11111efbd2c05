package cgroup

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// requireRoot skips where we are not root. CI runs as root, so there
// these tests run: they are the only proof the limits hold.
func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to create cgroups (CI runs as root)")
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// newTestManager detects on the real host under its own parent name, so a
// running daemon's groups are never touched. Cleanup closes it and checks
// that every parent directory is gone and no group is left open.
func newTestManager(t *testing.T, parent string, pr probe) *Manager {
	t.Helper()
	requireRoot(t)
	m, err := detect(Options{Parent: parent, Logger: slog.New(slog.NewTextHandler(testWriter{t}, nil))}, "/proc/self", pr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		m.mu.Lock()
		open := len(m.groups)
		m.mu.Unlock()
		if err := m.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if open > 0 {
			t.Errorf("%d group(s) still open at the end of the test", open)
		}
		for _, h := range m.joined {
			if exists(h.parent) {
				t.Errorf("parent %s left behind", h.parent)
			}
		}
	})
	return m
}

// denyProbe is the host, except that the named directories read as not
// writable: it forces the v1 paths on a host that also has v2.
type denyProbe struct {
	hostProbe
	deny func(h string) bool
}

func (d denyProbe) writable(dir string) error {
	if d.deny(dir) {
		return &os.PathError{Op: "access W_OK", Path: dir, Err: syscall.EACCES}
	}
	return d.hostProbe.writable(dir)
}

func denyV2(dir string) bool { return isCgroup2(dir) }

func denyV2AndFreezer(dir string) bool {
	return isCgroup2(dir) || strings.Contains(dir, "/freezer")
}

func isCgroup2(dir string) bool {
	var st unix.Statfs_t
	return unix.Statfs(dir, &st) == nil && st.Type == unix.CGROUP2_SUPER_MAGIC
}

// startPaused starts argv's process blocked until release is called, the
// way the sandbox must for v1: Prepare, Start, Add, then let it run.
// Its stdout is in out once cmd.Wait returned.
func startPaused(t *testing.T, g *Group, script string) (cmd *exec.Cmd, out *bytes.Buffer, release func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	cmd = exec.CommandContext(ctx, "/bin/sh", "-c", "read go; "+script)
	out = new(bytes.Buffer)
	cmd.Stdout = out
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	g.Prepare(cmd.SysProcAttr)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if err := g.Add(cmd.Process.Pid); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatal(err)
	}
	return cmd, out, func() {
		if _, err := io.WriteString(stdin, "go\n"); err != nil {
			t.Fatal(err)
		}
	}
}

func readTrim(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func ownCgroups(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	own := make(map[string]string)
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.SplitN(line, ":", 3)
		for _, c := range strings.Split(f[1], ",") {
			own[c] = f[2] // "" is the v2 line
		}
	}
	return own
}

func TestHostGroupsBeneathOwnCgroup(t *testing.T) {
	m := newTestManager(t, "harnessd-test", hostProbe{})
	t.Logf("report: %s", m.Report())
	if len(m.joined) == 0 {
		t.Fatal("no usable cgroup hierarchy as root; the host has no cgroups?")
	}
	g, err := m.New("beneath", Limits{MemoryBytes: 64 << 20, Pids: 50, CPUWeight: 200})
	if err != nil {
		t.Fatal(err)
	}
	own := ownCgroups(t)
	for _, h := range m.joined {
		dir := filepath.Join(h.parent, g.name)
		key := ""
		if !h.v2 {
			key = h.controllers[0]
		}
		// Beneath our own cgroup as /proc/self/cgroup names it, in a
		// parent of ours, never at the hierarchy's root.
		wantPrefix := filepath.Join(h.mount, own[key], m.parent) + "/"
		if !strings.HasPrefix(dir, wantPrefix) || h.parent == h.mount || filepath.Dir(h.parent) != h.dir {
			t.Errorf("%s: group %s is not beneath %s", h.name(), dir, wantPrefix)
		}
		if !exists(dir) {
			t.Errorf("%s does not exist", dir)
		}
	}
	p := &m.plan
	check := func(r role, v2file, v1file, v2want, v1want string) {
		h := p.by[r]
		if h == nil {
			t.Logf("role %d not enforced here: %s", r, p.why[r])
			return
		}
		file, want := v1file, v1want
		if h.v2 {
			file, want = v2file, v2want
		}
		if got := readTrim(t, filepath.Join(h.parent, g.name, file)); got != want {
			t.Errorf("%s = %s, want %s", file, got, want)
		}
	}
	check(roleMemory, "memory.max", "memory.limit_in_bytes", "67108864", "67108864")
	check(rolePids, "pids.max", "pids.max", "50", "50")
	check(roleCPU, "cpu.weight", "cpu.shares", "200", "2048")
	if mem := p.by[roleMemory]; mem != nil && !mem.v2 {
		if memsw := filepath.Join(mem.parent, g.name, "memory.memsw.limit_in_bytes"); exists(memsw) {
			if got := readTrim(t, memsw); got != "67108864" {
				t.Errorf("memory.memsw.limit_in_bytes = %s, want the memory limit", got)
			}
		}
	}

	dirs := slices.Clone(g.d.all)
	if err := g.Destroy(); err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if exists(d) {
			t.Errorf("%s survived Destroy", d)
		}
	}
	if err := g.Destroy(); err != nil {
		t.Errorf("second Destroy: %v", err)
	}
	if _, err := g.Stats(); !errors.Is(err, ErrDestroyed) {
		t.Errorf("Stats after Destroy: %v", err)
	}
	if err := g.Add(os.Getpid()); !errors.Is(err, ErrDestroyed) {
		t.Errorf("Add after Destroy: %v", err)
	}
}

func TestNewRejects(t *testing.T) {
	m := newTestManager(t, "harnessd-test", hostProbe{})
	for _, name := range []string{"", ".", "..", ".hidden", "a/b", "a b", strings.Repeat("x", 129), "../../etc"} {
		if _, err := m.New(name, Limits{}); !errors.Is(err, ErrInvalidName) {
			t.Errorf("New(%q): %v, want ErrInvalidName", name, err)
		}
	}
	for _, l := range []Limits{{MemoryBytes: -1}, {Pids: -1}, {CPUWeight: -1}, {CPUWeight: 10001}} {
		if _, err := m.New("x", l); !errors.Is(err, ErrInvalidLimits) {
			t.Errorf("New(%+v): %v, want ErrInvalidLimits", l, err)
		}
	}
	g, err := m.New("dup", Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.New("dup", Limits{}); !errors.Is(err, ErrExist) {
		t.Errorf("second New(dup): %v, want ErrExist", err)
	}
	if err := g.Destroy(); err != nil {
		t.Fatal(err)
	}
	if _, err := m.New("dup", Limits{}); err != nil {
		t.Errorf("New after Destroy: %v", err)
	}
	if err := m.Close(); err != nil { // destroys dup
		t.Fatal(err)
	}
	if _, err := m.New("late", Limits{}); !errors.Is(err, ErrClosed) {
		t.Errorf("New after Close: %v, want ErrClosed", err)
	}
}

// probes are the ways to run the limit tests on this host: as it is (v2
// tracking, CLONE_INTO_CGROUP), and with cgroup2 hidden so that only Add
// places the process.
var probes = []struct {
	name  string
	probe probe
}{{"host", hostProbe{}}, {"v1 only", denyProbe{deny: denyV2}}}

func TestMemoryLimitOOMKills(t *testing.T) {
	for _, pc := range probes {
		t.Run(pc.name, func(t *testing.T) {
			m := newTestManager(t, "harnessd-test", pc.probe)
			if m.plan.by[roleMemory] == nil {
				t.Skipf("no memory cgroup on this host: %s", m.Report().Memory)
			}
			const limit = 32 << 20
			g, err := m.New("oom", Limits{MemoryBytes: limit})
			if err != nil {
				t.Fatal(err)
			}
			// tail keeps the one endless line of /dev/zero in memory.
			cmd, _, release := startPaused(t, g, "exec tail /dev/zero")
			release()
			err = cmd.Wait()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Fatalf("tail: %v, want killed by SIGKILL", err)
			}
			s, err := g.Stats()
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("stats: %+v", s)
			if s.OOMKills < 1 {
				t.Errorf("OOMKills = %d, want >= 1", s.OOMKills)
			}
			if s.MemoryPeak < limit/2 || s.MemoryPeak > limit {
				t.Errorf("MemoryPeak = %d, want about the %d limit", s.MemoryPeak, limit)
			}
			if err := g.Destroy(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestPidsLimitStopsForkLoop(t *testing.T) {
	m := newTestManager(t, "harnessd-test", hostProbe{})
	if m.plan.by[rolePids] == nil {
		t.Skipf("no pids cgroup on this host: %s", m.Report().Pids)
	}
	python := "/usr/bin/python3"
	if !exists(python) {
		var err error
		if python, err = exec.LookPath("python3"); err != nil {
			t.Fatal("needs python3 for the fork loop (scripts/test installs it)")
		}
	}
	g, err := m.New("pids", Limits{Pids: 20})
	if err != nil {
		t.Fatal(err)
	}
	// Forks until the kernel refuses; the children wait to be killed.
	const loop = `import os, time
n = 0
while n < 200:
    try:
        pid = os.fork()
    except OSError as e:
        print("forked", n, e.errno)
        break
    if pid == 0:
        os.close(1)  # or Wait would wait for them through the pipe
        time.sleep(120)
        os._exit(0)
    n += 1
`
	cmd, out, release := startPaused(t, g, "exec "+python+" -c '"+loop+"'")
	release()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("fork loop: %v", err)
	}
	var forked, errno int
	if _, err := fmt.Sscanf(out.String(), "forked %d %d", &forked, &errno); err != nil {
		t.Fatalf("fork loop printed %q: %v", out, err)
	}
	s, err := g.Stats()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("forked %d children before errno %d; %d tasks in the group", forked, errno, s.Pids)
	// python itself plus its children: 20 at most, and the loop got there.
	if forked+1 != 20 || syscall.Errno(errno) != syscall.EAGAIN {
		t.Errorf("forked %d children (errno %d), want 19 and EAGAIN", forked, errno)
	}
	if s.Pids > 20 {
		t.Errorf("%d tasks in the group, want at most 20", s.Pids)
	}
	if err := g.Kill(); err != nil {
		t.Fatal(err)
	}
	assertNoProcesses(t, m, g)
	if err := g.Destroy(); err != nil {
		t.Fatal(err)
	}
}

// assertNoProcesses scans /proc for a live process in any of g's cgroups.
func assertNoProcesses(t *testing.T, m *Manager, g *Group) {
	t.Helper()
	suffix := "/" + m.parent + "/" + g.name
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue // gone meanwhile
		}
		if i := strings.LastIndexByte(string(stat), ')'); i > 0 && strings.HasPrefix(string(stat[i:]), ") Z") {
			continue // a zombie has left its cgroups
		}
		cg, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(strings.NewReader(string(cg)))
		for sc.Scan() {
			if strings.HasSuffix(sc.Text(), suffix) || strings.Contains(sc.Text(), suffix+"/") {
				t.Errorf("pid %d still in %s: %s", pid, sc.Text(), stat)
			}
		}
	}
}

func TestKill(t *testing.T) {
	for _, tc := range []struct {
		name  string
		probe probe
		want  string // Report.Kill.Detail prefix
	}{
		{"cgroup v2 cgroup.kill", hostProbe{}, "cgroup.kill"},
		{"v1 freezer", denyProbe{deny: denyV2}, "freezer"},
		{"v1 signal loop", denyProbe{deny: denyV2AndFreezer}, "SIGKILL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newTestManager(t, "harnessd-test", tc.probe)
			rep := m.Report().Kill
			t.Logf("plan %s; kill: %s", &m.plan, rep)
			if !strings.HasPrefix(rep.Detail, tc.want) {
				t.Skipf("this host kills by %s, not %s", rep, tc.want)
			}
			g, err := m.New("kill", Limits{Pids: 100})
			if err != nil {
				t.Fatal(err)
			}
			// A daemonised grandchild (reparented away from sh) and
			// plain children: Kill must find them all.
			cmd, _, release := startPaused(t, g, "(sleep 300 &); sleep 300 & sleep 301 & wait")
			release()
			// Until all four run: procs reads one directory after another,
			// so while the subshell forks and exits it can count four
			// distinct pids that were never alive together.
			deadline := time.Now().Add(10 * time.Second)
			var s Stats
			for {
				pids, _, err := g.d.procs()
				if err != nil {
					t.Fatal(err)
				}
				if s, err = g.Stats(); err != nil {
					t.Fatal(err)
				}
				if len(pids) >= 4 && s.Pids >= 4 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("only %v started (stats %+v)", pids, s)
				}
				time.Sleep(10 * time.Millisecond)
			}
			if s.Pids < 4 || s.MemoryCurrent < 0 || s.CPU < 0 {
				t.Errorf("stats of a live group: %+v", s)
			}
			if err := g.Kill(); err != nil {
				t.Fatal(err)
			}
			_ = cmd.Wait()
			assertNoProcesses(t, m, g)
			if err := g.Kill(); err != nil {
				t.Errorf("Kill of an empty group: %v", err)
			}
			dirs := slices.Clone(g.d.all)
			if err := g.Destroy(); err != nil {
				t.Fatal(err)
			}
			if err := g.Destroy(); err != nil {
				t.Errorf("second Destroy: %v", err)
			}
			for _, d := range dirs {
				if exists(d) {
					t.Errorf("%s survived Destroy", d)
				}
			}
		})
	}
}

// TestV2Unified runs the v2 core (CLONE_INTO_CGROUP, cgroup.events,
// cgroup.kill) on the controller-less cgroup2 of a hybrid host, or on the
// v2 hierarchy of a pure v2 host.
func TestV2Unified(t *testing.T) {
	m := newTestManager(t, "harnessd-test", hostProbe{})
	tr := m.plan.by[roleTrack]
	if tr == nil {
		t.Skipf("no writable cgroup2 hierarchy on this host: %s", m.Report().Kill.Reason)
	}
	if !exists(filepath.Join(tr.parent, "cgroup.kill")) {
		t.Skipf("kernel has no cgroup.kill (before 5.14) in %s", tr.parent)
	}
	g, err := m.New("v2", Limits{})
	if err != nil {
		t.Fatal(err)
	}
	attr := &syscall.SysProcAttr{}
	if !g.Prepare(attr) || !attr.UseCgroupFD {
		t.Fatal("Prepare did not set CLONE_INTO_CGROUP")
	}
	cmd := exec.Command("sleep", "300")
	cmd.SysProcAttr = attr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	// No Add: the process was born in the group.
	rel := strings.TrimPrefix(g.d.track, tr.mount)
	if cg := readTrim(t, fmt.Sprintf("/proc/%d/cgroup", cmd.Process.Pid)); !strings.Contains(cg, "0::"+rel) {
		t.Errorf("child's cgroups:\n%s\nwant 0::%s", cg, rel)
	}
	events := filepath.Join(g.d.track, "cgroup.events")
	if ev := readTrim(t, events); !strings.Contains(ev, "populated 1") {
		t.Errorf("cgroup.events = %q, want populated 1", ev)
	}
	if err := g.Kill(); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Errorf("sleep: %v, want killed", err)
	}
	if ev := readTrim(t, events); !strings.Contains(ev, "populated 0") {
		t.Errorf("cgroup.events = %q after Kill, want populated 0", ev)
	}
	s, err := g.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if s.CPU < 0 {
		t.Errorf("CPU usage not measured from cpu.stat: %+v", s)
	}
	if err := g.Destroy(); err != nil {
		t.Fatal(err)
	}
}

func TestStaleGroupsRemoved(t *testing.T) {
	first := newTestManager(t, "harnessd-test", hostProbe{})
	// A pid that no longer runs stands for a crashed daemon.
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(unix.Kill(dead.Process.Pid, 0), unix.ESRCH) {
		t.Skip("pid reused at once")
	}
	staleParent := fmt.Sprintf("harnessd-stale-%d", dead.Process.Pid)
	sleeper := exec.Command("sleep", "300")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sleeper.Process.Kill(); _ = sleeper.Wait() }()
	var dirs []string
	for _, h := range first.joined {
		dir := filepath.Join(h.dir, staleParent, "orphan")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, filepath.Dir(dir))
		if err := writeFile(filepath.Join(dir, "cgroup.procs"), strconv.Itoa(sleeper.Process.Pid)); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, d := range dirs {
			_ = rmdirRetry(d)
		}
	})

	m := newTestManager(t, "harnessd-stale", hostProbe{})
	if m.Report().Stale != 1 {
		t.Errorf("Stale = %d, want 1", m.Report().Stale)
	}
	for _, d := range dirs {
		if exists(d) {
			t.Errorf("stale %s not removed", d)
		}
	}
	err := sleeper.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Errorf("orphan sleep: %v, want killed", err)
	}
	// Our own live parent is never stale.
	if m.isStale(m.parent) || !m.isStale(staleParent) {
		t.Error("isStale confuses live and dead parents")
	}
}

func TestCloseDestroysOpenGroups(t *testing.T) {
	m := newTestManager(t, "harnessd-test", hostProbe{})
	g, err := m.New("left-open", Limits{Pids: 10})
	if err != nil {
		t.Fatal(err)
	}
	cmd, _, release := startPaused(t, g, "exec sleep 300")
	release()
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	assertNoProcesses(t, m, g)
	if err := m.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestJoinFiles: a process given the group's JoinFiles moves its thread
// into every v1 hierarchy by writing "0", and what that thread forks
// starts inside them; AddV2 then adds it to the v2 directory alone.
func TestJoinFiles(t *testing.T) {
	m := newTestManager(t, "harnessd-test", hostProbe{})
	g, err := m.New("join", Limits{MemoryBytes: 64 << 20, Pids: 50, CPUWeight: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Destroy()
	if len(g.d.v1) == 0 {
		t.Skipf("no cgroup v1 hierarchy on this host (%s): nothing joins through tasks", m.Report())
	}
	files, err := g.JoinFiles()
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(g.d.v1) {
		t.Fatalf("%d JoinFiles for %d v1 directories", len(files), len(g.d.v1))
	}
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), helperEnv+"=join", "JOIN_FILES="+strconv.Itoa(len(files)))
	cmd.ExtraFiles = files
	stdin, err := cmd.StdinPipe() // holds the helper until AddV2 is done
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		f.Close()
	}
	if err := g.AddV2(cmd.Process.Pid); err != nil {
		t.Errorf("AddV2: %v", err)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("helper: %v\n%s", err, stderr.String())
	}
	var out string
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("helper printed %q: %v", stdout.String(), err)
	}
	own := ownCgroups(t)
	lines := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if parts := strings.SplitN(l, ":", 3); len(parts) == 3 {
			lines[parts[1]] = parts[2]
		}
	}
	for _, h := range m.joined {
		key := ""
		if !h.v2 {
			key = strings.Join(h.controllers, ",")
		}
		if lines[key] != filepath.Join(own[key], m.parent, g.name) {
			t.Errorf("%s: the child started in %q, want the group %s beneath %q\n%s", h.name(), lines[key], g.name, own[key], out)
		}
	}
}
