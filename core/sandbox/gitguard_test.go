package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/core/event"
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

// watchAlone has the guards the test makes watch without the kernel
// rule (gitlsm), for tests of the watch itself.
func watchAlone(t *testing.T) {
	noKernelRule = true
	t.Cleanup(func() { noKernelRule = false })
}

// kernelRuled reports whether the guards made now have the HEAD rule
// (the kernel's or the init's).
func kernelRuled() bool {
	return !noKernelRule && (sharedKernelRule(slog.Default()) != nil || sharedInitRule())
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
	ruled := kernelRuled()
	b.must("git config --global user.name agent && git config --global user.email a@example.com")
	repos := map[string]bool{} // the attacks' directories where git inside made its repository
	for _, a := range userDirAttacks {
		t.Run(a.name, func(t *testing.T) {
			// Under the kernel rule, what makes a HEAD in a directory of
			// the user's fails: the repository is never made.
			code, made := b.run(strings.ReplaceAll(a.cmd, "MARK", marker))
			if code != 0 && !ruled {
				t.Fatalf("exit %d: %s", code, made)
			}
			out := hostRuns(git, ws, a.dir)
			noMarks(t, marker, "the workspace's user", out)
			if _, err := os.Stat(filepath.Join(ws, a.dir)); code != 0 && os.IsNotExist(err) {
				// The rule refused the HEAD of a git run inside that
				// lost the race with the watch's handover (git clone:
				// about 1 in 200), and git removed what it had made:
				// nothing there to trust or refuse.
				t.Logf("made nothing (exit %d): %s", code, made)
				return
			}
			if !strings.Contains(out, "dubious ownership") && !(ruled && strings.Contains(out, "not a git repository")) {
				t.Errorf("the user's git was not refused by ownership: %s", out)
			}
			out = hostRuns(hostGit, ws, a.dir)
			noMarks(t, marker, "root", out)
			if code != 0 {
				// Refused under the rule: the forms made by hand always;
				// a git run inside when it lost the race above but left
				// its directory (git init stops at the refused HEAD and
				// leaves a git directory without one: 1 run in 8 with
				// two CPU hogs on 2 cores), which no git takes for a
				// repository. Nothing for git inside to work in.
				t.Logf("made no repository (exit %d): %s", code, made)
				return
			}
			repos[a.dir] = true
			if a.dir == "." || a.dir == "sub" || a.dir == "cl" || a.dir == "hk" || a.dir == "wtr" && !ruled {
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
	if !repos["sub"] {
		return
	}
	if out, err := hostGitAs(userDirOwner, filepath.Join(ws, "sub"), "-c", "safe.directory=*", "-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null",
		"-c", "alias.st=status", "status", "--porcelain"); err != nil {
		t.Errorf("the user cannot read the quarantined repository when they choose to: %v %s", err, out)
	}
}

// TestGitUserDirOwnRepos: the repositories the user had in the directory
// when the session started stay theirs, pinned in the sandbox, lent to
// the sandbox's uid while a session runs (their git refuses them then)
// and trusted by their git again once it has ended, after a new shell
// too (a linked worktree's .git file too).
func TestGitUserDirOwnRepos(t *testing.T) {
	requireRoot(t)
	d := newDriver(t, NativeOptions{})
	ws, marker, git := userDir(t)
	for _, c := range [][]string{{"init", "-q", "-b", "main"}, {"init", "-q", "-b", "main", "vendor/lib"}, {"init", "-q", "--bare", "store.git"},
		{"-c", "user.name=u", "-c", "user.email=u@u", "commit", "-q", "--allow-empty", "-m", "0"}, {"worktree", "add", "-q", "wt"}} {
		if out, err := git(ws, c...); err != nil {
			t.Fatalf("git %v: %v %s", c, err, out)
		}
	}
	b := newBox(t, d, Spec{Workspace: ws, Owner: &User{UID: userDirOwner, GID: userDirOwner}})
	b.must("git config --global user.name agent && git config --global user.email a@example.com && echo 1 > f && git add f && git commit -qm 1")
	// Under the HEAD rule git init here is best-effort (the watch may
	// hand the new .git over after git writes HEAD): run again, as the
	// README says.
	b.must("for i in 1 2 3; do rm -rf new; git init -q -b main new 2>/dev/null && break; done && git -C new config core.fsmonitor 'touch " + marker + "/new; false'")
	b.term.Close()
	if err := b.sb.Destroy(t.Context()); err != nil {
		t.Fatal(err)
	}
	b2 := newBox(t, d, Spec{Workspace: ws, Owner: &User{UID: userDirOwner, GID: userDirOwner}})
	b2.must("git config --global user.name agent && git config --global user.email a@example.com && echo 2 >> f && git commit -qam 2")
	// While a session runs they are lent to the sandbox's uid, and the
	// user's git refuses them (gitlend_linux.go); at its end they are
	// theirs again.
	for _, dir := range []string{".", "vendor/lib", "store.git", "wt"} {
		if out, err := git(filepath.Join(ws, dir), "rev-parse", "--git-dir"); err == nil || !strings.Contains(out, "dubious ownership") {
			t.Errorf("the user's own repository %s while a session runs: %v %s", dir, err, out)
		}
	}
	b2.term.Close()
	if err := b2.sb.Destroy(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{".", "vendor/lib", "store.git", "wt"} {
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
	watchAlone(t) // a host without fanotify: the kernel rule would refuse git init its HEAD
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
	sb.guard.stop(t.Context()) // as on a host without fanotify
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
	sb.guard.stop(t.Context())
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
	g := watchDir(tb, ws, userDirOwner, log)
	g.arm(nil)
	return ws, g
}

// watchDir starts a guard of ws for repositories of user, not armed,
// and stops it at the test's end.
func watchDir(tb testing.TB, ws string, user int, log *slog.Logger) *gitGuard {
	tb.Helper()
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	g, err := newGitGuard(ws, user, user, guardOwner, log)
	if err != nil {
		tb.Fatalf("newGitGuard: %v", err)
	}
	tb.Cleanup(func() { g.stop(context.Background()); g.closeWs() })
	return g
}

// plantRepo makes dir/.git as the workspace's user would (a directory of
// theirs renamed into place), and returns its path.
func plantRepo(tb testing.TB, dir string) string {
	tb.Helper()
	return plantRepoAs(tb, dir, userDirOwner)
}

// plantRepoAs is plantRepo by user uid.
func plantRepoAs(tb testing.TB, dir string, uid int) string {
	tb.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	stage, err := os.MkdirTemp(dir, "stage")
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.Chown(stage, uid, uid); err != nil {
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
		if ownerOf(p) == guardOwner {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// ownerOf is p's owner, or -1.
func ownerOf(p string) int {
	var st unix.Stat_t
	if unix.Lstat(p, &st) != nil {
		return -1
	}
	return int(st.Uid)
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

// fanotifyGroups counts the process's fanotify descriptors that mark
// the filesystem (FAN_MARK_FILESYSTEM) path is on.
func fanotifyGroups(tb testing.TB, path string) int {
	tb.Helper()
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		tb.Fatal(err)
	}
	// fdinfo names a filesystem mark's device as the kernel's dev_t,
	// in hex: major<<20 | minor.
	sdev := fmt.Sprintf("sdev:%x ", unix.Major(st.Dev)<<20|unix.Minor(st.Dev))
	return countFanotify(tb, sdev)
}

// fanotifyFds counts the process's fanotify descriptors.
func fanotifyFds(tb testing.TB) int {
	tb.Helper()
	return countFanotify(tb, "")
}

// countFanotify counts the process's fanotify descriptors whose fdinfo
// holds mark ("" counts them all).
func countFanotify(tb testing.TB, mark string) int {
	tb.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		tb.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if l, _ := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); l != "anon_inode:[fanotify]" {
			continue
		}
		if mark != "" {
			info, _ := os.ReadFile(filepath.Join("/proc/self/fdinfo", e.Name()))
			if !strings.Contains(string(info), mark) {
				continue
			}
		}
		n++
	}
	return n
}

// openFds counts the process's open descriptors.
func openFds(tb testing.TB) int {
	tb.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		tb.Fatal(err)
	}
	return len(ents)
}

// TestGitGuardSharedGroup: guards of workspaces on one filesystem share
// one fanotify group (issue 16: a group each made every session read
// every create on the host); each still hands over what is made in its
// own workspace; a guard that stops hands over what was queued when it
// stopped, and nothing after, while the others keep guarding; the last
// one to stop closes the group.
func TestGitGuardSharedGroup(t *testing.T) {
	requireRoot(t)
	before := fanotifyFds(t)
	var wss []string
	var gs []*gitGuard
	for range 3 {
		ws, g := guardedDir(t, nil)
		wss, gs = append(wss, ws), append(gs, g)
	}
	if n := fanotifyGroups(t, wss[0]); n != 1 {
		t.Fatalf("3 guards on one filesystem: %d fanotify groups mark it, want 1", n)
	}
	if n := fanotifyFds(t) - before; n != 1 {
		t.Errorf("3 guards on one filesystem: %d more fanotify descriptors, want 1", n)
	}
	for i, ws := range wss {
		if p := plantRepo(t, filepath.Join(ws, "a")); !handedOver(p) {
			t.Errorf("guard %d: %s was not handed over", i, p)
		}
	}

	// Stopping: what was made before is handed over by the time stop
	// returns; what is made after is not the stopped guard's to hand.
	early := plantRepo(t, filepath.Join(wss[0], "b"))
	gs[0].stop(t.Context())
	if o := ownerOf(early); o != guardOwner {
		t.Errorf("a repository made before stop is uid %d's after it, want %d", o, guardOwner)
	}
	late := plantRepo(t, filepath.Join(wss[0], "c"))
	for i, ws := range wss[1:] {
		if p := plantRepo(t, filepath.Join(ws, "b")); !handedOver(p) {
			t.Errorf("guard %d, another having stopped: %s was not handed over", i+1, p)
		}
	}
	if o := ownerOf(late); o != userDirOwner {
		t.Errorf("a stopped guard handed over a repository made after it stopped (uid %d)", o)
	}
	if n := fanotifyGroups(t, wss[0]); n != 1 {
		t.Errorf("one guard of 3 stopped: %d groups mark the filesystem, want 1", n)
	}

	gs[1].stop(t.Context())
	gs[2].stop(t.Context())
	if n := fanotifyFds(t); n != before {
		t.Errorf("every guard stopped: %d fanotify descriptors, %d before", n, before)
	}
	fanGroups.mu.Lock()
	left := len(fanGroups.groups)
	fanGroups.mu.Unlock()
	if left != 0 {
		t.Errorf("every guard stopped: %d groups left", left)
	}

	// A new guard makes the group again.
	ws, _ := guardedDir(t, nil)
	if p := plantRepo(t, ws); !handedOver(p) {
		t.Errorf("a guard made after the group closed: %s was not handed over", p)
	}
}

// TestGitGuardNested: a workspace inside another (sessions over a
// directory and one below it, perhaps of different users): each guard
// gets what is made in its workspace, the outer one what is made in the
// inner one too, so a repository of the outer one's user is handed over
// wherever it appears in its workspace.
func TestGitGuardNested(t *testing.T) {
	requireRoot(t)
	const other = userDirOwner + 2
	outer, _ := guardedDir(t, nil)
	inner := filepath.Join(outer, "inner")
	os.Mkdir(inner, 0o755)
	os.Chown(inner, other, other)
	watchDir(t, inner, other, nil).arm(nil)
	for _, c := range []struct {
		dir string
		uid int
	}{{filepath.Join(outer, "x"), userDirOwner}, {filepath.Join(inner, "y"), other}, {filepath.Join(inner, "z"), userDirOwner}} {
		if p := plantRepoAs(t, c.dir, c.uid); !handedOver(p) {
			t.Errorf("%s, uid %d's: not handed over", p, c.uid)
		}
	}
}

// TestGitGuardHardLink: a .git the agent makes as a hard link to a file
// of the user's is removed, not handed over: a handover changes the
// inode's owner, so the user's file would become the sandbox's uid's.
func TestGitGuardHardLink(t *testing.T) {
	requireRoot(t)
	ws, _ := guardedDir(t, nil)
	precious := filepath.Join(ws, "precious")
	os.WriteFile(precious, []byte("gitdir: ../elsewhere\n"), 0o600)
	os.Chown(precious, userDirOwner, userDirOwner)
	dir := filepath.Join(ws, "x")
	os.Mkdir(dir, 0o755)
	os.Chown(dir, userDirOwner, userDirOwner)
	link := filepath.Join(dir, ".git")
	if err := os.Link(precious, link); err != nil {
		t.Fatal(err)
	}
	// A .git file of the agent's own, beside it, is handed over as ever.
	plain := filepath.Join(ws, "y", ".git")
	os.Mkdir(filepath.Dir(plain), 0o755)
	os.WriteFile(plain+".stage", []byte("gitdir: ../elsewhere\n"), 0o644)
	os.Chown(plain+".stage", userDirOwner, userDirOwner)
	os.Rename(plain+".stage", plain)
	if !handedOver(plain) {
		t.Fatalf("%s: not handed over", plain)
	}
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if _, err := os.Lstat(link); os.IsNotExist(err) {
			break
		}
	}
	if _, err := os.Lstat(link); !os.IsNotExist(err) {
		t.Errorf("the hard-linked .git is left: %v", err)
	}
	if got := ownerOf(precious); got != userDirOwner {
		t.Errorf("the user's linked file is uid %d's now", got)
	}
}

// TestGitGuardOwnGitFile: a .git file of the user's (a submodule's, a
// linked worktree's) that the first shell found is theirs through every
// later sweep: a handover would have their git refuse it, and one with
// another link would be removed.
func TestGitGuardOwnGitFile(t *testing.T) {
	requireRoot(t)
	ws := t.TempDir()
	os.Chown(ws, userDirOwner, userDirOwner)
	sub := filepath.Join(ws, "sub")
	os.Mkdir(sub, 0o755)
	file := filepath.Join(sub, ".git")
	os.WriteFile(file, []byte("gitdir: ../.git/modules/sub\n"), 0o644)
	os.Link(file, filepath.Join(ws, "backup-of-git-file"))
	for _, p := range []string{sub, file} {
		os.Chown(p, userDirOwner, userDirOwner)
	}
	g := watchDir(t, ws, userDirOwner, nil)
	repos := []Repo{{Path: "sub/.git", File: true}}
	g.arm(repos)
	g.sweep(repos)
	g.sweepAll()
	if _, err := os.Lstat(file); err != nil {
		t.Fatalf("the user's .git file: %v", err)
	}
	if got := ownerOf(file); got != userDirOwner {
		t.Errorf("the user's .git file is uid %d's after a sweep", got)
	}
}

// TestGitGuardPending: what the watch sees before arm waits for it:
// the repositories arm names stay the user's, the others are handed
// over then; and a guard stopped without arm hands over everything it
// saw.
func TestGitGuardPending(t *testing.T) {
	requireRoot(t)
	ws := t.TempDir()
	os.Chown(ws, userDirOwner, userDirOwner)
	g := watchDir(t, ws, userDirOwner, nil)
	own, agents := plantRepo(t, filepath.Join(ws, "own")), plantRepo(t, filepath.Join(ws, "new"))
	// The group has read both events by the time a later one is handed
	// over in another guarded workspace.
	if p := plantRepo(t, func() string { ws, _ := guardedDir(t, nil); return ws }()); !handedOver(p) {
		t.Fatalf("%s: not handed over", p)
	}
	if o := ownerOf(agents); o != userDirOwner {
		t.Errorf("handed over before arm said which repositories are the user's")
	}
	g.arm([]Repo{{Path: "own/.git"}})
	// The user's own is lent while the session runs (gitlend_linux.go),
	// and given back at its end; the agent's stays handed over.
	if o := ownerOf(own); o != guardOwner {
		t.Errorf("the user's own repository is uid %d's while the session runs, want %d (lent)", o, guardOwner)
	}
	if o := ownerOf(agents); o != guardOwner {
		t.Errorf("a repository seen before arm is uid %d's after it, want %d", o, guardOwner)
	}
	g.giveBackAll()
	if o := ownerOf(own); o != userDirOwner {
		t.Errorf("the user's own repository was not given back (uid %d)", o)
	}
	if o := ownerOf(agents); o != guardOwner {
		t.Errorf("the agent's repository was given to the user (uid %d)", o)
	}

	ws2 := t.TempDir()
	os.Chown(ws2, userDirOwner, userDirOwner)
	g2 := watchDir(t, ws2, userDirOwner, nil)
	p := plantRepo(t, ws2)
	g2.stop(t.Context())
	g2.sweepAll() // as stopGuard does
	// Stopped before arm, no shell of its sandbox ran: what it saw is
	// the user's (or another guard's), and nothing is handed over
	// (TestGitFailedStartKeepsUserRepos).
	if o := ownerOf(p); o != userDirOwner {
		t.Errorf("a guard stopped before arm handed over a repository it saw (uid %d)", o)
	}
}

// TestGitGuardSubmount: a filesystem mounted in the workspace (the
// sandbox gets it too) is watched through its own group, and what is
// made there is handed over.
func TestGitGuardSubmount(t *testing.T) {
	requireRoot(t)
	ws := t.TempDir()
	os.Chown(ws, userDirOwner, userDirOwner)
	mnt := filepath.Join(ws, "mnt")
	os.Mkdir(mnt, 0o755)
	if err := unix.Mount("tmpfs", mnt, "tmpfs", 0, "mode=0755,uid="+strconv.Itoa(userDirOwner)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Unmount(mnt, unix.MNT_DETACH) })
	g := watchDir(t, ws, userDirOwner, nil)
	g.arm(nil)
	if n := fanotifyGroups(t, mnt); n != 1 {
		t.Errorf("%d groups mark the submount's filesystem, want 1", n)
	}
	for _, d := range []string{ws, mnt} {
		if p := plantRepo(t, filepath.Join(d, "r")); !handedOver(p) {
			t.Errorf("%s: not handed over", p)
		}
	}
	g.stop(t.Context())
	if n := fanotifyGroups(t, mnt); n != 0 {
		t.Errorf("the guard stopped: %d groups mark the submount's filesystem", n)
	}
}

// TestGitGuardStopDuringEvents: guards start and stop, with a context
// done or not, while their workspaces and the rest of the filesystem
// see a stream of creations that reach the guards (every name one that
// may make a repository): nothing panics or races (go test -race), and
// no descriptor is left.
func TestGitGuardStopDuringEvents(t *testing.T) {
	requireRoot(t)
	fds := openFds(t)
	host := t.TempDir()
	ws := t.TempDir()
	os.Chown(ws, userDirOwner, userDirOwner)
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	for _, dir := range []string{host, ws} {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				d := filepath.Join(dir, strconv.Itoa(i%50))
				os.Mkdir(d, 0o755)
				os.Chown(d, userDirOwner, userDirOwner)
				for _, n := range []string{"HEAD", "objects", "refs", ".git"} {
					os.Mkdir(filepath.Join(d, n), 0o755)
				}
				os.RemoveAll(d)
			}
		})
	}
	done, stopNow := context.WithCancel(t.Context())
	stopNow()
	for i := range 40 {
		g, err := newGitGuard(ws, userDirOwner, userDirOwner, guardOwner, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			g.arm(nil)
		}
		time.Sleep(time.Duration(i%5) * time.Millisecond)
		stopCtx := t.Context()
		if i%3 == 0 {
			stopCtx = done
		}
		g.stop(stopCtx)
		g.closeWs()
	}
	cancel()
	wg.Wait()
	if n := openFds(t); n != fds {
		t.Errorf("%d descriptors open, %d before", n, fds)
	}
}

// logLines is a slog.Handler that keeps each record's message and
// attributes.
type logLines struct {
	mu    sync.Mutex
	lines []map[string]string
}

func (l *logLines) Enabled(context.Context, slog.Level) bool { return true }
func (l *logLines) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logLines) WithGroup(string) slog.Handler            { return l }
func (l *logLines) Handle(_ context.Context, r slog.Record) error {
	m := map[string]string{"msg": r.Message}
	r.Attrs(func(a slog.Attr) bool { m[a.Key] = a.Value.String(); return true })
	l.mu.Lock()
	l.lines = append(l.lines, m)
	l.mu.Unlock()
	return nil
}

