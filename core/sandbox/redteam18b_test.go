package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/core/terminal"
)

// Red team 18b: the git guard as of 0db63ec (commandPaths' tokenizer,
// commandKey, linksAside's order).

// TestRed18bCommandWrapperForms attacks commandPaths on command values
// whose program is a file of the worktree's, run by a shell in forms
// it does not read: wrappers with options or arguments of their own
// (`nice -n 10 ./x`, `timeout 60 ./x`, `env -i ./x`, `exec -a n ./x`,
// `command -p ./x`, `time -p ./x`, `env -- ./x`), wrappers it does
// not list (xargs, stdbuf, setsid, flock, ionice, sudo), a shell's
// -c bundled with other flags (`sh -ec '...; ./x'`, `bash -lc`), a
// script a shell reads from its stdin (`sh < x.sh`) or sources
// (`. ./x.sh`, `source x.sh`), busybox's applets (`busybox sh ./x`),
// a command substitution in backquotes or double quotes (its text is
// known: no expansion hides it), and node's -r (a file it runs before
// the script), a redirection with a descriptor before the program
// (`2>/dev/null ./x`: the "2" is taken for the program), and a program
// run after a `cd` (`!cd tools && ./x`, an alias's common form: ./x
// is pinned at the top, tools/x is not). Each is a program or script the agent writes, and the
// user's git runs.
func TestRed18bCommandWrapperForms(t *testing.T) {
	for _, c := range []struct{ v, want string }{
		{"nice -n 10 ./x", "./x"},
		{"timeout 60 ./x", "./x"},
		{"timeout -k 5 60 ./x", "./x"},
		{"env -i ./x", "./x"},
		{"env -u GIT_DIR ./x", "./x"},
		{"env -- ./x", "./x"},
		{"env -S './x a'", "./x"},
		{"exec -a lint ./x", "./x"},
		{"command -p ./x", "./x"},
		{"time -p ./x", "./x"},
		{"xargs ./x", "./x"},
		{"stdbuf -oL ./x", "./x"},
		{"setsid ./x", "./x"},
		{"flock .lock ./x", "./x"},
		{"ionice -c3 ./x", "./x"},
		{"sh -ec 'set -u; ./x'", "./x"},
		{"bash -lc 'cd .; ./x'", "./x"},
		{"sh < x.sh", "x.sh"},
		{"sh <./x.sh", "./x.sh"},
		{". ./x.sh", "./x.sh"},
		{"source x.sh", "x.sh"},
		{"busybox sh ./x", "./x"},
		{"echo `./x`", "./x"},
		{`echo "$(./x)"`, "./x"},
		{"node -r ./x y.js", "./x"},
		{"2>/dev/null ./x", "./x"},
		{"cd tools && ./x", "tools/x"},
		{"(cd tools; exec ./x)", "tools/x"},
	} {
		found := false
		for _, p := range commandPaths(c.v) {
			if strings.TrimPrefix(p, "./") == strings.TrimPrefix(c.want, "./") {
				found = true
			}
		}
		if !found {
			t.Errorf("commandPaths(%q) = %q; the shell runs (or reads) %s from the worktree", c.v, commandPaths(c.v), c.want)
		}
	}
}

