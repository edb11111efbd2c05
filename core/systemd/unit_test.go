package systemd

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/harnessd/harnessd/core/config"
)

// contrib is where the unit files live, from this package's directory.
const contrib = "../../contrib/systemd"

var units = []string{"harnessd.socket", "harnessd.service"}

// TestUnitsVerify runs systemd-analyze verify on copies of the units in
// which ExecStart names a binary that exists (this test binary), and fails
// on anything it says about them; what it says about other units on this
// machine is only logged.
func TestUnitsVerify(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Fatal("systemd-analyze not found: install it with `apt-get install -y systemd` (Debian package systemd)")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var paths []string
	for _, name := range units {
		b, err := os.ReadFile(filepath.Join(contrib, name))
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		if name == "harnessd.service" {
			const bin = "ExecStart=/usr/local/bin/harnessd "
			if !strings.Contains(text, bin) {
				t.Fatalf("%s has no %q line", name, bin)
			}
			text = strings.Replace(text, bin, "ExecStart="+exe+" ", 1)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	cmd := exec.Command(analyze, append([]string{"verify", "--man=no"}, paths...)...)
	out, err := cmd.CombinedOutput()
	t.Logf("%s verify: %v\n%s", analyze, exitStatus(err), out)
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if strings.Contains(line, dir) || strings.Contains(line, "harnessd.s") {
			t.Errorf("systemd-analyze: %s", line)
		}
	}
	if err != nil {
		t.Errorf("systemd-analyze verify failed: %v", err)
	}
}

func exitStatus(err error) string {
	if err == nil {
		return "exit 0"
	}
	return err.Error()
}

// unitSettings returns the values of key in the [Service] section of unit,
// one per line it appears on.
func unitSettings(t *testing.T, unit, key string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(contrib, unit))
	if err != nil {
		t.Fatal(err)
	}
	var vals []string
	section := ""
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "["):
			section = line
		case section == "[Service]":
			if k, v, ok := strings.Cut(line, "="); ok && k == key {
				vals = append(vals, v)
			}
		}
	}
	return vals
}

// TestUnitLetsSandboxesBuild runs, under the unit's CapabilityBoundingSet
// and NoNewPrivileges (applied with setpriv), a parent that creates a
// child in new user, mount, pid, network, uts, ipc and cgroup namespaces
// with a range uid/gid map, as the native sandbox does; the child mounts a
// tmpfs root, pivots into it, mounts /proc, sets its hostname, brings lo
// up and chroots; the parent then SIGKILLs it across uids. The other
// hardening options (ProtectSystem=, PrivateTmp=, …) need systemd as pid 1
// and are not exercised here.
func TestUnitLetsSandboxesBuild(t *testing.T) {
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Fatal("setpriv not found: install it with `apt-get install -y util-linux`")
	}
	var caps []string
	for _, v := range unitSettings(t, "harnessd.service", "CapabilityBoundingSet") {
		for _, c := range strings.Fields(v) {
			caps = append(caps, "+"+strings.ToLower(strings.TrimPrefix(c, "CAP_")))
		}
	}
	if len(caps) == 0 {
		t.Fatal("harnessd.service sets no CapabilityBoundingSet")
	}
	args := []string{"--bounding-set=-all," + strings.Join(caps, ",")}
	if nnp := unitSettings(t, "harnessd.service", "NoNewPrivileges"); len(nnp) == 1 && nnp[0] == "yes" {
		args = append(args, "--no-new-privs")
	} else {
		t.Errorf("NoNewPrivileges = %q, want yes", nnp)
	}
	root := t.TempDir()
	// The sandbox's root is host uid 100000: it must be able to reach the
	// mount point through t.TempDir()'s 0700 directories.
	for _, d := range []string{root, filepath.Dir(root)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	args = append(args, "--", os.Args[0], "-test.run=^$")
	cmd := exec.Command(setpriv, args...)
	cmd.Env = childEnv("sandbox-parent", "HARNESSD_SYSTEMD_ROOT="+root)
	out, err := cmd.CombinedOutput()
	t.Logf("setpriv %s:\n%s", strings.Join(args[:len(args)-3], " "), out)
	if err != nil {
		t.Fatalf("sandbox under the unit's capabilities: %v", err)
	}
}

// sandboxParentChild runs under the restricted bounding set: it starts the
// sandbox child, waits for it to report, and kills it.
func sandboxParentChild() int {
	bnd, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(bnd), "\n") {
		if strings.HasPrefix(line, "CapBnd:") || strings.HasPrefix(line, "NoNewPrivs:") {
			fmt.Println("parent", line)
		}
	}
	cmd := exec.Command("/proc/self/exe", "-test.run=^$")
	cmd.Env = childEnv("sandbox-child", "HARNESSD_SYSTEMD_ROOT="+os.Getenv("HARNESSD_SYSTEMD_ROOT"))
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags: syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID |
			syscall.CLONE_NEWNET | syscall.CLONE_NEWUTS | syscall.CLONE_NEWIPC | syscall.CLONE_NEWCGROUP,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: 100000, Size: 65536}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: 100000, Size: 65536}},
		// Become the namespace's root (host uid 100000) with no
		// supplementary groups, as runc does; the caller's own uid 0 is
		// not mapped, so without this the child would be nobody with no
		// capabilities.
		GidMappingsEnableSetgroups: true,
		Credential:                 &syscall.Credential{Uid: 0, Gid: 0},
		Pdeathsig:                  syscall.SIGKILL,
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Println("pipe:", err)
		return 1
	}
	cmd.Stderr = os.Stdout
	if err := cmd.Start(); err != nil {
		fmt.Println("start sandbox (clone + uid/gid maps):", err)
		return 1
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	fmt.Print("child ", line)
	if err != nil || !strings.HasPrefix(line, "ok") {
		cmd.Process.Kill()
		cmd.Wait()
		fmt.Println("sandbox set-up failed:", err)
		return 1
	}
	// The child runs as host uid 100000 and is pid 1 of its namespace; the
	// daemon must still be able to kill it.
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		fmt.Println("kill sandbox:", err)
		return 1
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		fmt.Println("sandbox did not die")
		return 1
	}
	fmt.Println("parent killed the sandbox")
	return 0
}

