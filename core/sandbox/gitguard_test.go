package sandbox

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/core/terminal"
)

// userDirAttacks are repositories the agent makes during a session in a
// directory its user named (the sandbox is that user: git on the host
// would trust what it writes), each with code a host git would run; MARK
// is the host's marker directory and dir where the user's git then runs.
var userDirAttacks = []struct{ name, cmd, dir string }{
	{"init at the top", `git init -q -b main && git config core.fsmonitor "touch MARK/top-fsmonitor; false" &&
printf '#!/bin/sh\ntouch MARK/top-hook\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit`, "."},
	{"git init sub, config appended", `git init -q -b main sub && printf '[core]\n\tfsmonitor = "touch MARK/sub-fsmonitor; false"\n[alias]\n\tst = "!touch MARK/sub-alias"\n' >> sub/.git/config`, "sub"},
	{"clone", `mkdir -p src && git -C src init -q -b main && echo 1 > src/f && git -C src add f && git -C src commit -qm 1 &&
git clone -q src cl && git -C cl config core.fsmonitor "touch MARK/clone-fsmonitor; false"`, "cl"},
	{"gitdir by hand", `mkdir -p hand/.git/objects hand/.git/refs/heads && echo 'ref: refs/heads/main' > hand/.git/HEAD &&
printf '[core]\n\trepositoryformatversion = 0\n\tfsmonitor = "touch MARK/hand; false"\n' > hand/.git/config`, "hand"},
	{".git file to a gitdir", `mkdir -p ptr gd/objects gd/refs/heads && echo 'ref: refs/heads/main' > gd/HEAD &&
printf '[core]\n\tfsmonitor = "touch MARK/gitfile; false"\n' > gd/config && printf 'gitdir: ../gd\n' > ptr/.git`, "ptr"},
	{".git file renamed into place", `mkdir -p ren gd2/objects gd2/refs/heads && echo 'ref: refs/heads/main' > gd2/HEAD &&
printf '[core]\n\tfsmonitor = "touch MARK/renamed; false"\n' > gd2/config && printf 'gitdir: ../gd2\n' > ren/notgit && mv ren/notgit ren/.git`, "ren"},
	{".git symlink", `mkdir -p lnk sl/objects sl/refs/heads && echo 'ref: refs/heads/main' > sl/HEAD &&
printf '[core]\n\tfsmonitor = "touch MARK/symlink; false"\n' > sl/config && ln -s ../sl lnk/.git`, "lnk"},
	{"gitdir renamed into place", `mkdir -p mv1 stage/objects stage/refs/heads && echo 'ref: refs/heads/main' > stage/HEAD &&
printf '[core]\n\tfsmonitor = "touch MARK/moved; false"\n' > stage/config && mv stage mv1/.git`, "mv1"},
	{"commondir", `git init -q -b main cd && mkdir -p cdx/objects cdx/refs/heads cdx/hooks && echo ../../cdx > cd/.git/commondir &&
printf '[core]\n\tfsmonitor = "touch MARK/commondir; false"\n' > cdx/config &&
printf '#!/bin/sh\ntouch MARK/commondir-hook\n' > cdx/hooks/pre-commit && chmod +x cdx/hooks/pre-commit`, "cd"},
	{"config.worktree", `git init -q -b main wt && printf '[extensions]\n\tworktreeConfig = true\n' >> wt/.git/config &&
printf '[core]\n\tfsmonitor = "touch MARK/worktree; false"\n' > wt/.git/config.worktree`, "wt"},
	{"include.path", `git init -q -b main inc && printf '[core]\n\tfsmonitor = "touch MARK/include; false"\n' > inc.cfg &&
printf '[include]\n\tpath = ../../inc.cfg\n' >> inc/.git/config`, "inc"},
	{"hooks", `git init -q -b main hk && for h in pre-commit post-commit post-checkout post-index-change reference-transaction; do
printf '#!/bin/sh\ntouch MARK/hook-'$h'\n' > hk/.git/hooks/$h && chmod +x hk/.git/hooks/$h; done`, "hk"},
	{"bare repository", `git init -q --bare b.git && printf '[alias]\n\tst = "!touch MARK/bare"\n[core]\n\tfsmonitor = "touch MARK/bare-fsmonitor; false"\n' >> b.git/config`, "b.git"},
	{"bare by hand", `mkdir -p bh/objects bh/refs && echo 'ref: refs/heads/main' > bh/HEAD && printf '[alias]\n\tst = "!touch MARK/bare-hand"\n' > bh/config`, "bh"},
	{"worktrees entry", `git init -q -b main wtr && echo 1 > wtr/f && git -C wtr add f && git -C wtr commit -qm 1 && git -C wtr worktree add -q ../wtl &&
printf '[core]\n\tfsmonitor = "touch MARK/linked; false"\n' >> wtr/.git/config`, "wtr"},
}

