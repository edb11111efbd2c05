//go:build linux && (amd64 || arm64)

package seccomp

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// run is Eval, failing the test on a malformed program.
func run(t *testing.T, prog []unix.SockFilter, arch, nr uint32, args ...uint64) uint32 {
	t.Helper()
	action, err := Eval(prog, arch, nr, args...)
	if err != nil {
		t.Fatal(err)
	}
	return action
}

func TestProgramDecisions(t *testing.T) {
	prog, err := Program()
	if err != nil {
		t.Fatal(err)
	}
	if len(prog) > 255 {
		t.Fatalf("program has %d instructions: the 8-bit jumps may not reach", len(prog))
	}
	type tc struct {
		name string
		arch uint32
		nr   uint32
		arg0 uint64
		want uint32
		arg1 uint64
	}
	cases := []tc{
		{"read", nativeArch, unix.SYS_READ, 0, retAllow, 0},
		{"openat", nativeArch, unix.SYS_OPENAT, 0, retAllow, 0},
		{"execve", nativeArch, unix.SYS_EXECVE, 0, retAllow, 0},
		{"fork-style clone", nativeArch, sysClone, uint64(unix.SIGCHLD) | unix.CLONE_CHILD_SETTID | unix.CLONE_CHILD_CLEARTID, retAllow, 0},
		{"thread clone", nativeArch, sysClone, unix.CLONE_VM | unix.CLONE_FS | unix.CLONE_FILES | unix.CLONE_SIGHAND | unix.CLONE_THREAD, retAllow, 0},
		{"clone with pidfd", nativeArch, sysClone, unix.CLONE_VFORK | unix.CLONE_VM | unix.CLONE_PIDFD, retAllow, 0},
		{"clone3", nativeArch, sysClone3, 0, retNoSys, 0},
		{"foreign arch", unix.AUDIT_ARCH_I386, unix.SYS_READ, 0, retEPERM, 0},
		{"socket AF_UNIX", nativeArch, sysSocket, unix.AF_UNIX, retAllow, unix.SOCK_STREAM},
		{"socket AF_INET", nativeArch, sysSocket, unix.AF_INET, retAllow, unix.SOCK_STREAM},
		{"socket AF_INET6", nativeArch, sysSocket, unix.AF_INET6, retAllow, unix.SOCK_DGRAM},
		{"socket AF_NETLINK", nativeArch, sysSocket, unix.AF_NETLINK, retAllow, unix.SOCK_RAW},
		{"socket AF_VSOCK", nativeArch, sysSocket, unix.AF_VSOCK, retNoAFSupport, unix.SOCK_STREAM},
		{"socket AF_PACKET", nativeArch, sysSocket, unix.AF_PACKET, retNoAFSupport, unix.SOCK_RAW},
		{"socket AF_ALG", nativeArch, sysSocket, unix.AF_ALG, retNoAFSupport, unix.SOCK_SEQPACKET},
		{"socket AF_VSOCK high bits", nativeArch, sysSocket, 1<<32 | unix.AF_VSOCK, retNoAFSupport, 0},
		{"socketpair AF_UNIX", nativeArch, sysSocketpair, unix.AF_UNIX, retAllow, unix.SOCK_STREAM},
		{"socketpair AF_VSOCK", nativeArch, sysSocketpair, unix.AF_VSOCK, retNoAFSupport, unix.SOCK_STREAM},
		{"ioctl TCGETS", nativeArch, sysIoctl, 0, retAllow, unix.TCGETS},
		{"ioctl TIOCGWINSZ", nativeArch, sysIoctl, 0, retAllow, unix.TIOCGWINSZ},
		{"ioctl TIOCSTI", nativeArch, sysIoctl, 0, retEPERM, unix.TIOCSTI},
		{"ioctl TIOCSTI high bits", nativeArch, sysIoctl, 0, retEPERM, 1<<32 | unix.TIOCSTI},
		{"ioctl TIOCLINUX", nativeArch, sysIoctl, 0, retEPERM, unix.TIOCLINUX},
		{"personality PER_LINUX", nativeArch, sysPersonality, 0, retAllow, 0},
		{"personality query", nativeArch, sysPersonality, 0xffffffff, retAllow, 0},
		{"personality READ_IMPLIES_EXEC", nativeArch, sysPersonality, readImpliesExec, retEPERM, 0},
		{"personality ADDR_NO_RANDOMIZE", nativeArch, sysPersonality, addrNoRandomize, retEPERM, 0},
		{"getpid after the blocks", nativeArch, unix.SYS_GETPID, unix.AF_VSOCK, retAllow, unix.TIOCSTI},
	}
	for _, f := range []uint64{unix.CLONE_NEWUSER, unix.CLONE_NEWNS, unix.CLONE_NEWPID, unix.CLONE_NEWNET, unix.CLONE_NEWUTS, unix.CLONE_NEWIPC, unix.CLONE_NEWCGROUP} {
		cases = append(cases, tc{fmt.Sprintf("clone %#x", f), nativeArch, sysClone, f | uint64(unix.SIGCHLD), retEPERM, 0})
	}
	if x32Bit != 0 {
		cases = append(cases, tc{"x32 read", nativeArch, x32Bit | unix.SYS_READ, 0, retEPERM, 0})
	}
	for _, d := range denied {
		cases = append(cases, tc{d.name, nativeArch, d.nr, 0, retEPERM, 0})
	}
	for _, c := range cases {
		if got := run(t, prog, c.arch, c.nr, c.arg0, c.arg1); got != c.want {
			t.Errorf("%s (nr %d, arg0 %#x, arg1 %#x): %#x, want %#x", c.name, c.nr, c.arg0, c.arg1, got, c.want)
		}
	}
	if got := run(t, prog, nativeArch, unix.SYS_OPENAT2, 0, 0); got != retAllow {
		t.Errorf("openat2 (base): %#x, want ALLOW (the init's threads use it)", got)
	}
	agent, err := AgentProgram()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		arch, nr uint32
		want     uint32
	}{
		{nativeArch, unix.SYS_OPENAT2, retNoSys},
		{nativeArch, unix.SYS_OPENAT, retAllow},
		{nativeArch, unix.SYS_READ, retAllow},
		{unix.AUDIT_ARCH_I386, unix.SYS_OPENAT2, retEPERM},
	} {
		if got := run(t, agent, c.arch, c.nr); got != c.want {
			t.Errorf("agent program, arch %#x nr %d: %#x, want %#x", c.arch, c.nr, got, c.want)
		}
	}
	// Every mode call, with the mode in its place (and, for an open,
	// the flags in theirs; the other arguments hold the bits as bait).
	if len(modeCalls) < 5 {
		t.Fatalf("%d mode calls", len(modeCalls))
	}
	for _, c := range modeCalls {
		for _, m := range []struct {
			flags, mode uint64
			want        uint32
		}{
			{unix.O_CREAT | unix.O_WRONLY, 0o755, retAllow},
			{unix.O_CREAT | unix.O_WRONLY, 0o4755, retEPERM},
			{unix.O_CREAT | unix.O_EXCL, 0o2755, retEPERM},
			{unix.O_CREAT, 1<<32 | 0o6000, retEPERM},
			{unix.O_TMPFILE | unix.O_RDWR, 0o4700, retEPERM},
			{unix.O_TMPFILE | unix.O_RDWR, 0o1777, retAllow},
			{unix.O_RDONLY, 0o4755, retAllow}, // no create: the mode is unused
		} {
			args := make([]uint64, 6)
			for i := range args {
				args[i] = 0o6000
			}
			args[c.mode] = m.mode
			want := m.want
			if c.flags >= 0 {
				args[c.flags] = m.flags
			} else if m.flags == unix.O_RDONLY {
				want = retEPERM // a chmod always uses its mode
			}
			if got := run(t, prog, nativeArch, c.nr, args...); got != want {
				t.Errorf("%s flags %#o mode %#o: %#x, want %#x", c.name, m.flags, m.mode, got, want)
			}
		}
	}
}

