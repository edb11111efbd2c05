package api_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/core/api"
	"github.com/harnessd/harnessd/core/config"
	"github.com/harnessd/harnessd/core/daemon"
	"github.com/harnessd/harnessd/core/event"
)

const askPolicy = `
harness.on("action.cmd_run", function(ev)
  for _, c in ipairs(harness.commands(ev.command)) do
    if c.name == "git" and c.args[1] == "push" then
      return harness.ask("a push leaves the sandbox")
    end
    if c.name == "make" and c.args[1] == "deploy" then
      return harness.rewrite({command = "echo deploy is make release now"}, "deploy was renamed")
    end
  end
end)
harness.examples{ ask = {"git push origin main"}, allow = {"git status"} }
`

// TestHooks drives the Lua hooks through the real daemon: the shipped
// policies veto and redact, a user's policy asks a person (approved and
// denied over the API, and by the timeout) and rewrites, output pages are
// redacted as observations are, and a reload with a broken file keeps the
// running set.
func TestHooks(t *testing.T) {
	dir := t.TempDir()
	pol := filepath.Join(dir, "policies")
	os.Mkdir(pol, 0o755)
	if err := os.WriteFile(filepath.Join(pol, "ask.lua"), []byte(askPolicy), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t, dir)
	cfg.Hooks.Dirs = []string{pol}
	cfg.Hooks.AskTimeout = config.Duration{Duration: 2 * time.Second}
	td := startDaemon(t, cfg)
	ctx := context.Background()
	if _, err := td.cl.CreateSession(ctx, daemon.CreateRequest{ID: "h"}); err != nil {
		t.Fatal(err)
	}
	act := func(cmd string) event.Event {
		t.Helper()
		ev, err := td.cl.Act(ctx, "h", event.SourceAgent, event.CmdRun{Command: "cd " + dir + " && " + cmd})
		if err != nil {
			t.Fatalf("%q: %v", cmd, err)
		}
		return ev
	}

	// Veto by the shipped policy: recorded, answered, nothing ran.
	marker := filepath.Join(dir, "ran")
	ev := act("touch " + marker + "; sudo rm -rf /")
	if v, ok := ev.Payload.(event.HookVeto); !ok || !strings.Contains(v.Hook, "builtin/dangerous.lua:") {
		t.Fatalf("rm -rf /: %+v", ev)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a vetoed command ran")
	}

	// Redaction in the observation; the stored output keeps the bytes, the
	// page read back is redacted too.
	ev = act("echo AKIAIOSFODNN7EXAMPLE; seq 1 3000")
	out := ev.Payload.(event.CmdOutput)
	if strings.Contains(out.Output, "AKIAIOSFODNN7EXAMPLE") || !strings.Contains(out.Output, "[REDACTED aws_access_key]") {
		t.Fatalf("not redacted: %.200q", out.Output)
	}
	page, err := td.cl.Output(ctx, out.Trimmed.OutputID, 1, 2)
	if err != nil || strings.Contains(page.Text, "AKIA") || !strings.Contains(page.Text, "REDACTED") {
		t.Fatalf("page: %+v %v", page, err)
	}

	// Rewrite: what ran is recorded, with the original.
	ev = act("make deploy")
	if o := ev.Payload.(event.CmdOutput); !strings.Contains(o.Output, "deploy is make release now") {
		t.Fatalf("rewrite: %+v", o)
	}
	var action event.Event
	td.cl.Events(ctx, "h", ev.Cause-1, false, func(e event.Event) error {
		if e.Seq == ev.Cause {
			action = e
		}
		return nil
	})
	if c := action.Payload.(event.CmdRun); c.Rewritten == nil || !strings.Contains(c.Rewritten.Command, "make deploy") || !strings.Contains(c.Rewritten.Hook, "ask.lua") {
		t.Fatalf("rewritten action: %+v", c)
	}

	// Ask: approved over the API, then denied, then the timeout.
	for _, c := range []struct {
		name    string
		decide  *bool
		wantRun bool
		reason  string
	}{
		{"approved", ptr(true), true, ""},
		{"denied", ptr(false), false, "denied by uid"},
		{"timeout", nil, false, "no one"},
	} {
		done := make(chan event.Event, 1)
		go func() {
			ev, _ := td.cl.Act(ctx, "h", event.SourceAgent, event.CmdRun{Command: "git push origin main 2>/dev/null; echo pushed-" + c.name})
			done <- ev
		}()
		if c.decide != nil {
			var list []daemon.Approval
			for end := time.Now().Add(5 * time.Second); len(list) == 0 && time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
				list, _ = td.cl.Approvals(ctx)
			}
			if len(list) != 1 || list[0].Session != "h" || !strings.Contains(list[0].Reason, "push") {
				t.Fatalf("%s: approvals %+v", c.name, list)
			}
			// Reads do not wait while the action waits for a person.
			rctx, cancel := context.WithTimeout(ctx, time.Second)
			if _, err := td.cl.Session(rctx, "h"); err != nil {
				t.Errorf("%s: reading the session while it waits: %v", c.name, err)
			}
			cancel()
			if err := td.cl.Decide(ctx, "h", list[0].Seq, *c.decide); err != nil {
				t.Fatal(err)
			}
			if err := td.cl.Decide(ctx, "h", list[0].Seq, true); err == nil {
				t.Errorf("%s: a second decision was taken", c.name)
			}
		}
		ev := <-done
		switch o := ev.Payload.(type) {
		case event.CmdOutput:
			if !c.wantRun || !strings.Contains(o.Output, "pushed-"+c.name) {
				t.Errorf("%s: ran: %+v", c.name, o)
			}
		case event.HookVeto:
			if c.wantRun || !strings.Contains(o.Reason, c.reason) {
				t.Errorf("%s: refused: %+v", c.name, o)
			}
		default:
			t.Errorf("%s: %+v", c.name, ev)
		}
	}
	var approvals int
	td.cl.Events(ctx, "h", 0, false, func(e event.Event) error {
		if e.Kind() == "approval" {
			approvals++
		}
		return nil
	})
	if approvals != 1 {
		t.Errorf("%d approval events recorded, want 1", approvals)
	}

	// Reload: a syntax error is refused naming file:line; the set stays.
	os.WriteFile(filepath.Join(pol, "broken.lua"), []byte("harness.on(\"action.cmd_run\", function(ev)\n  return harness.veto(\n"), 0o644)
	status, body := raw(t, td.socket, "POST", "/v1/hooks/reload", "")
	if status != http.StatusBadRequest || !strings.Contains(body, "broken.lua:") {
		t.Errorf("reload with a broken file: %d %s", status, body)
	}
	if ev := act("sudo rm -rf /"); ev.Kind() != event.KindHookVeto {
		t.Errorf("after a failed reload the policies must stay: %+v", ev)
	}
	os.Remove(filepath.Join(pol, "broken.lua"))
	if status, body := raw(t, td.socket, "POST", "/v1/hooks/reload", ""); status != http.StatusOK || !strings.Contains(body, "ask.lua") {
		t.Errorf("reload: %d %s", status, body)
	}
	var ae *api.Error
	if err := td.cl.Decide(ctx, "h", 999, true); !errors.As(err, &ae) || ae.Status != http.StatusNotFound {
		t.Errorf("deciding nothing: %v", err)
	}

	// A session that ends while an action waits for a person answers it
	// at once, rather than keep its end waiting for the ask timeout.
	done := make(chan event.Event, 1)
	go func() {
		ev, _ := td.cl.Act(ctx, "h", event.SourceAgent, event.CmdRun{Command: "git push"})
		done <- ev
	}()
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if l, _ := td.cl.Approvals(ctx); len(l) == 1 {
			break
		}
	}
	begin := time.Now()
	if err := td.cl.DeleteSession(ctx, "h", false); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-done:
		if v, ok := ev.Payload.(event.HookVeto); !ok || !strings.Contains(v.Reason, "session ended") {
			t.Errorf("the waiting action's answer: %+v", ev)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("deleting a session left its waiting action waiting")
	}
	if d := time.Since(begin); d > 5*time.Second {
		t.Errorf("the delete took %v", d)
	}
}

