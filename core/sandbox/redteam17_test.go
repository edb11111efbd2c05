package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// red17Repo makes a repository of the user's at dir with three commits.
func red17Repo(t *testing.T, git func(string, ...string) (string, error), dir string) {
	t.Helper()
	os.MkdirAll(dir, 0o755)
	os.Chown(dir, userDirOwner, userDirOwner)
	if out, err := git(dir, "init", "-q", "-b", "main"); err != nil {
		t.Fatal(out)
	}
	for i := range 3 {
		f := filepath.Join(dir, "f")
		os.WriteFile(f, []byte(strings.Repeat("x\n", i+1)), 0o644)
		os.Chown(f, userDirOwner, userDirOwner)
		for _, c := range [][]string{{"add", "f"}, {"commit", "-qm", "c"}} {
			if out, err := git(dir, c...); err != nil {
				t.Fatal(out)
			}
		}
	}
}

// red17Rebase is shell, run inside in a repository of the user's, that
// leaves an interactive rebase in progress by hand whose next command is
// a pick that needs a merge (HEAD is the tip, the pick its parent's
// parent's child).
const red17Rebase = `H=$(git rev-parse HEAD) && P=$(git rev-parse HEAD~1) && mkdir -p .git/rebase-merge && cd .git/rebase-merge &&
echo refs/heads/main > head-name && echo $H > onto && echo $H > orig-head && touch interactive &&
echo 1 > msgnum && echo 2 > end && : > done && printf "pick $P c\npick $P c\n" > git-rebase-todo && cd ../..`

// TestGitRebaseStrategy: rebase-merge/strategy (and sequencer/opts's
// options.strategy, a cherry-pick's) name the merge strategy the user's
// git runs as "git merge-NAME": a NAME with a slash makes git exec
// git-merge-NAME as a path, relative to the worktree, which the agent
// writes (red team 17). The rule moves a changed rebase-merge and
// sequencer aside whole at the session's end.
func TestGitRebaseStrategy(t *testing.T) {
	requireRoot(t)
	d := newDriver(t, NativeOptions{})
	ws, marker, git := userDir(t)
	red17Repo(t, git, filepath.Join(ws, "a"))
	red17Repo(t, git, filepath.Join(ws, "b"))
	b := newBox(t, d, Spec{Workspace: ws, Owner: &User{UID: userDirOwner, GID: userDirOwner}})
	t.Log(b.must(strings.NewReplacer("MARK", marker).Replace(`cd /workspace/a && mkdir -p git-merge-x && printf '#!/bin/sh\ntouch MARK/rebase-strategy\nexit 1\n' > evil && chmod +x evil && ` + red17Rebase + ` && echo 'x/../evil' > .git/rebase-merge/strategy &&
	cd /workspace/b && mkdir -p git-merge-x && printf '#!/bin/sh\ntouch MARK/cherry-pick-strategy\nexit 1\n' > evil && chmod +x evil &&
	mkdir -p .git/sequencer && git rev-parse HEAD > .git/sequencer/head && P=$(git rev-parse HEAD~1) &&
	printf "pick $P c\npick $P c\n" > .git/sequencer/todo && printf '[options]\n\tstrategy = x/../evil\n' > .git/sequencer/opts; echo done`)))
	b.end()
	status, _ := git(filepath.Join(ws, "a"), "status")
	out, _ := git(filepath.Join(ws, "a"), "-c", "core.editor=true", "rebase", "--continue")
	noMarks(t, marker, "the user (git rebase --continue)", status+"\n"+out)
	status, _ = git(filepath.Join(ws, "b"), "status")
	out, _ = git(filepath.Join(ws, "b"), "-c", "core.editor=true", "cherry-pick", "--continue")
	noMarks(t, marker, "the user (git cherry-pick --continue)", status+"\n"+out)
}

