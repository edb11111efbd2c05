package sandbox

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/core/files"
	"github.com/harnessd/harnessd/core/python"
	"github.com/harnessd/harnessd/core/sandbox/cgroup"
	"github.com/harnessd/harnessd/core/sandbox/gitnotify"
)

// probeEnv names the red team's probe this test binary runs as, inside
// a sandbox (headRuleProbe).
const probeEnv = "HARNESSD_HEADRULE_PROBE"

// initRuleOrSkip skips where the init cannot enforce the HEAD rule
// (where it can, guards use it).
func initRuleOrSkip(t *testing.T) {
	t.Helper()
	requireRoot(t)
	if !sharedInitRule() {
		t.Skipf("the init cannot enforce the HEAD rule here: %v", initRuleErr)
	}
}

// probeBox is a guarded sandbox over a directory its user named, with
// this test binary in it as ./probe, and "half" (objects and refs, no
// HEAD: one HEAD short of a bare repository) and "d" the user's.
func probeBox(t *testing.T) (*box, string) {
	initRuleOrSkip(t)
	d := newDriver(t, NativeOptions{})
	ws, _, _ := userDir(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.Open(self)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(filepath.Join(ws, "probe"), os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	dst.Close()
	for _, p := range []string{"half/objects", "half/refs/heads", "d"} {
		os.MkdirAll(filepath.Join(ws, p), 0o755)
		for q := p; q != "."; q = filepath.Dir(q) {
			os.Chown(filepath.Join(ws, q), userDirOwner, userDirOwner)
		}
	}
	os.Chown(filepath.Join(ws, "half", "objects"), userDirOwner, userDirOwner)
	os.Chown(filepath.Join(ws, "half", "refs", "heads"), userDirOwner, userDirOwner)
	b := newBox(t, d, Spec{Workspace: ws, Owner: &User{UID: userDirOwner, GID: userDirOwner}})
	return b, ws
}

// probe runs the probe name in the box and returns its key=value lines.
func (b *box) probe(name string, limit time.Duration) map[string]string {
	b.t.Helper()
	out := b.runLong(probeEnv+"="+name+" /workspace/probe", limit)
	got := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			got[k] = v
		}
	}
	b.t.Logf("probe %s:\n%s", name, out)
	return got
}

// TestHeadRuleRaces: the red team's races against the init's rule, each
// in the agent's own program (threads): the path changed in memory
// while the call is served; the directory it names swapped between a
// directory the dedicated uid owns (a .git handed over) and one of the
// user's; its final symlink swapped from a plain name to a HEAD. None
// ever leaves a HEAD in a directory of the user's.
func TestHeadRuleRaces(t *testing.T) {
	b, ws := probeBox(t)
	got := b.probe("races", 10*time.Minute)
	for _, k := range []string{"flip.wins", "parent.wins", "final.wins", "exchange.wins"} {
		if got[k] != "0" {
			t.Errorf("%s = %q, want 0", k, got[k])
		}
	}
	for _, k := range []string{"flip.refused", "parent.refused", "final.refused", "exchange.refused", "flip.made", "parent.made", "final.made", "exchange.made"} {
		if n, _ := strconv.Atoi(got[k]); n == 0 {
			t.Errorf("%s = %q: the race was not run both ways", k, got[k])
		}
	}
	for _, p := range []string{"half/HEAD", "d/HEAD"} {
		if _, err := os.Lstat(filepath.Join(ws, p)); err == nil {
			t.Errorf("%s exists", p)
		}
	}
}

