package sandbox

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harnessd/harnessd/core/terminal"
)

// Red team 18: the host's git configs (hostGitRefs), the programs a
// config's commands run (commandKey, commandPath), and the sweep of
// symlinks at the end (linksAside), as of 96c7834.

// red18Hook is a script that leaves a mark named name in marker and
// passes its input through (a filter's clean, a hook).
func red18Hook(marker, name string) string {
	return `#!/bin/sh\ntouch ` + marker + `/` + name + `\ncat\n`
}

// red18PlantHook has the agent of a session over ws, a directory of the
// user's, write dir/pre-commit there (dir beneath the workspace):
// red18Hook's, leaving name in marker when it runs.
func red18PlantHook(t *testing.T, d *Native, ws, dir, marker, name string) {
	t.Helper()
	b := newBox(t, d, Spec{Workspace: ws, Owner: &User{UID: userDirOwner, GID: userDirOwner}})
	t.Log(b.run(`cd /workspace; mkdir -p ` + dir + `; printf '` + red18Hook(marker, name) + `' > ` + dir + `/pre-commit; chmod +x ` + dir + `/pre-commit; ls -la ` + dir + `; true`))
	b.end()
}

// TestRed18LinkedWorktreeHooksPath attacks a workspace that is a linked
// worktree of a repository of the user's (`git worktree add`, a common
// way to give an agent a checkout of its own): its .git is a file, so
// protectRepo pins only that file (r.File) and never reads the config
// the worktree runs with, which is the main repository's, outside the
// workspace, where neither the init nor hostGitRefs (which looks only
// above the workspace) reads it. A `core.hooksPath = .husky/_` there
// (husky's) names a directory in every worktree: the agent writes
// .husky/_/pre-commit, and the user's next `git commit` in the worktree
// runs it. The same holds for the user's global relative
// core.hooksPath, filters and fsmonitor (hostGitRefs' relative refs are
// pinned only in protectRepo's non-File branch).
func TestRed18LinkedWorktreeHooksPath(t *testing.T) {
	requireRoot(t)
	d := newDriver(t, NativeOptions{})
	main, marker, git := userDir(t)
	red17Repo(t, git, main)
	if o, err := git(main, "config", "core.hooksPath", ".husky/_"); err != nil {
		t.Fatal(o)
	}
	parent, _, _ := userDir(t)
	ws := filepath.Join(parent, "wt")
	if o, err := git(main, "worktree", "add", "-q", "-b", "agent", ws); err != nil {
		t.Fatal(o)
	}
	red18PlantHook(t, d, ws, ".husky/_", marker, "linked-worktree-hook")
	out, _ := git(ws, "commit", "-q", "--allow-empty", "-m", "mine")
	noMarks(t, marker, "the user (git commit in a linked worktree whose repository has core.hooksPath = .husky/_)", out)
}

// TestRed18GlobalConfigLinkedIntoWorkspace attacks a global config that
// is itself a file in the workspace: ~/.gitconfig -> ~/dotfiles/gitconfig
// (GNU stow and most dotfiles managers do exactly that), with a session
// in ~/dotfiles. hostGitRefs reads ~/.gitconfig for what it names, but
// pins nothing for the file itself, so the agent rewrites the user's
// global config: core.fsmonitor there runs in every git status of the
// user's, in every repository on the host.
func TestRed18GlobalConfigLinkedIntoWorkspace(t *testing.T) {
	requireRoot(t)
	d := newDriver(t, NativeOptions{})
	home := t.TempDir()
	os.Chown(home, userDirOwner, userDirOwner)
	withHome(t, userDirOwner, home)
	ws, marker, git := userDir(t)
	red17Repo(t, git, ws)
	writeAs(t, userDirOwner, filepath.Join(ws, "gitconfig"), "[user]\n\tname = me\n\temail = me@example.com\n", 0o644)
	if err := os.Symlink(filepath.Join(ws, "gitconfig"), filepath.Join(home, ".gitconfig")); err != nil {
		t.Fatal(err)
	}
	os.Lchown(filepath.Join(home, ".gitconfig"), userDirOwner, userDirOwner)
	other, _, git2 := userDir(t)
	red17Repo(t, git2, other)
	b := newBox(t, d, Spec{Workspace: ws, Owner: &User{UID: userDirOwner, GID: userDirOwner}})
	t.Log(b.run(`cd /workspace; printf '[core]\n\tfsmonitor = "touch ` + marker + `/global-config-in-workspace; false"\n' >> gitconfig; cat gitconfig; true`))
	b.end()
	out, _ := gitWithHome(userDirOwner, home, other, "status")
	noMarks(t, marker, "the user (git status in another repository, with ~/.gitconfig linked into the workspace)", out)
}

