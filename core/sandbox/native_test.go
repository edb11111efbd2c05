package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harnessd/harnessd/core/event"
	"github.com/harnessd/harnessd/core/terminal"
)

// TestShellRunsInside: the shell is pid namespace child of the init, in
// the workspace, uid 0 of its user namespace with no capabilities at all
// (nor has the init's forking thread), no_new_privs and seccomp on.
func TestShellRunsInside(t *testing.T) {
	requireRoot(t)
	b := newBox(t, newDriver(t, NativeOptions{}), Spec{Hostname: "box1"})
	if got := b.must("pwd; echo $PPID; hostname; id -u; echo $HOME"); got != "/workspace\n1\nbox1\n0\n/workspace" {
		t.Fatalf("pwd, ppid, hostname, uid, HOME = %q", got)
	}
	b.must("echo hi > f")
	if got, _ := os.ReadFile(filepath.Join(b.ws, "f")); string(got) != "hi\n" {
		t.Fatalf("workspace file on the host: %q", got)
	}
	for _, who := range []string{"self", "1"} {
		got := b.must("grep -E '^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp):' /proc/" + who + "/status | tr -d '\\t'")
		for _, want := range []string{"CapInh:0000000000000000", "CapPrm:0000000000000000", "CapEff:0000000000000000", "CapBnd:0000000000000000", "CapAmb:0000000000000000", "NoNewPrivs:1", "Seccomp:2"} {
			if !strings.Contains(got, want) {
				t.Errorf("/proc/%s/status lacks %s:\n%s", who, want, got)
			}
		}
	}
	// Job control works: bash leads the terminal's foreground group, and
	// a foreground job gets its own group.
	if got := b.must("set -o | grep -w monitor | tr -s ' \\t' ' '; sleep 0.1 & wait; echo waited"); !strings.HasPrefix(got, "monitor on\n") || !strings.HasSuffix(got, "\nwaited") {
		t.Fatalf("job control: %q", got)
	}
	res, err := b.term.Run(context.Background(), event.CmdRun{Command: "sleep 30", TimeoutS: (300 * time.Millisecond).Seconds()}, &bytes.Buffer{})
	if err != nil || !res.TimedOut || res.Rebuilt || res.ExitCode != 130 {
		t.Fatalf("hard timeout inside the sandbox: %+v %v", res, err)
	}
	if got := b.must("echo still"); got != "still" {
		t.Fatalf("after interrupt: %q", got)
	}
}

// TestFilesystem checks the mounts the shell sees.
func TestFilesystem(t *testing.T) {
	requireRoot(t)
	b := newBox(t, newDriver(t, NativeOptions{}), Spec{Limits: Limits{TmpBytes: 16 << 20}})
	opts := func(mp string) string {
		return b.must(`awk -v mp="$(readlink -f ` + mp + `)" '$5 == mp {o = $6} END {print o}' /proc/self/mountinfo`)
	}
	for mp, want := range map[string][]string{
		"/":                     {"ro", "nosuid", "nodev"},
		"/usr":                  {"ro", "nosuid", "nodev"},
		"/etc":                  {"ro", "nosuid", "nodev"},
		"/workspace":            {"rw", "nosuid", "nodev"},
		"/tmp":                  {"rw", "nosuid", "nodev"},
		"/proc":                 {"rw", "nosuid", "nodev", "noexec"},
		"/proc/sys":             {"ro"},
		"/dev":                  {"ro", "nosuid", "noexec"},
		"/dev/null":             {"ro", "nosuid", "noexec"},
		"/dev/pts":              {"rw", "nosuid", "noexec"},
		b.sb.ControlDirInside(): {"ro", "nosuid", "nodev", "noexec"},
	} {
		got := "," + opts(mp) + ","
		for _, w := range want {
			if !strings.Contains(got, ","+w+",") {
				t.Errorf("%s mounted %q, want %s", mp, got, w)
			}
		}
	}
	if got := b.must("df -B1 --output=size /tmp | tail -1 | tr -d ' '"); got != strconv.Itoa(16<<20) {
		t.Errorf("/tmp size %s", got)
	}
	if got := b.must("echo x > /tmp/a && cat /tmp/a && echo y > /dev/null && head -c 4 /dev/urandom | wc -c"); got != "x\n4" {
		t.Errorf("tmp and devices: %q", got)
	}
	if got := b.must(`python3 -c 'import os; m, s = os.openpty(); print(os.ttyname(s))'`); !strings.HasPrefix(got, "/dev/pts/") {
		t.Errorf("a pty of its own: %q", got)
	}
	if got := b.must("ls /dev | tr '\\n' ' '"); got != "console fd full null ptmx pts random shm stderr stdin stdout tty urandom zero" {
		t.Errorf("/dev: %q", got)
	}
	ctl := b.sb.ControlDirInside()
	if got := b.must("test -r " + ctl + "/rc && ! touch " + ctl + "/x 2>/dev/null && echo ok"); got != "ok" {
		t.Errorf("control dir: %q", got)
	}
	if got := b.must("grep -c '^root:' /etc/passwd"); got != "1" {
		t.Errorf("/etc/passwd: %q", got)
	}
	if _, err := os.Stat("/etc/ssl/private"); err == nil {
		if code, out := b.run("ls /etc/ssl/private"); code == 0 {
			t.Errorf("/etc/ssl/private is listable: %q", out)
		}
	}
}

