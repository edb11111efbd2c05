package cgroup

import (
	"errors"
	"os"
	"path"
	"path/filepath"
	"testing"
)

// FuzzParse feeds arbitrary /proc/self/cgroup and mountinfo text. Parsing
// fails only with ErrParse; a found cgroup directory is clean and inside
// its mount (never "..", never above the mount point); and the plan chosen
// from it gives a reason for every limit it cannot place.
func FuzzParse(f *testing.F) {
	for _, fx := range []string{"v1-only", "hybrid", "v2-delegated", "v2-container", "v2-outside-ns"} {
		cg, err := os.ReadFile(filepath.Join("testdata", fx, "cgroup"))
		if err != nil {
			f.Fatal(err)
		}
		mi, err := os.ReadFile(filepath.Join("testdata", fx, "mountinfo"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(cg, mi)
	}
	f.Add([]byte("0::/a/../../b\n3:pids:/x:y\n"), []byte("1 2 0:1 /a /c\\040d rw - cgroup2 none rw\n2 1 0:2 / /p rw - cgroup c rw,pids\n"))
	f.Add([]byte("1:cpu,cpuacct:/\n"), []byte("5 1 0:3 / / rw shared:1 - cgroup cgroup rw,cpuacct,cpu\n"))
	f.Fuzz(func(t *testing.T, cgData, miData []byte) {
		cgs, err := parseProcCgroup(cgData)
		if err != nil && !errors.Is(err, ErrParse) {
			t.Fatalf("parseProcCgroup: %v is not ErrParse", err)
		}
		mounts, err2 := parseMountInfo(miData)
		if err2 != nil && !errors.Is(err2, ErrParse) {
			t.Fatalf("parseMountInfo: %v is not ErrParse", err2)
		}
		if err != nil || err2 != nil {
			return
		}
		hs := findHierarchies(cgs, mounts)
		pr := fakeProbe{ctrls: map[string]string{}}
		for _, h := range hs {
			if h.dir == "" {
				if h.unreachable == "" {
					t.Errorf("%s: no directory and no reason", h.name())
				}
				continue
			}
			if h.dir != path.Clean(h.dir) {
				t.Errorf("dir %q is not clean", h.dir)
			}
			if _, ok := within(h.dir, path.Clean(h.mount)); !ok {
				t.Errorf("dir %q escapes its mount %q", h.dir, h.mount)
			}
			if h.v2 {
				pr.ctrls[h.dir] = "memory pids cpu"
			}
		}
		p := choose(hs, pr, nil)
		for r := range numRoles {
			if h := p.by[r]; h != nil && h.dir == "" {
				t.Errorf("role %d given to unreachable %s", r, h.name())
			}
			if r <= roleCPU && p.by[r] == nil && p.why[r] == "" {
				t.Errorf("role %d unplaced without a reason", r)
			}
		}
	})
}