// TestRed18HostConfigFifoHangsCreate attacks the daemon (root) through
// hostGitRefs: where a config it reads is a file in the workspace
// (~/.gitconfig -> ~/dotfiles/gitconfig, or an include so linked), the
// agent replaces that file by a FIFO between sessions; read opens it
// with os.Open before it checks it is a regular file, and the open
// blocks for ever: the next Create over the workspace never returns.
// (Git on the host would block too, but that is the user's git, not the
// daemon.)
func TestRed18HostConfigFifoHangsCreate(t *testing.T) {
	old := systemGitConfig
	systemGitConfig = filepath.Join(t.TempDir(), "none")
	t.Cleanup(func() { systemGitConfig = old })
	home := t.TempDir()
	withHome(t, 4242, home)
	ws := t.TempDir()
	fifo := filepath.Join(ws, "gitconfig")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(fifo, filepath.Join(home, ".gitconfig")); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		hostGitRefs(ws, 4242)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(3 * time.Second):
		t.Errorf("hostGitRefs (the daemon's Create) blocks on a FIFO in the workspace that ~/.gitconfig links to")
		// Let it go: a writer opens the FIFO, and closes it.
		if f, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
			f.Close()
		}
		<-done
	}
}

// TestRed18SymlinkedHome attacks within's lexical test in hostGitRefs:
// the user's home directory is a symlink (/home -> /data/home, an
// automounted or relocated home), so what ~ names in the user's global
// config is not lexically in the workspace's real path, though it is
// there. A `include.path = ~/proj/team.gitconfig` or a hooks directory
// so named is neither pinned nor left to the init, and the daemon reads
// the include itself as root (see the FIFO above).
func TestRed18SymlinkedHome(t *testing.T) {
	old := systemGitConfig
	systemGitConfig = filepath.Join(t.TempDir(), "none")
	t.Cleanup(func() { systemGitConfig = old })
	real := t.TempDir()
	home := filepath.Join(t.TempDir(), "home")
	if err := os.Symlink(real, home); err != nil {
		t.Fatal(err)
	}
	withHome(t, 4242, home)
	ws := filepath.Join(real, "proj")
	os.MkdirAll(ws, 0o755)
	writeAs(t, 0, filepath.Join(real, ".gitconfig"), "[include]\n\tpath = ~/proj/team.gitconfig\n[core]\n\thooksPath = ~/proj/hooks\n", 0o644)
	got, _ := hostGitRefs(ws, 4242)
	var in []string
	for _, r := range got {
		if within(r.Path, ws) {
			in = append(in, r.Path)
		}
	}
	if len(in) != 2 {
		t.Errorf("with the home a symlink, what ~ names in the workspace %s is not pinned: got %+v (in the workspace: %v)", ws, got, in)
	}
}

// TestRed18FilterCommandForms attacks commandPath with command values a
// shell runs from a file of the worktree that it does not return (or
// returns wrongly): `sh clean.sh` (an interpreter's script with no '/',
// which sh, python, perl and node read from the working directory, the
// worktree's top), `./fs\ mon` (an escaped blank: the word holds '\'),
// `env A=1 B=2 C=3 ./envf` (the program past the fourth word) and
// `sh -o errexit ./d.sh` (an interpreter's option that takes an
// argument, which ends the search). The
// user's repository defines the filters; the agent writes the
// .gitattributes that uses them and the programs; the user's `git add`
// runs them.
func TestRed18FilterCommandForms(t *testing.T) {
	requireRoot(t)
	d := newDriver(t, NativeOptions{})
	ws, marker, git := userDir(t)
	red17Repo(t, git, ws)
	for _, c := range [][]string{
		{"config", "filter.a.clean", "sh clean.sh"},
		{"config", "filter.b.clean", `./fs\ mon`},
		{"config", "filter.c.clean", "env A=1 B=2 C=3 ./envf"},
		{"config", "filter.d.clean", "sh -o errexit ./d.sh"},
	} {
		if o, err := git(ws, c...); err != nil {
			t.Fatal(o)
		}
	}
	b := newBox(t, d, Spec{Workspace: ws, Owner: &User{UID: userDirOwner, GID: userDirOwner}})
	t.Log(b.run(`cd /workspace; printf '*.a filter=a\n*.b filter=b\n*.c filter=c\n*.d filter=d\n' > .gitattributes;
printf '` + red18Hook(marker, "sh-script-no-slash") + `' > clean.sh;
printf '` + red18Hook(marker, "escaped-blank") + `' > 'fs mon'; chmod +x 'fs mon';
printf '` + red18Hook(marker, "env-fifth-word") + `' > envf; chmod +x envf;
printf '` + red18Hook(marker, "option-argument") + `' > d.sh;
echo x > x.a; echo x > x.b; echo x > x.c; echo x > x.d; ls -la; true`))
	b.end()
	out, _ := git(ws, "add", "-A")
	noMarks(t, marker, "the user (git add, with filters of the repository's own config)", out)
}