func ptr[T any](v T) *T { return &v }

// TestCappedOutputKeepsTheEnd: an observation hook's trim settings retrim
// the whole output read back from the store; when the store kept only the
// start of it (store.max_output_mb), the default view, which shows the
// end, stays instead, and the observation says what was not stored.
func TestCappedOutputKeepsTheEnd(t *testing.T) {
	dir := t.TempDir()
	pol := filepath.Join(dir, "policies")
	os.Mkdir(pol, 0o755)
	hook := `harness.on("observation.cmd_output", function(ev) return {trim = {head = 2, tail = 2}} end)`
	if err := os.WriteFile(filepath.Join(pol, "trim.lua"), []byte(hook), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t, dir)
	cfg.Hooks.Dirs = []string{pol}
	cfg.Store.MaxOutputMB = 1
	td := startDaemon(t, cfg)
	ctx := context.Background()
	if _, err := td.cl.CreateSession(ctx, daemon.CreateRequest{ID: "cap"}); err != nil {
		t.Fatal(err)
	}
	small := run(t, td.cl, "cap", "seq 1 5000") // more than trim.max_chars, so the hook's trim applies
	if !strings.HasPrefix(small.Output, "1\n2\n") || strings.Contains(small.Output, "\n3\n") || !strings.HasSuffix(small.Output, "4999\n5000\n") {
		t.Fatalf("the hook's trim was not applied to a whole stored output: %q", small.Output)
	}
	big := run(t, td.cl, "cap", "seq 1 400000") // 2.6 MB
	if !strings.HasSuffix(big.Output, "\n400000\n") || !strings.Contains(big.Note, "Only the first 1048576 bytes") || !strings.Contains(big.Note, "store.max_output_mb: 1 MiB per command") {
		t.Fatalf("capped output: note %q, output ends %q", big.Note, big.Output[max(0, len(big.Output)-40):])
	}
}
