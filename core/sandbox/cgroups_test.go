package sandbox

import (
	"context"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/core/sandbox/cgroup"
)

// TestCgroups wires the real cgroup package in: the init is held in
// Started until it has joined the session's group, so bash and everything
// it starts is inside; the group's limits hold; Stats reads the group;
// Destroy removes it.
func TestCgroups(t *testing.T) {
	requireRoot(t)
	m, err := cgroup.Detect(cgroup.Options{Parent: "harnessd-sandbox-test", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if m.Report().RlimitsOnly() {
		t.Skipf("no usable cgroups on this host: %v", m.Report())
	}
	t.Logf("cgroups: %v", m.Report())
	b := newBox(t, newDriver(t, NativeOptions{Cgroups: Cgroups(m)}), Spec{Limits: Limits{Pids: 40, MemoryBytes: 128 << 20, CPUWeight: 50}})
	id := b.sb.ID()
	cg, _ := os.ReadFile("/proc/" + strconv.Itoa(b.term.PID()) + "/cgroup")
	if !strings.Contains(string(cg), id) {
		t.Fatalf("bash is not in the sandbox's group %s:\n%s", id, cg)
	}
	// In every hierarchy, v1 ones joined by the init's own thread: bash
	// was forked from it.
	r := m.Report()
	for name, e := range map[string]cgroup.Enforcement{"memory": r.Memory, "pids": r.Pids, "cpu": r.CPU, "kill": r.Kill} {
		if e.Mechanism != cgroup.CgroupV1 && e.Mechanism != cgroup.CgroupV2 {
			continue
		}
		procs, err := os.ReadFile(e.Path + "/" + id + "/cgroup.procs")
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(strings.Fields(string(procs)), strconv.Itoa(b.term.PID())) {
			t.Errorf("%s (%s): bash %d is not in %s/%s: %q", name, e.Mechanism, b.term.PID(), e.Path, id, procs)
		}
	}
	forks := `python3 -c '
import os, time
n = 0
try:
    for _ in range(80):
        if os.fork() == 0:
            time.sleep(2)
            os._exit(0)
        n += 1
except OSError:
    pass
print(n)'`
	if got := b.must(forks); got == "80" {
		t.Errorf("forked 80 processes under a pids limit of 40")
	} else {
		t.Logf("forked %s processes under pids 40", got)
	}
	if code, out := b.run(`python3 -c 'b = bytearray(512 << 20); print(len(b))'`); code == 0 {
		t.Errorf("allocated 512 MiB under a 128 MiB limit: %q", out)
	}
	st, err := b.sb.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("stats: %+v", st)
	by := map[string]string{}
	for _, e := range st.Enforced {
		by[e.Limit] = e.By
	}
	if by["cpu_weight"] != "cgroup" || by["tmp"] != "tmpfs size" {
		t.Errorf("Enforced: %v", st.Enforced)
	}
	b.end()
}