// userDirOwner is the host user who names the workspace in the tests of
// this file.
const userDirOwner = 4343

// userDir makes a workspace owned by userDirOwner and a marker directory
// anyone may write, and returns the git that user runs on the host.
func userDir(t *testing.T) (ws, marker string, git func(dir string, args ...string) (string, error)) {
	t.Helper()
	ws = t.TempDir()
	os.Chmod(filepath.Dir(ws), 0o755)
	if err := os.Chown(ws, userDirOwner, userDirOwner); err != nil {
		t.Fatal(err)
	}
	marker = t.TempDir()
	os.Chmod(filepath.Dir(marker), 0o755)
	os.Chmod(marker, 0o777)
	return ws, marker, func(dir string, args ...string) (string, error) { return hostGitAs(userDirOwner, dir, args...) }
}

// noMarks fails the test if the sandbox's code ran on the host, and
// clears the marker directory for the next check.
func noMarks(t *testing.T, marker, who, out string) {
	t.Helper()
	ents, _ := os.ReadDir(marker)
	for _, e := range ents {
		t.Errorf("a host git as %s ran the sandbox's code: %s\n%s", who, e.Name(), out)
		os.Remove(filepath.Join(marker, e.Name())) // the next attack's own
	}
}

// TestGitUserDirMidSession: in a directory its user named, the sandbox
// is that user, and yet a repository the agent makes there during the
// session, in any of the forms above, runs nothing in that user's git
// on the host (nor root's), right after the command that made it, while
// the shell that made it still runs (gap 1 of issue 16). Git inside
// keeps working in each of them.
func TestGitUserDirMidSession(t *testing.T) {
	requireRoot(t)
	d := newDriver(t, NativeOptions{})
	ws, marker, git := userDir(t)
	b := newBox(t, d, Spec{Workspace: ws, Owner: &User{UID: userDirOwner, GID: userDirOwner}})
	b.must("git config --global user.name agent && git config --global user.email a@example.com")
	for _, a := range userDirAttacks {
		t.Run(a.name, func(t *testing.T) {
			b.must(strings.ReplaceAll(a.cmd, "MARK", marker))
			out := hostRuns(git, ws, a.dir)
			noMarks(t, marker, "the workspace's user", out)
			if !strings.Contains(out, "dubious ownership") {
				t.Errorf("the user's git was not refused by ownership: %s", out)
			}
			out = hostRuns(hostGit, ws, a.dir)
			noMarks(t, marker, "root", out)
			if a.dir == "." || a.dir == "sub" || a.dir == "cl" || a.dir == "hk" || a.dir == "wtr" {
				// Git inside still works in it: status, add, commit.
				if code, out := b.run("cd " + a.dir + " && echo in >> f && git add f && git commit -qm in --no-verify && git status --porcelain && git log --oneline | head -1; cd /workspace"); code != 0 {
					t.Errorf("git inside: exit %d: %s", code, out)
				}
			}
		})
	}
	// What the agent made is the user's to read and write still: only the
	// repositories' own directories (or .git files) changed owner.
	var st unix.Stat_t
	if err := unix.Lstat(filepath.Join(ws, "src", "f"), &st); err == nil && st.Uid != userDirOwner {
		t.Errorf("a file the agent made in src is uid %d's, not the user's", st.Uid)
	}
	if out, err := hostGitAs(userDirOwner, filepath.Join(ws, "sub"), "-c", "safe.directory=*", "-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null",
		"-c", "alias.st=status", "status", "--porcelain"); err != nil {
		t.Errorf("the user cannot read the quarantined repository when they choose to: %v %s", err, out)
	}
}

