package api_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGitCloneRefusesLinks: an agent that worked in a directory of the
// user's (a session over their repository) could leave in its .git a
// branch that is a symlink to a ref of another, private repository of
// the same user's, a pack that is a link to that repository's pack, or
// that repository's objects in objects/info/alternates, or name its git
// directory in commondir (a linked worktree's). When the user
// next makes a session that clones the repository (--git), upload-pack,
// reading as the user, would follow each, and the new session's agent
// would read the private repository (a red team's break, issue 16). The
// clone refuses such a source, naming what it found; a symlink git reads
// as a symbolic ref (HEAD -> refs/heads/main) is no reason to refuse.
func TestGitCloneRefusesLinks(t *testing.T) {
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
	commit := exec.Command("sh", "-c", `git -c safe.directory='*' -c core.fsmonitor=false add secret && git -c safe.directory='*' -c core.fsmonitor=false -c user.name=t -c user.email=t@t commit -qm secret && git -c safe.directory='*' branch review-me && git -c safe.directory='*' gc -q && git -c safe.directory='*' branch secret`)
	commit.Dir = private
	if out, err := commit.CombinedOutput(); err != nil {
		t.Fatal(string(out))
	}
	filepath.Walk(private, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, 65533, 65533) })
	os.Chmod(private, 0o700)
	packs, _ := filepath.Glob(filepath.Join(private, ".git", "objects", "pack", "pack-*.pack"))
	if len(packs) != 1 {
		t.Fatalf("private packs: %v", packs)
	}

	cfg := nativeConfig(t)
	cfg.Daemon.DataDir = filepath.Join(dir, "data")
	cfg.Daemon.Socket = filepath.Join(dir, "h.sock")
	cfg.Daemon.AllowUIDs = []int{65533}
	td := startDaemon(t, cfg)
	os.Chmod(td.socket, 0o666)

	// What the agent left in the user's repository: a ref and where its
	// objects come from, each pair a way to read the private repository.
	linkRef := func(git string) {
		link := filepath.Join(git, "refs", "heads", "review-me")
		os.Symlink(filepath.Join(private, ".git", "refs", "heads", "secret"), link)
		os.Lchown(link, 65533, 65533)
	}
	alternates := func(git string) {
		alt := filepath.Join(git, "objects", "info", "alternates")
		os.WriteFile(alt, []byte("# borrowed\n"+filepath.Join(private, ".git", "objects")+"\n"), 0o644)
		os.Chown(alt, 65533, 65533)
	}
	linkPack := func(git string) {
		for _, ext := range []string{".pack", ".idx"} {
			link := filepath.Join(git, "objects", "pack", "pack-planted"+ext)
			os.Symlink(strings.TrimSuffix(packs[0], ".pack")+ext, link)
			os.Lchown(link, 65533, 65533)
		}
	}
	plant := map[string]func(git string){
		"ref":  func(git string) { linkRef(git); alternates(git) },
		"pack": func(git string) { linkRef(git); linkPack(git) },
		"packed-refs": func(git string) {
			link := filepath.Join(git, "packed-refs")
			os.Remove(link)
			os.Symlink(filepath.Join(private, ".git", "packed-refs"), link)
			os.Lchown(link, 65533, 65533)
			alternates(git)
		},
		"commondir": func(git string) {
			os.WriteFile(filepath.Join(git, "commondir"), []byte(filepath.Join(private, ".git")+"\n"), 0o644)
		},
		"alternates": func(git string) {
			// The branch copied in as a file: no link at all.
			b, _ := os.ReadFile(filepath.Join(private, ".git", "refs", "heads", "secret"))
			os.WriteFile(filepath.Join(git, "refs", "heads", "review-me"), b, 0o644)
			alternates(git)
		},
	}
	want := map[string]string{"ref": "refs/heads/review-me", "alternates": "objects/info/alternates", "pack": "symbolic link", "packed-refs": "packed-refs", "commondir": ".git/commondir"}
	for name, do := range plant {
		t.Run(name, func(t *testing.T) {
			repo := filepath.Join(dir, "repo-"+name)
			gitRepo(t, repo, 65533, marker)
			do(filepath.Join(repo, ".git"))
			code, body := curlAs(t, td.socket, 65533, "POST", "/v1/sessions", fmt.Sprintf(`{"id":"g-%s","git":{"repo":%q}}`, name, repo))
			if code == 201 {
				out := run(t, td.cl, "g-"+name, "git show origin/review-me:secret 2>&1; git log --all --oneline 2>&1")
				t.Fatalf("the clone of a repository with a planted %s was made: %s", name, out.Output)
			}
			if code != 400 || !strings.Contains(body, want[name]) {
				t.Errorf("planted %s: %d %s, want 400 naming %q", name, code, body, want[name])
			}
		})
	}

	// A HEAD that is a symlink to a ref is a symbolic ref, as git wrote
	// them once: the clone is made.
	repo := filepath.Join(dir, "repo-symref")
	gitRepo(t, repo, 65533, marker)
	head := filepath.Join(repo, ".git", "HEAD")
	os.Remove(head)
	os.Symlink("refs/heads/main", head)
	os.Lchown(head, 65533, 65533)
	if code, body := curlAs(t, td.socket, 65533, "POST", "/v1/sessions", fmt.Sprintf(`{"id":"g-symref","git":{"repo":%q}}`, repo)); code != 201 {
		t.Fatalf("a repository whose HEAD is a symbolic-ref symlink: %d %s", code, body)
	}
	if out := run(t, td.cl, "g-symref", "git log --oneline | wc -l"); strings.TrimSpace(out.Output) != "2" {
		t.Errorf("the symref repository's clone: %q", out.Output)
	}
}