// TestRed18MissedCommandKeys: config keys naming a program git runs (or,
// for init.templateDir, the hooks copied into every repository the user
// makes; lfs.customtransfer.<name>.path, which git-lfs runs), which
// configPaths does not know: a repository's or the user's
// config naming one in the workspace leaves it the agent's.
func TestRed18MissedCommandKeys(t *testing.T) {
	for _, c := range []struct{ name, text, want string }{
		{"init.templateDir", "[init]\n\ttemplateDir = /ws/git-template\n", "/ws/git-template"},
		{"tar.<format>.command", "[tar \"tgz\"]\n\tcommand = ./gz.sh\n", "./gz.sh"},
		{"core.alternateRefsCommand", "[core]\n\talternateRefsCommand = ./alt.sh\n", "./alt.sh"},
		{"imap.tunnel", "[imap]\n\ttunnel = ./tunnel.sh\n", "./tunnel.sh"},
		{"man.<tool>.cmd", "[man \"v\"]\n\tcmd = ./man.sh\n", "./man.sh"},
		{"guitool.<name>.cmd", "[guitool \"g\"]\n\tcmd = ./gui.sh\n", "./gui.sh"},
		{"lfs.customtransfer.<name>.path", "[lfs \"customtransfer.x\"]\n\tpath = ./xfer.sh\n", "./xfer.sh"},
	} {
		wantNamed(t, c.name, c.text, c.want)
	}
}

// wantNamed checks that configPaths finds want in the config text.
func wantNamed(t *testing.T, name, text, want string) {
	t.Run(name, func(t *testing.T) {
		for _, r := range configPaths(text) {
			if strings.TrimPrefix(r.Path, "./") == strings.TrimPrefix(want, "./") {
				return
			}
		}
		t.Errorf("%s = %s is not named: %+v", name, want, configPaths(text))
	})
}

// TestRed18InitTemplateDir: the user's global `init.templateDir`, a
// common setting, names a directory in the workspace (a dotfiles
// repository's git-template); the agent adds hooks/pre-commit to it,
// and git copies it into every repository the user then makes (git
// init, git clone), where the user's first commit runs it.
func TestRed18InitTemplateDir(t *testing.T) {
	requireRoot(t)
	d := newDriver(t, NativeOptions{})
	home := t.TempDir()
	os.Chown(home, userDirOwner, userDirOwner)
	withHome(t, userDirOwner, home)
	ws, marker, _ := userDir(t)
	tmpl := filepath.Join(ws, "git-template")
	os.MkdirAll(filepath.Join(tmpl, "hooks"), 0o755)
	os.Chown(tmpl, userDirOwner, userDirOwner)
	os.Chown(filepath.Join(tmpl, "hooks"), userDirOwner, userDirOwner)
	writeAs(t, userDirOwner, filepath.Join(home, ".gitconfig"), "[init]\n\ttemplateDir = "+tmpl+"\n[user]\n\tname = me\n\temail = me@example.com\n", 0o644)
	red18PlantHook(t, d, ws, "git-template/hooks", marker, "template-hook")
	fresh, _, _ := userDir(t)
	var out strings.Builder
	for _, c := range [][]string{{"init", "-q"}, {"commit", "-q", "--allow-empty", "-m", "first"}} {
		o, _ := gitWithHome(userDirOwner, home, fresh, c...)
		out.WriteString(o)
	}
	noMarks(t, marker, "the user (git init and commit elsewhere, with init.templateDir in the workspace)", out.String())
}

// TestRed18SubmoduleConfigNames attacks the same gap as the linked
// worktree's, wholly inside the workspace: a submodule's .git is a file
// (r.File: only it is pinned), and its git directory, .git/modules/sub,
// is pinned read-only whole, but nothing reads its config for what it
// names in the submodule's worktree. A `core.hooksPath = .husky/_`
// there names sub/.husky/_, which the agent writes; the user's next
// commit in the submodule runs it.
func TestRed18SubmoduleConfigNames(t *testing.T) {
	requireRoot(t)
	d := newDriver(t, NativeOptions{})
	src, _, gitSrc := userDir(t)
	red17Repo(t, gitSrc, src)
	ws, marker, git := userDir(t)
	red17Repo(t, git, ws)
	for _, c := range []struct {
		dir  string
		args []string
	}{
		{ws, []string{"-c", "protocol.file.allow=always", "submodule", "add", "-q", src, "sub"}},
		{ws, []string{"commit", "-qm", "submodule"}},
		{filepath.Join(ws, "sub"), []string{"config", "core.hooksPath", ".husky/_"}},
	} {
		if o, err := git(c.dir, c.args...); err != nil {
			t.Fatal(o)
		}
	}
	red18PlantHook(t, d, ws, "sub/.husky/_", marker, "submodule-hook")
	out, _ := git(filepath.Join(ws, "sub"), "commit", "-q", "--allow-empty", "-m", "mine")
	noMarks(t, marker, "the user (git commit in a submodule whose config has core.hooksPath = .husky/_)", out)
}