// TestProtectedPaths: a missing protected path whose parent exists is
// created (so it cannot be created later with content), one whose parent
// is missing is not (no .git appears where there is no repository), and a
// symlink planted among them is refused, not followed.
func TestProtectedPaths(t *testing.T) {
	requireRoot(t)
	d := newDriver(t, NativeOptions{})
	b := newBox(t, d, Spec{})
	if fi, err := os.Lstat(filepath.Join(b.ws, ".harness")); err != nil || !fi.IsDir() {
		t.Errorf(".harness on the host: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(b.ws, ".git")); err == nil {
		t.Errorf(".git was created where there was no repository")
	}
	if code, _ := b.run("rm -rf .harness; touch .harness/x"); code == 0 {
		t.Errorf("wrote below a protected directory")
	}

	for name, link := range map[string]string{".harness": "/etc", ".git": "/etc"} {
		ws := t.TempDir()
		if err := os.Symlink(link, filepath.Join(ws, name)); err != nil {
			t.Fatal(err)
		}
		sb, err := d.Create(context.Background(), Spec{Workspace: ws})
		if err != nil {
			t.Fatal(err)
		}
		_, err = terminal.New(context.Background(), termOptions(sb))
		if !errors.Is(err, ErrSetup) || !strings.Contains(err.Error(), "symlink") {
			t.Errorf("%s -> %s: terminal.New: %v, want a setup error about the symlink", name, link, err)
		}
		sb.Destroy(context.Background())
	}
	for _, p := range []string{"/etc/hooks", "/etc/config"} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s was created on the host through a symlink", p)
		}
	}
}

// TestSetupErrorIsClear: a failure inside the init comes back as a typed
// error naming the step and the path, promptly, not as a hung prompt.
func TestSetupErrorIsClear(t *testing.T) {
	requireRoot(t)
	d := newDriver(t, NativeOptions{})
	sb, err := d.Create(context.Background(), Spec{Workspace: t.TempDir(), ReadOnly: []string{"/definitely/not/here"}})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Destroy(context.Background())
	t0 := time.Now()
	_, err = terminal.New(context.Background(), termOptions(sb))
	var ie *InitError
	if !errors.As(err, &ie) || !errors.Is(err, ErrSetup) || !errors.Is(err, syscall.ENOENT) || ie.Path != "/definitely/not/here" {
		t.Fatalf("terminal.New: %v (%#v)", err, ie)
	}
	if d := time.Since(t0); d > 3*time.Second {
		t.Errorf("the error took %s", d)
	}
	t.Logf("error: %v", err)
}

// TestRebuildKeepsWorkspace: when the shell exits the terminal starts a new
// init over the same Spec: the workspace persists, /tmp and the shell's
// state do not.
func TestRebuildKeepsWorkspace(t *testing.T) {
	requireRoot(t)
	b := newBox(t, newDriver(t, NativeOptions{}), Spec{})
	b.must("echo kept > w; echo lost > /tmp/lost; export V=1")
	res, err := b.term.Run(context.Background(), event.CmdRun{Command: "exit 4"}, &bytes.Buffer{})
	if err != nil || !res.Rebuilt {
		t.Fatalf("exit: %+v %v", res, err)
	}
	if got := b.must("cat w; ls /tmp/lost 2>/dev/null; echo V=$V"); got != "kept\nV=" {
		t.Fatalf("after rebuild: %q", got)
	}
	if n := len(b.sb.(*nativeSandbox).live()); n != 1 {
		t.Errorf("%d live inits after a rebuild, want 1", n)
	}
}

