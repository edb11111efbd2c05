//go:build linux && (amd64 || arm64)

package gitnotify

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/core/sandbox/seccomp"
	"golang.org/x/sys/unix"
)

// run is Eval, failing the test on a malformed program.
func run(t *testing.T, prog []unix.SockFilter, arch, nr uint32, args ...uint64) uint32 {
	t.Helper()
	action, err := seccomp.Eval(prog, arch, nr, args...)
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
	type tc struct {
		name string
		arch uint32
		nr   uint32
		args []uint64
		want uint32
	}
	cases := []tc{
		{"read", nativeArch, unix.SYS_READ, nil, retAllow},
		{"openat read", nativeArch, unix.SYS_OPENAT, []uint64{0, 0, unix.O_RDONLY}, retAllow},
		{"openat O_CREAT", nativeArch, unix.SYS_OPENAT, []uint64{0, 0, unix.O_WRONLY | unix.O_CREAT | unix.O_TRUNC}, retNotify},
		{"openat O_TMPFILE", nativeArch, unix.SYS_OPENAT, []uint64{0, 0, unix.O_TMPFILE | unix.O_RDWR}, retAllow},
		{"openat O_PATH|O_CREAT", nativeArch, unix.SYS_OPENAT, []uint64{0, 0, unix.O_PATH | unix.O_CREAT}, retAllow},
		{"openat O_CREAT high bits", nativeArch, unix.SYS_OPENAT, []uint64{0, 0, 1<<32 | unix.O_CREAT}, retNotify},
		{"openat2", nativeArch, sysOpenat2, nil, retNoSys},
		{"foreign arch", unix.AUDIT_ARCH_I386, unix.SYS_OPENAT, []uint64{0, 0, unix.O_CREAT}, retEPERM},
		{"unlinkat", nativeArch, unix.SYS_UNLINKAT, nil, retAllow},
	}
	for _, o := range opens {
		for _, f := range []struct {
			flags uint64
			want  uint32
		}{{unix.O_CREAT, retNotify}, {unix.O_RDWR | unix.O_APPEND, retAllow}} {
			args := make([]uint64, 6)
			args[o.flagsArg] = f.flags
			cases = append(cases, tc{fmt.Sprintf("open-like %d flags %#x", o.nr, f.flags), nativeArch, o.nr, args, f.want})
		}
	}
	for _, nr := range trapped {
		cases = append(cases, tc{fmt.Sprintf("trapped %d", nr), nativeArch, nr, nil, retNotify})
	}
	if x32Bit != 0 {
		cases = append(cases, tc{"x32 mkdir", nativeArch, x32Bit | unix.SYS_MKDIRAT, nil, retEPERM})
	}
	for _, c := range cases {
		if got := run(t, prog, c.arch, c.nr, c.args...); got != c.want {
			t.Errorf("%s: %#x, want %#x", c.name, got, c.want)
		}
	}
}

const childEnv = "HARNESSD_GITNOTIFY_TEST_CHILD"

func init() {
	if os.Getenv(childEnv) != "" || os.Getenv(benchEnv) != "" {
		runtime.LockOSThread() // the main thread, which gets the filter
	}
}

func TestMain(m *testing.M) {
	if dir := os.Getenv(childEnv); dir != "" {
		os.Exit(child(dir))
	}
	if v := os.Getenv(benchEnv); v != "" {
		dir, rule, _ := strings.Cut(v, ":")
		os.Exit(benchChild(dir, rule == "true"))
	}
	os.Exit(m.Run())
}