// TestRed18ConfigTargetClimbsBackIn attacks configTarget's lexical
// test: a repository at the workspace's top whose config names
// `../proj/hooks` (or includes `../../proj/x.inc` from .git/config),
// with the workspace at .../proj, names a path in the workspace; the
// init takes it for one outside and pins nothing.
func TestRed18ConfigTargetClimbsBackIn(t *testing.T) {
	for _, c := range []struct {
		r       configRef
		confDir string
		want    string
	}{
		{configRef{Path: "../proj/hooks", Hooks: true}, ".git", "hooks"},
		{configRef{Path: "../../proj/x.inc"}, ".git", "x.inc"},
		{configRef{Path: "../proj/fsmon", Exec: true}, ".git", "fsmon"},
	} {
		got, ok := configTarget(c.r, c.confDir, ".", "/home/u/proj")
		if !ok || got != c.want {
			t.Errorf("configTarget(%+v) in /home/u/proj = %q, %v; git on the host reads or runs /home/u/proj/%s", c.r, got, ok, c.want)
		}
	}
}

// red18LinkVictim makes a file of the user's outside the workspace.
func red18LinkVictim(t *testing.T) string {
	home := t.TempDir()
	os.Chmod(filepath.Dir(home), 0o755)
	os.Chown(home, userDirOwner, userDirOwner)
	v := filepath.Join(home, "bashrc")
	writeAs(t, userDirOwner, v, "# the user's\n", 0o644)
	return v
}

// TestRed18LinkInLooseObjects: where no rule holds (watchAlone),
// linksAside does not look inside loose-object directories
// (objects/ab/), so a symlink the agent makes there stays after the
// session, though the README says every symlink made in the user's git
// directories is removed. Git reads a loose object through it without
// checking its name against its contents (another repository's object
// of the user's, outside the workspace), and freshens it with utime
// through it. Low severity.
func TestRed18LinkInLooseObjects(t *testing.T) {
	requireRoot(t)
	watchAlone(t)
	d := newDriver(t, NativeOptions{})
	ws, _, git := userDir(t)
	red17Repo(t, git, ws)
	v := red18LinkVictim(t)
	b := newBox(t, d, Spec{Workspace: ws, Owner: &User{UID: userDirOwner, GID: userDirOwner}})
	b.must(`mkdir -p .git/objects/ab && ln -s ` + v + ` .git/objects/ab/cdef0123456789abcdef0123456789abcdef01`)
	b.end()
	if _, err := os.Lstat(filepath.Join(ws, ".git/objects/ab/cdef0123456789abcdef0123456789abcdef01")); err == nil {
		t.Errorf("a symlink the agent made in .git/objects/ab/ is still there after the session")
	}
}

// TestRed18LinkPastWalkBudget: where no rule holds (watchAlone),
// linksAside stops after maxLinkWalk (200,000) entries of a repository's
// git directories, saying nothing. The agent makes a directory in .git
// that comes before logs in the directory's order (it reads that order
// with ls -f, and tries names until one does), fills it with 200,100
// empty files, and links .git/logs/HEAD to a file of the user's outside
// the workspace: the sweep never gets to it, and the user's next commit
// or checkout appends its reflog line to that file (the branch name in
// it is the agent's: `x$(id)` in a ~/.bashrc runs).
//
// Now the entries git writes (logs, refs, COMMIT_EDITMSG, ...) are
// looked at first, and a walk past its bound says so. The bound is
// lowered here to 500 entries (and the agent's 600), as the real one,
// two million, would take minutes to fill.
func TestRed18LinkPastWalkBudget(t *testing.T) {
	requireRoot(t)
	watchAlone(t)
	old := maxLinkWalk
	maxLinkWalk = 500
	t.Cleanup(func() { maxLinkWalk = old })
	d := newDriver(t, NativeOptions{})
	ws, _, git := userDir(t)
	red17Repo(t, git, ws)
	v := red18LinkVictim(t)
	b := newBox(t, d, Spec{Workspace: ws, Owner: &User{UID: userDirOwner, GID: userDirOwner}})
	t.Log(b.must(`cd .git && P= && for n in $(seq 1 200); do mkdir p$n; if [ "$(ls -f | grep -x -e p$n -e logs | head -1)" = p$n ]; then P=p$n; break; fi; rmdir p$n; done; test -n "$P" && cd $P && seq -f f%g 1 600 | xargs touch && cd .. && rm -f logs/HEAD && ln -s ` + v + ` logs/HEAD && ls -f | head -30 && echo pad $P`))
	b.end()
	out, _ := git(ws, "commit", "-q", "--allow-empty", "-m", "mine")
	if got, _ := os.ReadFile(v); string(got) != "# the user's\n" {
		t.Errorf("the user's git wrote through .git/logs/HEAD, a symlink the sweep did not reach, into %s:\n%s\n%s", v, got, out)
	}
}