// TestRed18bFilterWrapperForms: the same, end to end. The user's
// repository defines filters whose commands are ordinary shell
// (`nice -n 10 ./clean-a`, `timeout 60 ./clean-b`, `sh -ec 'exec
// ./clean-c'`, `. ./clean-d.sh`, `env -i ./clean-e`, `sh <clean-f.sh`);
// commandPaths finds none of their programs, so none is pinned: the
// agent writes them and a .gitattributes that uses them, and the
// user's next `git add` runs every one.
func TestRed18bFilterWrapperForms(t *testing.T) {
	requireRoot(t)
	d := newDriver(t, NativeOptions{})
	ws, marker, git := userDir(t)
	red17Repo(t, git, ws)
	forms := map[string]string{
		"a": "nice -n 10 ./clean-a",
		"b": "timeout 60 ./clean-b",
		"c": "sh -ec 'exec ./clean-c'",
		"d": ". ./clean-d.sh",
		"e": "env -i ./clean-e",
		"f": "sh <clean-f.sh",
	}
	script := "cd /workspace; : > .gitattributes\n"
	for k, v := range forms {
		if o, err := git(ws, "config", "filter."+k+".clean", v); err != nil {
			t.Fatal(o)
		}
		name := "clean-" + k
		if k == "d" || k == "f" {
			name += ".sh"
		}
		script += `echo '*.` + k + ` filter=` + k + `' >> .gitattributes; printf '` + red18Hook(marker, "filter-"+k) + `' > ` + name + `; chmod +x ` + name + `; echo x > x.` + k + "\n"
	}
	b := newBox(t, d, Spec{Workspace: ws, Owner: &User{UID: userDirOwner, GID: userDirOwner}})
	t.Log(b.run(script + "ls -la; true"))
	b.end()
	out, _ := git(ws, "add", "-A")
	noMarks(t, marker, "the user (git add, with filters of the repository's own config run through wrappers)", out)
}

// TestRed18bMissedCommandKeys: config keys naming a program git (or
// git-lfs) runs, which commandKey does not know: hook.<name>.command,
// Git 2.54's config-based hooks (`[hook "lint"] event = pre-commit,
// command = ./scripts/lint.sh`, the form prek and others now install),
// run at every commit from the top of the worktree; git-lfs's
// lfs.extension.<name>.clean and .smudge; git svn's svn.authorsProg and
// git instaweb's instaweb.httpd (rarer).
func TestRed18bMissedCommandKeys(t *testing.T) {
	for _, c := range []struct{ name, text, want string }{
		{"hook.<name>.command", "[hook \"lint\"]\n\tevent = pre-commit\n\tcommand = ./scripts/lint.sh\n", "./scripts/lint.sh"},
		{"lfs.extension.<name>.clean", "[lfs \"extension.foo\"]\n\tclean = ./foo-clean %f\n\tpriority = 0\n", "./foo-clean"},
		{"lfs.extension.<name>.smudge", "[lfs \"extension.foo\"]\n\tsmudge = ./foo-smudge %f\n", "./foo-smudge"},
		{"svn.authorsProg", "[svn]\n\tauthorsProg = ./authors.sh\n", "./authors.sh"},
		{"instaweb.httpd", "[instaweb]\n\thttpd = ./httpd.sh\n", "./httpd.sh"},
	} {
		wantNamed(t, c.name, c.text, c.want)
	}
}

// TestRed18bLinkPastBudgetBelowGitEntry attacks red team 18's fix for
// the walk budget: linksAside looks at git's own entries first, but
// only at the top of the git directory. Below one of them (logs/), the
// order is the directory's again: the agent makes logs/p<n>, a
// directory that comes before HEAD in logs' order, fills it past the
// budget, and links logs/HEAD to a file of the user's outside the
// workspace. The sweep stops in p<n> (saying so, in a note the user
// may never read), the link stays, and the user's next commit appends
// its reflog line (the branch name is the agent's) to that file. The
// bound is lowered to 500 as in TestRed18LinkPastWalkBudget; the real
// one, two million empty files, is a minute of the agent's.
func TestRed18bLinkPastBudgetBelowGitEntry(t *testing.T) {
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
	t.Log(b.must(`cd .git/logs && rm -f HEAD && ln -s ` + v + ` HEAD && P= && for n in $(seq 1 200); do mkdir p$n; if [ "$(ls -f | grep -x -e p$n -e HEAD | head -1)" = p$n ]; then P=p$n; break; fi; rmdir p$n; done; test -n "$P" && cd $P && seq -f f%g 1 600 | xargs touch && cd .. && ls -f | head && echo pad $P`))
	b.end()
	out, _ := git(ws, "commit", "-q", "--allow-empty", "-m", "mine")
	if got, _ := os.ReadFile(v); string(got) != "# the user's\n" {
		t.Errorf("the user's git wrote through .git/logs/HEAD, a symlink the sweep did not reach, into %s:\n%s\n%s", v, got, out)
	}
}