func TestDeniedNamesTheBrief(t *testing.T) {
	have := map[string]bool{}
	for _, n := range Denied() {
		have[n] = true
	}
	for _, n := range strings.Fields("mount umount2 pivot_root ptrace kexec_load kexec_file_load init_module finit_module delete_module bpf keyctl add_key request_key perf_event_open reboot swapon swapoff unshare setns open_by_handle_at userfaultfd") {
		if !have[n] {
			t.Errorf("%s is not denied", n)
		}
	}
}

const childEnv = "HARNESSD_SECCOMP_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(child())
	}
	os.Exit(m.Run())
}

// child installs the filter in a multi-threaded Go process and reports
// what a few calls return, on the main thread and on others.
func child() int {
	dir, err := os.MkdirTemp("", "seccomp-child")
	if err != nil {
		fmt.Println("mkdtemp:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(dir+"/f", nil, 0o644); err != nil {
		fmt.Println("write:", err)
		return 1
	}
	path, _ := unix.BytePtrFromString(dir + "/f")
	made, _ := unix.BytePtrFromString(dir + "/made")
	// The main goroutine keeps the main thread, which alone gets the
	// agent's filter.
	runtime.LockOSThread()
	if err := Install(); err != nil {
		fmt.Println("install:", err)
		return 1
	}
	if err := InstallAgent(); err != nil {
		fmt.Println("install agent:", err)
		return 1
	}
	try := func(name string, nr uintptr, a ...uintptr) {
		a = append(a, 0, 0, 0)
		_, _, errno := unix.RawSyscall(nr, a[0], a[1], a[2])
		fmt.Printf("%s=%d\n", name, int(errno))
	}
	report := func(prefix string) {
		try(prefix+"getpid", unix.SYS_GETPID)
		try(prefix+"unshare", unix.SYS_UNSHARE, unix.CLONE_NEWUSER)
		try(prefix+"mount", unix.SYS_MOUNT)
		try(prefix+"clone3", unix.SYS_CLONE3)
		try(prefix+"ptrace", unix.SYS_PTRACE, unix.PTRACE_TRACEME)
		try(prefix+"vsock", unix.SYS_SOCKET, unix.AF_VSOCK, unix.SOCK_STREAM)
		try(prefix+"tiocsti", unix.SYS_IOCTL, 0, unix.TIOCSTI)
		try(prefix+"personality", unix.SYS_PERSONALITY, readImpliesExec)
		try(prefix+"chmod-setuid", unix.SYS_FCHMODAT, atFDCWD, uintptr(unsafe.Pointer(path)), 0o4755)
		try(prefix+"chmod-plain", unix.SYS_FCHMODAT, atFDCWD, uintptr(unsafe.Pointer(path)), 0o755)
		try(prefix+"openat2", unix.SYS_OPENAT2, atFDCWD, uintptr(unsafe.Pointer(path)), 0)
		fd, _, errno := unix.Syscall6(unix.SYS_OPENAT, atFDCWD, uintptr(unsafe.Pointer(made)), unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o4755, 0, 0)
		fmt.Printf("%sopen-setuid=%d\n", prefix, int(errno))
		if errno == 0 {
			unix.Close(int(fd))
		}
	}
	report("")
	done := make(chan struct{})
	go func() { // very likely another OS thread, which TSYNC covered
		report("thread.")
		close(done)
	}()
	<-done
	if out, err := exec.Command("/bin/echo", "child-exec").Output(); err != nil {
		fmt.Println("exec:", err)
	} else {
		fmt.Print(string(out))
	}
	b, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "Seccomp:") || strings.HasPrefix(l, "NoNewPrivs:") {
			fmt.Println(strings.ReplaceAll(l, "\t", ""))
		}
	}
	return 0
}