// TestRed18CommandPathFirstWord attacks commandPath on values whose
// program is a path in the worktree, in forms a shell runs it from:
// the first word glued to an operator (`!./lint.sh; git push`,
// `./fsmon.sh>/dev/null`), quoted with a blank in it, an interpreter
// it does not list (python3.11, php), and an interpreter's script
// with no '/' (`sh clean.sh`, read from the worktree's top).
func TestRed18CommandPathFirstWord(t *testing.T) {
	for _, c := range []struct{ v, want string }{
		{"!./lint.sh; git push", "./lint.sh"},
		{"!./lint.sh&&git push", "./lint.sh"},
		{"./fsmon.sh>/dev/null", "./fsmon.sh"},
		{`"./my tool" --clean`, "./my tool"},
		{"sh clean.sh", "clean.sh"},
		{"python3 clean.py", "clean.py"},
		{"python3.11 ./clean.py", "./clean.py"},
		{"php ./clean.php", "./clean.php"},
	} {
		if got, ok := commandPath(c.v); !ok || got != c.want {
			t.Errorf("commandPath(%q) = %q, %v; the shell runs %s from the worktree", c.v, got, ok, c.want)
		}
	}
}

// TestRed18EnclosingLinkedWorktree: a probe that holds. The workspace is
// inside a linked worktree of the user's (its .git a file to
// main/.git/worktrees/wt, whose commondir leads to main/.git), and the
// main repository's config names sub/hooks: hostGitRefs reads it
// through commondir and names the workspace's hooks.
func TestRed18EnclosingLinkedWorktree(t *testing.T) {
	old := systemGitConfig
	systemGitConfig = filepath.Join(t.TempDir(), "none")
	t.Cleanup(func() { systemGitConfig = old })
	withHome(t, 4242, "")
	root := t.TempDir()
	main := filepath.Join(root, "main")
	wt := filepath.Join(root, "wt")
	ws := filepath.Join(wt, "sub")
	os.MkdirAll(ws, 0o755)
	writeAs(t, 0, filepath.Join(main, ".git/config"), "[core]\n\thooksPath = sub/hooks\n", 0o644)
	writeAs(t, 0, filepath.Join(main, ".git/worktrees/wt/commondir"), "../..\n", 0o644)
	writeAs(t, 0, filepath.Join(main, ".git/worktrees/wt/HEAD"), "ref: refs/heads/wt\n", 0o644)
	writeAs(t, 4242, filepath.Join(wt, ".git"), "gitdir: ../main/.git/worktrees/wt\n", 0o644)
	got, _ := hostGitRefs(ws, 4242)
	if len(got) != 1 || got[0].Path != ws+"/hooks" {
		t.Errorf("refs %+v, want %s/hooks", got, ws)
	}
}

// TestRed18FormatPatchWritesThroughLink attacks git's own writes in the
// worktree, which no pin covers: `git format-patch` names its files
// after the commits (0001-<subject>.patch, in the current directory) and
// opens them with fopen, following a symlink. The agent commits its work
// (as agents do), with a subject it knows and a body line that is a
// shell command, and leaves 0001-fix-it.patch -> ~/.bashrc; the user's
// `git format-patch -1` in the workspace overwrites ~/.bashrc, outside
// the workspace, with the patch, whose body line the user's next shell
// runs.
func TestRed18FormatPatchWritesThroughLink(t *testing.T) {
	requireRoot(t)
	redTeam(t, "git format-patch (and any tool of the user's that writes in the worktree) writes through a symlink the agent leaves there")
	d := newDriver(t, NativeOptions{})
	ws, _, git := userDir(t)
	red17Repo(t, git, ws)
	v := red18LinkVictim(t)
	b := newBox(t, d, Spec{Workspace: ws, Owner: &User{UID: userDirOwner, GID: userDirOwner}})
	b.must(`echo agent >> f && git -c user.name=agent -c user.email=a@example.com commit -qam 'fix it' -m 'touch /tmp/agent-was-here' && ln -s ` + v + ` 0001-fix-it.patch`)
	b.end()
	out, _ := git(ws, "format-patch", "-1")
	if got, _ := os.ReadFile(v); string(got) != "# the user's\n" {
		t.Errorf("the user's git format-patch wrote through a symlink the agent left in the worktree, into %s outside the workspace:\n%s\n%s", v, got, out)
	}
}

