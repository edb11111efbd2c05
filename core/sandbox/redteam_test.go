package sandbox

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/core/terminal"
)

// redTeam skips a test that reproduces a known break unless HARNESSD_RED=1:
// with it, the test runs and fails on the code that has the break.
func redTeam(t *testing.T, what string) {
	t.Helper()
	if os.Getenv("HARNESSD_RED") != "1" {
		t.Skip("known break: " + what + " (HARNESSD_RED=1 runs it)")
	}
}

// TestGitRebaseTodo: in a directory of the user's, a pinned repository's
// control files are read-only, but .git/rebase-merge is not (git inside
// rebases there): the agent could leave an interactive rebase in progress
// whose to-do list has an exec line, which the user's git on the host
// runs at `git rebase --continue` (as `git status` tells them to). When
// the session ends, a rebase the sandbox left in progress or changed (or
// a link in its place) is moved aside, and one of the user's it did not
// touch is kept (a red team's break, issue 16). Git inside still
// rebases, exec lines and all.
func TestGitRebaseTodo(t *testing.T) {
	requireRoot(t)
	// Where the init's rule holds, the agent can make no link in the
	// user's .git; with the watch alone it can, and the end removes it.
	// A daemon that died leaves the end to the next one's Cleanup.
	for _, mode := range []string{"rule", "watch alone", "daemon died"} {
		t.Run(mode, func(t *testing.T) {
			if mode == "watch alone" {
				watchAlone(t)
			}
			state := t.TempDir()
			d := newDriver(t, NativeOptions{StateDir: state})
			const user = userDirOwner
			ws, marker, git := userDir(t)
			own := filepath.Join(t.TempDir(), "own")
			os.Chmod(filepath.Dir(own), 0o777)
			repo := func(dir string) {
				os.MkdirAll(dir, 0o755)
				os.Chown(dir, user, user)
				if out, err := git(dir, "init", "-q", "-b", "main"); err != nil {
					t.Fatal(out)
				}
				for i := range 3 {
					os.WriteFile(filepath.Join(dir, "f"), []byte(strings.Repeat("x\n", i+1)), 0o644)
					os.Chown(filepath.Join(dir, "f"), user, user)
					for _, c := range [][]string{{"add", "f"}, {"commit", "-qm", "c"}} {
						if out, err := git(dir, c...); err != nil {
							t.Fatal(out)
						}
					}
				}
			}
			repo(ws)
			repo(filepath.Join(ws, "sub"))
			repo(filepath.Join(ws, "third"))
			repo(filepath.Join(ws, "kept"))
			// The user's own rebases, stopped at a break, with an exec line
			// of theirs still to run: one the agent adds to, one it leaves.
			for _, dir := range []string{ws, filepath.Join(ws, "kept")} {
				editor := "f() { printf 'break\\nexec echo own >> " + own + "\\n' > \"$1\"; }; f"
				if out, err := git(dir, "-c", "sequence.editor="+editor, "rebase", "-i", "HEAD~1"); err != nil {
					t.Fatal(out)
				}
			}
			b := newBox(t, d, Spec{Workspace: ws, Owner: &User{UID: user, GID: user}})
			// Git inside rebases, with exec lines that run inside.
			if out := b.must("cd third && git rebase -q -x 'touch /tmp/inside-exec' HEAD~2 2>&1; ls /tmp/inside-exec && git log --oneline | wc -l"); !strings.Contains(out, "/tmp/inside-exec") || !strings.HasSuffix(strings.TrimSpace(out), "3") {
				t.Errorf("git rebase -x inside the sandbox:\n%s", out)
			}
			// The attacks: lines added to the user's rebase, a rebase made by
			// hand, and links where git would follow them (refused where the
			// init's rule holds; removed at the end where not).
			t.Log(b.must(strings.NewReplacer("MARK", marker, "OWN", own).Replace(`cd /workspace && printf 'exec touch MARK/appended\nx touch MARK/short\n  exec touch MARK/indented\nexec echo own >> OWN\n' >> .git/rebase-merge/git-rebase-todo
		cd sub && H=$(git rev-parse HEAD) && mkdir -p .git/rebase-merge && cd .git/rebase-merge &&
		echo refs/heads/main > head-name && echo $H > onto && echo $H > orig-head && touch interactive &&
		echo 1 > msgnum && echo 1 > end && : > done && printf 'exec touch MARK/made\n' > git-rebase-todo
		cd /workspace/third && H=$(git rev-parse HEAD) && mkdir -p /workspace/evil && cd /workspace/evil &&
		echo refs/heads/main > head-name && echo $H > onto && echo $H > orig-head && touch interactive &&
		echo 1 > msgnum && echo 1 > end && : > done && printf 'exec touch MARK/linked\n' > git-rebase-todo &&
		ln -s /workspace/evil /workspace/third/.git/rebase-merge 2>&1; true`)))
			b.term.Close()
			end := b.sb.Destroy
			if mode == "daemon died" {
				end = newDriver(t, NativeOptions{StateDir: state}).Cleanup
			}
			if err := end(context.Background()); err != nil {
				t.Fatal(err)
			}

			for _, dir := range []string{".", "sub", "third"} {
				if _, err := os.Lstat(filepath.Join(ws, dir, ".git", "rebase-merge")); err == nil {
					t.Errorf("%s: the rebase the sandbox left or changed is still in progress", dir)
				}
			}
			aside, _ := filepath.Glob(filepath.Join(ws, ".git", "rebase-merge.sandbox-*", "git-rebase-todo"))
			if len(aside) != 1 {
				t.Errorf("the user's rebase the agent changed, moved aside: %v", aside)
			} else if todo, _ := os.ReadFile(aside[0]); !strings.Contains(string(todo), "MARK/appended") && !strings.Contains(string(todo), "/appended") {
				t.Errorf("moved aside, the to-do list holds:\n%s", todo)
			}
			for _, dir := range []string{ws, filepath.Join(ws, "sub"), filepath.Join(ws, "third"), filepath.Join(ws, "kept")} {
				status, _ := git(dir, "status")
				out, _ := git(dir, "rebase", "--continue")
				noMarks(t, marker, "the user", status+"\n"+out)
			}
			if got, _ := os.ReadFile(own); string(got) != "own\n" {
				t.Errorf("the user's own exec line (in the rebase the session left alone) ran %q, want once", got)
			}
		})
	}
}

