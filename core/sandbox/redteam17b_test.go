package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// red17bAm is shell, run inside in a repository of the user's (made by
// red17Repo), that leaves a `git am` of two patches stopped on the first
// (it conflicts), then makes the options git am hands its apply
// (rebase-apply/apply-opt) write a fake ancestor index to VICTIM.
const red17bAm = `export GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@b GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@b && git format-patch -q HEAD~2 && git reset -q --hard HEAD~2 && echo zz > f && git commit -qam conflict &&
{ git am 0001-*.patch 0002-*.patch >/dev/null 2>&1; ls .git/rebase-apply | tr '\n' ' '; } &&
printf "'--build-fake-ancestor=VICTIM'" > .git/rebase-apply/apply-opt && cat .git/rebase-apply/apply-opt`

// TestGitAmApplyOpt: rebase-apply/apply-opt (git am's, and `git rebase
// --apply`'s) holds options git am passes to its apply, read back at
// `git am --skip`/`--continue` (`git rebase --continue`): the agent
// writes --build-fake-ancestor=PATH there and the user's git writes an
// index file over PATH, any file of the user's outside the workspace.
// The rebase rule reads no rebase-apply file.
func TestGitAmApplyOpt(t *testing.T) {
	requireRoot(t)
	redTeam(t, "rebase-apply/apply-opt: --build-fake-ancestor=PATH rewrites a file of the user's outside the workspace at git am --skip")
	d := newDriver(t, NativeOptions{})
	ws, _, git := userDir(t)
	red17Repo(t, git, ws)
	home := t.TempDir()
	os.Chown(home, userDirOwner, userDirOwner)
	victim := filepath.Join(home, ".bashrc")
	os.WriteFile(victim, []byte("mine\n"), 0o644)
	os.Chown(victim, userDirOwner, userDirOwner)
	b := newBox(t, d, Spec{Workspace: ws, Owner: &User{UID: userDirOwner, GID: userDirOwner}})
	t.Log(b.must(strings.NewReplacer("VICTIM", victim).Replace(red17bAm)))
	b.term.Close()
	if err := b.sb.Destroy(context.Background()); err != nil {
		t.Fatal(err)
	}
	status, _ := git(ws, "status")
	out, _ := git(ws, "am", "--skip")
	t.Log(status, out)
	if got, _ := os.ReadFile(victim); string(got) != "mine\n" {
		t.Errorf("the user's %s, outside the workspace, rewritten by git am --skip: %.40q", victim, got)
	}
}