// TestGitTodoRewriteBlocked: the rule once rewrote a to-do list through
// NAME.harnessd (O_EXCL) and set a too big one aside as NAME.sandbox: a
// directory the agent made under either name made it fail, leaving the
// exec line for the user's git (red team 17). The rule now rewrites
// nothing: it moves a changed rebase-merge aside whole.
func TestGitTodoRewriteBlocked(t *testing.T) {
	requireRoot(t)
	d := newDriver(t, NativeOptions{})
	ws, marker, git := userDir(t)
	red17Repo(t, git, filepath.Join(ws, "a"))
	red17Repo(t, git, filepath.Join(ws, "b"))
	b := newBox(t, d, Spec{Workspace: ws, Owner: &User{UID: userDirOwner, GID: userDirOwner}})
	t.Log(b.must(strings.NewReplacer("MARK", marker).Replace(`cd /workspace/a && ` + red17Rebase + ` && printf 'exec touch MARK/harnessd-dir\n' > .git/rebase-merge/git-rebase-todo && mkdir .git/rebase-merge/git-rebase-todo.harnessd &&
	cd /workspace/b && ` + red17Rebase + ` && printf 'exec touch MARK/sandbox-dir\n' > .git/rebase-merge/git-rebase-todo && head -c 17000000 /dev/zero | tr '\0' '#' | fold -w 1000000 >> .git/rebase-merge/git-rebase-todo && mkdir .git/rebase-merge/git-rebase-todo.sandbox; echo done`)))
	b.end()
	for _, r := range []string{"a", "b"} {
		todo, _ := os.ReadFile(filepath.Join(ws, r, ".git", "rebase-merge", "git-rebase-todo"))
		t.Logf("%s's to-do after: %.80q", r, todo)
		out, _ := git(filepath.Join(ws, r), "-c", "core.editor=true", "rebase", "--continue")
		noMarks(t, marker, "the user ("+r+")", out)
	}
}

// TestGitUserDirStrayHeadKept: a directory of the user's that already
// holds an entry named HEAD git would not take (not a valid HEAD, or a
// directory) is no repository and is not pinned whole; the agent adds
// commondir (or objects and refs), which the HEAD rule allows, and the
// guard's bareLike handed the user's own directory, the workspace's top
// even, to the dedicated uid (red team 17). Under the HEAD rule a
// directory born before the session is no longer handed over: it can
// get no HEAD, so it is no repository.
func TestGitUserDirStrayHeadKept(t *testing.T) {
	requireRoot(t)
	d := newDriver(t, NativeOptions{})
	ws, _, _ := userDir(t)
	for _, p := range []string{"HEAD", "data/HEAD", "docs/HEAD/x"} {
		os.MkdirAll(filepath.Join(ws, filepath.Dir(p)), 0o755)
		os.WriteFile(filepath.Join(ws, p), []byte("not a ref\n"), 0o644)
	}
	filepath.Walk(ws, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, userDirOwner, userDirOwner) })
	b := newBox(t, d, Spec{Workspace: ws, Owner: &User{UID: userDirOwner, GID: userDirOwner}})
	t.Log(b.must(`cd /workspace && touch commondir 2>&1; mkdir data/objects data/refs 2>&1; touch docs/commondir 2>&1; sleep 0.5; stat -c '%n %u' . data docs`))
	b.end()
	for _, p := range []string{".", "data", "docs"} {
		var st os.FileInfo
		st, _ = os.Stat(filepath.Join(ws, p))
		if uid := st.Sys().(*syscall.Stat_t).Uid; uid != userDirOwner {
			t.Errorf("the user's directory %s is now uid %d's", p, uid)
		}
	}
}

// TestGitTodoTwoSessions: a second session over the same directory,
// started while the first's agent has an exec line in the to-do list,
// took that line for the user's own: the first's end disarmed it, the
// second's agent wrote it back, and the second's end kept it (red team
// 17). The base is now one for all the live sessions over a repository.
func TestGitTodoTwoSessions(t *testing.T) {
	requireRoot(t)
	d := newDriver(t, NativeOptions{})
	ws, marker, git := userDir(t)
	red17Repo(t, git, ws)
	spec := Spec{Workspace: ws, Owner: &User{UID: userDirOwner, GID: userDirOwner}}
	a := newBox(t, d, spec)
	line := "exec touch " + marker + "/second-session"
	a.must(red17Rebase + ` && printf '` + line + `\n' > .git/rebase-merge/git-rebase-todo`)
	b := newBox(t, d, spec)
	a.end()
	todo, _ := os.ReadFile(filepath.Join(ws, ".git", "rebase-merge", "git-rebase-todo"))
	t.Logf("after the first session: %q", todo)
	// The same state again: equal to what the second session's base
	// would hold had it not taken the first's.
	b.must(red17Rebase + ` && printf '` + line + `\n' > .git/rebase-merge/git-rebase-todo`)
	b.end()
	todo, _ = os.ReadFile(filepath.Join(ws, ".git", "rebase-merge", "git-rebase-todo"))
	t.Logf("after the second session: %q", todo)
	out, _ := git(ws, "-c", "core.editor=true", "rebase", "--continue")
	noMarks(t, marker, "the user", out)
}