// TestRed18PlantedLinkStartsNextSession: a probe that holds. With the
// user's global `core.hooksPath = .githooks`, pinned in every
// repository, the agent makes a repository of its own and plants
// .githooks -> /etc in it (and a .githooks file in a plain directory):
// the next session over the workspace still starts (the repository is
// the sandbox uid's, which git on the host does not trust: not pinned).
func TestRed18PlantedLinkStartsNextSession(t *testing.T) {
	requireRoot(t)
	d := newDriver(t, NativeOptions{})
	home := t.TempDir()
	os.Chown(home, userDirOwner, userDirOwner)
	withHome(t, userDirOwner, home)
	ws, _, git := userDir(t)
	red17Repo(t, git, ws)
	writeAs(t, userDirOwner, filepath.Join(home, ".gitconfig"), "[core]\n\thooksPath = .githooks\n", 0o644)
	b := newBox(t, d, Spec{Workspace: ws, Owner: &User{UID: userDirOwner, GID: userDirOwner}})
	t.Log(b.run(`cd /workspace; for i in 1 2 3 4 5; do git init -q -b main mine 2>&1 && break; sleep 0.2; done; ln -s /etc mine/.githooks; mkdir -p plain; ln -s /etc plain/.githooks; ls -la mine; true`))
	b.end()
	b = newBox(t, d, Spec{Workspace: ws, Owner: &User{UID: userDirOwner, GID: userDirOwner}})
	t.Log(b.must(`ls -la mine/.githooks`))
	b.end()
}

// TestRed18GitFifoAboveHangsCreate attacks enclosingRepo, which the
// daemon (root) runs at Create from the workspace's parent up: the
// agent of a session over a directory (~/work) makes a repository in a
// subdirectory (git init ~/work/clients: the guard hands its .git to
// the sandbox's uid, but leaves it) and replaces its config by a FIFO;
// a later session over a directory below it (~/work/clients/acme) has
// the daemon take clients for the enclosing repository and open
// .git/config to read it, which blocks for ever: that Create never
// returns. (The init's rule refuses a FIFO, a file or a link named .git
// itself. A symlink .git/config -> a device would have root open the
// device: /proc/kmsg, a watchdog. Git on the host would not read that
// config: the repository is not the user's.)
func TestRed18GitFifoAboveHangsCreate(t *testing.T) {
	requireRoot(t)
	d := newDriver(t, NativeOptions{})
	ws, _, _ := userDir(t)
	b := newBox(t, d, Spec{Workspace: ws, Owner: &User{UID: userDirOwner, GID: userDirOwner}})
	t.Log(b.run(`cd /workspace; mkdir -p clients/acme; for i in 1 2 3 4 5; do git init -q clients 2>&1 && break; sleep 0.2; done; rm -f clients/.git/config; mkfifo clients/.git/config; ls -la clients clients/.git; true`))
	b.end()
	fifo := filepath.Join(ws, "clients", ".git", "config")
	if st, err := os.Lstat(fifo); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		t.Skipf("no FIFO left: %v", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sb, err := d.Create(t.Context(), Spec{Workspace: filepath.Join(ws, "clients", "acme"), Owner: &User{UID: userDirOwner, GID: userDirOwner}})
		if err == nil {
			sb.Destroy(t.Context())
		}
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Errorf("Create over %s/clients/acme blocks on the FIFO %s the agent left above it", ws, fifo)
		if f, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
			f.Close()
		}
		<-done
	}
}

// TestRed18AgentRepoAboveFailsStart attacks hostGitRefs' enclosing
// repository, which it takes without asking whose it is: the agent of a
// session over ~/work makes a repository at ~/work/clients (handed to
// the sandbox's uid, so git on the host ignores it) whose config names
// core.hooksPath = acme/x/hooks, and makes ~/work/clients/acme/x a
// symlink. A later session over ~/work/clients/acme gets that absolute
// ref from the daemon, and the init, pinning it, meets the link and
// refuses to start (protectWorkspace has no linkInNotOurs exception
// for the host's refs): every session over that directory fails until
// the user finds the link.
func TestRed18AgentRepoAboveFailsStart(t *testing.T) {
	requireRoot(t)
	d := newDriver(t, NativeOptions{})
	ws, _, _ := userDir(t)
	b := newBox(t, d, Spec{Workspace: ws, Owner: &User{UID: userDirOwner, GID: userDirOwner}})
	t.Log(b.run(`cd /workspace; mkdir -p clients/acme; for i in 1 2 3 4 5; do git init -q clients 2>&1 && break; sleep 0.2; done; printf '[core]\n\thooksPath = acme/x/hooks\n' > clients/.git/config; ln -s /etc clients/acme/x; ls -la clients clients/acme; true`))
	b.end()
	sb, err := d.Create(t.Context(), Spec{Workspace: filepath.Join(ws, "clients", "acme"), Owner: &User{UID: userDirOwner, GID: userDirOwner}})
	if err != nil {
		t.Fatalf("Create over clients/acme: %v", err)
	}
	defer sb.Destroy(t.Context())
	term, err := terminal.New(t.Context(), termOptions(sb))
	if err != nil {
		t.Fatalf("a session over clients/acme does not start, for a link the agent of an earlier session planted: %v", err)
	}
	term.Close()
}

