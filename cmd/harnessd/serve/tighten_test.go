package serve

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
)

// TestTighten: an existing data directory open to others is narrowed to
// 0700, unless the socket clients must reach is inside it.
func TestTighten(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	tighten(dir, "/run/harnessd/harnessd.sock", log)
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o700 {
		t.Errorf("mode %v, want 0700", fi.Mode().Perm())
	}
	os.Chmod(dir, 0o755)
	tighten(dir, filepath.Join(dir, "h.sock"), log)
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o755 {
		t.Errorf("with the socket inside: mode %v, want it left 0755", fi.Mode().Perm())
	}
}
