package mcp_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/core/config"
	"github.com/harnessd/harnessd/core/mcp"
)

// TestFileTools edits a file through the file tools in the connection's
// default session, as a model would: create, view, a str_replace that
// matches twice (a tool error naming the lines), a wider one, an insert,
// an undo; then a policy vetoes an edit under .github/.
func TestFileTools(t *testing.T) {
	pol := filepath.Join(t.TempDir(), "policies")
	os.Mkdir(pol, 0o755)
	if err := os.WriteFile(filepath.Join(pol, "ci.lua"), []byte(`harness.on("action.*", function(ev)
  if ev.kind:sub(1, 5) == "file_" and ev.kind ~= "file_view" and ev.path:find(".github/", 1, true) then
    return harness.veto("CI workflows are edited by people")
  end
end)`), 0o644); err != nil {
		t.Fatal(err)
	}
	c := connect(t, daemon(t, func(cfg *config.Config) { cfg.Hooks.Dirs = []string{pol} }), mcp.Options{})

	created, _ := ok[mcp.File](c, "file_create", map[string]any{"path": "app.py", "content": "a = 1\nb = 1\nprint(a - b)\n"})
	if !created.OK || !strings.HasSuffix(created.Path, "/app.py") || created.Session == "" {
		t.Fatalf("file_create: %+v", created)
	}
	ws := filepath.Dir(created.Path) // driver none: the path is the host's

	view, txt := ok[mcp.File](c, "file_view", map[string]any{"path": "app.py", "from_line": 2, "to_line": 3})
	if !strings.Contains(txt, "2\tb = 1") || !strings.Contains(view.Output, "3\tprint(a - b)") || strings.Contains(view.Output, "a = 1") {
		t.Errorf("file_view lines 2-3: %q", view.Output)
	}

	msg := c.fails("file_str_replace", map[string]any{"path": "app.py", "old": " = 1", "new": " = 2"})
	if !strings.Contains(msg, "2") || !strings.Contains(msg, "lines 1") {
		t.Errorf("an ambiguous old: %q", msg)
	}
	edit, _ := ok[mcp.File](c, "file_str_replace", map[string]any{"path": "app.py", "old": "print(a - b)", "new": "print(a + b)"})
	if !edit.OK || !strings.Contains(edit.Diff, "+print(a + b)") {
		t.Errorf("file_str_replace: %+v", edit)
	}
	if _, txt := ok[mcp.File](c, "file_insert", map[string]any{"path": "app.py", "line": 0, "text": "import sys\n"}); !strings.Contains(txt, "1\timport sys") {
		t.Errorf("file_insert: %q", txt)
	}
	if _, err := ok[mcp.File](c, "file_undo", map[string]any{"path": "app.py"}); err == "" {
		t.Error("file_undo said nothing")
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "app.py")); string(b) != "a = 1\nb = 1\nprint(a + b)\n" {
		t.Errorf("after the undo the file holds %q", b)
	}

	msg = c.fails("file_create", map[string]any{"path": ".github/workflows/ci.yml", "content": "on: push\n"})
	if !strings.Contains(msg, "CI workflows are edited by people") || !strings.Contains(msg, "ci.lua") {
		t.Errorf("vetoed edit: %q", msg)
	}
	if _, err := os.Stat(filepath.Join(ws, ".github")); err == nil {
		t.Error("a vetoed file_create wrote")
	}
	if msg := c.fails("file_view", map[string]any{"path": "missing.txt"}); !strings.Contains(strings.ToLower(msg), "no such file") && !strings.Contains(strings.ToLower(msg), "not exist") {
		t.Errorf("viewing a missing file: %q", msg)
	}
	if msg := c.fails("file_view", map[string]any{"path": "app.py", "session": "nope"}); !strings.Contains(msg, "session_list") {
		t.Errorf("an unknown session: %q", msg)
	}
}