// TestGitGuardLogLimit: each guard logs its first handoverLogLines
// handovers one by one, then a total at most every handoverLogEvery and
// at stop, on its own: two guards sharing a group each log their own.
func TestGitGuardLogLimit(t *testing.T) {
	requireRoot(t)
	const made = handoverLogLines + 5
	logs := []*logLines{{}, {}}
	var wss []string
	var gs []*gitGuard
	for _, l := range logs {
		ws, g := guardedDir(t, slog.New(l))
		wss, gs = append(wss, ws), append(gs, g)
	}
	for i := range made {
		for _, ws := range wss {
			if p := plantRepo(t, filepath.Join(ws, strconv.Itoa(i))); !handedOver(p) {
				t.Fatalf("%s: not handed over", p)
			}
		}
	}
	for i, g := range gs {
		g.stop(t.Context())
		var one int
		var totals []string
		for _, m := range logs[i].lines {
			switch {
			case strings.Contains(m["msg"], "a repository the agent made"):
				one++
			case strings.Contains(m["msg"], "more repositories"):
				if m["workspace"] != wss[i] {
					t.Errorf("guard %d: a total for workspace %s", i, m["workspace"])
				}
				totals = append(totals, m["since_last_line"]+"/"+m["in_all"])
			default:
				t.Errorf("guard %d: %v", i, m)
			}
		}
		// The first past the limit is a total at once (none for 10 s);
		// the rest wait for the next 10 s, or stop.
		if want := []string{"1/21", "4/25"}; one != handoverLogLines || strings.Join(totals, ",") != strings.Join(want, ",") {
			t.Errorf("guard %d: %d lines one by one, totals %v; want %d and %v", i, one, totals, handoverLogLines, want)
		}
	}
}

