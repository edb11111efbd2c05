package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/core/terminal"
)

// Red team 18c: the git guard as of 42f34f3 (hostGitRefs' reposWithin,
// ownRepo, what the daemon reads at Create).

// TestRed18cOldDirAsGitFailsStart attacks reposWithin's "a .git owned
// by the user is the user's repository": the agent renames one of the
// user's directories from before the session (docs) to x/.git. The git
// guard leaves it the user's (a directory that predates the session
// gets no HEAD under the HEAD rule, so it is no repository and a
// handover would only take it from the user), and the agent, the
// user's uid, writes x/.git/config. The next Create reads that config
// as the user's (the daemon, root) and hands the init what it names:
// `core.hooksPath = l/hooks`, l a symlink loop of the agent's, which
// realPath leaves in the workspace and the init then refuses to follow.
// The init's pins of the host's references are not excused for a
// repository that is not the user's, so no later session over the
// directory starts (DoS, from an agent of an earlier session).
func TestRed18cOldDirAsGitFailsStart(t *testing.T) {
	requireRoot(t)
	d := newDriver(t, NativeOptions{})
	ws, _, _ := userDir(t)
	os.MkdirAll(filepath.Join(ws, "docs"), 0o755)
	os.WriteFile(filepath.Join(ws, "docs", "notes"), []byte("mine\n"), 0o644)
	filepath.Walk(ws, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, userDirOwner, userDirOwner) })
	b := newBox(t, d, Spec{Workspace: ws, Owner: &User{UID: userDirOwner, GID: userDirOwner}})
	t.Log(b.run(`cd /workspace && mkdir x && mv docs x/.git && ln -s l x/l && printf '[core]\n\thooksPath = l/hooks\n' > x/.git/config; sleep 0.3; ls -lna x x/.git; true`))
	b.end()
	if st, err := os.Lstat(filepath.Join(ws, "x", ".git")); err != nil || !st.IsDir() {
		t.Skipf("x/.git is not the user's old directory: %v", err)
	}
	sb, err := d.Create(t.Context(), Spec{Workspace: ws, Owner: &User{UID: userDirOwner, GID: userDirOwner}})
	if err != nil {
		t.Fatalf("Create over the user's directory: %v", err)
	}
	defer sb.Destroy(t.Context())
	term, err := terminal.New(t.Context(), termOptions(sb))
	if err != nil {
		t.Fatalf("a session over the user's directory does not start, for a config the agent of an earlier session wrote in one of the user's old directories it renamed to .git: %v", err)
	}
	term.Close()
}

// TestRed18cOldDirAsGitReadsAsRoot: the same planted config (one of the
// user's old directories renamed to x/.git, which the guard leaves the
// user's) includes a file only root can read. The daemon follows the
// include with its own rights (openHostFile, as root), which git on the
// host, as the user, cannot: what that file names in the workspace is
// pinned, and the agent of the next session sees it (a pinned empty
// leak.conf), learning what a root-only file says. git run as the user
// reads no such file, so the daemon should not either.
func TestRed18cOldDirAsGitReadsAsRoot(t *testing.T) {
	requireRoot(t)
	d := newDriver(t, NativeOptions{})
	ws, _, _ := userDir(t)
	secretDir := t.TempDir()
	os.Chmod(secretDir, 0o700)
	secret := filepath.Join(secretDir, "secret.conf")
	os.WriteFile(secret, []byte("[include]\n\tpath = "+filepath.Join(ws, "leak.conf")+"\n"), 0o600)
	os.MkdirAll(filepath.Join(ws, "docs"), 0o755)
	filepath.Walk(ws, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, userDirOwner, userDirOwner) })
	b := newBox(t, d, Spec{Workspace: ws, Owner: &User{UID: userDirOwner, GID: userDirOwner}})
	t.Log(b.run(`cd /workspace && mkdir x && mv docs x/.git && printf '[include]\n\tpath = ` + secret + `\n' > x/.git/config; cat ` + secret + ` 2>&1; true`))
	b.end()
	b2 := newBox(t, d, Spec{Workspace: ws, Owner: &User{UID: userDirOwner, GID: userDirOwner}})
	_, out := b2.run(`cd /workspace && ls -la; [ -e leak.conf ] && echo LEAKED; true`)
	t.Log(out)
	b2.end()
	if strings.Contains(out, "LEAKED") {
		t.Errorf("the daemon read %s (root's only) as a git config the agent planted, and pinned what it names: the agent learns it", secret)
	}
}

// TestRed18cCommandForms attacks commandPaths with shell forms that
// run a program of the worktree's and that it does not read: env's
// -C/--chdir (coreutils 8.28+: the program is tools/x, the pin lands on
// ./x), bash's process substitution, coproc and `function f { ...; }`
// (in a `bash -c` text, which commandPaths does read), and pushd (as
// cd). Each names a program the agent writes and the user's git runs.
func TestRed18cCommandForms(t *testing.T) {
	for _, c := range []struct{ v, want string }{
		{"env -C tools ./x", "tools/x"},
		{"env --chdir=tools ./x", "tools/x"},
		{"bash -c 'cat <(./x)'", "./x"},
		{"bash -c 'coproc ./x; wait'", "./x"},
		{"bash -c 'function f { ./x; }; f'", "./x"},
		{"bash -c 'pushd tools && ./x'", "tools/x"},
	} {
		wantNamed(t, c.v, "[filter \"x\"]\n\tclean = "+c.v+"\n", c.want)
	}
}

// TestRed18cFilterCommandForms: the same, end to end. The user's
// repository defines filters `env -C tools ./clean-a`, `env
// --chdir=tools ./clean-b`, `bash -c 'cat <(./clean-c)'`;
// the agent writes tools/clean-a, tools/clean-b and clean-c, and the user's next `git add`
// runs them.
func TestRed18cFilterCommandForms(t *testing.T) {
	requireRoot(t)
	d := newDriver(t, NativeOptions{})
	ws, marker, git := userDir(t)
	red17Repo(t, git, ws)
	forms := map[string]string{
		"a": "env -C tools ./clean-a",
		"b": "env --chdir=tools ./clean-b",
		"c": "bash -c 'cat <(./clean-c)'",
	}
	script := "cd /workspace; mkdir -p tools; : > .gitattributes\n"
	for k, v := range forms {
		if o, err := git(ws, "config", "filter."+k+".clean", v); err != nil {
			t.Fatal(o)
		}
		name := "clean-" + k
		if k == "a" || k == "b" {
			name = "tools/" + name
		}
		script += `echo '*.` + k + ` filter=` + k + `' >> .gitattributes; printf '` + red18Hook(marker, "filter-"+k) + `' > ` + name + `; chmod +x ` + name + `; echo x > x.` + k + "\n"
	}
	b := newBox(t, d, Spec{Workspace: ws, Owner: &User{UID: userDirOwner, GID: userDirOwner}})
	t.Log(b.run(script + "ls -la . tools; true"))
	b.end()
	out, _ := git(ws, "add", "-A")
	noMarks(t, marker, "the user (git add, with filters of the repository's own config run from tools/ or by bash forms)", out)
}
