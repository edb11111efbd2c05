package gitlsm

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// The helper process: the test binary again, in a user namespace of its
// own (root mapped to root), doing what its arguments say once the test
// has written a line to its stdin (the rule is in place), and printing
// each result.
func TestMain(m *testing.M) {
	if os.Getenv("GITLSM_HELPER") == "1" {
		bufio.NewReader(os.Stdin).ReadString('\n')
		for _, op := range os.Args[1:] {
			fmt.Println(op, errno(do(op)))
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// do runs one operation, "verb:path[:path]".
func do(op string) error {
	f := strings.Split(op, ":")
	switch f[0] {
	case "create":
		fd, err := unix.Open(f[1], unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY, 0o644)
		if err == nil {
			unix.Close(fd)
		}
		return err
	case "mkfifo":
		return unix.Mknod(f[1], unix.S_IFIFO|0o644, 0)
	case "mknodreg":
		return unix.Mknod(f[1], unix.S_IFREG|0o644, 0)
	case "mkdir":
		return unix.Mkdir(f[1], 0o755)
	case "symlink":
		return unix.Symlink("refs/heads/main", f[1])
	case "link":
		return unix.Link(f[1], f[2])
	case "rename":
		return unix.Rename(f[1], f[2])
	case "exchange":
		return unix.Renameat2(unix.AT_FDCWD, f[1], unix.AT_FDCWD, f[2], unix.RENAME_EXCHANGE)
	case "tmpfile":
		// O_TMPFILE, then linkat through /proc: a name given to an
		// inode made without one.
		fd, err := unix.Open(filepath.Dir(f[1]), unix.O_TMPFILE|unix.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		return unix.Linkat(unix.AT_FDCWD, fmt.Sprintf("/proc/self/fd/%d", fd), unix.AT_FDCWD, f[1], unix.AT_SYMLINK_FOLLOW)
	}
	return fmt.Errorf("unknown op %q", op)
}

func errno(err error) string {
	var e syscall.Errno
	if errors.As(err, &e) {
		return unix.ErrnoName(e)
	}
	if err != nil {
		return err.Error()
	}
	return "ok"
}

// loadRule loads the rule or skips, saying why, where the kernel cannot.
func loadRule(tb testing.TB) *Rule {
	tb.Helper()
	if os.Geteuid() != 0 {
		tb.Skip("BPF LSM needs root")
	}
	r, err := Load()
	if err != nil {
		tb.Skipf("this kernel cannot run the rule: %v", err)
	}
	tb.Cleanup(func() { r.Close() })
	return r
}

// scratch mounts a tmpfs of its own (a device no one else uses) and
// returns it.
func scratch(tb testing.TB) (string, uint64) {
	tb.Helper()
	dir := tb.TempDir()
	if err := unix.Mount("gitlsm", dir, "tmpfs", 0, "mode=0755"); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		tb.Fatal(err)
	}
	return dir, st.Dev
}

// helper starts the helper process in a new user namespace with ops,
// and returns it with its namespace's inode number and a function that
// lets it run and returns its results by op.
func helper(t *testing.T, ops ...string) (uint32, func() map[string]string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], ops...)
	cmd.Env = append(os.Environ(), "GITLSM_HELPER=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1}},
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ns, err := UserNS(cmd.Process.Pid)
	if err != nil {
		cmd.Process.Kill()
		t.Fatal(err)
	}
	return ns, func() map[string]string {
		in.Write([]byte("go\n"))
		in.Close()
		if err := cmd.Wait(); err != nil {
			t.Fatalf("helper: %v: %s", err, out.String())
		}
		res := map[string]string{}
		for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			op, r, _ := strings.Cut(l, " ")
			res[op] = r
		}
		return res
	}
}

// TestRule: a guarded task gets EPERM for every way of making a new
// HEAD in a directory the owner does not own on a guarded filesystem,
// and nothing else changes: other names, replacing a HEAD, the owner's
// directories, other filesystems, other tasks.
func TestRule(t *testing.T) {
	r := loadRule(t)
	dir, dev := scratch(t)
	other, _ := scratch(t)
	const owner = 2146435072
	mk := func(p string, uid int) string {
		p = filepath.Join(dir, p)
		if err := os.MkdirAll(p, 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(p, uid, uid); err != nil {
			t.Fatal(err)
		}
		// The helper's root is not these uids' in its namespace: it
		// writes as others may.
		if err := os.Chmod(p, 0o777); err != nil {
			t.Fatal(err)
		}
		return p
	}
	user := mk("user", 1000) // a directory of the user's
	for _, d := range []string{"s1", "s2", "s3", "s4", "s5"} {
		mk("user/"+d, 1000)
	}
	mk("dd", 0)                 // a directory to rename to .git
	owned := mk("owned", owner) // one the guard handed over
	repo := mk("repo", 1000)    // a user's repository: HEAD exists
	for _, f := range []string{filepath.Join(repo, "HEAD"), filepath.Join(user, "src"), filepath.Join(dir, "HEAD.lock"), filepath.Join(dir, "x")} {
		if err := os.WriteFile(f, []byte("ref: refs/heads/main\n"), 0o666); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(user, "d"), 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Join(user, "d"), 0o777)
	os.WriteFile(filepath.Join(user, "d", "HEAD"), []byte("x"), 0o644)
	src := filepath.Join(user, "src")
	cases := map[string]string{
		"create:" + user + "/HEAD":                       "EPERM",
		"mkfifo:" + user + "/HEAD":                       "EPERM",
		"mknodreg:" + user + "/HEAD":                     "EPERM",
		"mkdir:" + user + "/HEAD":                        "EPERM",
		"symlink:" + user + "/HEAD":                      "EPERM",
		"link:" + src + ":" + user + "/HEAD":             "EPERM",
		"rename:" + dir + "/x:" + user + "/HEAD":         "EPERM",
		"tmpfile:" + user + "/HEAD":                      "EPERM",
		"create:" + dir + "/HEAD":                        "EPERM", // root's directory: not the owner's either
		"create:" + user + "/HEADS":                      "ok",
		"create:" + user + "/HEA":                        "ok",
		"create:" + user + "/head":                       "ok",
		"create:" + user + "/ABCD":                       "ok",
		"create:" + owned + "/HEAD":                      "ok",
		"symlink:" + owned + "/objects":                  "ok",
		"rename:" + dir + "/HEAD.lock:" + repo + "/HEAD": "ok", // git's own update of HEAD
		"exchange:" + user + "/d/HEAD:" + user + "/src":  "ok", // both names exist before and after
		"create:" + other + "/HEAD":                      "ok", // not a guarded filesystem
		// A .git that is not a directory names a gitdir anywhere.
		"create:" + user + "/.git":                   "EPERM",
		"symlink:" + user + "/s1/.git":               "EPERM",
		"link:" + src + ":" + user + "/s2/.git":      "EPERM",
		"rename:" + dir + "/x:" + user + "/s3/.git":  "EPERM",
		"mkdir:" + user + "/s4/.git":                 "ok",
		"rename:" + dir + "/dd:" + user + "/s5/.git": "ok",
		"create:" + owned + "/.git":                  "ok",
		"create:" + user + "/.gitx":                  "ok",
	}
	var ops []string
	for op := range cases {
		ops = append(ops, op)
	}
	ns, run := helper(t, ops...)
	if err := r.Add(ns, []uint64{dev}, owner); err != nil {
		t.Fatal(err)
	}
	got := run()
	for op, want := range cases {
		if got[op] != want {
			t.Errorf("%s: %s, want %s", op, got[op], want)
		}
	}
	// The test's own task is not guarded: it makes a HEAD anywhere.
	if err := os.WriteFile(filepath.Join(user, "d2"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(user, "HEAD"), filepath.Join(dir, "HEAD")} {
		os.Remove(p)
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Errorf("host: %v", err)
		}
	}
	r.Remove(ns, []uint64{dev})
	if n := r.Len(); n != 0 {
		t.Errorf("%d entries after Remove", n)
	}
}

// BenchmarkHostCreates is what the rule costs the host: creating and
// removing a file named HEAD (the name passes the program's first two
// checks, so it reads the task's namespace and looks the map up, which
// misses: the host is not guarded) and one named otherwise (the first
// check ends it), b.N times each with no program attached, then as many
// with the rule attached, in the same run: ns/op-off, ns/op-on and
// their ratio on/off.
func BenchmarkHostCreates(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("BPF LSM needs root")
	}
	dir, dev := scratch(b)
	names := []string{"HEAD", "main.go"}
	paths := make([]string, len(names))
	for i, n := range names {
		paths[i] = filepath.Join(dir, n)
	}
	measure := func(n int) time.Duration {
		start := time.Now()
		for range n {
			for _, p := range paths {
				fd, err := unix.Open(p, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
				if err != nil {
					b.Fatal(err)
				}
				unix.Close(fd)
				if err := unix.Unlink(p); err != nil {
					b.Fatal(err)
				}
			}
		}
		return time.Since(start)
	}
	measure(1000) // warm the dentry cache and the allocator
	off := measure(b.N)
	r, err := Load()
	if err != nil {
		b.Skipf("this kernel cannot run the rule: %v", err)
	}
	defer r.Close()
	// A guarded sandbox on this filesystem: the map is not empty.
	if err := r.Add(1, []uint64{dev}, 2146435072); err != nil {
		b.Fatal(err)
	}
	on := measure(b.N)
	n := float64(b.N * len(paths))
	b.ReportMetric(float64(off.Nanoseconds())/n, "ns/op-off")
	b.ReportMetric(float64(on.Nanoseconds())/n, "ns/op-on")
	b.ReportMetric(float64(on)/float64(off), "on/off")
	// The program's own time, by the kernel's count (a third pass: the
	// count costs time too): inode_create's, per run.
	if stats, err := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME)); err == nil {
		before, err1 := r.progs[0].Stats()
		measure(b.N)
		after, err2 := r.progs[0].Stats()
		stats.Close()
		if err1 == nil && err2 == nil && after.RunCount > before.RunCount {
			b.ReportMetric(float64((after.Runtime-before.Runtime).Nanoseconds())/float64(after.RunCount-before.RunCount), "ns/prog-run")
		}
	}
}
