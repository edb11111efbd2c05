package sandbox

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/core/terminal"
)

// Red team 19: the lend of the user's git directories (b062f86,
// gitlend_linux.go).

// red19Repo makes a repository of the user's at dir, with two commits.
func red19Repo(t *testing.T, git func(string, ...string) (string, error), dir string) {
	t.Helper()
	os.MkdirAll(dir, 0o755)
	os.Chown(dir, userDirOwner, userDirOwner)
	for _, c := range [][]string{{"init", "-q", "-b", "main"}, {"commit", "-q", "--allow-empty", "-m", "1"}, {"commit", "-q", "--allow-empty", "-m", "2"}} {
		if out, err := git(dir, c...); err != nil {
			t.Fatal(out)
		}
	}
}

// red19Bare makes a bare repository of the user's at ws/proj.git, with
// the commits of a repository at ws/w pushed to it, and returns its path.
func red19Bare(t *testing.T, git func(string, ...string) (string, error), ws string) string {
	t.Helper()
	bare := filepath.Join(ws, "proj.git")
	if out, err := git(ws, "init", "-q", "--bare", "-b", "main", "proj.git"); err != nil {
		t.Fatal(out)
	}
	red19Repo(t, git, filepath.Join(ws, "w"))
	if out, err := git(filepath.Join(ws, "w"), "push", "-q", bare, "main"); err != nil {
		t.Fatal(out)
	}
	return bare
}

