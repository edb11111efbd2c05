package api_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGitCloneFollowsLinks_RedTeam: an agent that worked in a directory
// of the user's (a session over their repository) leaves in its .git a
// branch that is a symlink to a ref of another, private repository of
// the same user's, and that repository's objects in
// objects/info/alternates (all of it writable inside: .git/refs and
// .git/objects are not pinned). When the user next makes a session that
// clones the repository (--git), the clone, read as the user, follows
// both, and the new session's agent reads the private repository.
func TestGitCloneFollowsLinks_RedTeam(t *testing.T) {
	if os.Getenv("HARNESSD_RED") != "1" {
		t.Skip("known break: a --git clone follows a symlinked ref and alternates the agent left in the source (HARNESSD_RED=1 runs it)")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to connect as another uid")
	}
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	os.Chmod(filepath.Dir(dir), 0o755)
	marker := filepath.Join(dir, "PWNED")
	repo := filepath.Join(dir, "repo")
	gitRepo(t, repo, 65533, marker)
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
	// What the agent left in the user's repository.
	link := filepath.Join(repo, ".git", "refs", "heads", "review-me")
	os.Symlink(filepath.Join(private, ".git", "refs", "heads", "main"), link)
	os.Lchown(link, 65533, 65533)
	alt := filepath.Join(repo, ".git", "objects", "info", "alternates")
	os.WriteFile(alt, []byte(filepath.Join(private, ".git", "objects")+"\n"), 0o644)
	os.Chown(alt, 65533, 65533)

	cfg := nativeConfig(t)
	cfg.Daemon.DataDir = filepath.Join(dir, "data")
	cfg.Daemon.Socket = filepath.Join(dir, "h.sock")
	cfg.Daemon.AllowUIDs = []int{65533}
	td := startDaemon(t, cfg)
	os.Chmod(td.socket, 0o666)
	if code, body := curlAs(t, td.socket, 65533, "POST", "/v1/sessions", fmt.Sprintf(`{"id":"g","git":{"repo":%q}}`, repo)); code != 201 {
		t.Fatalf("git session: %d %s", code, body)
	}
	out := run(t, td.cl, "g", "git show origin/review-me:secret 2>&1")
	if strings.Contains(out.Output, "the private repository's secret") {
		t.Errorf("the agent of a --git session reads the user's private repository: %q", out.Output)
	}
}
