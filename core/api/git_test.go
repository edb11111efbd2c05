package api_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// gitRepo makes a repository in dir, owned by uid: main with two commits,
// a branch feat with a third, a tag v1 on the first; and, in its own
// config and hooks, what would run code if a host git honoured them in a
// clone (a core.fsmonitor and a post-checkout hook that leave marker
// files). It returns the first commit's id.
func gitRepo(t *testing.T, dir string, uid int, marker string) string {
	t.Helper()
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"}, args...)...)
		cmd.Dir = dir
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir, "GIT_CONFIG_NOSYSTEM=1"}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	os.MkdirAll(dir, 0o755)
	git("init", "-q")
	os.WriteFile(filepath.Join(dir, "f"), []byte("one\n"), 0o644)
	git("add", "f")
	git("commit", "-qm", "one")
	first := git("rev-parse", "HEAD")
	git("tag", "v1")
	os.WriteFile(filepath.Join(dir, "f"), []byte("two\n"), 0o644)
	git("commit", "-qam", "two")
	git("switch", "-qc", "feat")
	os.WriteFile(filepath.Join(dir, "f"), []byte("feat\n"), 0o644)
	git("commit", "-qam", "feat")
	git("switch", "-q", "main")
	git("config", "core.fsmonitor", "touch "+marker+".fsmonitor; false")
	hook := filepath.Join(dir, ".git", "hooks", "post-checkout")
	os.WriteFile(hook, []byte("#!/bin/sh\ntouch "+marker+".hook\n"), 0o755)
	filepath.Walk(dir, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, uid, uid) })
	return first
}