// child serves its own main thread's calls in dir (guarded, its owner
// not the rule's) and reports each result as name=errno.
func child(dir string) int {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		fmt.Println("stat:", err)
		return 1
	}
	s, err := Start(Rule{Owner: 4242, Devs: []uint64{st.Dev}}, nil)
	if err != nil {
		fmt.Println("start:", err)
		return 1
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		fmt.Println("nnp:", err)
		return 1
	}
	l, err := Install()
	if err != nil {
		fmt.Println("install:", err)
		return 1
	}
	s.Serve(l)
	if err := unix.Chdir(dir); err != nil {
		fmt.Println("chdir:", err)
		return 1
	}
	report := func(name string, err error) {
		errno := 0
		if e, ok := err.(unix.Errno); ok {
			errno = int(e)
		} else if err != nil {
			errno = -1
		}
		fmt.Printf("%s=%d\n", name, errno)
	}
	open := func(p string, flags int) error {
		fd, err := unix.Open(p, flags, 0o644)
		if err == nil {
			unix.Close(fd)
		}
		return err
	}
	unix.Mkdir("own", 0o755)
	unix.Chown("own", 4242, -1)
	unix.Chmod("own", 0o777)
	report("mkdir-plain", unix.Mkdir("d", 0o755))
	report("open-plain", open("d/f", unix.O_WRONLY|unix.O_CREAT))
	report("open-HEAD", open("d/HEAD", unix.O_WRONLY|unix.O_CREAT))
	report("open-abs-HEAD", open(dir+"/d/HEAD", unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC))
	report("mkdir-HEAD", unix.Mkdir("d/HEAD", 0o755))
	report("mkdir-HEAD-slash", unix.Mkdir("d/HEAD/", 0o755))
	report("symlink-HEAD", unix.Symlink("x", "d/HEAD"))
	report("mknod-HEAD", unix.Mknod("d/HEAD", unix.S_IFIFO|0o644, 0))
	report("link-HEAD", unix.Link("d/f", "d/HEAD"))
	report("rename-HEAD", unix.Rename("d/f", "d/HEAD"))
	report("symlink-dotgit", unix.Symlink("..", "d/.git"))
	report("open-dotgit", open("d/.git", unix.O_WRONLY|unix.O_CREAT))
	report("mkdir-dotgit", unix.Mkdir("d/.git", 0o755))
	report("rename-file-dotgit", unix.Rename("d/f", "d/x/.git"))
	unix.Mkdir("d/x", 0o755)
	report("rename-file-dotgit2", unix.Rename("d/f", "d/x/.git"))
	unix.Mkdir("d/g", 0o755)
	report("rename-dir-dotgit", unix.Rename("d/g", "d/x/.git"))
	report("own-HEAD", open("own/HEAD", unix.O_WRONLY|unix.O_CREAT))
	// A symlink, then O_CREAT through it: its target is checked.
	report("symlink-to-HEAD", unix.Symlink("HEAD", "d/ln"))
	report("open-through-link", open("d/ln", unix.O_WRONLY|unix.O_CREAT))
	report("symlink-to-abs-HEAD", unix.Symlink(dir+"/d/x/HEAD", "d/ln2"))
	report("open-through-link2", open("d/ln2", unix.O_WRONLY|unix.O_CREAT))
	report("open-through-link-ok", open("d/ln3", unix.O_WRONLY|unix.O_CREAT))
	// Through a directory descriptor, /proc/self/fd and /proc/self/cwd.
	dfd, _ := unix.Open("d", unix.O_PATH|unix.O_DIRECTORY, 0)
	fd, err := unix.Openat(dfd, "HEAD", unix.O_WRONLY|unix.O_CREAT, 0o644)
	if err == nil {
		unix.Close(fd)
	}
	report("openat-dirfd-HEAD", err)
	report("proc-self-fd-HEAD", open(fmt.Sprintf("/proc/self/fd/%d/HEAD", dfd), unix.O_WRONLY|unix.O_CREAT))
	report("proc-self-cwd-HEAD", open("/proc/self/cwd/d/HEAD", unix.O_WRONLY|unix.O_CREAT))
	report("proc-self-fd-ok", open(fmt.Sprintf("/proc/self/fd/%d/ok", dfd), unix.O_WRONLY|unix.O_CREAT))
	report("proc-init-fd", open("/proc/1/cwd/x", unix.O_WRONLY|unix.O_CREAT))
	// O_TMPFILE linked in.
	tfd, err := unix.Open("d", unix.O_TMPFILE|unix.O_WRONLY, 0o644)
	report("tmpfile", err)
	report("tmpfile-link-HEAD", unix.Linkat(unix.AT_FDCWD, fmt.Sprintf("/proc/self/fd/%d", tfd), unix.AT_FDCWD, "d/HEAD", unix.AT_SYMLINK_FOLLOW))
	report("tmpfile-link-ok", unix.Linkat(unix.AT_FDCWD, fmt.Sprintf("/proc/self/fd/%d", tfd), unix.AT_FDCWD, "d/tmp", unix.AT_SYMLINK_FOLLOW))
	// Replacing an existing HEAD is allowed.
	os.WriteFile(dir+"/own/HEAD.lock", []byte("x"), 0o644) // the filter's own path
	report("write-own-HEAD", os.WriteFile("own/HEAD", []byte("ref: refs/heads/main\n"), 0o644))
	unix.Chown("own", 0, -1)
	report("replace-HEAD", unix.Rename("own/HEAD.lock", "own/HEAD"))
	b, _ := os.ReadFile("own/HEAD")
	fmt.Printf("HEAD=%q\n", b)
	report("open-existing-HEAD", open("own/HEAD", unix.O_WRONLY|unix.O_CREAT|unix.O_APPEND))
	report("open-existing-HEAD-excl", open("own/HEAD", unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL))
	report("open-eexist", open("d/f2", unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL))
	report("open-eexist2", open("d/f2", unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL))
	report("enoent", open("nope/f", unix.O_WRONLY|unix.O_CREAT))
	report("enotdir", open("d/f2/x", unix.O_WRONLY|unix.O_CREAT))
	report("eisdir", open("d", unix.O_WRONLY|unix.O_CREAT))
	report("o-path-creat", open("d/opath", unix.O_PATH|unix.O_CREAT))
	report("o-path-creat-existing", open("d/f2", unix.O_PATH|unix.O_CREAT))
	report("openat2", func() error {
		_, err := unix.Openat2(unix.AT_FDCWD, "d/o2", &unix.OpenHow{Flags: unix.O_CREAT | unix.O_WRONLY})
		return err
	}())
	unix.Umask(0o077)
	open("d/umask", unix.O_WRONLY|unix.O_CREAT)
	var ust unix.Stat_t
	unix.Stat("d/umask", &ust)
	fmt.Printf("umask-mode=%o\n", ust.Mode&0o777)
	// A FIFO opened for writing with O_CREAT waits for its reader in the
	// init, not in a worker: other calls go on.
	unix.Mkfifo("d/fifo", 0o644)
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // not the filtered thread: the reader
		defer runtime.UnlockOSThread()
		b, err := os.ReadFile(dir + "/d/fifo")
		if err == nil && string(b) != "fifo" {
			err = fmt.Errorf("read %q", b)
		}
		done <- err
	}()
	report("fifo-write", os.WriteFile("d/fifo", []byte("fifo"), 0o644))
	report("fifo-read", <-done)
	// A FIFO's reader opening with O_CREAT waits for its writer, and
	// reads what it writes.
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		time.Sleep(50 * time.Millisecond)
		done <- os.WriteFile(dir+"/d/fifo", []byte("back"), 0o644)
	}()
	rfd, err := unix.Open("d/fifo", unix.O_RDONLY|unix.O_CREAT, 0o644)
	report("fifo-reader", err)
	if err == nil {
		b := make([]byte, 16)
		n, _ := unix.Read(rfd, b)
		fmt.Printf("fifo-reader-got=%q\n", b[:max(n, 0)])
		fl, _ := unix.FcntlInt(uintptr(rfd), unix.F_GETFL, 0)
		fmt.Printf("fifo-reader-nonblock=%v\n", fl&unix.O_NONBLOCK != 0)
		unix.Close(rfd)
	}
	report("fifo-writer", <-done)
	cfd, err := unix.Open("d/cloexec", unix.O_WRONLY|unix.O_CREAT|unix.O_CLOEXEC, 0o644)
	report("cloexec-open", err)
	if err == nil {
		fdfl, _ := unix.FcntlInt(uintptr(cfd), unix.F_GETFD, 0)
		fmt.Printf("cloexec=%v\n", fdfl&unix.FD_CLOEXEC != 0)
		unix.Close(cfd)
	}
	nfd, err := unix.Open("d/nocloexec", unix.O_WRONLY|unix.O_CREAT, 0o644)
	if err == nil {
		fdfl, _ := unix.FcntlInt(uintptr(nfd), unix.F_GETFD, 0)
		fmt.Printf("nocloexec=%v\n", fdfl&unix.FD_CLOEXEC == 0)
		unix.Close(nfd)
	}
	return 0
}