// sandboxChild is pid 1 of the new namespaces. It prints "ok …" when every
// step worked, then waits to be killed.
func sandboxChild() int {
	runtime.LockOSThread()
	root := os.Getenv("HARNESSD_SYSTEMD_ROOT")
	fail := func(step string, err error) int {
		fmt.Printf("fail %s: %v\n", step, err)
		return 1
	}
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return fail("make / private", err)
	}
	if err := syscall.Mount("tmpfs", root, "tmpfs", 0, "mode=0755"); err != nil {
		return fail("mount tmpfs "+root, err)
	}
	for _, d := range []string{"old", "proc"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
			return fail("mkdir", err)
		}
	}
	if err := syscall.Chdir(root); err != nil {
		return fail("chdir", err)
	}
	if err := syscall.PivotRoot(".", "old"); err != nil {
		return fail("pivot_root", &os.PathError{Op: "pivot_root", Path: root, Err: err})
	}
	if err := syscall.Chdir("/"); err != nil {
		return fail("chdir /", err)
	}
	if err := syscall.Mount("proc", "/proc", "proc", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, ""); err != nil {
		return fail("mount proc", err)
	}
	if err := syscall.Unmount("/old", syscall.MNT_DETACH); err != nil {
		return fail("umount old root", err)
	}
	if err := syscall.Sethostname([]byte("sandbox")); err != nil {
		return fail("sethostname", err)
	}
	if err := loUp(); err != nil {
		return fail("lo up", err)
	}
	if err := syscall.Chroot("/"); err != nil {
		return fail("chroot", err)
	}
	status, _ := os.ReadFile("/proc/self/status")
	var capEff string
	for _, line := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(line, "CapEff:") {
			capEff = strings.TrimSpace(strings.TrimPrefix(line, "CapEff:"))
		}
	}
	fmt.Printf("ok: pid %d, uid_map %q, CapEff %s\n", os.Getpid(), uidMap(), capEff)
	select {} // until killed
}

func uidMap() string {
	b, _ := os.ReadFile("/proc/self/uid_map")
	return strings.Join(strings.Fields(string(b)), " ")
}

// loUp sets IFF_UP on lo with SIOCSIFFLAGS, as `ip link set lo up` does.
func loUp() error {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer syscall.Close(fd)
	var ifr struct {
		name  [syscall.IFNAMSIZ]byte
		flags uint16
		_     [22]byte
	}
	copy(ifr.name[:], "lo")
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.SIOCGIFFLAGS, uintptr(unsafe.Pointer(&ifr))); e != 0 {
		return fmt.Errorf("SIOCGIFFLAGS: %w", e)
	}
	ifr.flags |= syscall.IFF_UP
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.SIOCSIFFLAGS, uintptr(unsafe.Pointer(&ifr))); e != 0 {
		return fmt.Errorf("SIOCSIFFLAGS: %w", e)
	}
	return nil
}

// TestUnitStopTimeout: systemd must not SIGKILL the daemon while it is
// still inside its default shutdown grace period, plus the 5s it then
// gives the API server and the time to close the store.
func TestUnitStopTimeout(t *testing.T) {
	vals := unitSettings(t, "harnessd.service", "TimeoutStopSec")
	if len(vals) != 1 {
		t.Fatalf("TimeoutStopSec = %q, want one value", vals)
	}
	stop, err := time.ParseDuration(vals[0])
	if err != nil {
		t.Fatalf("TimeoutStopSec=%s: %v", vals[0], err)
	}
	grace := config.Default().Daemon.ShutdownGrace.Duration
	if need := grace + 5*time.Second + 5*time.Second; stop < need {
		t.Errorf("TimeoutStopSec=%v, want at least %v (shutdown_grace %v + 5s API shutdown + 5s to close)", stop, need, grace)
	}
}

// TestSysusers checks the sysusers.d entry with systemd-sysusers --dry-run.
func TestSysusers(t *testing.T) {
	sysusers, err := exec.LookPath("systemd-sysusers")
	if err != nil {
		t.Fatal("systemd-sysusers not found: install it with `apt-get install -y systemd`")
	}
	conf, err := filepath.Abs(filepath.Join(contrib, "harnessd.sysusers"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(sysusers, "--dry-run", conf).CombinedOutput()
	t.Logf("systemd-sysusers --dry-run:\n%s", out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "Creating group 'harnessd'") {
		if _, err := exec.Command("getent", "group", "harnessd").Output(); err != nil {
			t.Errorf("systemd-sysusers would not create group harnessd")
		}
	}
	if strings.Contains(string(out), "ignoring") {
		t.Errorf("systemd-sysusers ignored part of %s", conf)
	}
}