// TestRed18bAgentReposMountBomb attacks the start of every later
// session over a directory of the user's: the init pins, in every
// repository it finds, the repository's control files and up to
// maxConfigPins (256) paths its config names, making the missing ones,
// each a bind mount of its own, whoever's the repository is. An agent's
// repositories (git init works inside; the guard hands them to the
// sandbox's uid, and git on the host refuses them, so they need no
// pins) each name 64 missing programs (what configPaths reads of one file) (`[alias] a1 = !./f1` ...): a
// few hundred of them make the next start bind past the kernel's
// fs.mount-max (100,000 mounts a namespace), and it fails, or spends
// minutes; no session over the directory starts again until the user
// finds and removes them.
func TestRed18bAgentReposMountBomb(t *testing.T) {
	requireRoot(t)
	// 1,400 repositories made the next start fail; 100 (the default
	// here, to keep the suite fast) show the mounts they would cost.
	repos := 100
	if n, err := strconv.Atoi(os.Getenv("RED18B_REPOS")); err == nil {
		repos = n
	}
	d := newDriver(t, NativeOptions{})
	ws, _, git := userDir(t)
	red17Repo(t, git, ws)
	b := newBox(t, d, Spec{Workspace: ws, Owner: &User{UID: userDirOwner, GID: userDirOwner}})
	before, _ := strconv.Atoi(strings.TrimSpace(b.must(`grep -c . /proc/self/mountinfo`)))
	t.Log(b.runLong(`cd /workspace && printf '[alias]\n' > /tmp/al && for n in $(seq 1 64); do printf '\ta%d = !./f%d\n' $n $n; done >> /tmp/al && mkdir r && cd r && for i in $(seq 1 `+strconv.Itoa(repos)+`); do git init -q --template= d$i >/dev/null 2>&1; cat /tmp/al >> d$i/.git/config; done 2>/dev/null; ls */.git/config | wc -l`, 5*time.Minute))
	b.end()
	start := time.Now()
	b2 := newBox(t, d, Spec{Workspace: ws, Owner: &User{UID: userDirOwner, GID: userDirOwner}})
	code, out := b2.runTimeout(`grep -c . /proc/self/mountinfo`, 5*time.Minute)
	t.Logf("second start: %v, exit %d: %s", time.Since(start), code, out)
	if code != 0 || time.Since(start) > 30*time.Second {
		t.Errorf("the agent's repositories (%d) keep the next session from starting (exit %d after %v): %s", repos, code, time.Since(start), out)
	}
	if after, _ := strconv.Atoi(strings.TrimSpace(out)); after > before+20 {
		t.Errorf("the agent's %d repositories cost the next start %d mounts (%d before them)", repos, after-before, before)
	}
	b2.end()
}

// TestRed18bHooksPathThroughSymlink attacks configTarget's lexical test
// of an absolute path against the workspace's real path: a repository's
// own config names its hooks by an absolute path through a symlink
// (`git config core.hooksPath "$PWD/.githooks"` in a shell whose $PWD
// is the logical path: a home under a symlinked /home, a project
// reached through ~/work -> /data/work). The daemon resolves the
// workspace to its real path, the init compares the config's path with
// it as text, finds it outside, and pins nothing: the agent writes
// .githooks/pre-commit, and the user's next commit runs it.
func TestRed18bHooksPathThroughSymlink(t *testing.T) {
	requireRoot(t)
	d := newDriver(t, NativeOptions{})
	ws, marker, git := userDir(t)
	red17Repo(t, git, ws)
	ld := t.TempDir()
	os.Chmod(filepath.Dir(ld), 0o755)
	os.Chmod(ld, 0o755)
	link := filepath.Join(ld, "proj")
	if err := os.Symlink(ws, link); err != nil {
		t.Fatal(err)
	}
	if o, err := git(ws, "config", "core.hooksPath", link+"/.githooks"); err != nil {
		t.Fatal(o)
	}
	red18PlantHook(t, d, ws, ".githooks", marker, "hookspath-through-symlink")
	out, _ := git(ws, "commit", "-q", "--allow-empty", "-m", "mine")
	noMarks(t, marker, "the user (git commit, core.hooksPath an absolute path through a symlink to the workspace)", out)
}