// TestInstallInKernel loads the filter into a real process: refused calls
// fail with EPERM (clone3 with ENOSYS) on every thread, allowed ones work,
// and the process can still fork and exec.
func TestInstallInKernel(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), childEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	got := string(out)
	for _, want := range []string{
		"getpid=0", "unshare=1", "mount=1", "clone3=38", "ptrace=1", "vsock=97", "tiocsti=1", "personality=1",
		"chmod-setuid=1", "chmod-plain=0", "openat2=38", "open-setuid=1", "thread.chmod-setuid=1", "thread.open-setuid=1",
		"thread.openat2=22", // EINVAL: the call reached the kernel (no how): only the agent's thread has ENOSYS
		"thread.getpid=0", "thread.unshare=1", "thread.mount=1", "thread.clone3=38", "thread.ptrace=1", "thread.vsock=97",
		"child-exec", "Seccomp:2", "NoNewPrivs:1",
	} {
		if !strings.Contains(got, want+"\n") {
			t.Errorf("child output lacks %q:\n%s", want, got)
		}
	}
}

// atFDCWD is AT_FDCWD as a system call argument.
const atFDCWD = ^uintptr(99) // -100

// personality(2) flags, from linux/personality.h.
const (
	readImpliesExec = 0x0400000
	addrNoRandomize = 0x0040000
)