// TestRed18AgentRepoShadowsEnclosing attacks enclosingRepo's "the
// nearest .git above": the user's repository ~/mono names
// core.hooksPath = pkgs/mid/app/hooks. A session over ~/mono/pkgs pins
// it; its agent makes a repository at ~/mono/pkgs/mid (handed to the
// sandbox's uid: the host's git ignores it, and at ~/mono still takes
// ~/mono/.git). A later session over ~/mono/pkgs/mid/app has the daemon
// take the agent's repository for the enclosing one, so ~/mono's
// config goes unread and the hooks directory unpinned: the agent writes
// hooks/pre-commit, and the user's next commit at ~/mono runs it.
func TestRed18AgentRepoShadowsEnclosing(t *testing.T) {
	requireRoot(t)
	d := newDriver(t, NativeOptions{})
	mono, marker, git := userDir(t)
	red17Repo(t, git, mono)
	app := filepath.Join(mono, "pkgs", "mid", "app")
	os.MkdirAll(app, 0o755)
	for _, p := range []string{"pkgs", "pkgs/mid", "pkgs/mid/app"} {
		os.Chown(filepath.Join(mono, p), userDirOwner, userDirOwner)
	}
	if o, err := git(mono, "config", "core.hooksPath", "pkgs/mid/app/hooks"); err != nil {
		t.Fatal(o)
	}
	own := &User{UID: userDirOwner, GID: userDirOwner}
	b := newBox(t, d, Spec{Workspace: filepath.Join(mono, "pkgs"), Owner: own})
	t.Log(b.run(`cd /workspace; ls -la mid/app; for i in 1 2 3 4 5; do git init -q mid 2>&1 && break; sleep 0.2; done; ls -la mid; true`))
	b.end()
	red18PlantHook(t, d, app, "hooks", marker, "shadowed-enclosing-hook")
	out, _ := git(mono, "commit", "-q", "--allow-empty", "-m", "mine")
	noMarks(t, marker, "the user (git commit at ~/mono, whose hooksPath is in a workspace below the agent's repository)", out)
}