// TestNetworkNoneAndHost: network none has only loopback, host shares
// the host's.
func TestNetworkNoneAndHost(t *testing.T) {
	requireRoot(t)
	d := newDriver(t, NativeOptions{})
	l := listen(t, "tcp", "127.0.0.1:0")
	dial := fmt.Sprintf("exec 3<>/dev/tcp/127.0.0.1/%d && echo connected", l.ln.Addr().(*net.TCPAddr).Port)
	none := newBox(t, d, Spec{})
	if code, out := none.run(dial); code == 0 {
		t.Errorf("network none reached the host: %q", out)
	}
	host := newBox(t, d, Spec{Network: NetworkHost})
	if got := host.must(dial); got != "connected" {
		t.Errorf("network host: %q", got)
	}
	time.Sleep(50 * time.Millisecond)
	if n := l.count.Load(); n != 1 {
		t.Errorf("host listener saw %d connections, want 1 (from network host only)", n)
	}
}

// TestNetworkProxy: 127.0.0.1:3128 inside reaches the daemon's proxy
// socket and nothing else; the shell has the proxy variables; the proxy's
// directory is not visible inside.
func TestNetworkProxy(t *testing.T) {
	requireRoot(t)
	dir := t.TempDir()
	sock := filepath.Join(dir, "proxy.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				line, _ := bufio.NewReader(c).ReadString('\n')
				fmt.Fprintf(c, "proxied %s", line)
			}()
		}
	}()
	hostTCP := listen(t, "tcp", "127.0.0.1:0")
	b := newBox(t, newDriver(t, NativeOptions{}), Spec{Network: NetworkProxy, ProxySocket: sock})
	if got := b.must("echo $HTTP_PROXY $HTTPS_PROXY $https_proxy"); got != "http://127.0.0.1:3128 http://127.0.0.1:3128 http://127.0.0.1:3128" {
		t.Errorf("proxy env: %q", got)
	}
	if got := b.must("exec 3<>/dev/tcp/127.0.0.1/3128; echo 'CONNECT example.com:443 HTTP/1.1' >&3; read -r l <&3; echo \"$l\""); got != "proxied CONNECT example.com:443 HTTP/1.1" {
		t.Errorf("through the proxy: %q", got)
	}
	if code, _ := b.run("ls " + dir); code == 0 {
		t.Errorf("the proxy's directory is visible inside")
	}
	if code, _ := b.run(fmt.Sprintf("exec 3<>/dev/tcp/127.0.0.1/%d", hostTCP.ln.Addr().(*net.TCPAddr).Port)); code == 0 || hostTCP.count.Load() != 0 {
		t.Errorf("network proxy reached the host's loopback")
	}
}

// TestLimitsWithoutCgroup: without a cgroup factory the limits become
// rlimits (and pid_max), and Stats says so.
func TestLimitsWithoutCgroup(t *testing.T) {
	requireRoot(t)
	b := newBox(t, newDriver(t, NativeOptions{}), Spec{Limits: Limits{MemoryBytes: 512 << 20, Pids: 100, NoFile: 1000, FileBytes: 1 << 20, CPUWeight: 50}})
	if got := b.must("ulimit -v; ulimit -u; ulimit -n; ulimit -f; ulimit -c"); got != "524288\n100\n1000\n1024\n0" {
		t.Errorf("ulimit -v -u -n -f -c = %q", got)
	}
	if code, out := b.run("head -c 2M /dev/zero > big"); code == 0 {
		t.Errorf("wrote past RLIMIT_FSIZE: %q", out)
	}
	st, err := b.sb.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]string{}
	for _, e := range st.Enforced {
		by[e.Limit] = e.By
	}
	if !strings.Contains(by["memory"], "RLIMIT_AS") || !strings.Contains(by["cpu_weight"], "not enforced") || by["tmp"] != "tmpfs size" {
		t.Errorf("Enforced: %v", st.Enforced)
	}
	if pidNamespacePidMax() {
		if got := b.must("cat /proc/sys/kernel/pid_max"); got != strconv.Itoa(100+pidMaxSlack) {
			t.Errorf("pid_max inside = %s", got)
		}
		if got, _ := os.ReadFile("/proc/sys/kernel/pid_max"); strings.TrimSpace(string(got)) == strconv.Itoa(100+pidMaxSlack) {
			t.Errorf("the host's pid_max changed")
		}
	}
	if st.Processes < 2 {
		t.Errorf("Stats.Processes = %d", st.Processes)
	}
	t.Logf("enforced: %v", st.Enforced)
}

