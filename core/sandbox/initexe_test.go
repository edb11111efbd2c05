package sandbox

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/core/sandbox/initbin"
)

// TestCarriedInit: by default the driver runs the init program harnessd
// carries, from a sealed memfd, and a sandbox built by it is the same
// sandbox: isolated, locked down, with a working shell. (The other tests
// run this test binary's init, built from the sources under test.)
func TestCarriedInit(t *testing.T) {
	requireRoot(t)
	if prog, err := initbin.Program(runtime.GOARCH); err != nil || prog == nil {
		t.Skipf("no init program is carried for %s (%v): the driver re-executes harnessd", runtime.GOARCH, err)
	}
	d, err := NewNative(&NativeOptions{StateDir: stateDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	if d.initExe == nil || d.opts.Exe != "" {
		t.Fatalf("driver runs %q, not the carried init program", d.opts.Exe)
	}
	seals, err := unix.FcntlInt(d.initExe.Fd(), unix.F_GET_SEALS, 0)
	if err != nil {
		t.Fatal(err)
	}
	if want := unix.F_SEAL_SEAL | unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE; seals&want != want {
		t.Errorf("memfd seals %#x, want %#x", seals, want)
	}
	if f, err := os.OpenFile("/proc/self/fd/"+strconv.Itoa(int(d.initExe.Fd())), os.O_WRONLY, 0); err == nil {
		if _, err := f.Write([]byte{0}); err == nil {
			t.Error("the carried init program's memfd took a write")
		}
		f.Close()
	}

	b := newBox(t, d, Spec{Protected: []string{".harness"}})
	ns := b.sb.(*nativeSandbox)
	ns.mu.Lock()
	pid := ns.inits[0].pid
	ns.mu.Unlock()
	exe, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(exe, "memfd:harnessd-sandbox-init") {
		t.Errorf("init %d runs %q, not the carried program", pid, exe)
	}
	if got := b.must("id -u; hostname; echo hi > f && cat f"); got != "0\nsandbox\nhi" {
		t.Errorf("shell: %q", got)
	}
	if got := b.must("grep -E '^(CapEff|CapBnd|Seccomp|NoNewPrivs):' /proc/self/status | tr -s '\\t' ' '"); got != "CapEff: 0000000000000000\nCapBnd: 0000000000000000\nNoNewPrivs: 1\nSeccomp: 2" {
		t.Errorf("lockdown: %q", got)
	}
	if code, out := b.run("touch .harness/x"); code == 0 {
		t.Errorf("a protected path is writable: %q", out)
	}
}