// TestHeadRuleProbes: /proc tricks, the calls the base filter refuses,
// attacks on the init that serves the rule, a non-dumpable task.
func TestHeadRuleProbes(t *testing.T) {
	b, ws := probeBox(t)
	got := b.probe("tricks", 2*time.Minute)
	eperm, eacces := strconv.Itoa(int(unix.EPERM)), strconv.Itoa(int(unix.EACCES))
	want := map[string]string{
		"proc-self-fd":                   eperm,
		"proc-thread-self-cwd":           eperm,
		"dev-fd":                         eperm,
		"proc-self-root":                 eperm,
		"link-via-proc-cwd":              eperm,
		"proc-net-dotdot":                eperm,
		"tmpfile-link":                   eperm,
		"tmpfile-link-ok":                "0",
		"dotgit-file":                    eperm,
		"dotgit-symlink":                 eperm,
		"dotgit-rename-file":             eperm,
		"dotgit-dir":                     "0",
		"bind-HEAD":                      "0",
		"rename-over-socket-HEAD":        eperm,
		"HEAD-is-socket":                 "true",
		"exchange-with-socket-HEAD":      eperm,
		"exchange-with-socket-HEAD-back": eperm,
		"HEAD-is-socket-after-exchange":  "true",
		"proc-init-cwd":                  eacces,
		"proc-init-fd":                   eacces,
		"openat2":                        strconv.Itoa(int(unix.ENOSYS)),
		"io_uring_setup":                 eperm,
		"ptrace-init":                    eperm,
		"process_vm_writev":              eperm,
		"proc-init-mem":                  eacces,
		"after-signals-plain":            "0",
		"after-signals-HEAD":             eperm,
		"nondumpable-create":             "0",
		"nondumpable-mkdir":              "0",
		"nondumpable-HEAD":               eperm,
		"nondumpable-relative":           "0",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if _, err := os.Lstat(filepath.Join(ws, "half", "HEAD")); err == nil {
		t.Error("half/HEAD exists")
	}
	// The file service is refused the same way; other files it writes.
	f := b.sb.(files.Filer)
	for _, c := range []struct {
		path string
		ok   bool
	}{{"/workspace/half/HEAD", false}, {"/workspace/new/HEAD", false}, {"/workspace/d/.git", false}, {"/workspace/d/ok", true}, {"/workspace/new2/ok", true}} {
		r, err := f.File(context.Background(), &files.Request{Op: files.OpWrite, Path: c.path, Data: []byte("ref: refs/heads/main\n"), Create: true})
		if err != nil {
			t.Fatal(err)
		}
		if (r.Code == "") != c.ok {
			t.Errorf("file service write %s: %+v, want ok %v", c.path, r, c.ok)
		}
	}
}

// TestHeadRuleFIFOFlood: writers waiting on FIFOs opened with O_CREAT
// (a shell's > fifo) hold no worker: the agent's other files are made
// meanwhile, and the writers finish once their readers come.
func TestHeadRuleFIFOFlood(t *testing.T) {
	b, _ := probeBox(t)
	b.must("mkdir -p /tmp/ff && cd /tmp/ff && for i in $(seq 1 64); do mkfifo p$i; (echo x$i > p$i) & done; sleep 0.2")
	start := time.Now()
	b.must("cd /workspace/d && for i in $(seq 1 200); do : > g$i; done; mkdir m && ln -s x m/l")
	t.Logf("200 files made with 64 writers waiting: %v", time.Since(start))
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("200 files took %v with 64 writers waiting", d)
	}
	out := b.must("cd /tmp/ff && n=0; for i in $(seq 1 64); do read -r l < p$i && n=$((n+1)); done; wait; echo read=$n")
	if !strings.Contains(out, "read=64") {
		t.Errorf("the writers: %q", out)
	}
}

// headRuleProbe is the probe probeEnv names, run inside a sandbox from
// /workspace; it prints key=value lines.
func headRuleProbe() int {
	if err := os.Chdir("/workspace"); err != nil {
		fmt.Println("chdir:", err)
		return 1
	}
	switch os.Getenv(probeEnv) {
	case "races":
		probeRaces()
	case "tricks":
		probeTricks()
	default:
		fmt.Println("unknown probe")
		return 1
	}
	return 0
}

func errnoOf(err error) int {
	if err == nil {
		return 0
	}
	if e, ok := err.(unix.Errno); ok {
		return int(e)
	}
	return -1
}

func report(k string, err error) { fmt.Printf("%s=%d\n", k, errnoOf(err)) }

func create(p string) error {
	fd, err := unix.Open(p, unix.O_WRONLY|unix.O_CREAT, 0o644)
	if err == nil {
		unix.Close(fd)
	}
	return err
}

// ownerIs reports whether dir's owner is the dedicated uid as the
// sandbox sees it.
func ownerIs(dir string) bool {
	var st unix.Stat_t
	return unix.Lstat(dir, &st) == nil && st.Uid == headRuleOwner
}

// race runs flip on a thread of its own until main has run n times.
func race(n int, flip func(), main func()) {
	var stop atomic.Bool
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		for !stop.Load() {
			flip()
		}
		close(done)
	}()
	for range n {
		main()
	}
	stop.Store(true)
	<-done
}