// TestSetuidForOthers: in a directory of the user's, the agent's files
// are the user's on the host, and the host's mount of it is not nosuid
// (the sandbox's own is): a setuid (or setgid) bit set inside would let
// any other local user who can reach the directory run the file as the
// workspace's user. The filter refuses both bits in every mode (chmod,
// creating opens, mknod), so none reaches the host. (Red team, issue 16.)
func TestSetuidForOthers(t *testing.T) {
	requireRoot(t)
	d := newDriver(t, NativeOptions{})
	const user = userDirOwner
	ws, _, _ := userDir(t)
	os.Chmod(ws, 0o755)
	b := newBox(t, d, Spec{Workspace: ws, Owner: &User{UID: user, GID: user}})
	out := b.must(`cp /usr/bin/id tool; chmod 6755 tool 2>&1; chmod u+s tool 2>&1; chmod g+s tool 2>&1; install -m 4755 /usr/bin/id tool2 2>&1; ` +
		`python3 -c 'import os; os.close(os.open("tool3", os.O_CREAT|os.O_WRONLY, 0o4755))' 2>&1 | tail -1; ` +
		`mkdir -m 2775 d 2>&1; stat -c '%n %a' tool tool2 tool3 d 2>&1; chmod 755 tool && echo plain-ok`)
	t.Logf("inside:\n%s", out)
	if !strings.Contains(out, "plain-ok") || strings.Count(out, "Operation not permitted") < 4 {
		t.Errorf("chmod of the set-id bits was not refused, or a plain chmod was:\n%s", out)
	}
	for _, name := range []string{"tool", "tool2", "tool3", "d"} {
		fi, err := os.Lstat(filepath.Join(ws, name))
		if err != nil {
			continue
		}
		if fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 {
			t.Errorf("the agent's %s keeps a set-id bit on the host: %v", name, fi.Mode())
		}
	}
	out2, err := exec.Command("setpriv", "--reuid=4444", "--regid=4444", "--clear-groups", filepath.Join(ws, "tool")).CombinedOutput()
	if err == nil && strings.Contains(string(out2), "euid=4343") {
		t.Errorf("host uid 4444 ran the agent's file as the workspace's user: %s", out2)
	}
}

