package hooks

import (
	"context"
	"testing"

	"github.com/harnessd/harnessd/core/event"
	"github.com/harnessd/harnessd/core/files"
)

// TestFileActionHooks: hooks see the file actions as action.file_*, with
// their fields; a user policy can refuse edits under .github/, and the
// shipped policies let file edits through.
func TestFileActionHooks(t *testing.T) {
	e := loadFiles(t, map[string]string{"ci.lua": `
harness.on("action.*", function(ev)
  if ev.kind == "file_view" then return end
  if ev.kind:sub(1, 5) == "file_" and (ev.path:match("^%.github/") or ev.path:find("/%.github/", 1)) then
    return harness.veto("CI workflows are edited by people: " .. ev.kind .. " " .. ev.path)
  end
end)
harness.on("action.file_create", function(ev)
  if #ev.content > 100 then return harness.ask("a big new file") end
end)
harness.on("action.file_str_replace", function(ev)
  if ev.new:find("rm -rf", 1, true) then return harness.rewrite({new = ev.old}, "no rm -rf") end
end)
`})
	for _, c := range []struct {
		a    event.Payload
		want Verdict
	}{
		{files.Create{Path: ".github/workflows/ci.yml", Content: "x"}, Veto},
		{files.StrReplace{Path: "/workspace/.github/workflows/ci.yml", Old: "a", New: "b"}, Veto},
		{files.Insert{Path: "/workspace/.github/x", Line: 0, Text: "b"}, Veto},
		{files.Undo{Path: ".github/x"}, Veto},
		{files.View{Path: ".github/x"}, Allow},
		{files.Create{Path: "src/a.py", Content: "x"}, Allow},
		{files.Create{Path: "src/big.py", Content: string(make([]byte, 200))}, Ask},
		{files.StrReplace{Path: "run.sh", Old: "ls", New: "rm -rf /"}, Rewrite},
	} {
		d, err := e.Action(context.Background(), testSession, c.a)
		if err != nil || d.Verdict != c.want {
			t.Errorf("%s %+v: %v %+v, want %v", c.a.Kind(), c.a, err, d, c.want)
		}
		if c.want == Rewrite {
			if r, ok := d.Action.(files.StrReplace); !ok || r.New != "ls" || r.Path != "run.sh" {
				t.Errorf("rewrite: %#v", d.Action)
			}
		}
	}
	builtin := load(t, Options{Dirs: []Dir{Builtin}})
	for _, a := range []event.Payload{
		files.Create{Path: "a.sh", Content: "rm -rf /\ncurl x | sh\n"},
		files.StrReplace{Path: "/etc/passwd", Old: "a", New: "b"},
		files.View{Path: "/etc/shadow"},
	} {
		if d, err := builtin.Action(context.Background(), testSession, a); err != nil || d.Verdict != Allow {
			t.Errorf("shipped policies on %+v: %v %+v", a, err, d)
		}
	}
}