// BenchmarkGitGuardHandover: how long a repository made in a guarded
// workspace (a directory renamed to .git) stays the user's, from the
// rename's call (it is there before the call returns) until its owner
// is the sandbox's uid, with 1 or 5
// guarded workspaces on the filesystem: the window README's "What is
// not promised" states. Wall clock: compare on a quiet host, or runs
// taken in turns.
func BenchmarkGitGuardHandover(b *testing.B) {
	requireRoot(b)
	for _, n := range []int{1, 5} {
		b.Run(fmt.Sprintf("sessions=%d", n), func(b *testing.B) {
			var ws string
			for range n {
				ws, _ = guardedDir(b, nil)
			}
			took := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := range b.N {
				b.StopTimer()
				dir := filepath.Join(ws, strconv.Itoa(i))
				os.Mkdir(dir, 0o755)
				stage := filepath.Join(dir, "stage")
				os.Mkdir(stage, 0o755)
				os.Chown(stage, userDirOwner, userDirOwner)
				git := filepath.Join(dir, ".git")
				b.StartTimer()
				start := time.Now()
				if err := os.Rename(stage, git); err != nil {
					b.Fatal(err)
				}
				for ownerOf(git) != guardOwner {
					if time.Since(start) > 5*time.Second {
						b.Fatalf("%s: not handed over", git)
					}
				}
				took = append(took, time.Since(start))
			}
			b.StopTimer()
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(took[len(took)*99/100].Microseconds()), "p99-µs")
		})
	}
}

