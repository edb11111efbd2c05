package api_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGitCloneRefusesCommondir: .git/commondir, a plain file naming the
// repository's common directory elsewhere, has upload-pack serve that
// repository's refs and objects, so a --git clone refuses a source with
// one (a red team's break, issue 16). In a directory of the user's, commondir is pinned in the
// repositories the first shell finds; a repository the agent made is
// the dedicated uid's (a client's own upload-pack refuses it, root's
// daemon git trusts the source by safe.directory), and one past the
// first shell's scan limit is not pinned at all.
func TestGitCloneRefusesCommondir(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to connect as another uid")
	}
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	os.Chmod(filepath.Dir(dir), 0o755)
	marker := filepath.Join(dir, "PWNED")
	private := filepath.Join(dir, "private")
	gitRepo(t, private, 65533, marker)
	os.WriteFile(filepath.Join(private, "secret"), []byte("the private repository's secret\n"), 0o600)
	commit := exec.Command("sh", "-c", `git -c safe.directory='*' -c core.fsmonitor=false add secret && git -c safe.directory='*' -c core.fsmonitor=false -c user.name=t -c user.email=t@t commit -qm secret`)
	commit.Dir = private
	if out, err := commit.CombinedOutput(); err != nil {
		t.Fatal(string(out))
	}
	filepath.Walk(private, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, 65533, 65533) })
	os.Chmod(private, 0o700)

	cfg := nativeConfig(t)
	cfg.Daemon.DataDir = filepath.Join(dir, "data")
	cfg.Daemon.Socket = filepath.Join(dir, "h.sock")
	cfg.Daemon.AllowUIDs = []int{65533}
	td := startDaemon(t, cfg)
	os.Chmod(td.socket, 0o666)

	for _, c := range []struct {
		name       string
		client, by int // who asks, and whose the planted repository is
	}{{"user", 65533, 65533}, {"root", 0, 2146435072}} {
		t.Run(c.name, func(t *testing.T) {
			repo := filepath.Join(dir, "repo-"+c.name)
			gitRepo(t, repo, 65533, marker)
			os.WriteFile(filepath.Join(repo, ".git", "commondir"), []byte(filepath.Join(private, ".git")+"\n"), 0o644)
			filepath.Walk(repo, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, c.by, c.by) })
			code, body := curlAs(t, td.socket, c.client, "POST", "/v1/sessions", fmt.Sprintf(`{"id":"cd-%s","git":{"repo":%q}}`, c.name, repo))
			if code == 201 {
				out := run(t, td.cl, "cd-"+c.name, "git log --all --oneline 2>&1; cat secret 2>&1; git show HEAD:secret 2>&1")
				t.Fatalf("the clone was made: %s", out.Output)
			}
			if code != 400 || !strings.Contains(body, ".git/commondir") {
				t.Errorf("%d %s, want 400 naming .git/commondir", code, body)
			}
		})
	}
}
