package agent

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestLoadGuidance(t *testing.T) {
	ws := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		p := filepath.Join(ws, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("AGENTS.md", "Run `make test` before finishing.\n")
	write(".harness/guidance/a-always.md", "Use tabs.\n")
	write(".harness/guidance/b-go.md", "---\ntriggers: [golang, \"go test\"]\n---\nGo: run go vet.\n")
	write(".harness/guidance/c-py.md", "---\ntitle: python\ntriggers:\n  - pytest\n  - 'python'\n---\nPython: use pytest.\n")
	write(".harness/guidance/d-big.md", strings.Repeat("x", maxGuidanceFile+1))
	write(".harness/guidance/notes.txt", "not markdown")
	if err := os.Symlink("/etc/passwd", filepath.Join(ws, ".harness/guidance/e-escape.md")); err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		task, msg string
		want      []string
	}{
		{"fix the build", "", []string{"AGENTS.md", ".harness/guidance/a-always.md"}},
		{"make GO TEST pass", "", []string{"AGENTS.md", ".harness/guidance/a-always.md", ".harness/guidance/b-go.md"}},
		{"fix it", "it is the Python part", []string{"AGENTS.md", ".harness/guidance/a-always.md", ".harness/guidance/c-py.md"}},
	} {
		files, skipped, err := LoadGuidance(ws, c.task, c.msg)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, f := range files {
			got = append(got, f.Path)
			if strings.HasPrefix(f.Text, "---") {
				t.Errorf("%s: frontmatter kept: %q", f.Path, f.Text)
			}
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q: got %v, want %v", c.task, got, c.want)
		}
		if len(skipped) != 2 || !strings.Contains(skipped[0], "d-big.md: larger than 64 KiB") || !strings.Contains(skipped[1], "e-escape.md") {
			t.Errorf("skipped %q", skipped)
		}
	}
	if files, _, _ := LoadGuidance(ws, "golang", ""); files[2].Text != "Go: run go vet.\n" {
		t.Errorf("%q", files[2].Text)
	}
}

func TestFrontmatter(t *testing.T) {
	for _, c := range []struct {
		in, body string
		triggers []string
	}{
		{"plain\n", "plain\n", nil},
		{"---\ntriggers: docker\n---\nbody", "body", []string{"docker"}},
		{"---\ntriggers: []\n---\nbody", "body", nil},
		{"---\nno end\n", "---\nno end\n", nil},
		{"---\ntriggers:\n- a\n- b\nother: x\n---\n\nbody", "\nbody", []string{"a", "b"}},
	} {
		body, tr := frontmatter(c.in)
		if body != c.body || !reflect.DeepEqual(tr, c.triggers) {
			t.Errorf("%q: %q %q, want %q %q", c.in, body, tr, c.body, c.triggers)
		}
	}
}

// TestGuidanceFIFO: an agent can leave a FIFO where guidance is read; the
// next run's start must skip it, not wait for a writer forever.
func TestGuidanceFIFO(t *testing.T) {
	ws := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(ws, GuidanceFile), 0o644); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(ws, ".harness"), 0o755)
	if err := syscall.Mkfifo(filepath.Join(ws, GuidanceDir), 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var skipped []string
	go func() {
		defer close(done)
		_, skipped, _ = LoadGuidance(ws, "task", "")
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("LoadGuidance hung on a FIFO")
	}
	if len(skipped) != 1 || !strings.Contains(skipped[0], "not a regular file") {
		t.Fatalf("skipped %q", skipped)
	}
}

// TestGuidanceWorkspaceSwapped: a workspace whose path leads through a
// symlink (a parent its user swapped for a link to a directory they
// cannot reach, after the daemon checked it) is refused, not read as root.
func TestGuidanceWorkspaceSwapped(t *testing.T) {
	base := t.TempDir()
	if err := os.MkdirAll(filepath.Join(base, "victim/proj"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(base, "victim/proj/AGENTS.md"), []byte("private"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(base, "victim"), filepath.Join(base, "a")); err != nil {
		t.Fatal(err)
	}
	files, _, err := LoadGuidance(filepath.Join(base, "a/proj"), "", "")
	if !errors.Is(err, syscall.ELOOP) || len(files) != 0 {
		t.Fatalf("LoadGuidance through a symlink: %v, %v; want ELOOP", files, err)
	}
	files, _, err = LoadGuidance(filepath.Join(base, "victim/proj"), "", "")
	if err != nil || len(files) != 1 || files[0].Text != "private" {
		t.Fatalf("LoadGuidance: %v, %v", files, err)
	}
}

// TestGuidanceNotTheOwners: in a shared workspace, a guidance file of
// someone else's that the workspace's owner may not read is skipped (the
// daemon reads as root); one readable by all is loaded.
func TestGuidanceNotTheOwners(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make files of other users")
	}
	ws := t.TempDir()
	os.Chown(ws, 65533, 65533)
	os.MkdirAll(filepath.Join(ws, GuidanceDir), 0o777)
	secret := filepath.Join(ws, GuidanceFile)
	os.WriteFile(secret, []byte("root's secret\n"), 0o600) // root's, 0600
	open := filepath.Join(ws, GuidanceDir, "style.md")
	os.WriteFile(open, []byte("tabs\n"), 0o644) // root's, readable by all
	mine := filepath.Join(ws, GuidanceDir, "mine.md")
	os.WriteFile(mine, []byte("mine\n"), 0o600)
	os.Chown(mine, 65533, 65533)
	files, skipped, err := LoadGuidance(ws, "task", "")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range files {
		got = append(got, f.Path)
	}
	if !reflect.DeepEqual(got, []string{GuidanceDir + "/mine.md", GuidanceDir + "/style.md"}) || len(skipped) != 1 || !strings.Contains(skipped[0], "not the workspace owner's") {
		t.Fatalf("loaded %v, skipped %q", got, skipped)
	}
}
