package cli_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFileCommands drives `harnessd file …` against a daemon: every
// command, --json, --diff, and the exit status of a refused edit.
func TestFileCommands(t *testing.T) {
	sock := daemon(t)
	ctx := context.Background()
	ws := t.TempDir()
	id, _, code := runCLI(ctx, sock, "session", "new", "--workspace", ws)
	id = strings.TrimSpace(id)
	if code != 0 {
		t.Fatalf("session new: %d", code)
	}
	steps := []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"file", "create", id, "a.txt", "--content", "one\ntwo\nthree\n"}, 0, "     2\ttwo\n"},
		{[]string{"file", "create", id, "a.txt", "--content", "x"}, 1, ""},
		{[]string{"file", "replace", id, "a.txt", "--old", "two", "--new", "TWO", "--diff"}, 0, "-two\n+TWO\n"},
		{[]string{"file", "insert", id, "a.txt", "--line", "0", "--text", "zero"}, 0, "     1\tzero\n"},
		{[]string{"file", "view", id, "a.txt", "--lines", "2-3"}, 0, "     2\tone\n     3\tTWO\n"},
		{[]string{"file", "replace", id, "a.txt", "--old", "nothere", "--new", "x"}, 1, ""},
		{[]string{"file", "undo", id, "a.txt"}, 0, "undone successfully"},
		{[]string{"file", "view", id, "."}, 0, "a.txt\n"},
		{[]string{"file", "frob", id, "a.txt"}, 2, ""},
	}
	for _, s := range steps {
		out, errOut, code := runCLI(ctx, sock, s.args...)
		if code != s.code || !strings.Contains(out, s.out) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want %d and %q", s.args, code, out, errOut, s.code, s.out)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(b) != "one\nTWO\nthree\n" {
		t.Errorf("a.txt: %q", b)
	}
	out, _, code := runCLI(ctx, sock, "file", "view", id, "a.txt", "--json")
	var ev struct {
		Kind string `json:"kind"`
		OK   bool   `json:"ok"`
		Path string `json:"path"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &ev) != nil || ev.Kind != "file_result" || !ev.OK || ev.Path != filepath.Join(ws, "a.txt") {
		t.Errorf("--json: %d %q", code, out)
	}
}