// TestRed19DestroyDuringLendKeepsItLent: Destroy does not wait for a
// Started in progress, and lendOwn registers its lend (take) and
// writes its record before it changes any owner, then waits for other
// sandboxes' first inits (waitFirstInits, up to StartTimeout each).
// A session destroyed in that window (the user cancels while the first
// shell starts; here another guarded sandbox's Prepare, never started,
// holds lends off) runs stopGuard first: giveBackAll finds g.lent nil,
// the record is removed; then lendOwn goes on, chowns the user's .git
// to the dedicated uid and keeps it in g.lent of a guard nobody stops.
// The user's repository stays the dedicated uid's for good (no record
// for the next daemon either), and lentDirs keeps its share, so no
// later session over it gives it back either (lasting DoS).
func TestRed19DestroyDuringLendKeepsItLent(t *testing.T) {
	requireRoot(t)
	state := t.TempDir()
	d := newDriver(t, NativeOptions{StateDir: state})
	ws, _, git := userDir(t)
	red19Repo(t, git, ws)
	gitdir := filepath.Join(ws, ".git")
	var st syscall.Stat_t
	if err := syscall.Stat(gitdir, &st); err != nil {
		t.Fatal(err)
	}

	// Another guarded session whose first shell is being prepared: its
	// first init holds lends off until it reports (or StartTimeout).
	ws2, _, _ := userDir(t)
	c, err := d.Create(context.Background(), Spec{Workspace: ws2, Owner: &User{UID: userDirOwner, GID: userDirOwner}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Prepare(exec.Command("/bin/sh")); err != nil {
		t.Fatal(err)
	}

	sb, err := d.Create(context.Background(), Spec{Workspace: ws, Owner: &User{UID: userDirOwner, GID: userDirOwner}})
	if err != nil {
		t.Fatal(err)
	}
	done := startAndClose(sb)
	// Wait for the lend to be taken (it now waits on c's first init).
	deadline := time.Now().Add(8 * time.Second)
	for !isLent(st.Dev, st.Ino) {
		if time.Now().After(deadline) {
			t.Fatal("the lend was never taken")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// The session ends now.
	if err := sb.Destroy(context.Background()); err != nil {
		t.Logf("Destroy: %v", err)
	}
	// The other session goes away too (its hold ends).
	c.Destroy(context.Background())
	select {
	case err := <-done:
		t.Logf("the first shell's start: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("the first shell's start never returned")
	}
	time.Sleep(200 * time.Millisecond)
	if err := syscall.Stat(gitdir, &st); err != nil {
		t.Fatal(err)
	}
	if int(st.Uid) != userDirOwner {
		t.Errorf("after the session was destroyed, the user's .git is uid %d's, not the user's (%d)", st.Uid, userDirOwner)
	}
	if out, err := git(ws, "status"); err != nil {
		t.Errorf("the user's git after the session ended: %v\n%s", err, out)
	}
	if recs, _ := filepath.Glob(filepath.Join(state, "*", guardRecordName)); len(recs) == 0 && int(st.Uid) != userDirOwner {
		t.Errorf("and no record is left for the next daemon to give it back")
	}
	// A later session over the same directory does not give it back either.
	b := newBox(t, d, Spec{Workspace: ws, Owner: &User{UID: userDirOwner, GID: userDirOwner}})
	b.end()
	syscall.Stat(gitdir, &st)
	if int(st.Uid) != userDirOwner {
		t.Errorf("after a later session ended, the user's .git is still uid %d's", st.Uid)
	}
}

// TestRed19GitInsideWithoutSystemConfig: git inside trusts the lent
// git directories only through the system config the daemon names in
// GIT_CONFIG_SYSTEM (safe.directory = *). Before the lend, the user's
// own repository was uid 0's inside, and git worked in it whatever the
// environment; now a git run with a cleaned environment (env -i, as
// build tools, sudo-like wrappers and test harnesses do) or with
// GIT_CONFIG_NOSYSTEM=1 refuses the user's own repository as dubious
// ownership, in the middle of the agent's work.
func TestRed19GitInsideWithoutSystemConfig(t *testing.T) {
	requireRoot(t)
	redTeam(t, "git inside trusts a lent repository only through GIT_CONFIG_SYSTEM, as it does the agent's handed-over ones (README)")
	d := newDriver(t, NativeOptions{})
	ws, _, git := userDir(t)
	red19Repo(t, git, ws)
	b := newBox(t, d, Spec{Workspace: ws, Owner: &User{UID: userDirOwner, GID: userDirOwner}})
	for _, cmd := range []string{
		"env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=/workspace git -C /workspace status 2>&1",
		"GIT_CONFIG_NOSYSTEM=1 git -C /workspace log --oneline 2>&1",
	} {
		if code, out := b.run(cmd); code != 0 || strings.Contains(out, "dubious") {
			t.Errorf("%s: exit %d, in the user's own repository:\n%s", cmd, code, out)
		}
	}
}

// TestRed19LendWidensGroupAccess: handOver builds the lent directory's
// ACL from its mode bits, taking the group bits for the owning group's
// entry. On a directory that had an ACL of its own, those bits are the
// mask, not the group's: a .git with user:4344:rwx, group::r-x (mask
// rwx) is, while lent, group::rwx (every member of the user's group may
// create and rename entries in the user's .git: replace config) and
// 4344's entry is gone. The lend should keep at most the access there
// was.
func TestRed19LendWidensGroupAccess(t *testing.T) {
	requireRoot(t)
	d := newDriver(t, NativeOptions{})
	ws, _, git := userDir(t)
	red19Repo(t, git, ws)
	gitdir := filepath.Join(ws, ".git")
	if err := unix.Setxattr(gitdir, "system.posix_acl_access", accessACL(7, 5, 5, 4344), 0); err != nil {
		t.Skipf("no ACL: %v", err)
	}
	t.Logf("before: %v", red19ACL(t, gitdir))
	b := newBox(t, d, Spec{Workspace: ws, Owner: &User{UID: userDirOwner, GID: userDirOwner}})
	b.must("true")
	during := red19ACL(t, gitdir)
	t.Logf("while lent: %v", during)
	if during["group"] != 5 {
		t.Errorf("while lent, the owning group's entry is %o (it was 5: r-x): its members may write the user's .git", during["group"])
	}
	if during["user:4344"] != 7 {
		t.Errorf("while lent, uid 4344 lost the access its ACL entry gave it: %v", during)
	}
	b.end()
}

// red19ACL decodes the access ACL of p: tag (user:ID, group:ID, or
// user, group, mask, other for the objects) to permission bits.
func red19ACL(t *testing.T, p string) map[string]uint16 {
	t.Helper()
	b := make([]byte, 512)
	n, err := unix.Getxattr(p, "system.posix_acl_access", b)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]uint16{}
	for i := 4; i+8 <= n; i += 8 {
		tag := binary.LittleEndian.Uint16(b[i:])
		perm := binary.LittleEndian.Uint16(b[i+2:])
		id := binary.LittleEndian.Uint32(b[i+4:])
		switch tag {
		case 0x01:
			m["user"] = perm
		case 0x02:
			m[fmt.Sprintf("user:%d", id)] = perm
		case 0x04:
			m["group"] = perm
		case 0x08:
			m[fmt.Sprintf("group:%d", id)] = perm
		case 0x10:
			m["mask"] = perm
		case 0x20:
			m["other"] = perm
		}
	}
	return m
}

// TestRed19LendLandsAfterTheHoldExpires (severity 1): a first init
// holds lends off (beginFirstInit) for StartTimeout from Prepare, but
// its walk may come as late as StartTimeout after Started (recv's
// deadline): the time the init's process takes to start (here a pause
// between Prepare and the process start, as a loaded host gives) is
// outside the hold. Session B over a directory is prepared (its
// config's Lent is empty); session A over the same directory starts
// once B's hold has expired and lends the user's .git; B's init then
// walks, sees a .git that is the dedicated uid's and not in its Lent
// (ownRepo false), and pins none of GitControl (config and hooks stay
// pinned only because Create's host-config read named them). B's agent
// writes .git/commondir = ../evil, a directory with no HEAD (so no
// repository to the guard) whose config sets core.fsmonitor. B still
// joins the lend (take shares by inode whoever's it is), the end's
// checks do not look at commondir, and the last session to end gives
// the .git back: the user's next git status reads evil/config and runs
// the agent's command.
func TestRed19LendLandsAfterTheHoldExpires(t *testing.T) {
	requireRoot(t)
	const limit = 3 * time.Second
	d := newDriver(t, NativeOptions{StartTimeout: limit})
	ws, marker, git := userDir(t)
	red19Repo(t, git, ws)
	owner := &User{UID: userDirOwner, GID: userDirOwner}

	sbB, err := d.Create(context.Background(), Spec{Workspace: ws, Owner: owner})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sbB.Destroy(context.Background()) })
	prepared := make(chan struct{})
	optsB := termOptions(sbB)
	optsB.Prepare = func(cmd *exec.Cmd) error {
		err := sbB.Prepare(cmd)
		close(prepared)
		time.Sleep(limit + time.Second) // B's init starts late
		return err
	}
	termB := make(chan *terminal.Terminal, 1)
	errB := make(chan error, 1)
	go func() {
		term, err := terminal.New(context.Background(), optsB)
		errB <- err
		termB <- term
	}()
	<-prepared
	time.Sleep(limit + 200*time.Millisecond) // B's hold is over
	a := newBox(t, d, Spec{Workspace: ws, Owner: owner})
	a.must("true")
	if err := <-errB; err != nil {
		// The fix: B's init reported the user's repository lent since
		// its config, and its start was refused (lentSince).
		if !strings.Contains(err.Error(), "was lent to another session") {
			t.Fatalf("B's start: %v", err)
		}
		t.Logf("B's start, refused: %v", err)
		a.end()
		if st, _ := git(ws, "status"); strings.Contains(st, "dubious") {
			t.Errorf("the user's .git is not theirs after A ended: %s", st)
		}
		return
	}
	tb := <-termB
	if tb == nil {
		t.Fatal("B did not start")
	}
	b := &box{t: t, sb: sbB, term: tb, ws: ws}
	t.Cleanup(func() { tb.Close() })
	// What B's init did not pin (commondir: GitControl's; config and
	// hooks are pinned anyway, by the host configs' refs read at Create).
	out := b.must(`mkdir -p evil/objects evil/refs/heads && cp .git/refs/heads/main evil/refs/heads/main && cp -r .git/objects/. evil/objects/ &&
printf '[core]\n\trepositoryformatversion = 0\n\tfsmonitor = "touch ` + marker + `/commondir; false"\n' > evil/config && echo ../evil > .git/commondir 2>&1; cat .git/commondir; true`)
	t.Logf("B's agent: %s", out)
	a.end()
	b.end()
	for _, dir := range []string{ws} {
		st, _ := git(dir, "status")
		co, _ := git(dir, "checkout", "-q", "-b", "x")
		noMarks(t, marker, "the user, after both sessions ended", st+"\n"+co)
	}
	if c, err := os.ReadFile(filepath.Join(ws, ".git", "commondir")); err == nil {
		t.Errorf("the agent of B left the user's .git a commondir: %q", c)
	}
}

// TestRed19OtherSessionsStartsStarveTheLend (severity 3): lendOwn,
// inside Started and under Started's StartTimeout deadline, waits
// (waitFirstInits) until no guarded sandbox anywhere in the daemon is
// between its first Prepare and its first init's report, each for up to
// StartTimeout from its Prepare. Other sessions' first shells, in
// directories that have nothing to do with this one, that keep
// starting (or a Prepare whose process never started: a failed fork)
// keep it waiting past its own deadline: the session fails to start.
// Here two unrelated sessions are prepared 1.5 s apart (StartTimeout
// 3 s) while a third, over a user's repository, starts.
func TestRed19OtherSessionsStartsStarveTheLend(t *testing.T) {
	requireRoot(t)
	const limit = 3 * time.Second
	d := newDriver(t, NativeOptions{StartTimeout: limit})
	owner := &User{UID: userDirOwner, GID: userDirOwner}
	prepareOther := func() {
		ws, _, _ := userDir(t)
		c, err := d.Create(context.Background(), Spec{Workspace: ws, Owner: owner})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Destroy(context.Background()) })
		if err := c.Prepare(exec.Command("/bin/sh")); err != nil {
			t.Fatal(err)
		}
	}
	ws, _, git := userDir(t)
	red19Repo(t, git, ws)
	sb, err := d.Create(context.Background(), Spec{Workspace: ws, Owner: owner})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Destroy(context.Background()) })
	prepareOther()
	time.Sleep(200 * time.Millisecond)
	done := startAndClose(sb)
	time.Sleep(limit / 2)
	prepareOther()
	if err := <-done; err != nil {
		t.Errorf("the session over the user's repository failed to start, waiting on unrelated sessions' starts: %v", err)
	}
}