// TestRed18EnclosingAcrossMount attacks enclosingRepo's stop at a file
// system's edge: git's discovery stops there when it starts below it,
// but the user's git run at the top of ~/mono, whose config names
// core.hooksPath = data/hooks, reads a path, and follows it into the
// file system mounted at ~/mono/data (a volume, a tmpfs, a disk image).
// A session over ~/mono/data: the daemon stops at the mount, reads no
// config above, and pins nothing; the agent writes data/hooks/pre-commit
// and the user's next commit at ~/mono runs it.
func TestRed18EnclosingAcrossMount(t *testing.T) {
	requireRoot(t)
	d := newDriver(t, NativeOptions{})
	mono, marker, git := userDir(t)
	red17Repo(t, git, mono)
	data := filepath.Join(mono, "data")
	os.Mkdir(data, 0o755)
	if err := syscall.Mount("tmpfs", data, "tmpfs", 0, "size=4m,mode=0755,uid="+strconv.Itoa(userDirOwner)+",gid="+strconv.Itoa(userDirOwner)); err != nil {
		t.Skipf("mount: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(data, syscall.MNT_DETACH) })
	if o, err := git(mono, "config", "core.hooksPath", "data/hooks"); err != nil {
		t.Fatal(o)
	}
	red18PlantHook(t, d, data, "hooks", marker, "across-mount-hook")
	out, _ := git(mono, "commit", "-q", "--allow-empty", "-m", "mine")
	noMarks(t, marker, "the user (git commit at ~/mono, whose hooksPath is in a workspace on another file system)", out)
}

// TestRed18NestedRepoHidesOuter: the same gap as the shadow's, with no
// agent before: the user's ~/mono names core.hooksPath =
// lib/app/hooks, and ~/mono/lib is a repository of the user's too (a
// vendored clone). A session over ~/mono/lib/app has the daemon read
// ~/mono/lib's config only (the nearest), so nothing pins the hooks
// directory ~/mono's config names; the user's next commit at ~/mono runs
// what the agent put there.
func TestRed18NestedRepoHidesOuter(t *testing.T) {
	requireRoot(t)
	d := newDriver(t, NativeOptions{})
	mono, marker, git := userDir(t)
	red17Repo(t, git, mono)
	lib := filepath.Join(mono, "lib")
	red17Repo(t, git, lib)
	app := filepath.Join(lib, "app")
	os.Mkdir(app, 0o755)
	os.Chown(app, userDirOwner, userDirOwner)
	if o, err := git(mono, "config", "core.hooksPath", "lib/app/hooks"); err != nil {
		t.Fatal(o)
	}
	red18PlantHook(t, d, app, "hooks", marker, "outer-behind-nested-hook")
	out, _ := git(mono, "commit", "-q", "--allow-empty", "-m", "mine")
	noMarks(t, marker, "the user (git commit at ~/mono, whose hooksPath is below a nested repository of theirs)", out)
}

// TestRed18RepoConfigTildeIntoWorkspace attacks configTarget's "~ is
// the user's, outside": a repository's own config naming
// core.hooksPath = ~/proj/hooks (as written by hand; git expands ~ with
// the user's HOME), for the workspace ~/proj, names the workspace's
// hooks directory, which the init leaves the agent's (and the daemon
// reads only the host's configs, not the repository's).
func TestRed18RepoConfigTildeIntoWorkspace(t *testing.T) {
	requireRoot(t)
	d := newDriver(t, NativeOptions{})
	ws, marker, git := userDir(t)
	home := filepath.Dir(ws)
	withHome(t, userDirOwner, home)
	red17Repo(t, git, ws)
	writeAs(t, userDirOwner, filepath.Join(ws, ".git", "config"), "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\thooksPath = ~/"+filepath.Base(ws)+"/hooks\n", 0o644)
	red18PlantHook(t, d, ws, "hooks", marker, "tilde-hook")
	out, _ := gitWithHome(userDirOwner, home, ws, "commit", "-q", "--allow-empty", "-m", "mine")
	noMarks(t, marker, "the user (git commit, the repository's hooksPath ~/proj/hooks)", out)
}

// TestRed18ConfigBOM: git skips a UTF-8 byte order mark at the start of
// a config file (a config saved by a Windows editor, under WSL);
// configPaths does not, takes the first line for no section, and so
// misses what the first section names.
func TestRed18ConfigBOM(t *testing.T) {
	refs := configPaths("\ufeff[core]\n\thooksPath = .githooks\n\tfsmonitor = ./fsmon\n")
	if len(refs) != 2 {
		t.Errorf("a config with a BOM: %+v, want .githooks and ./fsmon", refs)
	}
}

// TestRed18OldLinkRenamedIn: a probe that holds. Where no rule holds
// (watchAlone), the agent renames a symlink of the user's that is older
// than the session (in .git: from the worktree the rename would cross
// .git's mount) onto .git/logs/HEAD, hoping its old ctime hides it from
// the sweep: a rename sets the ctime (ext4, tmpfs), and the sweep
// removes it.
func TestRed18OldLinkRenamedIn(t *testing.T) {
	requireRoot(t)
	watchAlone(t)
	d := newDriver(t, NativeOptions{})
	ws, _, git := userDir(t)
	red17Repo(t, git, ws)
	v := red18LinkVictim(t)
	old := filepath.Join(ws, ".git", "mylink")
	if err := os.Symlink(v, old); err != nil {
		t.Fatal(err)
	}
	os.Lchown(old, userDirOwner, userDirOwner)
	time.Sleep(20 * time.Millisecond)
	b := newBox(t, d, Spec{Workspace: ws, Owner: &User{UID: userDirOwner, GID: userDirOwner}})
	t.Log(b.must(`rm -f .git/logs/HEAD && mv .git/mylink .git/logs/HEAD && ls -la .git/logs`))
	b.end()
	out, _ := git(ws, "commit", "-q", "--allow-empty", "-m", "mine")
	if got, _ := os.ReadFile(v); string(got) != "# the user's\n" {
		t.Errorf("the user's git wrote through an old symlink renamed onto .git/logs/HEAD, into %s:\n%s\n%s", v, got, out)
	}
}

// TestRed18CommandPathHolds: probes that hold: forms commandPath reads
// right (quoted, a tab, no './', sh -c, env with an assignment, an
// interpreter by its path, "--").
func TestRed18CommandPathHolds(t *testing.T) {
	for _, c := range []struct{ v, want string }{
		{"sh -c './x'", "./x"},
		{`sh -c "./x --flag"`, "./x"},
		{"bin/x", "bin/x"},
		{"!\t./x", "./x"},
		{"env FOO=1 ./x", "./x"},
		{"/usr/bin/env python3 tools/y.py", "tools/y.py"},
		{"bash -- ./x", "./x"},
		{"'./x' arg", "./x"},
	} {
		if got, ok := commandPath(c.v); !ok || got != c.want {
			t.Errorf("commandPath(%q) = %q, %v; want %s", c.v, got, ok, c.want)
		}
	}
}