// TestGitUserFileRenamedToGit (holds): the agent renames files of the
// user's (one link, and one it linked a second name to) to .git: the
// HEAD rule refuses both, so neither changes owner nor is removed.
func TestGitUserFileRenamedToGit(t *testing.T) {
	requireRoot(t)
	d := newDriver(t, NativeOptions{})
	ws, _, _ := userDir(t)
	os.MkdirAll(filepath.Join(ws, "x"), 0o755)
	os.WriteFile(filepath.Join(ws, "notes"), []byte("mine\n"), 0o644)
	os.WriteFile(filepath.Join(ws, "linked"), []byte("mine too\n"), 0o644)
	filepath.Walk(ws, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, userDirOwner, userDirOwner) })
	b := newBox(t, d, Spec{Workspace: ws, Owner: &User{UID: userDirOwner, GID: userDirOwner}})
	out := b.must(`cd /workspace && mv notes x/.git 2>&1; ln linked keep && mv linked x/.git 2>&1; sleep 0.2; mv x/.git back 2>&1; true`)
	t.Log(out)
	b.end()
	if !kernelRuled() {
		t.Skip("no HEAD rule here")
	}
	for _, p := range []string{"notes", "linked"} {
		st, err := os.Stat(filepath.Join(ws, p))
		if err != nil {
			t.Errorf("the user's %s: %v", p, err)
			continue
		}
		if uid := st.Sys().(*syscall.Stat_t).Uid; uid != userDirOwner {
			t.Errorf("the user's %s is now uid %d's", p, uid)
		}
	}
}

// TestGitUserDirRenamedToGit: a directory of the user's (made before the
// session) renamed to .git was a new .git directory and was handed to the
// dedicated uid, which stuck after the agent renamed it back: the user's
// own directory changed owner (red team 17). Under the HEAD rule it is
// no longer handed over (it can get no HEAD).
func TestGitUserDirRenamedToGit(t *testing.T) {
	requireRoot(t)
	// Renamed back before the end, and left as .git for the sweep of the
	// next daemon after one that died (the record says the rule held).
	for _, mode := range []string{"destroyed", "daemon died"} {
		t.Run(mode, func(t *testing.T) {
			state := t.TempDir()
			d := newDriver(t, NativeOptions{StateDir: state})
			ws, _, _ := userDir(t)
			os.MkdirAll(filepath.Join(ws, "docs"), 0o755)
			os.MkdirAll(filepath.Join(ws, "x"), 0o755)
			filepath.Walk(ws, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, userDirOwner, userDirOwner) })
			b := newBox(t, d, Spec{Workspace: ws, Owner: &User{UID: userDirOwner, GID: userDirOwner}})
			after, end := "docs", b.sb.Destroy
			if mode == "daemon died" {
				after, end = "x/.git", newDriver(t, NativeOptions{StateDir: state}).Cleanup
			}
			t.Log(b.must(`cd /workspace && mv docs x/.git && sleep 0.3 && { [ ` + after + ` = x/.git ] || mv x/.git docs; }; ls -ln; true`))
			b.term.Close()
			if err := end(context.Background()); err != nil {
				t.Fatal(err)
			}
			st, err := os.Stat(filepath.Join(ws, after))
			if err != nil {
				t.Fatal(err)
			}
			if uid := st.Sys().(*syscall.Stat_t).Uid; uid != userDirOwner {
				t.Errorf("the user's directory docs (now %s) is uid %d's", after, uid)
			}
		})
	}
}
