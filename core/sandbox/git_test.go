package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/core/terminal"
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

// hostGitAs runs git on the host in dir as uid (and gid) uid, with no
// configuration of its own: the ownership check (safe.directory) as git
// ships it.
func hostGitAs(uid int, dir string, args ...string) (string, error) {
	id := strconv.Itoa(uid)
	cmd := exec.Command("setpriv", append([]string{"--reuid=" + id, "--regid=" + id, "--clear-groups", "git"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), gitEnv...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// midSession are repositories the agent makes during a session, each with
// code a host git would run; MARK is the host's marker directory. Where
// each is, and what a host git does there, is in hostRuns.
var midSession = []struct{ name, cmd, dir string }{
	{"init at the top", `git init -q -b main && git config core.fsmonitor "touch MARK/top-fsmonitor; false" &&
printf '#!/bin/sh\ntouch MARK/top-hook\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit && echo 1 > f && git add f && git commit -qm 1 --no-verify`, "."},
	{"clone into a subdirectory", `mkdir -p src && cd src && git init -q -b main && echo 1 > f && git add f && git commit -qm 1 && cd .. &&
git clone -q src sub && git -C sub config core.fsmonitor "touch MARK/clone-fsmonitor; false" &&
printf '#!/bin/sh\ntouch MARK/clone-hook\n' > sub/.git/hooks/pre-commit && chmod +x sub/.git/hooks/pre-commit`, "sub"},
	{"gitdir made by hand", `mkdir -p hand/.git/objects hand/.git/refs/heads && echo 'ref: refs/heads/main' > hand/.git/HEAD &&
printf '[core]\n\trepositoryformatversion = 0\n\tfsmonitor = "touch MARK/hand; false"\n[alias]\n\tst = "!touch MARK/hand-alias"\n' > hand/.git/config`, "hand"},
	{".git file to a gitdir", `mkdir -p ptr gd/objects gd/refs/heads && echo 'ref: refs/heads/main' > gd/HEAD &&
printf '[core]\n\tfsmonitor = "touch MARK/pointer; false"\n' > gd/config && printf 'gitdir: ../gd\n' > ptr/.git`, "ptr"},
	{".git symlink", `mkdir -p lnk sl/objects sl/refs/heads && echo 'ref: refs/heads/main' > sl/HEAD &&
printf '[core]\n\tfsmonitor = "touch MARK/symlink; false"\n' > sl/config && ln -s ../sl lnk/.git`, "lnk"},
	{"bare repository", `git init -q --bare b.git && printf '[alias]\n\tst = "!touch MARK/bare"\n' >> b.git/config`, "b.git"},
}

// hostRuns is what a user does with git on the host in dir.
func hostRuns(git func(dir string, args ...string) (string, error), ws, dir string) string {
	d := filepath.Join(ws, dir)
	os.WriteFile(filepath.Join(d, "f"), []byte("changed\n"), 0o644)
	var out strings.Builder
	for _, args := range [][]string{{"status"}, {"add", "f"}, {"commit", "-qam", "host"}, {"st"}, {"log", "-1"}} {
		o, _ := git(d, args...)
		out.WriteString(o)
	}
	return out.String()
}

// TestGitMidSession: a repository the agent makes during a session, at
// the top of the workspace or anywhere below, by git or by hand, bare or
// through a .git file or symlink, runs nothing in a git on the host (issue
// 16, item 1): it is the sandbox's user's, which is not the host user's,
// and git (2.35.2 and later) refuses it. Root's git and another user's
// alike; the attacks are all made in one shell, with no restart between
// them and the host's git.
func TestGitMidSession(t *testing.T) {
	requireRoot(t)
	d := newDriver(t, NativeOptions{DiskDir: diskDir(t)})
	marker := t.TempDir()
	os.Chmod(marker, 0o777)
	for _, disk := range []int64{0, 32 << 20} {
		b := newBox(t, d, Spec{Limits: Limits{DiskBytes: disk}})
		b.must("git config --global user.name agent && git config --global user.email a@example.com")
		os.Chmod(filepath.Dir(b.ws), 0o755)
		os.Chmod(b.ws, 0o755) // for the host user other than root
		for _, a := range midSession {
			t.Run(fmt.Sprintf("%s disk=%d", a.name, disk>>20), func(t *testing.T) {
				b.must(strings.ReplaceAll(a.cmd, "MARK", marker))
				// Git inside works in it, as it should.
				if a.dir != "b.git" && a.dir != "ptr" && a.dir != "lnk" {
					if code, out := b.run("git -C " + a.dir + " status --porcelain >/dev/null"); code != 0 {
						t.Errorf("git status inside: %s", out)
					}
				}
				for _, who := range []struct {
					name string
					git  func(string, ...string) (string, error)
				}{
					{"root", hostGit},
					{"uid 4242", func(dir string, args ...string) (string, error) { return hostGitAs(4242, dir, args...) }},
				} {
					out := hostRuns(who.git, b.ws, a.dir)
					if ents, _ := os.ReadDir(marker); len(ents) > 0 {
						t.Fatalf("a host git as %s ran the sandbox's code: %s\n%s", who.name, ents[0].Name(), out)
					}
					if who.name == "root" && !strings.Contains(out, "dubious ownership") {
						t.Errorf("the host git as root was not refused by ownership: %s", out)
					}
				}
			})
		}
	}
}

// TestGitNestedPinned: in a user's own directory (the sandbox is that
// user, so git trusts what is there), every repository present when the
// shell starts is pinned, not only the top one: a nested clone, a bare
// repository, a submodule's .git file. Nothing the agent then writes to
// their control files runs in the user's git on the host.
func TestGitNestedPinned(t *testing.T) {
	requireRoot(t)
	d := newDriver(t, NativeOptions{})
	const user = 4343
	ws := t.TempDir()
	os.Chmod(filepath.Dir(ws), 0o755)
	marker := t.TempDir()
	os.Chmod(marker, 0o777)
	git := func(dir string, args ...string) (string, error) { return hostGitAs(user, dir, args...) }
	if err := os.Chown(ws, user, user); err != nil {
		t.Fatal(err)
	}
	for _, c := range [][]string{
		{".", "init", "-q", "-b", "main"},
		{".", "init", "-q", "-b", "main", "vendor/lib"},
		{".", "init", "-q", "--bare", "store.git"},
	} {
		if out, err := git(filepath.Join(ws, c[0]), c[1:]...); err != nil {
			t.Fatalf("git %v: %v %s", c, err, out)
		}
	}
	for _, dir := range []string{".", "vendor/lib"} {
		os.WriteFile(filepath.Join(ws, dir, "f"), []byte("1\n"), 0o644)
		os.Chown(filepath.Join(ws, dir, "f"), user, user)
		if out, err := git(filepath.Join(ws, dir), "add", "f"); err != nil {
			t.Fatal(out)
		}
		if out, err := git(filepath.Join(ws, dir), "commit", "-qm", "1"); err != nil {
			t.Fatal(out)
		}
	}
	b := newBox(t, d, Spec{Workspace: ws, Owner: &User{UID: user, GID: user}})
	// Git inside works in them.
	b.must("git config --global user.name agent && git config --global user.email a@example.com")
	if got := b.must("(cd vendor/lib && echo 2 >> f && git commit -qam 2 && git log --oneline | wc -l)"); got != "2" {
		t.Errorf("commit in the nested repository: %q", got)
	}
	for _, attack := range []string{
		`git -C vendor/lib config core.fsmonitor "touch MARK/nested-fsmonitor; false"`,
		`printf '#!/bin/sh\ntouch MARK/nested-hook\n' > vendor/lib/.git/hooks/pre-commit && chmod +x vendor/lib/.git/hooks/pre-commit`,
		`printf '[core]\n\tfsmonitor = "touch MARK/nested-worktree; false"\n' > vendor/lib/.git/config.worktree`,
		`mkdir -p e/objects e/refs && echo ../../e > vendor/lib/.git/commondir`,
		`printf '[alias]\n\tst = "!touch MARK/bare"\n' >> store.git/config`,
		`mv vendor/lib/.git vendor/lib/.old`,
		`mv vendor/lib vendor/lib2`,
		`mv vendor v`,
		`rm -rf vendor/lib/.git`, // removes objects and refs; the pinned files stay
	} {
		if code, out := b.run(strings.ReplaceAll(attack, "MARK", marker)); code == 0 {
			t.Errorf("%q worked in a pinned repository: %s", attack, out)
		}
	}
	// Files enough to push the repositories past the walk of the next
	// shell's init (shortened here): what the first one found is pinned
	// still.
	b.must("mkdir 0 && cd 0 && touch $(seq 100)")
	b.term.Close()
	sb := b.sb.(*nativeSandbox)
	sb.mu.Lock()
	sb.cfg.GitScan = 50
	sb.mu.Unlock()
	term, err := terminal.New(t.Context(), termOptions(sb))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { term.Close() })
	b.term = term
	for _, attack := range []string{
		`git -C vendor/lib config core.fsmonitor "touch MARK/nested-fsmonitor; false"`,
		`printf '[alias]\n\tst = "!touch MARK/bare"\n' >> store.git/config`,
	} {
		if code, out := b.run(strings.ReplaceAll(attack, "MARK", marker)); code == 0 {
			t.Errorf("%q worked in a pinned repository past the walk: %s", attack, out)
		}
	}
	for _, dir := range []string{"vendor/lib", "store.git"} {
		out := hostRuns(git, ws, dir)
		if ents, _ := os.ReadDir(marker); len(ents) > 0 {
			t.Fatalf("the user's git in %s ran the sandbox's code: %s\n%s", dir, ents[0].Name(), out)
		}
	}
}

// TestFindRepos: the walk finds .git directories and files at any depth,
// bare repositories (the workspace itself too), stray HEADs (and, for
// a valid one, its directory as a repository), not what is inside them,
// and not through symlinks.
func TestFindRepos(t *testing.T) {
	ws := t.TempDir()
	mk := func(p string) {
		if strings.HasSuffix(p, "/") {
			if err := os.MkdirAll(filepath.Join(ws, p), 0o755); err != nil {
				t.Fatal(err)
			}
			return
		}
		os.MkdirAll(filepath.Dir(filepath.Join(ws, p)), 0o755)
		if err := os.WriteFile(filepath.Join(ws, p), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{".git/objects/", ".git/refs/", ".git/HEAD", ".git/modules/m/HEAD", "a/b/.git/HEAD", "sub/.git",
		"x/store.git/HEAD", "x/store.git/objects/", "x/store.git/refs/", "x/store.git/inner/.git/HEAD", "HEAD", "objects/", "refs/", "y/HEAD", "z/HEAD"} {
		mk(p)
	}
	os.Symlink(filepath.Join(ws, "a"), filepath.Join(ws, "link"))
	os.WriteFile(filepath.Join(ws, "z", "HEAD"), []byte("ref: refs/heads/main\n"), 0o644) // valid: a repository but for objects and refs
	got, note := findRepos(ws, 0)
	var paths []string
	for _, r := range got {
		paths = append(paths, fmt.Sprintf("%s:%v:%v:%v", r.Path, r.File, r.Stray, r.Half))
	}
	if want := ".:false:false:false,.git:false:false:false,a/b/.git:false:false:false,sub/.git:true:false:false,x/store.git:false:false:false,y/HEAD:false:true:false,z/HEAD:false:true:false,z:false:false:true"; strings.Join(paths, ",") != want || note != "" {
		t.Errorf("findRepos: %s (%q), want %s", strings.Join(paths, ","), note, want)
	}
	if _, note := findRepos(ws, 3); note == "" {
		t.Errorf("a walk cut short says nothing")
	}
}