// TestRed18bRepoIncludeOutside attacks what a repository's config in
// the workspace includes from outside it: the init cannot read a file
// outside the workspace, and the daemon reads only the global configs
// and the repositories around the workspace, not what a repository in
// it includes (`git config include.path ~/dotfiles/work.gitconfig`, a
// team's shared file). What that file names relative to the worktree
// (`core.hooksPath = .githooks`, a filter's ./clean) is pinned by no
// one: the agent writes .githooks/pre-commit, and the user's next
// commit runs it.
func TestRed18bRepoIncludeOutside(t *testing.T) {
	requireRoot(t)
	d := newDriver(t, NativeOptions{})
	ws, marker, git := userDir(t)
	red17Repo(t, git, ws)
	dir := t.TempDir()
	os.Chmod(filepath.Dir(dir), 0o755)
	os.Chown(dir, userDirOwner, userDirOwner)
	inc := filepath.Join(dir, "work.gitconfig")
	writeAs(t, userDirOwner, inc, "[core]\n\thooksPath = .githooks\n", 0o644)
	if o, err := git(ws, "config", "include.path", inc); err != nil {
		t.Fatal(o)
	}
	red18PlantHook(t, d, ws, ".githooks", marker, "include-outside-hookspath")
	out, _ := git(ws, "commit", "-q", "--allow-empty", "-m", "mine")
	noMarks(t, marker, "the user (git commit, the repository's config including a file outside the workspace that sets core.hooksPath = .githooks)", out)
}

// TestRed18bNestedLinkedWorktree attacks protectFileRepo and
// reposAround together: a linked worktree of a repository of the
// user's outside the workspace, one level down in it (a session over
// ~/work, which holds ~/work/feature, made by `git worktree add` from
// ~/src/app). The init reads a .git file's git directory only inside
// the workspace, and the daemon reads one outside only for the
// workspace's own .git: the main repository's config, with husky's
// `core.hooksPath = .husky/_`, is read by no one, so
// feature/.husky/_ is the agent's, and the user's next commit in
// ~/work/feature runs what it put there.
func TestRed18bNestedLinkedWorktree(t *testing.T) {
	requireRoot(t)
	d := newDriver(t, NativeOptions{})
	main, marker, git := userDir(t)
	red17Repo(t, git, main)
	if o, err := git(main, "config", "core.hooksPath", ".husky/_"); err != nil {
		t.Fatal(o)
	}
	ws, _, _ := userDir(t)
	wt := filepath.Join(ws, "feature")
	if o, err := git(main, "worktree", "add", "-q", "-b", "agent", wt); err != nil {
		t.Fatal(o)
	}
	red18PlantHook(t, d, ws, "feature/.husky/_", marker, "nested-linked-worktree-hook")
	out, _ := git(wt, "commit", "-q", "--allow-empty", "-m", "mine")
	noMarks(t, marker, "the user (git commit in a linked worktree inside the workspace, whose repository outside has core.hooksPath = .husky/_)", out)
}