// TestServeInKernel: a thread with the filter gets every refusal of the
// rule, and every other call made as it asked.
func TestServeInKernel(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	got := map[string]string{}
	for _, l := range strings.Split(string(out), "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			got[k] = v
		}
	}
	eperm, ok := fmt.Sprint(int(unix.EPERM)), "0"
	want := map[string]string{
		"mkdir-plain": ok, "open-plain": ok, "open-HEAD": eperm, "open-abs-HEAD": eperm, "mkdir-HEAD": eperm,
		"mkdir-HEAD-slash": eperm, "symlink-HEAD": eperm, "mknod-HEAD": eperm, "link-HEAD": eperm, "rename-HEAD": eperm,
		"symlink-dotgit": eperm, "open-dotgit": eperm, "mkdir-dotgit": ok, "rename-file-dotgit": fmt.Sprint(int(unix.ENOENT)),
		"rename-file-dotgit2": eperm, "rename-dir-dotgit": ok, "own-HEAD": ok,
		"symlink-to-HEAD": ok, "open-through-link": eperm, "symlink-to-abs-HEAD": ok, "open-through-link2": eperm,
		"open-through-link-ok": ok, "openat-dirfd-HEAD": eperm, "proc-self-fd-HEAD": eperm, "proc-self-cwd-HEAD": eperm,
		"proc-self-fd-ok": ok, "proc-init-fd": fmt.Sprint(int(unix.EACCES)), "tmpfile": ok, "tmpfile-link-HEAD": eperm, "tmpfile-link-ok": ok,
		"write-own-HEAD": ok, "replace-HEAD": ok, "HEAD": `"x"`, "open-existing-HEAD": ok, "open-existing-HEAD-excl": fmt.Sprint(int(unix.EEXIST)),
		"open-eexist": ok, "open-eexist2": fmt.Sprint(int(unix.EEXIST)), "enoent": fmt.Sprint(int(unix.ENOENT)),
		"enotdir": fmt.Sprint(int(unix.ENOTDIR)), "eisdir": fmt.Sprint(int(unix.EISDIR)), "openat2": fmt.Sprint(int(unix.ENOSYS)), "o-path-creat": fmt.Sprint(int(unix.ENOENT)), "o-path-creat-existing": ok,
		"umask-mode": "600", "fifo-write": ok, "fifo-read": ok,
		"fifo-reader": ok, "fifo-reader-got": `"back"`, "fifo-reader-nonblock": "false", "fifo-writer": ok,
		"cloexec-open": ok, "cloexec": "true", "nocloexec": "true",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if t.Failed() {
		t.Logf("child:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "d", "HEAD")); err == nil {
		t.Error("d/HEAD exists")
	}
}

const benchEnv = "HARNESSD_GITNOTIFY_BENCH_CHILD"

// benchChild creates n files in dir, with the filter served if rule, and
// prints the microseconds each took.
func benchChild(dir string, rule bool) int {
	if rule {
		s, err := Start(Rule{Owner: 4242}, nil)
		if err != nil {
			fmt.Println("start:", err)
			return 1
		}
		unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
		l, err := Install()
		if err != nil {
			fmt.Println("install:", err)
			return 1
		}
		s.Serve(l)
	}
	const n = 5000
	t0 := time.Now()
	for i := range n {
		fd, err := unix.Open(dir+"/f"+strconv.Itoa(i), unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC, 0o644)
		if err != nil {
			fmt.Println("open:", err)
			return 1
		}
		unix.Close(fd)
	}
	fmt.Printf("%.1f\n", float64(time.Since(t0).Microseconds())/n)
	return 0
}

// BenchmarkCreate is one O_CREAT open in tmpfs (/dev/shm), served by
// the rule and not: the cost of the round trip to the serving thread.
func BenchmarkCreate(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root")
	}
	for _, rule := range []bool{false, true} {
		var sum float64
		for range b.N {
			dir, _ := os.MkdirTemp("/dev/shm", "gitnotify-bench-")
			cmd := exec.Command(os.Args[0], "-test.run=^$", "-test.bench=^$")
			cmd.Env = append(os.Environ(), benchEnv+"="+dir+":"+strconv.FormatBool(rule))
			out, err := cmd.CombinedOutput()
			os.RemoveAll(dir)
			if err != nil {
				b.Fatalf("%v %s", err, out)
			}
			us, err := strconv.ParseFloat(strings.TrimSpace(string(out)), 64)
			if err != nil {
				b.Fatalf("%q", out)
			}
			sum += us
		}
		b.ReportMetric(sum/float64(b.N), fmt.Sprintf("rule=%v-us/create", rule))
	}
}