func probeRaces() {
	const n = 3000
	// 1. The path in memory changes while the call is served: the
	// kernel would read it again after a CONTINUE.
	buf := []byte("half/HEAX\x00\x00\x00")
	last := (*uint32)(unsafe.Pointer(&buf[8])) // "X\0" or "D\0", stored whole
	made, refused, wins := 0, 0, 0
	race(n, func() {
		atomic.StoreUint32(last, 'D')
		atomic.StoreUint32(last, 'X')
	}, func() {
		fd, _, errno := unix.Syscall6(unix.SYS_OPENAT, atFDCWD, uintptr(unsafe.Pointer(&buf[0])), unix.O_CREAT|unix.O_WRONLY, 0o644, 0, 0)
		switch errno {
		case 0:
			unix.Close(int(fd))
			made++
		case unix.EPERM:
			refused++
		}
		if unix.Access("half/HEAD", unix.F_OK) == nil {
			wins++
			unix.Unlink("half/HEAD")
		}
		unix.Unlink("half/HEAX")
	})
	fmt.Printf("flip.made=%d\nflip.refused=%d\nflip.wins=%d\n", made, refused, wins)

	// A .git handed over: the dedicated uid's, where HEAD is allowed.
	unix.Mkdir("x", 0o755)
	unix.Mkdir("x/.git", 0o755)
	for i := 0; i < 500 && !ownerIs("x/.git"); i++ {
		time.Sleep(10 * time.Millisecond)
	}
	fmt.Printf("handed-over=%v\n", ownerIs("x/.git"))

	// 2. The directory the path names swapped (a symlink renamed over)
	// between the dedicated uid's and the user's.
	unix.Symlink("x/.git", "cur")
	made, refused, wins = 0, 0, 0
	race(n/3, func() {
		unix.Symlink("x/.git", "t1")
		unix.Rename("t1", "cur")
		unix.Symlink("d", "t2")
		unix.Rename("t2", "cur")
	}, func() {
		switch errnoOf(create("cur/HEAD")) {
		case 0:
			made++
		case int(unix.EPERM):
			refused++
		}
		if unix.Access("d/HEAD", unix.F_OK) == nil {
			wins++
			unix.Unlink("d/HEAD")
		}
		unix.Unlink("x/.git/HEAD")
	})
	fmt.Printf("parent.made=%d\nparent.refused=%d\nparent.wins=%d\n", made, refused, wins)

	// 3. Directories exchanged: B/g is the dedicated uid's (x/.git moved
	// there), A/g the user's; A and B swap while HEAD is made in B/g.
	os.MkdirAll("A/g", 0o755)
	unix.Mkdir("B", 0o755)
	unix.Rename("x/.git", "B/g")
	made, refused, wins = 0, 0, 0
	check := func() {
		// By a descriptor of the directory: its path moves meanwhile.
		for _, p := range []string{"A/g", "B/g"} {
			fd, err := unix.Open(p, unix.O_PATH|unix.O_DIRECTORY, 0)
			if err != nil {
				continue
			}
			var st unix.Stat_t
			if unix.Faccessat(fd, "HEAD", unix.F_OK, 0) == nil && unix.Fstat(fd, &st) == nil {
				if st.Uid != headRuleOwner {
					wins++
				}
				unix.Unlinkat(fd, "HEAD", 0)
			}
			unix.Close(fd)
		}
	}
	race(n, func() {
		unix.Renameat2(unix.AT_FDCWD, "A", unix.AT_FDCWD, "B", unix.RENAME_EXCHANGE)
	}, func() {
		switch errnoOf(create("B/g/HEAD")) {
		case 0:
			made++
		case int(unix.EPERM):
			refused++
		}
		check()
	})
	check()
	fmt.Printf("exchange.made=%d\nexchange.refused=%d\nexchange.wins=%d\n", made, refused, wins)

	// 4. The final symlink swapped from a plain name to a HEAD: open
	// with O_CREAT follows it.
	made, refused, wins = 0, 0, 0
	unix.Symlink("ok", "ln")
	race(n/3, func() {
		unix.Symlink("ok", "t3")
		unix.Rename("t3", "ln")
		unix.Symlink("half/HEAD", "t4")
		unix.Rename("t4", "ln")
	}, func() {
		switch errnoOf(create("ln")) {
		case 0:
			made++
		case int(unix.EPERM):
			refused++
		}
		if unix.Access("half/HEAD", unix.F_OK) == nil {
			wins++
			unix.Unlink("half/HEAD")
		}
		unix.Unlink("ok")
	})
	fmt.Printf("final.made=%d\nfinal.refused=%d\nfinal.wins=%d\n", made, refused, wins)
}

