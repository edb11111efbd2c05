package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gitEnv makes a host git see nothing of this machine's own git
// configuration, and names who commits.
var gitEnv = []string{"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HOME=/nonexistent",
	"GIT_AUTHOR_NAME=host", "GIT_AUTHOR_EMAIL=host@example.com", "GIT_COMMITTER_NAME=host", "GIT_COMMITTER_EMAIL=host@example.com"}

// hostGit runs git on the host in dir, as the user of the workspace would.
func hostGit(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), gitEnv...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestGitInside: git works in the sandbox: init and clone where there is
// no repository yet, commits, branches, status; and a new shell over the
// same workspace protects the repository so made (issue 16, item 1).
func TestGitInside(t *testing.T) {
	requireRoot(t)
	d := newDriver(t, NativeOptions{})
	ws := t.TempDir()
	b := newBox(t, d, Spec{Workspace: ws})
	const ident = "git config --global user.name agent && git config --global user.email agent@example.com"
	b.must(ident)
	steps := []string{
		"git init -q -b main",
		"echo one > a && git add a && git commit -qm one",
		"git checkout -qb feature && echo two >> a && git commit -qam two && git checkout -q main",
		"git branch --list | tr -d ' *' | tr '\\n' ,",
		"git status --porcelain && git log --oneline feature | wc -l",
		"git clone -q /workspace /workspace/clone && git -C clone log --oneline | wc -l",
		"mkdir fresh && cd fresh && git init -q && cd .. && rm -rf fresh",
	}
	for _, s := range steps {
		if code, out := b.run(s); code != 0 {
			t.Fatalf("%q: exit %d: %s", s, code, out)
		}
	}
	if got := b.must("git branch --list | tr -d ' *' | tr '\\n' ,"); got != "feature,main," {
		t.Errorf("branches: %q", got)
	}
	// A new shell over the workspace: the repository is the workspace's,
	// its control files now read-only, its history still writable.
	b2 := newBox(t, d, Spec{Workspace: ws})
	b2.must(ident)
	if got := b2.must("echo three >> a && git commit -qam three && git status --porcelain -uno && git log --oneline | wc -l"); got != "2" {
		t.Errorf("commit in the protected repository: %q", got)
	}
	for _, attack := range []string{
		"git config core.fsmonitor 'touch /tmp/x'",
		"echo ../evil > .git/commondir",
		"touch .git/hooks/pre-commit",
		"echo x > .git/config.worktree",
		"mkdir -p .git/worktrees/w",
		"mkdir -p .git/modules/m",
		"rm -rf .git",
		"mv .git .git2",
	} {
		if code, out := b2.run(attack); code == 0 {
			t.Errorf("%q worked in a protected repository: %s", attack, out)
		}
	}
}

// TestGitHostSafe: nothing written inside the sandbox makes a git run on
// the host execute code (issue 16, item 1). Each attack is tried in a
// repository the sandbox made in an earlier life; then the host runs git
// status and git commit in the workspace and no marker may appear. The
// host git runs twice: as is (it also refuses, by ownership, a repository
// of the sandbox's user), and with safe.directory=* (as the workspace's
// owner would, were the sandbox mapped to them), so that the pins alone
// are tested.
func TestGitHostSafe(t *testing.T) {
	requireRoot(t)
	d := newDriver(t, NativeOptions{})
	marker := t.TempDir()
	attacks := []struct{ name, cmd string }{
		{"commondir", `mkdir -p evil/objects evil/refs/heads evil/hooks; echo "ref: refs/heads/main" > .git/HEAD; echo ../evil > .git/commondir;
printf '[core]\n\tfsmonitor = "touch MARK/commondir-fsmonitor; false"\n' > evil/config;
printf '#!/bin/sh\ntouch MARK/commondir-hook\n' > evil/hooks/pre-commit; chmod +x evil/hooks/pre-commit`},
		{"fsmonitor", `git config core.fsmonitor "touch MARK/fsmonitor; false"`},
		{"hooksPath", `mkdir -p h && printf '#!/bin/sh\ntouch MARK/hookspath\n' > h/pre-commit && chmod +x h/pre-commit && git config core.hooksPath "$PWD/h"`},
		{"hook", `printf '#!/bin/sh\ntouch MARK/hook\n' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit`},
		{"config.worktree", `printf '[core]\n\tfsmonitor = "touch MARK/worktree; false"\n' > .git/config.worktree`},
		{"config append", `printf '[extensions]\n\tworktreeConfig = true\n[core]\n\tfsmonitor = "touch MARK/append; false"\n' >> .git/config`},
		{"gitdir file", `mv .git real.git; printf 'gitdir: evil2\n' > .git; mkdir -p evil2 && cp -r real.git/. evil2/ && printf '[core]\n\tfsmonitor = "touch MARK/gitfile; false"\n' >> evil2/config`},
		{"swap .git", `cp -r .git g2 && printf '[core]\n\tfsmonitor = "touch MARK/swap; false"\n' >> g2/config && rm -rf .git; mv .git .old; mv g2 .git`},
		{"worktrees", `mkdir -p .git/worktrees/w && printf '[core]\n\tfsmonitor = "touch MARK/worktrees; false"\n' > .git/worktrees/w/config`},
		{"modules", `mkdir -p .git/modules/m/hooks && printf '#!/bin/sh\ntouch MARK/modules\n' > .git/modules/m/hooks/pre-commit`},
		{"diff.external", `git config diff.external "touch MARK/diffext"`},
		{"filter", `echo '* filter=evil' > .gitattributes && git config filter.evil.clean "touch MARK/filter; cat"`},
	}
	for _, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			ws := t.TempDir()
			b := newBox(t, d, Spec{Workspace: ws})
			b.must("git config --global user.name agent && git config --global user.email a@example.com && git init -q -b main && echo 1 > f && git add f && git commit -qm 1")
			b.term.Close()
			b = newBox(t, d, Spec{Workspace: ws}) // a later life: the repository is protected
			code, out := b.run(strings.ReplaceAll(a.cmd, "MARK", marker))
			t.Logf("attack exit %d: %.200s", code, out)
			b.run("true")
			for _, safe := range [][]string{nil, {"-c", "safe.directory=*"}} {
				os.WriteFile(filepath.Join(ws, "f"), []byte("changed\n"), 0o644)
				out1, _ := hostGit(ws, append(safe, "status")...)
				out2, _ := hostGit(ws, append(safe, "commit", "-qam", "host")...)
				out3, _ := hostGit(ws, append(safe, "diff", "HEAD~1")...)
				if ents, _ := os.ReadDir(marker); len(ents) > 0 {
					t.Fatalf("host git (%v) ran the sandbox's code: %s\nstatus: %s\ncommit: %s\ndiff: %.200s", safe, ents[0].Name(), out1, out2, out3)
				}
			}
		})
	}
}
