package terminal

import (
	"os"
	"path/filepath"
	"testing"
)

// TestOpenWatch: an open of the watched file is seen once, by its own
// directory's watch only; other files and other directories do not count.
func TestOpenWatch(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	for _, d := range []string{a, b} {
		for _, f := range []string{"command", "status"} {
			if err := os.WriteFile(filepath.Join(d, f), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	wa, err := opens.watch(a, "command")
	if err != nil {
		t.Skipf("no inotify: %v", err)
	}
	defer opens.unwatch(wa)
	wb, err := opens.watch(b, "command")
	if err != nil {
		t.Fatal(err)
	}
	defer opens.unwatch(wb)
	read := func(path string) {
		t.Helper()
		if _, err := os.ReadFile(path); err != nil {
			t.Fatal(err)
		}
	}
	if opens.take(wa) || opens.take(wb) {
		t.Fatal("an open before any")
	}
	read(filepath.Join(a, "status"))
	read(filepath.Join(b, "command"))
	if opens.take(wa) {
		t.Error("a: an open of status or of b's command counted")
	}
	if !opens.take(wb) {
		t.Error("b: the open of its command was not seen")
	}
	if opens.take(wb) {
		t.Error("b: one open seen twice")
	}
	// A directory that is removed ends its watch; take then cannot tell.
	os.RemoveAll(a)
	if !opens.take(wa) {
		t.Error("a: a removed directory's watch still answers")
	}
}
