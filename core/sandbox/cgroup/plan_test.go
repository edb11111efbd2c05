package cgroup

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// fakeProbe answers for a host described by the test: ctrls is each v2
// directory's cgroup.controllers, deny the directories we may not write.
type fakeProbe struct {
	ctrls map[string]string
	deny  map[string]bool
}

func (f fakeProbe) controllers(dir string) ([]string, error) {
	c, ok := f.ctrls[dir]
	if !ok {
		return nil, &os.PathError{Op: "open", Path: dir + "/cgroup.controllers", Err: fs.ErrNotExist}
	}
	return append([]string{}, strings.Fields(c)...), nil
}

func (f fakeProbe) writable(dir string) error {
	if f.deny[dir] {
		return &os.PathError{Op: "access W_OK", Path: dir, Err: syscall.EACCES}
	}
	return nil
}

func loadHierarchies(t testing.TB, fixture string) []hierarchy {
	t.Helper()
	cg, err := os.ReadFile(filepath.Join("testdata", fixture, "cgroup"))
	if err != nil {
		t.Fatal(err)
	}
	mi, err := os.ReadFile(filepath.Join("testdata", fixture, "mountinfo"))
	if err != nil {
		t.Fatal(err)
	}
	cgs, err := parseProcCgroup(cg)
	if err != nil {
		t.Fatal(err)
	}
	mounts, err := parseMountInfo(mi)
	if err != nil {
		t.Fatal(err)
	}
	return findHierarchies(cgs, mounts)
}

const (
	hybridMem = "/sys/fs/cgroup/memory/process_api/b572d25eb60e05987bd7de9116abdb76"
	service   = "/sys/fs/cgroup/system.slice/harnessd.service"
	v1Service = "/system.slice/harnessd.service"
)

func TestChoose(t *testing.T) {
	allV2 := map[string]string{service: "cpuset cpu io memory pids"}
	for _, tc := range []struct {
		name    string
		fixture string
		probe   fakeProbe
		failed  map[failKey]error
		want    string
		// whyHas maps a role to text its reason must contain.
		whyHas map[role]string
	}{{
		name:    "v1 only, cpu and cpuacct co-mounted",
		fixture: "v1-only",
		want: "memory=v1:/sys/fs/cgroup/memory" + v1Service + " pids=v1:/sys/fs/cgroup/pids" + v1Service +
			" cpu=v1:/sys/fs/cgroup/cpu,cpuacct" + v1Service + " cpustat=v1:/sys/fs/cgroup/cpu,cpuacct" + v1Service +
			" track=- freezer=v1:/sys/fs/cgroup/freezer",
		whyHas: map[role]string{roleMemory: "v2: no cgroup2 mount", roleTrack: "no cgroup2 mount"},
	}, {
		name:    "hybrid like the CI host: v1 controllers, cgroup2 without any",
		fixture: "hybrid",
		probe:   fakeProbe{ctrls: map[string]string{"/sys/fs/cgroup/unified": ""}},
		want: "memory=v1:" + hybridMem + " pids=v1:/sys/fs/cgroup/pids cpu=v1:/sys/fs/cgroup/cpu" +
			" cpustat=v2:/sys/fs/cgroup/unified track=v2:/sys/fs/cgroup/unified freezer=-",
		whyHas: map[role]string{roleMemory: "v2: /sys/fs/cgroup/unified has no memory controller", roleCPU: "no cpu controller"},
	}, {
		name:    "hybrid, rootless: nothing writable",
		fixture: "hybrid",
		probe: fakeProbe{ctrls: map[string]string{"/sys/fs/cgroup/unified": ""}, deny: map[string]bool{
			"/sys/fs/cgroup/unified": true, hybridMem: true, "/sys/fs/cgroup/pids": true, "/sys/fs/cgroup/cpu": true,
			"/sys/fs/cgroup/cpuacct": true, "/sys/fs/cgroup/freezer": true,
		}},
		want:   "memory=- pids=- cpu=- cpustat=- track=- freezer=-",
		whyHas: map[role]string{roleMemory: "v1: access W_OK " + hybridMem + ": permission denied", roleTrack: "permission denied"},
	}, {
		name:    "pure v2, delegated (systemd Delegate=yes)",
		fixture: "v2-delegated",
		probe:   fakeProbe{ctrls: allV2},
		want: "memory=v2:" + service + " pids=v2:" + service + " cpu=v2:" + service +
			" cpustat=v2:" + service + " track=v2:" + service + " freezer=-",
	}, {
		name:    "pure v2, cpu not delegated",
		fixture: "v2-delegated",
		probe:   fakeProbe{ctrls: map[string]string{service: "memory pids"}},
		want: "memory=v2:" + service + " pids=v2:" + service + " cpu=-" +
			" cpustat=v2:" + service + " track=v2:" + service + " freezer=-",
		whyHas: map[role]string{roleCPU: "has no cpu controller; v1: no cpu hierarchy is mounted"},
	}, {
		name:    "pure v2 without write access",
		fixture: "v2-delegated",
		probe:   fakeProbe{ctrls: allV2, deny: map[string]bool{service: true}},
		want:    "memory=- pids=- cpu=- cpustat=- track=- freezer=-",
		whyHas:  map[role]string{roleMemory: "permission denied", rolePids: "permission denied", roleTrack: "permission denied"},
	}, {
		name:    "pure v2, enabling memory failed when carried out",
		fixture: "v2-delegated",
		probe:   fakeProbe{ctrls: allV2},
		failed:  map[failKey]error{{service, "memory"}: syscall.EBUSY},
		want: "memory=- pids=v2:" + service + " cpu=v2:" + service +
			" cpustat=v2:" + service + " track=v2:" + service + " freezer=-",
		whyHas: map[role]string{roleMemory: "device or resource busy"},
	}, {
		name:    "v2 container without a cgroup namespace: mount root is our cgroup",
		fixture: "v2-container",
		probe:   fakeProbe{ctrls: map[string]string{"/sys/fs/cgroup": "memory pids cpu"}},
		want: "memory=v2:/sys/fs/cgroup pids=v2:/sys/fs/cgroup cpu=v2:/sys/fs/cgroup" +
			" cpustat=v2:/sys/fs/cgroup track=v2:/sys/fs/cgroup freezer=-",
	}, {
		name:    "our cgroup is outside our cgroup namespace",
		fixture: "v2-outside-ns",
		probe:   fakeProbe{ctrls: map[string]string{"/sys/fs/cgroup": "memory pids cpu"}},
		want:    "memory=- pids=- cpu=- cpustat=- track=- freezer=-",
		whyHas:  map[role]string{roleMemory: "outside our cgroup namespace", roleTrack: "outside our cgroup namespace"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			hs := loadHierarchies(t, tc.fixture)
			p := choose(hs, tc.probe, tc.failed)
			if got := p.String(); got != tc.want {
				t.Errorf("plan\n got %s\nwant %s", got, tc.want)
			}
			for r, want := range tc.whyHas {
				if !strings.Contains(p.why[r], want) {
					t.Errorf("why[%d] = %q, want it to contain %q", r, p.why[r], want)
				}
			}
			// Whatever is not done by a cgroup must say why.
			for r := roleMemory; r <= roleCPU; r++ {
				if p.by[r] == nil && p.why[r] == "" {
					t.Errorf("role %d unassigned without a reason", r)
				}
			}
		})
	}
}