// TestRed18bNestedGitLinkToOutsideGitDir attacks a repository in the
// workspace whose .git is a symbolic link to its git directory
// elsewhere (a checkout whose git directory was moved to another disk:
// `ln -s /data/git/app.git app/.git`; git follows the link as a git
// directory). findRepos takes a .git only as a directory or a regular
// file, so the init neither pins nor reads anything for it (at the top
// of the workspace the start fails instead: it holds), and the daemon
// looks only above the workspace: the git directory's
// `core.hooksPath = .githooks` is read by no one, the agent writes
// app/.githooks/pre-commit, and the user's next commit in app runs it.
func TestRed18bNestedGitLinkToOutsideGitDir(t *testing.T) {
	requireRoot(t)
	d := newDriver(t, NativeOptions{})
	store, marker, git := userDir(t)
	red17Repo(t, git, store)
	if o, err := git(store, "config", "core.hooksPath", ".githooks"); err != nil {
		t.Fatal(o)
	}
	ws, _, _ := userDir(t)
	app := filepath.Join(ws, "app")
	os.Mkdir(app, 0o755)
	os.Chown(app, userDirOwner, userDirOwner)
	if err := os.Symlink(filepath.Join(store, ".git"), filepath.Join(app, ".git")); err != nil {
		t.Fatal(err)
	}
	os.Lchown(filepath.Join(app, ".git"), userDirOwner, userDirOwner)
	if o, err := git(app, "checkout", "-q", "-f"); err != nil {
		t.Fatal(o)
	}
	red18PlantHook(t, d, ws, "app/.githooks", marker, "git-link-hooks")
	out, _ := git(app, "commit", "-q", "--allow-empty", "-m", "mine")
	noMarks(t, marker, "the user (git commit in a checkout whose .git is a link to its git directory outside, with core.hooksPath = .githooks)", out)
}

// TestRed18bTopGitLinkHolds: a probe that holds (fails closed). A
// workspace whose own .git is a symbolic link to its git directory
// outside: the start fails (the init refuses to pin through the link),
// so nothing runs in it, and nothing the user's git runs is the
// agent's. (A start that fails is the user's cost: such a checkout
// cannot be given to a session at all.)
func TestRed18bTopGitLinkHolds(t *testing.T) {
	requireRoot(t)
	d := newDriver(t, NativeOptions{})
	store, _, git := userDir(t)
	red17Repo(t, git, store)
	ws, _, _ := userDir(t)
	if err := os.Symlink(filepath.Join(store, ".git"), filepath.Join(ws, ".git")); err != nil {
		t.Fatal(err)
	}
	os.Lchown(filepath.Join(ws, ".git"), userDirOwner, userDirOwner)
	sb, err := d.Create(context.Background(), Spec{Workspace: ws, Owner: &User{UID: userDirOwner, GID: userDirOwner}})
	if err != nil {
		return
	}
	t.Cleanup(func() { sb.Destroy(context.Background()) })
	term, err := terminal.New(context.Background(), termOptions(sb))
	if err == nil {
		term.Close()
		t.Errorf("a session started in a workspace whose .git is a link to a git directory outside, which nothing reads")
	}
}

// TestRed18bSubmoduleOfEnclosingRepo: the same gap as
// TestRed18bNestedLinkedWorktree, by a submodule: a session over a
// directory of a superproject of the user's (~/proj/packages), which
// holds a submodule (packages/lib, its .git a file naming
// ~/proj/.git/modules/packages/lib, outside the workspace). The daemon
// reads the superproject's config above, the init reads a .git file's
// git directory only inside the workspace: the submodule's own config,
// with `core.hooksPath = .githooks`, is read by no one.
func TestRed18bSubmoduleOfEnclosingRepo(t *testing.T) {
	requireRoot(t)
	d := newDriver(t, NativeOptions{})
	src, marker, git := userDir(t)
	red17Repo(t, git, src)
	main, _, _ := userDir(t)
	red17Repo(t, git, main)
	os.Mkdir(filepath.Join(main, "packages"), 0o755)
	os.Chown(filepath.Join(main, "packages"), userDirOwner, userDirOwner)
	if o, err := git(main, "-c", "protocol.file.allow=always", "submodule", "add", "-q", src, "packages/lib"); err != nil {
		t.Fatal(o)
	}
	lib := filepath.Join(main, "packages/lib")
	if o, err := git(lib, "config", "core.hooksPath", ".githooks"); err != nil {
		t.Fatal(o)
	}
	ws := filepath.Join(main, "packages")
	red18PlantHook(t, d, ws, "lib/.githooks", marker, "submodule-of-enclosing-hooks")
	out, _ := git(lib, "commit", "-q", "--allow-empty", "-m", "mine")
	noMarks(t, marker, "the user (git commit in a submodule in the workspace whose git directory is the enclosing superproject's, with core.hooksPath = .githooks)", out)
}