// TestGitWritesThroughLinks: in a directory of the user's, the agent
// replaced files git writes in a pinned repository's .git
// (COMMIT_EDITMSG, the reflog logs/HEAD, a ref) with symlinks to any file
// of the user's outside the workspace; the user's git on the host
// followed them and wrote there (`git commit --amend --no-edit`
// overwrote the target with the agent's commit message, `git checkout
// main` appended a line naming the agent's branch): with ~/.bashrc or
// ~/.ssh/authorized_keys, the agent's code run, or its key trusted, as
// the user (red team, issue 16). The init's rule now makes no symlink in
// the user's pinned git directories, and a rename or link from outside
// is another mount's. The kernel's rule (BPF LSM) does not cover this,
// which is why guards use it only where the init's cannot hold.
//
// Where no rule of the init's holds (the kernel's only, or none: here
// with none), the agent can make such links, and at the end of the
// session the guard removes every symbolic link made in the user's git
// directories since it started (linksAside), so the user's git, run
// after, writes through none.
func TestGitWritesThroughLinks(t *testing.T) {
	requireRoot(t)
	t.Run("init's rule", func(t *testing.T) {
		if !sharedInitRule() {
			t.Skipf("the init cannot enforce its rule here: %v", initRuleErr)
		}
		writesThroughLinks(t, true)
	})
	t.Run("no rule, at the end", func(t *testing.T) {
		watchAlone(t)
		writesThroughLinks(t, false)
	})
}

func writesThroughLinks(t *testing.T, rule bool) {
	d := newDriver(t, NativeOptions{})
	const user = userDirOwner
	ws, _, git := userDir(t)
	home := t.TempDir() // the user's files outside the workspace
	os.Chmod(filepath.Dir(home), 0o755)
	if err := os.Chown(home, user, user); err != nil {
		t.Fatal(err)
	}
	victims := []string{filepath.Join(home, "bashrc"), filepath.Join(home, "profile")}
	for _, v := range victims {
		os.WriteFile(v, []byte("# the user's\n"), 0o644)
		os.Chown(v, user, user)
	}
	if out, err := git(ws, "init", "-q", "-b", "main"); err != nil {
		t.Fatal(out)
	}
	os.WriteFile(filepath.Join(ws, "f"), []byte("1\n"), 0o644)
	os.Chown(filepath.Join(ws, "f"), user, user)
	for _, c := range [][]string{{"add", "f"}, {"commit", "-qm", "1"}} {
		if out, err := git(ws, c...); err != nil {
			t.Fatal(out)
		}
	}
	b := newBox(t, d, Spec{Workspace: ws, Owner: &User{UID: user, GID: user}})
	b.must("git config --global user.name agent && git config --global user.email a@example.com")
	b.must(`echo 2 >> f && git commit -qam 'touch /tmp/agent-was-here' && git checkout -q -b 'x$(id)'`)
	for _, attack := range []string{
		"ln -sfn " + victims[0] + " .git/COMMIT_EDITMSG",
		"rm -f .git/logs/HEAD && ln -s " + victims[1] + " .git/logs/HEAD",
		"ln -s " + victims[0] + " .git/refs/heads/review-me",
		"ln -s " + victims[0] + " ln1 && mv ln1 .git/COMMIT_EDITMSG",
		"ln -s " + victims[1] + " ln2 && ln ln2 .git/ORIG_HEAD",
		"ln -s " + victims[1] + " .git/objects/info/x",
		`python3 -c 'import os; os.symlink("` + victims[0] + `", "COMMIT_EDITMSG", dir_fd=os.open(".git", os.O_RDONLY))'`,
	} {
		if code, out := b.run(attack); code == 0 && rule {
			t.Errorf("attack %q worked inside: %s", attack, out)
		}
	}
	if rule {
		// Git inside still works in the repository, and links outside .git.
		b.must("echo 3 >> f && git commit -qam 3 && git checkout -q main && ln -s f link-in-worktree && git log --oneline | wc -l")
	} else {
		t.Log(b.must("find .git -type l | sort"))
		b.end()
	}
	out1, _ := git(ws, "commit", "--amend", "--no-edit", "-q")
	out2, _ := git(ws, "checkout", "-q", "main")
	for _, v := range victims {
		if got, _ := os.ReadFile(v); string(got) != "# the user's\n" {
			t.Errorf("the user's git wrote the agent's text into %s, outside the workspace:\n%s\ncommit: %s\ncheckout: %s", v, got, out1, out2)
		}
	}
}