func TestParseProcCgroup(t *testing.T) {
	got, err := parseProcCgroup([]byte("4:memory:/process_api/b5\n1:cpu,cpuacct:/a:b\n0::/\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].path != "/process_api/b5" || got[1].path != "/a:b" ||
		strings.Join(got[1].controllers, "+") != "cpu+cpuacct" || got[2].id != 0 || got[2].controllers != nil {
		t.Errorf("got %+v", got)
	}
	for _, bad := range []string{"memory:/", "x:memory:/", "-1::/", "3:pids:relative", "3:pids"} {
		if _, err := parseProcCgroup([]byte(bad)); !errors.Is(err, ErrParse) {
			t.Errorf("%q: err = %v, want ErrParse", bad, err)
		}
	}
}

func TestParseMountInfo(t *testing.T) {
	got, err := parseMountInfo([]byte(
		"41 31 0:38 / /sys/fs/cgroup/uni\\040fied rw,relatime shared:9 master:2 - cgroup2 cgroup2 rw\n" +
			"1 0 8:1 / / rw - ext4 /dev/sda1 rw\n" +
			"32 31 0:29 /sub /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu,cpuacct\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].point != "/sys/fs/cgroup/uni fied" || !got[0].v2 ||
		got[1].root != "/sub" || got[1].v2 || strings.Join(got[1].superOpts, "+") != "rw+cpu+cpuacct" {
		t.Errorf("got %+v", got)
	}
	for _, bad := range []string{
		"41 31 0:38 / /x rw",                          // no separator
		"41 31 0:38 / /x rw - cgroup2",                // nothing after the fstype
		"41 31 0:38 / /x\\04 rw - cgroup2 cgroup2 rw", // truncated escape
		"41 31 0:38 / /x\\999 rw - cgroup cgroup rw",  // not octal
		"41 31 0:38 x /x rw - cgroup cgroup rw",       // relative root
	} {
		if _, err := parseMountInfo([]byte(bad)); !errors.Is(err, ErrParse) {
			t.Errorf("%q: err = %v, want ErrParse", bad, err)
		}
	}
}

func TestFindHierarchiesSkipsNamedAndUnmounted(t *testing.T) {
	hs := loadHierarchies(t, "hybrid")
	var names []string
	for _, h := range hs {
		names = append(names, h.name())
	}
	// name=systemd has no controller; devices, blkio, cpuset stay as they
	// are unused, but are mounted, so they are listed.
	got := strings.Join(names, "|")
	if strings.Contains(got, "systemd") || !strings.Contains(got, "cgroup v1 memory /sys/fs/cgroup/memory") ||
		!strings.Contains(got, "cgroup2 /sys/fs/cgroup/unified") {
		t.Errorf("hierarchies: %s", got)
	}
}