func probeTricks() {
	dfd, _ := unix.Open("half", unix.O_PATH|unix.O_DIRECTORY, 0)
	report("proc-self-fd", create(fmt.Sprintf("/proc/self/fd/%d/HEAD", dfd)))
	report("proc-thread-self-cwd", create("/proc/thread-self/cwd/half/HEAD"))
	report("dev-fd", create(fmt.Sprintf("/dev/fd/%d/HEAD", dfd)))
	report("proc-self-root", create("/proc/self/root/workspace/half/HEAD"))
	unix.Symlink("/proc/self/cwd/half/HEAD", "pl")
	report("link-via-proc-cwd", create("pl"))
	report("proc-net-dotdot", create("/proc/net/../cwd/half/HEAD"))
	tfd, err := unix.Open("half", unix.O_TMPFILE|unix.O_WRONLY, 0o644)
	report("tmpfile", err)
	report("tmpfile-link", unix.Linkat(unix.AT_FDCWD, fmt.Sprintf("/proc/self/fd/%d", tfd), unix.AT_FDCWD, "half/HEAD", unix.AT_SYMLINK_FOLLOW))
	report("tmpfile-link-ok", unix.Linkat(unix.AT_FDCWD, fmt.Sprintf("/proc/self/fd/%d", tfd), unix.AT_FDCWD, "half/tmpok", unix.AT_SYMLINK_FOLLOW))
	unix.Mkdir("g1", 0o755)
	report("dotgit-file", create("g1/.git"))
	report("dotgit-symlink", unix.Symlink("../half", "g1/.git"))
	create("g1/f")
	report("dotgit-rename-file", unix.Rename("g1/f", "g1/.git"))
	report("dotgit-dir", unix.Mkdir("g1/.git", 0o755))
	// bind(2) makes a socket named HEAD (not trapped: git cannot read
	// it), which must not then be replaced by a file that it can. In d,
	// which the watch does not hand over as it would half (a HEAD,
	// objects and refs: a bare repository).
	sfd, _ := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	report("bind-HEAD", unix.Bind(sfd, &unix.SockaddrUnix{Name: "d/HEAD"}))
	os.WriteFile("headfile", []byte("ref: refs/heads/main\n"), 0o644)
	report("rename-over-socket-HEAD", unix.Rename("headfile", "d/HEAD"))
	var hst unix.Stat_t
	unix.Lstat("d/HEAD", &hst)
	fmt.Printf("HEAD-is-socket=%v\n", hst.Mode&unix.S_IFMT == unix.S_IFSOCK)
	os.WriteFile("headfile", []byte("ref: refs/heads/main\n"), 0o644)
	report("exchange-with-socket-HEAD", unix.Renameat2(unix.AT_FDCWD, "headfile", unix.AT_FDCWD, "d/HEAD", unix.RENAME_EXCHANGE))
	report("exchange-with-socket-HEAD-back", unix.Renameat2(unix.AT_FDCWD, "d/HEAD", unix.AT_FDCWD, "headfile", unix.RENAME_EXCHANGE))
	unix.Lstat("d/HEAD", &hst)
	fmt.Printf("HEAD-is-socket-after-exchange=%v\n", hst.Mode&unix.S_IFMT == unix.S_IFSOCK)
	unix.Unlink("d/HEAD")
	report("proc-init-cwd", create("/proc/1/cwd/tmp/x"))
	report("proc-init-fd", create("/proc/1/fd/0/x"))
	report("openat2", func() error {
		_, err := unix.Openat2(unix.AT_FDCWD, "d/o2", &unix.OpenHow{Flags: unix.O_CREAT | unix.O_WRONLY, Mode: 0o644})
		return err
	}())
	_, _, e := unix.Syscall(unix.SYS_IO_URING_SETUP, 8, 0, 0)
	report("io_uring_setup", e)
	report("ptrace-init", unix.PtraceAttach(1))
	_, _, e = unix.Syscall6(unix.SYS_PROCESS_VM_WRITEV, 1, 0, 0, 0, 0, 0)
	report("process_vm_writev", e)
	_, err = unix.Open("/proc/1/mem", unix.O_RDWR, 0)
	report("proc-init-mem", err)
	// Stop or kill every thread of the init, the workers among them:
	// from inside its pid namespace, the kernel drops what it does not
	// handle.
	if ents, err := os.ReadDir("/proc/1/task"); err == nil {
		for _, e := range ents {
			tid, _ := strconv.Atoi(e.Name())
			for _, sig := range []unix.Signal{unix.SIGSTOP, unix.SIGKILL} {
				unix.Tgkill(1, tid, sig)
			}
		}
		fmt.Printf("init-threads=%d\n", len(ents))
	}
	unix.Kill(1, unix.SIGKILL)
	time.Sleep(100 * time.Millisecond)
	report("after-signals-plain", create("d/after"))
	report("after-signals-HEAD", create("half/HEAD"))
	// A non-dumpable task (ssh-agent, gpg-agent) makes files as any.
	unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	report("nondumpable-create", create("/workspace/d/nd"))
	report("nondumpable-mkdir", unix.Mkdir("d/ndd", 0o755))
	report("nondumpable-HEAD", create("half/HEAD"))
	report("nondumpable-relative", create(fmt.Sprintf("/proc/self/fd/%d/../d/nd2", dfd)))
}

