package daemon

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckGitDir: what a --git clone refuses in its source's git
// directory, and what it lets through (see checkGitDir).
func TestCheckGitDir(t *testing.T) {
	for _, c := range []struct {
		name  string
		plant func(git string)
		want  string // "" for no error
	}{
		{"plain", func(string) {}, ""},
		{"symref HEAD", func(g string) {
			os.Remove(filepath.Join(g, "HEAD"))
			os.Symlink("refs/heads/main", filepath.Join(g, "HEAD"))
		}, ""},
		{"symref branch", func(g string) { os.Symlink("refs/heads/main", filepath.Join(g, "refs/heads/alias")) }, ""},
		{"links in logs and hooks", func(g string) {
			os.Symlink("/etc/passwd", filepath.Join(g, "hooks", "pre-commit"))
			os.MkdirAll(filepath.Join(g, "logs"), 0o755)
			os.Symlink("/etc/passwd", filepath.Join(g, "logs", "HEAD"))
		}, ""},
		{"comment-only alternates", func(g string) { os.WriteFile(filepath.Join(g, "objects/info/alternates"), []byte("# none\n\n"), 0o644) }, ""},
		{"ref out", func(g string) { os.Symlink("/etc/passwd", filepath.Join(g, "refs/heads/x")) }, ".git/refs/heads/x -> /etc/passwd"},
		{"ref climbing", func(g string) { os.Symlink("refs/../../../x", filepath.Join(g, "refs/heads/x")) }, "refs/heads/x"},
		{"HEAD out", func(g string) { os.Remove(filepath.Join(g, "HEAD")); os.Symlink("/x/HEAD", filepath.Join(g, "HEAD")) }, ".git/HEAD"},
		{"symref-shaped elsewhere", func(g string) { os.Symlink("refs/heads/main", filepath.Join(g, "objects", "ab")) }, ".git/objects/ab"},
		{"refs dir", func(g string) {
			os.RemoveAll(filepath.Join(g, "refs", "tags"))
			os.Symlink("/tmp", filepath.Join(g, "refs", "tags"))
		}, "refs/tags"},
		{"objects dir", func(g string) {
			os.RemoveAll(filepath.Join(g, "objects", "pack"))
			os.Symlink("/tmp", filepath.Join(g, "objects", "pack"))
		}, "objects/pack"},
		{"alternates", func(g string) {
			os.WriteFile(filepath.Join(g, "objects/info/alternates"), []byte("\n/else/objects\n"), 0o644)
		}, "borrows objects from /else/objects"},
		{"commondir", func(g string) { os.WriteFile(filepath.Join(g, "commondir"), []byte("/else/.git\n"), 0o644) }, "/else/.git (.git/commondir)"},
		// What a sandbox's pin leaves in a repository of the user's: the
		// git directory itself, so no other.
		{"commondir of itself", func(g string) { os.WriteFile(filepath.Join(g, "commondir"), []byte(".\n"), 0o644) }, ""},
		{"commondir of a space", func(g string) { os.WriteFile(filepath.Join(g, "commondir"), []byte(" .\n"), 0o644) }, "(.git/commondir)"},
		{"commondir climbing", func(g string) { os.WriteFile(filepath.Join(g, "commondir"), []byte("./..\n"), 0o644) }, "./.. (.git/commondir)"},
		{"http-alternates", func(g string) {
			os.WriteFile(filepath.Join(g, "objects/info/http-alternates"), []byte("http://x/\n"), 0o644)
		}, "http-alternates"},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := t.TempDir()
			for _, d := range []string{"hooks", "refs/heads", "refs/tags", "objects/info", "objects/pack"} {
				os.MkdirAll(filepath.Join(g, d), 0o755)
			}
			os.WriteFile(filepath.Join(g, "HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
			os.WriteFile(filepath.Join(g, "refs/heads/main"), []byte(strings.Repeat("a", 40)+"\n"), 0o644)
			c.plant(g)
			err := checkGitDir(g)
			switch {
			case c.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("got %v, want an error naming %q", err, c.want)
			}
		})
	}
}
