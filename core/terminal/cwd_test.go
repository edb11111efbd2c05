package terminal

import "testing"

// TestCwd: the terminal says where its shell is as of the last prompt,
// from the first one on, and while a command still runs it answers at
// once with the last known directory.
func TestCwd(t *testing.T) {
	dir := t.TempDir()
	term := newTerm(t, Options{Dir: dir})
	if got := term.Cwd(); got != dir {
		t.Errorf("after start: Cwd %q, want %q", got, dir)
	}
	cmd(t, term, "cd /tmp")
	if got := term.Cwd(); got != "/tmp" {
		t.Errorf("after cd: Cwd %q", got)
	}
	// Cwd never takes the mutex a running call holds.
	term.mu.Lock()
	got := term.Cwd()
	term.mu.Unlock()
	if got != "/tmp" {
		t.Errorf("with the terminal busy: Cwd %q", got)
	}
}