// TestGitUserDirOwnRepos: the repositories the user had in the directory
// when the session started stay theirs, trusted by their git and
// pinned in the sandbox, and a new shell leaves them so.
func TestGitUserDirOwnRepos(t *testing.T) {
	requireRoot(t)
	d := newDriver(t, NativeOptions{})
	ws, marker, git := userDir(t)
	for _, c := range [][]string{{"init", "-q", "-b", "main"}, {"init", "-q", "-b", "main", "vendor/lib"}, {"init", "-q", "--bare", "store.git"}} {
		if out, err := git(ws, c...); err != nil {
			t.Fatalf("git %v: %v %s", c, err, out)
		}
	}
	b := newBox(t, d, Spec{Workspace: ws, Owner: &User{UID: userDirOwner, GID: userDirOwner}})
	b.must("git config --global user.name agent && git config --global user.email a@example.com && echo 1 > f && git add f && git commit -qm 1")
	b.must("git init -q -b main new && git -C new config core.fsmonitor 'touch " + marker + "/new; false'")
	b.term.Close()
	b2 := newBox(t, d, Spec{Workspace: ws, Owner: &User{UID: userDirOwner, GID: userDirOwner}})
	b2.must("git config --global user.name agent && git config --global user.email a@example.com && echo 2 >> f && git commit -qam 2")
	for _, dir := range []string{".", "vendor/lib", "store.git"} {
		if out, err := git(filepath.Join(ws, dir), "rev-parse", "--git-dir"); err != nil {
			t.Errorf("the user's own repository %s is no longer theirs to their git: %s", dir, out)
		}
	}
	out := hostRuns(git, ws, "new")
	noMarks(t, marker, "the workspace's user", out)
}

// TestGitUserDirSweeps: where the guard cannot watch (no fanotify), what
// the agent made is handed over at the next shell start, at Destroy, and
// by the next daemon's Cleanup after one that died; and a repository
// made by hand in a subdirectory while nothing watched is found too.
func TestGitUserDirSweeps(t *testing.T) {
	requireRoot(t)
	state := stateDir(t)
	d := newDriver(t, NativeOptions{StateDir: state})
	ws, marker, git := userDir(t)
	own := &User{UID: userDirOwner, GID: userDirOwner}
	refused := func(dir string) {
		t.Helper()
		out := hostRuns(git, ws, dir)
		noMarks(t, marker, "the workspace's user", out)
		if !strings.Contains(out, "dubious ownership") {
			t.Errorf("%s: the user's git was not refused by ownership: %s", dir, out)
		}
	}
	plant := func(b *box, dir string) {
		t.Helper()
		b.must("mkdir -p " + dir + " && git init -q " + dir + " && git -C " + dir + " config core.fsmonitor 'touch " + marker + "/" + filepath.Base(dir) + "; false'")
	}
	b := newBox(t, d, Spec{Workspace: ws, Owner: own})
	sb := b.sb.(*nativeSandbox)
	sb.guard.stop() // as on a host without fanotify
	plant(b, "a/b/restart")
	b.term.Close()
	term, err := terminal.New(t.Context(), termOptions(sb))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { term.Close() })
	refused("a/b/restart")

	b.term = term
	plant(b, "destroyed")
	term.Close()
	if err := sb.Destroy(t.Context()); err != nil {
		t.Fatal(err)
	}
	refused("destroyed")

	// A daemon that died: its sandbox's record is left; the next one's
	// Cleanup sweeps.
	b = newBox(t, d, Spec{Workspace: ws, Owner: own})
	sb = b.sb.(*nativeSandbox)
	sb.guard.stop()
	plant(b, "crashed")
	b.term.Close()
	rec, err := os.ReadFile(filepath.Join(sb.dir, guardRecordName))
	if err != nil {
		t.Fatal(err)
	}
	if err := newDriver(t, NativeOptions{StateDir: state}).Cleanup(t.Context()); err != nil {
		t.Fatal(err)
	}
	refused("crashed")
	if _, err := os.Stat(filepath.Join(sb.dir, guardRecordName)); !os.IsNotExist(err) {
		t.Errorf("the record is left after Cleanup (%s): %v", rec, err)
	}
	for _, dir := range []string{"."} {
		if _, err := os.Stat(filepath.Join(ws, dir, ".git")); err == nil {
			t.Errorf("a repository appeared at %s", dir)
		}
	}
}