// TestMountinfoDataDir: the daemon keeps sandboxes' state under its data
// directory (daemon.RunDir defaults to DATA/run, the state in
// RUN/sandboxes), and the terminal's control directory was mounted at its
// host path: so even with a disk, mountinfo inside named the data
// directory and the sandbox's id, as the bind's mount point and as its
// root, which issue 16 item 6 and the README ("names neither the data
// directory (with a disk)") say it does not. (Red team, issue 16;
// TestMountinfoNeutral missed it: its state directory is elsewhere.) Now
// the control directory is a tmpfs of its own at ControlPath, and the
// shell still reads its commands there.
func TestMountinfoDataDir(t *testing.T) {
	requireRoot(t)
	data := filepath.Join(t.TempDir(), "harnessd-data")
	opts := NativeOptions{StateDir: filepath.Join(data, "run", "sandboxes"), DiskDir: filepath.Join(data, "disks")}
	d := newDriver(t, opts)
	const id = "sb-mountinfo-probe"
	b := newBox(t, d, Spec{ID: id, Limits: Limits{DiskBytes: 32 << 20}})
	mi := b.must("cat /proc/self/mountinfo")
	if strings.Contains(mi, data) {
		t.Errorf("mountinfo inside names the data directory %s:\n%s", data, mi)
	}
	var ctl []string
	for _, l := range strings.Split(mi, "\n") {
		if f := strings.Fields(l); len(f) > 4 && f[4] == ControlPath {
			ctl = append(ctl, l)
		}
	}
	if len(ctl) != 1 {
		t.Fatalf("want one mount at %s, got %q:\n%s", ControlPath, ctl, mi)
	}
	if f := strings.Fields(ctl[0]); f[3] != "/" || strings.Contains(ctl[0], id) {
		t.Errorf("the control directory's mount names its source (root %q) or the sandbox's id %s: %s", f[3], id, ctl[0])
	}
	// The shell reads its commands from there: output, and a cd that
	// lasts to the next command.
	if got := b.must("echo out; cd /tmp"); got != "out" {
		t.Errorf("echo: %q", got)
	}
	if got := b.must("pwd"); got != "/tmp" {
		t.Errorf("cd did not last: pwd %q", got)
	}
}

// TestGitConfigIntoWorkspace: a pinned repository's config is
// read-only, but what it names in the worktree is not pinned: a user
// whose .git/config includes a file of the worktree (`git config
// include.path ../project.gitconfig`, a way to share a project's
// settings; includeIf the same) has that file's settings, the agent's,
// in their git on the host; one whose core.hooksPath is a directory of
// the worktree (husky's setup: .husky/_) runs the agent's hooks. (Red
// team, issue 16.) Now the init pins those targets too: an existing
// include read-only, a missing one as an empty file, a missing hooks
// directory where its path first leaves what exists (.husky here).
func TestGitConfigIntoWorkspace(t *testing.T) {
	requireRoot(t)
	d := newDriver(t, NativeOptions{})
	const user = userDirOwner
	ws, marker, git := userDir(t)
	// The project's shared config includes one more, not there yet.
	os.WriteFile(filepath.Join(ws, "project.gitconfig"), []byte("[user]\n[include]\n\tpath = nested.gitconfig\n"), 0o644)
	os.WriteFile(filepath.Join(ws, "f"), []byte("1\n"), 0o644)
	os.Chown(filepath.Join(ws, "project.gitconfig"), user, user)
	os.Chown(filepath.Join(ws, "f"), user, user)
	for _, c := range [][]string{{"init", "-q", "-b", "main"}, {"config", "include.path", "../project.gitconfig"},
		{"config", "includeIf.gitdir:/.path", "../extra.gitconfig"}, {"config", "core.hooksPath", ".husky/_"},
		{"add", "f"}, {"commit", "-qm", "1"}} {
		if out, err := git(ws, c...); err != nil {
			t.Fatal(out)
		}
	}
	b := newBox(t, d, Spec{Workspace: ws, Owner: &User{UID: user, GID: user}})
	for _, attack := range []string{
		`printf '[core]\n\tfsmonitor = "touch MARK/include; false"\n' >> project.gitconfig`,
		`printf '[alias]\n\tst = "!touch MARK/includeif"\n' > extra.gitconfig`,
		`mkdir -p .husky/_ && printf '#!/bin/sh\ntouch MARK/hookspath\n' > .husky/_/pre-commit && chmod +x .husky/_/pre-commit`,
		`printf '[core]\n\tfsmonitor = "touch MARK/nested; false"\n' > nested.gitconfig`,
	} {
		if code, out := b.run(strings.ReplaceAll(attack, "MARK", marker)); code == 0 {
			t.Errorf("attack %q worked inside: %s", attack, out)
		}
	}
	// Git inside still works over the pins.
	b.must("git add -A && git -c user.email=a@b -c user.name=a commit -qm inside && git log --oneline | wc -l")
	out := hostRuns(git, ws, ".")
	if ents, _ := os.ReadDir(marker); len(ents) > 0 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Fatalf("the user's git ran the sandbox's code from files its config names in the workspace: %v\n%s", names, out)
	}
}