// TestGitUserDirSessionsHostBusy: two sessions in directories their user
// named share one fanotify group, and each gets every repository its
// agent makes handed over while both make them at once and the host
// creates files elsewhere on the filesystem (the red team's load, issue
// 16); once one session ends the other is still guarded, and the last
// to end closes the group.
func TestGitUserDirSessionsHostBusy(t *testing.T) {
	requireRoot(t)
	watchAlone(t) // the watch's handovers under load: the kernel rule would refuse the agent's HEADs
	d := newDriver(t, NativeOptions{})
	own := &User{UID: userDirOwner, GID: userDirOwner}
	var boxes []*box
	for range 2 {
		ws, _, _ := userDir(t)
		boxes = append(boxes, newBox(t, d, Spec{Workspace: ws, Owner: own}))
	}
	dedicated := boxes[0].sb.(*nativeSandbox).guard.owner
	if n := fanotifyGroups(t, boxes[0].ws); n != 1 {
		t.Errorf("two guarded sessions on one filesystem: %d fanotify groups mark it, want 1", n)
	}

	host := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	var creates sync.WaitGroup
	creates.Go(func() {
		for i := 0; ctx.Err() == nil; i++ {
			f := filepath.Join(host, strconv.Itoa(i))
			os.WriteFile(f, nil, 0o644)
			os.Remove(f)
		}
	})
	const repos = 30
	plant := fmt.Sprintf(`for i in $(seq %d); do mkdir -p r$i/stage/objects r$i/stage/refs && echo 'ref: refs/heads/main' > r$i/stage/HEAD &&
printf '[core]\n\tfsmonitor = "touch /tmp/x; false"\n' > r$i/stage/config && mv r$i/stage r$i/.git || exit 1; done`, repos)
	var plants sync.WaitGroup
	errs := make([]error, len(boxes))
	for i, b := range boxes {
		plants.Go(func() {
			var out bytes.Buffer
			res, err := b.term.Run(t.Context(), event.CmdRun{Command: plant}, &out)
			if err == nil && res.ExitCode != 0 {
				err = fmt.Errorf("exit %d: %s", res.ExitCode, out.String())
			}
			errs[i] = err
		})
	}
	plants.Wait()
	cancel()
	creates.Wait()
	for i, b := range boxes {
		if errs[i] != nil {
			t.Fatalf("session %d: %v", i, errs[i])
		}
		for r := 1; r <= repos; r++ {
			if p := filepath.Join(b.ws, "r"+strconv.Itoa(r), ".git"); !ownedBy(p, dedicated) {
				t.Errorf("session %d: %s is uid %d's", i, p, ownerOf(p))
			}
		}
	}

	if err := boxes[0].sb.Destroy(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := fanotifyGroups(t, boxes[1].ws); n != 1 {
		t.Errorf("one session of two ended: %d groups mark the filesystem, want 1", n)
	}
	boxes[1].must("mkdir -p late/.git/objects late/.git/refs && echo 'ref: refs/heads/main' > late/.git/HEAD")
	if p := filepath.Join(boxes[1].ws, "late", ".git"); !ownedBy(p, dedicated) {
		t.Errorf("the other session ended: %s is uid %d's", p, ownerOf(p))
	}
	boxes[1].term.Close()
	if err := boxes[1].sb.Destroy(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := fanotifyGroups(t, boxes[1].ws); n != 0 {
		t.Errorf("both sessions ended: %d groups mark the filesystem", n)
	}
}

// ownedBy waits up to a few seconds for p to be uid's, and reports
// whether it became so.
func ownedBy(p string, uid int) bool {
	for deadline := time.Now().Add(5 * time.Second); ownerOf(p) != uid; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			return false
		}
	}
	return true
}