// TestGitWorkspace: a session's workspace can be a fresh clone of a
// client's repository at a ref: a branch (checked out as a local branch),
// a tag or a commit (detached), the default HEAD. The client must be able
// to read the repository; a bad ref is a 400 naming it. Nothing of the
// source's config or hooks runs on the host, the clone's files are the
// sandbox user's, what the agent does in it leaves the source as it was,
// and purging the session removes the clone.
func TestGitWorkspace(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to connect as another uid")
	}
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatal("curl is needed (scripts/test installs it): ", err)
	}
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	os.Chmod(filepath.Dir(dir), 0o755)
	marker := filepath.Join(dir, "PWNED")
	repo := filepath.Join(dir, "repo")
	first := gitRepo(t, repo, 65533, marker)
	private := filepath.Join(dir, "private")
	gitRepo(t, private, 65533, marker)
	os.Chmod(private, 0o700)
	// A repository 65534 may read whose objects are borrowed (alternates)
	// from the private one, with a branch naming the private commit: only
	// the private repository's owner may read that commit.
	thief := filepath.Join(dir, "thief")
	gitRepo(t, thief, 65534, marker)
	os.WriteFile(filepath.Join(private, "secret"), []byte("the private repository's secret\n"), 0o600)
	commit := exec.Command("sh", "-c", `git -c safe.directory='*' -c core.fsmonitor=false add secret && git -c safe.directory='*' -c core.fsmonitor=false -c user.name=t -c user.email=t@t commit -qm secret && git -c safe.directory='*' rev-parse HEAD`)
	commit.Dir = private
	secret, err := commit.Output()
	if err != nil {
		t.Fatal(err)
	}
	filepath.Walk(private, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, 65533, 65533) })
	os.WriteFile(filepath.Join(thief, ".git", "objects", "info", "alternates"), []byte(filepath.Join(private, ".git", "objects")+"\n"), 0o644)
	os.WriteFile(filepath.Join(thief, ".git", "refs", "heads", "steal"), secret, 0o644)
	cfg := nativeConfig(t)
	cfg.Daemon.DataDir = filepath.Join(dir, "data")
	cfg.Daemon.Socket = filepath.Join(dir, "h.sock")
	cfg.Daemon.AllowUIDs = []int{65533, 65534}
	td := startDaemon(t, cfg)
	os.Chmod(td.socket, 0o666)
	before, _ := os.ReadFile(filepath.Join(repo, ".git", "config"))

	as := func(uid int, body string) (int, string) {
		return curlAs(t, td.socket, uid, "POST", "/v1/sessions", body)
	}
	gitBody := func(id, repo, ref string) string {
		return fmt.Sprintf(`{"id":%q,"git":{"repo":%q,"ref":%q}}`, id, repo, ref)
	}
	for _, c := range []struct {
		uid       int
		repo, ref string
		want      string
	}{
		{65533, repo, "nope", `git ref \"nope\": not a branch, tag or commit`},
		{65533, repo, "--upload-pack=x", "may not start with '-'"},
		{65534, private, "", "may not read it"},
		{65534, thief, "steal", "git clone"},
		{65533, "repo", "", "must be an absolute path"},
		{65533, filepath.Join(dir, "missing"), "", "no such file"},
		{65533, filepath.Join(dir, "data"), "", "harnessd's own data"},
	} {
		code, body := as(c.uid, gitBody("bad", c.repo, c.ref))
		if code != 400 || !strings.Contains(body, c.want) {
			t.Errorf("uid %d, repo %s, ref %q: %d %s, want 400 %q", c.uid, c.repo, c.ref, code, body, c.want)
		}
		t.Logf("uid %d, repo %s, ref %q: %d %s", c.uid, filepath.Base(c.repo), c.ref, code, strings.TrimSpace(body))
	}
	if code, body := as(65533, fmt.Sprintf(`{"workspace":%q,"git":{"repo":%q}}`, repo, repo)); code != 400 || !strings.Contains(body, "not both") {
		t.Errorf("workspace and git: %d %s", code, body)
	}

	for _, c := range []struct {
		id, ref string
		uid     int
		want    string // f, then git's branch (or HEAD when detached)
	}{
		{"feat", "feat", 65533, "feat\nfeat\n"},
		{"head", "", 65533, "two\nmain\n"},
		{"tag", "v1", 0, "one\nHEAD\n"},
		{"sha", first[:10], 0, "one\nHEAD\n"},
	} {
		if code, body := as(c.uid, gitBody(c.id, repo, c.ref)); code != 201 {
			t.Fatalf("%s: %d %s", c.id, code, body)
		}
		out := run(t, td.cl, c.id, "cat f && git rev-parse --abbrev-ref HEAD && git status --porcelain && id -u")
		if want := c.want + "0\n"; out.ExitCode != 0 || out.Output != want {
			t.Errorf("%s: %d %q, want %q", c.id, out.ExitCode, out.Output, want)
		}
	}
	info, err := td.cl.Session(context.Background(), "feat")
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(info.Workspace, "f"))
	if err != nil {
		t.Fatal(err)
	}
	if uid := st.Sys().(*syscall.Stat_t).Uid; uid != 65533 {
		t.Errorf("the clone's file belongs to uid %d on the host, want the client's 65533", uid)
	}
	// The agent commits and tries to plant a hook and a config in the
	// clone: the clone's control files are pinned, and the source is
	// another repository, untouched.
	out := run(t, td.cl, "feat", `echo x >> f && git -c user.name=a -c user.email=a@a commit -qam agent && git log --oneline | wc -l; `+
		`{ echo 'touch /tmp/evil' > .git/hooks/post-commit; } 2>/dev/null || echo hook refused; git config core.fsmonitor evil 2>/dev/null || echo config refused; ls `+repo+` 2>/dev/null || echo source unseen`)
	if want := "4\nhook refused\nconfig refused\nsource unseen\n"; out.Output != want {
		t.Errorf("the agent in its clone: %q, want %q", out.Output, want)
	}
	if after, _ := os.ReadFile(filepath.Join(repo, ".git", "config")); string(after) != string(before) {
		t.Errorf("the source's config changed:\n%s", after)
	}
	if _, err := os.Stat(filepath.Join(repo, ".git", "hooks", "post-commit")); err == nil {
		t.Error("a hook appeared in the source")
	}
	for _, m := range []string{".fsmonitor", ".hook"} {
		if _, err := os.Stat(marker + m); err == nil {
			t.Errorf("the source's %s ran on the host", m)
		}
	}
	if err := td.cl.DeleteSession(context.Background(), "feat", true); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(info.Workspace); !os.IsNotExist(err) {
		t.Errorf("purged clone %s: %v", info.Workspace, err)
	}
	if _, err := os.Stat(filepath.Join(repo, "f")); err != nil {
		t.Errorf("purging the session touched the source: %v", err)
	}
	ents, _ := os.ReadDir(filepath.Join(cfg.Daemon.DataDir, "workspaces"))
	for _, e := range ents {
		if strings.Contains(e.Name(), ".clone-") {
			t.Errorf("a clone's temporary directory is left: %s", e.Name())
		}
	}
}