// TestGitReadsThroughLinks: the other direction of the same
// links: in a pinned repository of the user's, the agent makes a branch
// that is a symlink to a ref of a private repository of the user's that
// the sandbox cannot reach, and names that repository's objects in
// objects/info/alternates. The user's `git checkout` of that branch
// writes the private repository's files into the workspace, where the
// agent reads them. (Red team, issue 16.) Now alternates is pinned: the
// link alone gives the user's git a commit it has no objects for. The
// link itself is TestGitWritesThroughLinks's.
func TestGitReadsThroughLinks(t *testing.T) {
	requireRoot(t)
	d := newDriver(t, NativeOptions{})
	const user = userDirOwner
	ws, private := t.TempDir(), t.TempDir()
	os.Chmod(filepath.Dir(ws), 0o755)
	os.Chmod(filepath.Dir(private), 0o755)
	git := func(dir string, args ...string) (string, error) { return hostGitAs(user, dir, args...) }
	for _, dir := range []string{ws, private} {
		if err := os.Chown(dir, user, user); err != nil {
			t.Fatal(err)
		}
		name := "f"
		if dir == private {
			name = "secret.env"
		}
		os.WriteFile(filepath.Join(dir, name), []byte("KEY=hunter2\n"), 0o644)
		os.Chown(filepath.Join(dir, name), user, user)
		for _, c := range [][]string{{"init", "-q", "-b", "main"}, {"add", name}, {"commit", "-qm", "1"}} {
			if out, err := git(dir, c...); err != nil {
				t.Fatal(out)
			}
		}
	}
	os.Chmod(private, 0o700)
	b := newBox(t, d, Spec{Workspace: ws, Owner: &User{UID: user, GID: user}})
	// Refused where the init's rule holds (TestGitWritesThroughLinks),
	// made where the kernel's does: alternates must hold either way.
	b.run("ln -s " + private + "/.git/refs/heads/main .git/refs/heads/review-me")
	if code, out := b.run("echo " + private + "/.git/objects > .git/objects/info/alternates"); code == 0 {
		t.Errorf("the agent wrote the user's objects/info/alternates: %s", out)
	}
	out, _ := git(ws, "checkout", "-q", "review-me")
	if code, got := b.run("cat secret.env"); code == 0 && strings.Contains(got, "hunter2") {
		t.Errorf("the agent reads a private repository's file the user's git checked out: %q\ncheckout: %s", got, out)
	}
}