// TestHostWithoutUserNamespaces: on a host whose kernel allows no user
// namespaces Create says what is missing and what to change.
func TestHostWithoutUserNamespaces(t *testing.T) {
	sys := t.TempDir()
	if err := os.MkdirAll(filepath.Join(sys, "user"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sys, "user/max_user_namespaces"), []byte("0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := NewNative(&NativeOptions{StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	d.procSys = sys
	_, err = d.Create(context.Background(), Spec{Workspace: t.TempDir()})
	if !errors.Is(err, ErrUserNamespaces) || !strings.Contains(err.Error(), "user.max_user_namespaces") || !strings.Contains(err.Error(), `sandbox.driver = "none"`) {
		t.Fatalf("Create: %v", err)
	}
	t.Logf("error: %v", err)
}

func TestInvalidSpec(t *testing.T) {
	d, err := NewNative(&NativeOptions{StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	for _, spec := range []Spec{
		{},
		{Workspace: filepath.Join(ws, "missing")},
		{Workspace: ws, ID: "../x"},
		{Workspace: ws, Workdir: "relative"},
		{Workspace: ws, Workdir: "/"},
		{Workspace: ws, Protected: []string{"../outside"}},
		{Workspace: ws, Protected: []string{"/abs"}},
		{Workspace: ws, Network: "wifi"},
		{Workspace: ws, Network: NetworkProxy},
		{Workspace: ws, Limits: Limits{Pids: -1}},
		{Workspace: ws, Env: []string{"NOEQUALS"}},
		{Workspace: ws, Workdir: ControlPath},
		{Workspace: ws, Workdir: "/run"},
		{Workspace: ws, ReadOnly: []string{"/run"}},
		{Workspace: ws, ReadOnly: []string{ControlPath + "/x"}},
	} {
		if _, err := d.Create(context.Background(), spec); !errors.Is(err, ErrInvalidSpec) {
			t.Errorf("Create(%+v): %v, want ErrInvalidSpec", spec, err)
		}
	}
}

// TestNoneDriver: the shell runs on the host, and Create says so loudly.
func TestNoneDriver(t *testing.T) {
	var logs bytes.Buffer
	d := &None{Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	ws := t.TempDir()
	sb, err := d.Create(context.Background(), Spec{Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "NO ISOLATION") {
		t.Errorf("no loud warning: %q", logs.String())
	}
	term, err := terminal.New(context.Background(), termOptions(sb))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	res, err := term.Run(context.Background(), event.CmdRun{Command: "pwd; cat /proc/1/comm"}, &out)
	host, _ := os.ReadFile("/proc/1/comm")
	if err != nil || out.String() != ws+"\n"+string(host) || res.PID != term.PID() {
		t.Errorf("none: %q %+v %v", out.String(), res, err)
	}
	term.Close()
	ctl := sb.ControlDir()
	if err := sb.Destroy(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(ctl); err == nil {
		t.Errorf("control dir left")
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Fatal(err)
	}
}

// TestImage: a root filesystem directory replaces the host's system
// directories; its non-world-readable files are covered the same way.
func TestImage(t *testing.T) {
	requireRoot(t)
	img := t.TempDir()
	for _, d := range []string{"usr", "etc"} {
		if err := os.Mkdir(filepath.Join(img, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range []string{"bin", "lib", "lib64", "sbin"} {
		if err := os.Symlink("usr/"+l, filepath.Join(img, l)); err != nil {
			t.Fatal(err)
		}
	}
	// The image's usr is the host's (bound in for the test), its etc its own.
	if err := exec.Command("mount", "--bind", "-o", "ro", "/usr", filepath.Join(img, "usr")).Run(); err != nil {
		t.Skipf("cannot build a test image: %v", err)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", filepath.Join(img, "usr")).Run() })
	os.WriteFile(filepath.Join(img, "etc/passwd"), []byte("root:x:0:0:image root:/:/bin/sh\n"), 0o644)
	os.WriteFile(filepath.Join(img, "etc/secret"), []byte("nope"), 0o600)
	b := newBox(t, newDriver(t, NativeOptions{}), Spec{Image: img})
	if got := b.must("cut -d: -f5 /etc/passwd; ls /etc | tr '\\n' ' '"); got != "image root\npasswd secret" {
		t.Errorf("image /etc: %q", got)
	}
	if code, _ := b.run("cat /etc/secret"); code == 0 {
		t.Errorf("the image's private file is readable")
	}
}

// TestStartTimeout: an init that does not report in time is a clear error
// (and is killed), not a hang.
func TestStartTimeout(t *testing.T) {
	requireRoot(t)
	d := newDriver(t, NativeOptions{StartTimeout: time.Microsecond})
	sb, err := d.Create(context.Background(), Spec{Workspace: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Destroy(context.Background())
	_, err = terminal.New(context.Background(), termOptions(sb))
	if !errors.Is(err, ErrSetup) || !strings.Contains(err.Error(), "did not finish setup within") {
		t.Fatalf("terminal.New: %v", err)
	}
	if live := sb.(*nativeSandbox).live(); len(live) != 0 {
		t.Errorf("the init is still alive: %v", live)
	}
}

// TestReadOnlyWithSubmounts: an extra read-only path with a writable mount
// below it brings the mount along, read-only too.
func TestReadOnlyWithSubmounts(t *testing.T) {
	requireRoot(t)
	dir := t.TempDir()
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", sub, "tmpfs", 0, "size=1m"); err != nil {
		t.Skipf("cannot mount a tmpfs for the test: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(sub, syscall.MNT_DETACH) })
	if err := os.WriteFile(filepath.Join(sub, "f"), []byte("below\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b := newBox(t, newDriver(t, NativeOptions{}), Spec{ReadOnly: []string{dir}})
	if got := b.must("cat " + sub + "/f"); got != "below" {
		t.Fatalf("submount inside: %q", got)
	}
	for _, p := range []string{sub + "/g", dir + "/h"} {
		if code, _ := b.run("touch " + p); code == 0 {
			t.Errorf("%s is writable inside", p)
		}
	}
}

// TestResolvedWorkspaceSwapped: a client's workspace (WorkspaceResolved)
// whose parent its user swaps for a symlink after the daemon checked it
// is refused, at Create or when the shell starts, instead of binding the
// directory the link leads to (one its user may not reach).
func TestResolvedWorkspaceSwapped(t *testing.T) {
	requireRoot(t)
	d := newDriver(t, NativeOptions{})
	base := t.TempDir()
	for _, dir := range []string{"a/proj", "victim/proj"} {
		if err := os.MkdirAll(filepath.Join(base, dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(base, "victim/proj/marker"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(base, "victim"), filepath.Join(base, "link")); err != nil {
		t.Fatal(err)
	}
	// Swapped before Create.
	if _, err := d.Create(context.Background(), Spec{Workspace: filepath.Join(base, "link/proj"), WorkspaceResolved: true}); !errors.Is(err, ErrInvalidSpec) {
		t.Fatalf("Create through a symlink: %v, want ErrInvalidSpec", err)
	}
	// Swapped between Create and the shell's start.
	ctx := context.Background()
	sb, err := d.Create(ctx, Spec{Workspace: filepath.Join(base, "a/proj"), WorkspaceResolved: true})
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	t.Cleanup(func() { sb.Destroy(context.Background()) })
	if err := os.Rename(filepath.Join(base, "a"), filepath.Join(base, "a.old")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(base, "victim"), filepath.Join(base, "a")); err != nil {
		t.Fatal(err)
	}
	term, err := terminal.New(ctx, termOptions(sb))
	if err == nil {
		defer term.Close()
		res, _ := term.Run(ctx, termReq("ls", 10*time.Second), &bytes.Buffer{})
		t.Fatalf("the shell started in the swapped workspace; ls: %+v", res)
	}
	if !strings.Contains(err.Error(), "symbolic links") {
		t.Errorf("start in a swapped workspace: %v, want ELOOP", err)
	}
}
