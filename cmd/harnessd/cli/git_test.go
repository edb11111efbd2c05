package cli_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunGit: `harnessd run --git REPO@REF` works in a fresh clone of REPO
// at REF, and `session new --git` with a ref the repository lacks fails
// naming it.
func TestRunGit(t *testing.T) {
	socket := daemon(t,
		`{"reply": "`+"```bash\\ncat f && git rev-parse --abbrev-ref HEAD\\n```"+`"}`,
		`{"reply": "<finish>read f</finish>"}`,
	)
	repo := filepath.Join(t.TempDir(), "my@repo")
	os.Mkdir(repo, 0o755)
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"commit", "-q", "--allow-empty", "-m", "one"},
		{"switch", "-qc", "feat"},
	} {
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	os.WriteFile(filepath.Join(repo, "f"), []byte("from feat\n"), 0o644)
	cmd := exec.Command("git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "f")
	cmd.Dir = repo
	exec.Command("git", "-C", repo, "add", "f").Run()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git commit: %v %s", err, out)
	}

	out, errOut, code := runCLI(context.Background(), socket, "run", "--git", repo+"@feat", "read f")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	if !strings.Contains(out, "│ from feat\n    │ feat\n") {
		t.Errorf("the run did not see the clone at feat:\n%s", out)
	}
	// The whole argument is a directory: no ref, the repository's HEAD.
	if out, errOut, code := runCLI(context.Background(), socket, "session", "new", "--git", repo); code != 0 {
		t.Errorf("session new --git %s: exit %d %s%s", repo, code, out, errOut)
	}
	out, errOut, code = runCLI(context.Background(), socket, "session", "new", "--git", repo+"@nope")
	if code == 0 || !strings.Contains(errOut, `git ref "nope"`) {
		t.Errorf("session new --git REPO@nope: exit %d %s%s", code, out, errOut)
	}
}
