package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// withHome gives the user uid the home directory home for hostGitRefs
// (the tests' users have no passwd entry).
func withHome(t *testing.T, uid int, home string) {
	old := userHome
	userHome = func(u int) string {
		if u == uid {
			return home
		}
		return old(u)
	}
	t.Cleanup(func() { userHome = old })
}

// writeAs writes a file owned by uid.
func writeAs(t *testing.T, uid int, p, text string, mode os.FileMode) {
	t.Helper()
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, []byte(text), mode); err != nil {
		t.Fatal(err)
	}
	os.Chown(p, uid, uid)
}

// gitWithHome runs git on the host as uid, with its global configs in
// home (and the system's ignored), as that user's shell would.
func gitWithHome(uid int, home, dir string, args ...string) (string, error) {
	id := strconv.Itoa(uid)
	cmd := exec.Command("setpriv", append([]string{"--reuid=" + id, "--regid=" + id, "--clear-groups", "git"}, args...)...)
	cmd.Dir = dir
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "GIT_") && !strings.HasPrefix(e, "HOME=") && !strings.HasPrefix(e, "XDG_CONFIG_HOME=") {
			cmd.Env = append(cmd.Env, e)
		}
	}
	cmd.Env = append(cmd.Env, "HOME="+home, "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=host", "GIT_AUTHOR_EMAIL=host@example.com", "GIT_COMMITTER_NAME=host", "GIT_COMMITTER_EMAIL=host@example.com")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestHostGitRefs(t *testing.T) {
	old := systemGitConfig
	systemGitConfig = filepath.Join(t.TempDir(), "none")
	t.Cleanup(func() { systemGitConfig = old })
	home := t.TempDir()
	withHome(t, 4242, home)
	outer := t.TempDir()
	ws := filepath.Join(outer, "sub", "ws")
	os.MkdirAll(ws, 0o755)
	os.MkdirAll(filepath.Join(outer, ".git"), 0o755)
	os.Chown(filepath.Join(outer, ".git"), 4242, 4242) // the user's: a repository of another's is passed over
	writeAs(t, 0, filepath.Join(outer, ".git/HEAD"), "ref: refs/heads/main\n", 0o644)
	writeAs(t, 0, filepath.Join(home, ".gitconfig"), "[core]\n\thooksPath = .githooks\n[include]\n\tpath = more.inc\n\tpath = "+ws+"/in-ws.inc\n[includeIf \"gitdir:~/w/\"]\n\tpath = ~/.config/w.inc\n", 0o644)
	writeAs(t, 0, filepath.Join(home, "more.inc"), "[filter \"x\"]\n\tclean = sh tools/clean.sh\n[include]\n\tpath = .gitconfig\n", 0o644)
	writeAs(t, 0, filepath.Join(home, ".config/w.inc"), "[core]\n\thooksPath = ~/hooks\n\tsshCommand = ~/x/ssh\n", 0o644)
	writeAs(t, 0, filepath.Join(home, ".config/git/config"), "[alias]\n\tt = !"+ws+"/t.sh\n", 0o644)
	writeAs(t, 0, filepath.Join(outer, ".git/config"), "[core]\n\thooksPath = sub/ws/hooks\n\tfsmonitor = ./elsewhere/f\n[include]\n\tpath = ../sub/ws/repo.inc\n", 0o644)
	got, _ := hostGitRefs(ws, 4242)
	want := []configRef{
		{Path: ws + "/t.sh", Exec: true},
		{Path: ".githooks", Hooks: true},
		{Path: "tools/clean.sh", Exec: true},
		{Path: ws + "/in-ws.inc"},
		{Path: ws + "/hooks", Hooks: true},
		{Path: ws + "/repo.inc"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("refs:\n got %+v\nwant %+v", got, want)
	}
	// With no home and no repository above: nothing.
	if got, _ := hostGitRefs(t.TempDir(), 4243); len(got) != 0 {
		t.Errorf("no home: %+v", got)
	}
}

// TestGitHostConfigsNameWorkspace: the user's own git configs on the
// host (global ones, and a repository's above the workspace whose
// worktree holds it) name paths in the workspace: a relative
// core.hooksPath (a common way to share a project's hooks), a filter or
// fsmonitor program in the worktree, a hooks directory of the enclosing
// repository's. The agent writes there, and the user's next git runs it
// (red team 17c's break, with a real global config). The daemon reads
// those configs and the init pins what they name.
func TestGitHostConfigsNameWorkspace(t *testing.T) {
	requireRoot(t)
	d := newDriver(t, NativeOptions{})
	home := t.TempDir()
	os.Chown(home, userDirOwner, userDirOwner)
	withHome(t, userDirOwner, home)
	ws, marker, git := userDir(t)
	red17Repo(t, git, ws)
	writeAs(t, userDirOwner, filepath.Join(ws, "fsmon.sh"), "#!/bin/sh\nexit 1\n", 0o755)
	if out, err := git(ws, "add", "fsmon.sh"); err != nil {
		t.Fatal(out)
	}
	writeAs(t, userDirOwner, filepath.Join(home, ".gitconfig"), "[core]\n\thooksPath = .githooks\n\tfsmonitor = ./fsmon.sh\n[include]\n\tpath = extra.inc\n", 0o644)
	writeAs(t, userDirOwner, filepath.Join(home, "extra.inc"), "[filter \"x\"]\n\tclean = sh tools/clean.sh\n\trequired\n", 0o644)
	user := func(dir string, args ...string) (string, error) { return gitWithHome(userDirOwner, home, dir, args...) }
	if out, err := user(ws, "commit", "-qm", "the user's"); err != nil {
		t.Fatal(out)
	}
	b := newBox(t, d, Spec{Workspace: ws, Owner: &User{UID: userDirOwner, GID: userDirOwner}})
	hook := `#!/bin/sh\ntouch ` + marker + `/%s\ncat\n`
	t.Log(b.run(`cd /workspace; mkdir -p .githooks; printf '` + strings.ReplaceAll(hook, "%s", "global-hookspath") + `' > .githooks/pre-commit; chmod +x .githooks/pre-commit;
printf '` + strings.ReplaceAll(hook, "%s", "fsmonitor") + `' > fsmon.sh;
echo '* filter=x' > .gitattributes; mkdir -p tools; printf '` + strings.ReplaceAll(hook, "%s", "filter") + `' > tools/clean.sh; chmod +x tools/clean.sh; ls -la . .githooks tools; true`))
	b.end()
	var out strings.Builder
	for _, c := range [][]string{{"status"}, {"add", "-A"}, {"commit", "-qm", "mine"}} {
		o, _ := user(ws, c...)
		out.WriteString(o)
	}
	noMarks(t, marker, "the user (git status, add, commit with their global config)", out.String())

	// A repository of the user's above the workspace, whose config names
	// a hooks directory and an alias's script in it.
	outer, marker2, git2 := userDir(t)
	red17Repo(t, git2, outer)
	sub := filepath.Join(outer, "sub")
	os.Mkdir(sub, 0o755)
	os.Chown(sub, userDirOwner, userDirOwner)
	for _, c := range [][]string{{"config", "core.hooksPath", "sub/hooks"}, {"config", "alias.t", "!sh sub/t.sh"}} {
		if o, err := git2(outer, c...); err != nil {
			t.Fatal(o)
		}
	}
	b = newBox(t, d, Spec{Workspace: sub, Owner: &User{UID: userDirOwner, GID: userDirOwner}})
	hook2 := `#!/bin/sh\ntouch ` + marker2 + `/%s\n`
	t.Log(b.run(`cd /workspace; mkdir -p hooks; printf '` + strings.ReplaceAll(hook2, "%s", "outer-hook") + `' > hooks/pre-commit; chmod +x hooks/pre-commit;
printf '` + strings.ReplaceAll(hook2, "%s", "outer-alias") + `' > t.sh; ls -la . hooks; true`))
	b.end()
	out.Reset()
	for _, c := range [][]string{{"commit", "-q", "--allow-empty", "-m", "mine"}, {"t"}} {
		o, _ := git2(outer, c...)
		out.WriteString(o)
	}
	noMarks(t, marker2, "the user (git commit and an alias in the repository above the workspace)", out.String())

	// Git inside still works where nothing is named.
	b = newBox(t, d, Spec{Workspace: ws, Owner: &User{UID: userDirOwner, GID: userDirOwner}})
	t.Log(b.must(`cd /workspace && echo agent > f && git -c user.name=a -c user.email=a@b commit -qam agent && git log --oneline | head -2`))
	b.end()
}
