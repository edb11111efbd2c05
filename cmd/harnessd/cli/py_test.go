package cli_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// TestPyCommand drives `harnessd py` against a daemon: a cell's output
// and exit status, state kept between calls, an exception, --json, and
// replay's transcript of the cells.
func TestPyCommand(t *testing.T) {
	sock := daemon(t)
	ctx := context.Background()
	id, _, code := runCLI(ctx, sock, "session", "new", "--workspace", t.TempDir())
	id = strings.TrimSpace(id)
	if code != 0 {
		t.Fatalf("session new: %d", code)
	}
	steps := []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"py", id, "--", "x = 20"}, 0, ""},
		{[]string{"py", id, "--", "x * 2 + 2"}, 0, "42\n"},
		{[]string{"py", "--trimmed", id, "--", "1/0"}, 1, "ZeroDivisionError: division by zero"},
		{[]string{"py", id}, 0, ""},
	}
	for _, s := range steps {
		out, errOut, code := runCLI(ctx, sock, s.args...)
		if code != s.code || !strings.Contains(out, s.out) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want %d and %q", s.args, code, out, errOut, s.code, s.out)
		}
	}
	out, _, code := runCLI(ctx, sock, "py", "--json", id, "--", "print('hi')")
	var ev struct {
		Kind     string `json:"kind"`
		ExitCode int    `json:"exit_code"`
		Output   string `json:"output"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &ev) != nil || ev.Kind != "python_result" || ev.Output != "hi\n" {
		t.Errorf("--json: %d %q", code, out)
	}
	out, _, _ = runCLI(ctx, sock, "replay", id)
	if !strings.Contains(out, "py> x * 2 + 2\n42\n[ok") || !strings.Contains(out, "[ZeroDivisionError") {
		t.Errorf("replay:\n%s", out)
	}
}