// guardOwner is the uid the guards of the tests and benchmarks below
// hand repositories to (a sandbox's dedicated uid).
const guardOwner = userDirOwner + 1

// guardedDir is a workspace owned by userDirOwner with a guard watching
// it (armed: nothing in it is the user's own), closed at the test's end.
func guardedDir(tb testing.TB, log *slog.Logger) (string, *gitGuard) {
	tb.Helper()
	ws := tb.TempDir()
	if err := os.Chown(ws, userDirOwner, userDirOwner); err != nil {
		tb.Fatal(err)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	g, err := newGitGuard(ws, userDirOwner, userDirOwner, guardOwner, log)
	if err != nil {
		tb.Fatalf("newGitGuard: %v", err)
	}
	g.arm(nil)
	tb.Cleanup(func() { g.stop(); g.closeWs() })
	return ws, g
}

// plantRepo makes dir/.git as the workspace's user would (a directory of
// theirs renamed into place), and returns its path.
func plantRepo(tb testing.TB, dir string) string {
	tb.Helper()
	stage, err := os.MkdirTemp(dir, "stage")
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.Chown(stage, userDirOwner, userDirOwner); err != nil {
		tb.Fatal(err)
	}
	git := filepath.Join(dir, ".git")
	if err := os.Rename(stage, git); err != nil {
		tb.Fatal(err)
	}
	return git
}

// handedOver waits up to a few seconds for p to be guardOwner's, and
// reports whether it became so.
func handedOver(p string) bool {
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(200 * time.Microsecond) {
		var st unix.Stat_t
		if unix.Lstat(p, &st) == nil && st.Uid == guardOwner {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// cpuTime is the CPU time, user and system, of the process
// (unix.RUSAGE_SELF) or of the calling thread (unix.RUSAGE_THREAD).
func cpuTime(who int) time.Duration {
	var ru unix.Rusage
	unix.Getrusage(who, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkGitGuardHostCreates: what guarded sessions cost the daemon
// while the host creates files elsewhere on the workspaces' filesystem
// (issue 16: each guard's fanotify group saw every create on the
// filesystem). One op is one file the host creates; daemon-ns/op is the
// process's CPU time (getrusage) but the creating thread's, from the
// first create until every guard has handed over a repository made
// after the last, and creator-ns/op the creating thread's own (create,
// close and unlink; the kernel queues an event to every group as it
// creates). Compare sessions=0, 1 and 5: the CPU time, not the wall
// clock, on a shared host.
func BenchmarkGitGuardHostCreates(b *testing.B) {
	requireRoot(b)
	for _, n := range []int{0, 1, 5} {
		b.Run(fmt.Sprintf("sessions=%d", n), func(b *testing.B) {
			var wss []string
			for range n {
				ws, _ := guardedDir(b, nil)
				wss = append(wss, ws)
			}
			host := b.TempDir()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			b.ResetTimer()
			self, thread := cpuTime(unix.RUSAGE_SELF), cpuTime(unix.RUSAGE_THREAD)
			for i := range b.N {
				// Removed at once: a directory that grows makes each create
				// dearer, whatever watches.
				f := filepath.Join(host, strconv.Itoa(i))
				fd, err := unix.Open(f, unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
				if err != nil {
					b.Fatal(err)
				}
				unix.Close(fd)
				unix.Unlink(f)
			}
			creator := cpuTime(unix.RUSAGE_THREAD) - thread
			for _, ws := range wss {
				if !handedOver(plantRepo(b, ws)) {
					b.Fatalf("%s: the repository was not handed over", ws)
				}
			}
			daemon := cpuTime(unix.RUSAGE_SELF) - self - creator
			b.StopTimer()
			b.ReportMetric(float64(daemon.Nanoseconds())/float64(b.N), "daemon-ns/op")
			b.ReportMetric(float64(creator.Nanoseconds())/float64(b.N), "creator-ns/op")
		})
	}
}
