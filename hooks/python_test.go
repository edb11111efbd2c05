package hooks

import (
	"context"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/core/event"
	"github.com/harnessd/harnessd/core/pipeline"
	"github.com/harnessd/harnessd/core/python"
	"github.com/harnessd/harnessd/core/session"
	"github.com/harnessd/harnessd/core/terminal"
)

// TestPythonHooks: action hooks see python_run as action.python_run
// with ev.code and may veto or rewrite it; observation hooks redact and
// cut a python_result's output as a command's.
func TestPythonHooks(t *testing.T) {
	e := loadFiles(t, map[string]string{"py.lua": `
harness.on("action.python_run", function(ev)
  if ev.code:find("shutil.rmtree", 1, true) then return harness.veto("no rmtree") end
  if ev.code == "2+2" then return harness.rewrite({code = "3+3"}, "arithmetic") end
end)
harness.on("observation.*", function(ev)
  return {redact = {{pattern = [=[sk-[a-z0-9]+]=], label = "key"}}, max_chars = 200}
end)
`})
	for _, c := range []struct {
		code string
		want Verdict
	}{
		{"import shutil; shutil.rmtree('/workspace')", Veto},
		{"2+2", Rewrite},
		{"1+1", Allow},
	} {
		d, err := e.Action(context.Background(), testSession, python.Run{Code: c.code})
		if err != nil || d.Verdict != c.want {
			t.Errorf("%q: %v %+v, want %v", c.code, err, d, c.want)
		}
		if c.want == Rewrite {
			if r, ok := d.Action.(python.Run); !ok || r.Code != "3+3" {
				t.Errorf("rewrite: %#v", d.Action)
			}
		}
	}
	s, err := session.New(context.Background(), "py", session.Config{Terminal: terminal.Options{Dir: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background(), "over")
	p := &Pipeline{Engine: e}
	o := &pipeline.Outcome{Observation: python.Result{Output: "token sk-abc123\n" + strings.Repeat("x", 500), Error: "ValueError", ExitCode: 1}}
	if err := p.AfterObservation(context.Background(), s, event.Event{Payload: python.Run{Code: "f()"}}, o); err != nil {
		t.Fatal(err)
	}
	r, ok := o.Observation.(python.Result)
	if !ok || strings.Contains(r.Output, "sk-abc123") || !strings.Contains(r.Output, "[REDACTED key]") ||
		len(r.Output) > 400 || r.Trimmed == nil || r.Error != "ValueError" || r.ExitCode != 1 {
		t.Errorf("after the observation hooks: %#v", o.Observation)
	}
}