// TestGitFailedStartKeepsUserRepos: a shell start that fails before the
// guard knows the user's own repositories (here: the init refuses a
// nested repository whose .git/hooks is a symlink, which an agent of an
// earlier session can leave) must not hand the user's repositories to
// the dedicated uid. It did: the stopped guard treated every repository
// in the workspace as new, and the user's own git then refused their
// project as "dubious ownership". Found by the red team; fixed.
func TestGitFailedStartKeepsUserRepos(t *testing.T) {
	requireRoot(t)
	d := newDriver(t, NativeOptions{})
	const user = userDirOwner
	ws, _, git := userDir(t)
	os.WriteFile(filepath.Join(ws, "f"), []byte("1\n"), 0o644)
	os.Chown(filepath.Join(ws, "f"), user, user)
	for _, c := range [][]string{{"init", "-q", "-b", "main"}, {"add", "f"}, {"commit", "-qm", "1"}, {"init", "-q", "--bare", "b.git"}} {
		if out, err := git(ws, c...); err != nil {
			t.Fatal(out)
		}
	}
	// What an agent of an earlier session left, handed over then.
	evil := filepath.Join(ws, "evil", ".git")
	for _, p := range []string{"objects", "refs"} {
		os.MkdirAll(filepath.Join(evil, p), 0o755)
	}
	os.WriteFile(filepath.Join(evil, "HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
	os.Symlink("/tmp", filepath.Join(evil, "hooks"))
	filepath.Walk(filepath.Join(ws, "evil"), func(p string, _ os.FileInfo, _ error) error {
		return os.Lchown(p, DefaultUID, DefaultGID)
	})
	sb, err := d.Create(t.Context(), Spec{Workspace: ws, Owner: &User{UID: user, GID: user}})
	if err != nil {
		t.Fatal(err)
	}
	term, err := terminal.New(t.Context(), termOptions(sb))
	if err == nil {
		term.Close()
		t.Log("the shell started: the init no longer refuses the symlink")
	} else {
		t.Logf("start refused, as it is today: %v", err)
	}
	if err := sb.Destroy(t.Context()); err != nil {
		t.Errorf("Destroy: %v", err)
	}
	for _, p := range []string{".git", "b.git"} {
		if o := ownerOf(filepath.Join(ws, p)); o != user {
			t.Errorf("the user's own %s is uid %d's after a failed start, want %d", p, o, user)
		}
	}
	if out, err := git(ws, "status", "--short"); err != nil {
		t.Errorf("the user's git in their own repository: %v %s", err, out)
	}
}

// TestGitLeftLinkBlocksStart: an agent leaves, in a directory of the
// user's, a repository whose .git/hooks is a symlink (handed over to the
// dedicated uid as it is made). That repository is not one the user's
// git trusts, so a later session starts without pinning it (it used to
// fail to start, "refusing to follow it", for every session over the
// directory: red team, issue 16). A link in a repository of the user's
// own still stops the start (protect's tests).
func TestGitLeftLinkBlocksStart(t *testing.T) {
	requireRoot(t)
	d := newDriver(t, NativeOptions{})
	const user = userDirOwner
	ws, _, _ := userDir(t)
	b := newBox(t, d, Spec{Workspace: ws, Owner: &User{UID: user, GID: user}})
	b.must("mkdir -p evil/.git/objects evil/.git/refs && ln -s /tmp evil/.git/hooks && echo 'ref: refs/heads/main' > evil/.git/HEAD")
	b.term.Close()
	sb, err := d.Create(t.Context(), Spec{Workspace: ws, Owner: &User{UID: user, GID: user}})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Destroy(t.Context())
	term, err := terminal.New(t.Context(), termOptions(sb))
	if err != nil {
		t.Fatalf("a later session over the workspace does not start: %v", err)
	}
	term.Close()
}

// TestGitConfigIncludeLoop: configs that include each other, and one
// file many times, are read once each: an agent's repository could
// otherwise make the next shell start walk 64^10 includes.
func TestGitConfigIncludeLoop(t *testing.T) {
	requireRoot(t)
	d := newDriver(t, NativeOptions{})
	ws := t.TempDir()
	if out, err := exec.Command("git", "init", "-q", ws).CombinedOutput(); err != nil {
		t.Fatal(string(out))
	}
	loop := "[include]\n" + strings.Repeat("\tpath = a.gitconfig\n\tpath = b.gitconfig\n", 32)
	for _, f := range []string{".git/config", ".git/a.gitconfig", ".git/b.gitconfig"} {
		old, _ := os.ReadFile(filepath.Join(ws, f))
		if err := os.WriteFile(filepath.Join(ws, f), append(old, loop...), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b := newBox(t, d, Spec{Workspace: ws})
	if code, out := b.run("echo x >> .git/a.gitconfig"); code == 0 {
		t.Errorf("an included config is writable inside: %s", out)
	}
}