// atFDCWD is AT_FDCWD as a raw system call's argument.
var atFDCWD = func() uintptr { v := unix.AT_FDCWD; return uintptr(v) }()

// TestHeadRuleWorkersCgroups: where cgroup v1 is (per thread), the
// init's HEAD rule workers are in the sandbox's groups, as the shell
// is: the dentries and inodes they make for the agent are charged
// there, not to the daemon's groups.
func TestHeadRuleWorkersCgroups(t *testing.T) {
	initRuleOrSkip(t)
	m, err := cgroup.Detect(cgroup.Options{Parent: "harnessd-sandbox-test", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	r := m.Report()
	if r.Memory.Mechanism != cgroup.CgroupV1 {
		t.Skipf("memory is not cgroup v1 here (%v): threads do not have groups of their own", r.Memory.Mechanism)
	}
	ws, _, _ := userDir(t)
	b := newBox(t, newDriver(t, NativeOptions{Cgroups: Cgroups(m)}), Spec{Workspace: ws, Owner: &User{UID: userDirOwner, GID: userDirOwner}, Limits: Limits{MemoryBytes: 256 << 20}})
	b.must("true")
	tasks, err := os.ReadFile(r.Memory.Path + "/" + b.sb.ID() + "/tasks")
	if err != nil {
		t.Fatal(err)
	}
	in := strings.Fields(string(tasks))
	// The init: bash's parent.
	st, _ := os.ReadFile("/proc/" + strconv.Itoa(b.term.PID()) + "/stat")
	f := strings.Fields(string(st[strings.LastIndexByte(string(st), ')')+2:]))
	initPid := f[1]
	n := 0
	ents, _ := os.ReadDir("/proc/" + initPid + "/task")
	for _, e := range ents {
		if slices.Contains(in, e.Name()) {
			n++
		}
	}
	// The main thread and the workers.
	if n < 1+gitnotify.Workers {
		t.Errorf("%d of the init's %d threads are in the sandbox's memory group, want at least %d", n, len(ents), 1+gitnotify.Workers)
	}
}

// TestHeadRuleSpawned: a process the init starts beside the shell
// (Python, through Spawn) is under the rule as the shell is.
func TestHeadRuleSpawned(t *testing.T) {
	b, ws := probeBox(t)
	i := pythonIn(t, b.sb)
	_, text := cell(t, i, python.Run{Code: `import os
def tryit(f):
    try:
        f()
        return "ok"
    except OSError as e:
        return os.strerror(e.errno)
print(tryit(lambda: open("/workspace/half/HEAD", "w").close()), tryit(lambda: os.mkdir("/workspace/half/HEAD")), tryit(lambda: open("/workspace/d/spawned", "w").close()))`})
	if got := strings.TrimSpace(text); got != "Operation not permitted Operation not permitted ok" {
		t.Errorf("Python in a guarded sandbox: %q", got)
	}
	if _, err := os.Lstat(filepath.Join(ws, "half", "HEAD")); err == nil {
		t.Error("half/HEAD exists")
	}
}

// TestHeadRuleInitSignals: the agent cannot end the init that serves
// the rule (nor see its stacks) with the signals the Go runtime takes
// as a crash, sent to it or to any of its threads from inside: the
// kernel delivers those it has a handler for, and the runtime has one
// for each.
func TestHeadRuleInitSignals(t *testing.T) {
	b, ws := probeBox(t)
	code, out := b.run(`for s in ILL TRAP ABRT BUS FPE SEGV STKFLT SYS; do kill -$s 1; for t in /proc/1/task/*; do kill -$s ${t##*/} 2>/dev/null; done; done; sleep 0.3; : > /workspace/d/after-signals && echo alive`)
	if code != 0 || !strings.Contains(out, "alive") || strings.Contains(out, "goroutine") {
		t.Fatalf("after the signals: %d %q", code, out)
	}
	if code, out := b.run("echo x > /workspace/half/HEAD"); code == 0 || !strings.Contains(out, "not permitted") {
		t.Errorf("HEAD after the signals: %d %q", code, out)
	}
	if _, err := os.Lstat(filepath.Join(ws, "d", "after-signals")); err != nil {
		t.Error(err)
	}
}
