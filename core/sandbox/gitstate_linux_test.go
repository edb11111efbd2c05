package sandbox

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestFingerprint: a state's fingerprint changes with anything git could
// read from it (a file's content or mode, a new file, a link's target),
// and with nothing else.
func TestFingerprint(t *testing.T) {
	dir := t.TempDir()
	rm := filepath.Join(dir, "rebase-merge")
	os.Mkdir(rm, 0o755)
	os.WriteFile(filepath.Join(rm, "git-rebase-todo"), []byte("pick 1 a\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "MERGE_RR"), []byte(""), 0o644)
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if fp := fingerprint(fd, "sequencer"); fp != "" {
		t.Errorf("a missing state: %q", fp)
	}
	base := fingerprint(fd, "rebase-merge")
	if base == "" || base == unknownState || fingerprint(fd, "rebase-merge") != base {
		t.Fatalf("an unchanged state: %q, then %q", base, fingerprint(fd, "rebase-merge"))
	}
	now := func() string { return fingerprint(fd, "rebase-merge") }
	for _, c := range []struct {
		name   string
		do     func()
		undo   func()
		equals bool
	}{
		{"times only", func() { os.Chtimes(filepath.Join(rm, "git-rebase-todo"), time.Unix(1, 0), time.Unix(1, 0)) }, func() {}, true},
		{"content", func() { os.WriteFile(filepath.Join(rm, "git-rebase-todo"), []byte("exec x\n"), 0o644) },
			func() { os.WriteFile(filepath.Join(rm, "git-rebase-todo"), []byte("pick 1 a\n"), 0o644) }, false},
		{"mode", func() { os.Chmod(filepath.Join(rm, "git-rebase-todo"), 0o600) }, func() { os.Chmod(filepath.Join(rm, "git-rebase-todo"), 0o644) }, false},
		{"a new file", func() { os.WriteFile(filepath.Join(rm, "strategy"), []byte("x/../evil\n"), 0o644) }, func() { os.Remove(filepath.Join(rm, "strategy")) }, false},
		{"a link", func() { os.Symlink("/etc/passwd", filepath.Join(rm, "strategy")) }, func() { os.Remove(filepath.Join(rm, "strategy")) }, false},
	} {
		c.do()
		if got := now(); (got == base) != c.equals || got == unknownState {
			t.Errorf("%s: %q vs %q, want equal %v", c.name, got, base, c.equals)
		}
		c.undo()
		if got := now(); got != base {
			t.Errorf("%s undone: %q vs %q", c.name, got, base)
		}
	}
}