// TestRed19GitFileInLentBareRepo (severity 3): the HEAD rule lets the
// agent make a .git that is not a directory in a directory the
// dedicated uid owns; a lent bare repository of the user's is now one.
// The agent leaves proj.git/.git, a file; git looks for .git before it
// takes a directory for a bare repository, so after the end the
// user's git in their bare repository follows that file (or refuses
// it, as dubious ownership once the guard hands it over): the user's
// repository no longer works until they find and remove the file.
// Before the lend the rule refused that .git (the directory was the
// user's).
func TestRed19GitFileInLentBareRepo(t *testing.T) {
	requireRoot(t)
	d := newDriver(t, NativeOptions{})
	ws, marker, git := userDir(t)
	bare := red19Bare(t, git, ws)
	b := newBox(t, d, Spec{Workspace: ws, Owner: &User{UID: userDirOwner, GID: userDirOwner}})
	code, out := b.run("ls -lnd proj.git; echo 'gitdir: ../nowhere' > proj.git/.git 2>&1; ls -ln proj.git/.git 2>&1")
	t.Logf("exit %d:\n%s", code, out)
	b.end()
	if out, err := git(bare, "log", "--oneline"); err != nil {
		t.Errorf("the user's git in their bare repository after the session: %v\n%s", err, out)
	}
	noMarks(t, marker, "the user", "")
}

// startAndClose starts sb's shell in the background, closes it once up,
// and sends terminal.New's error: the start a lend may have to wait for.
func startAndClose(sb Sandbox) <-chan error {
	done := make(chan error, 1)
	go func() {
		term, err := terminal.New(context.Background(), termOptions(sb))
		if err == nil {
			term.Close()
		}
		done <- err
	}()
	return done
}
