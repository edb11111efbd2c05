package api_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/core/api"
	"github.com/harnessd/harnessd/core/daemon"
	"github.com/harnessd/harnessd/core/event"
	"github.com/harnessd/harnessd/core/files"
)

func fileAct(t *testing.T, cl *api.Client, id string, p event.Payload) files.Result {
	t.Helper()
	obs, err := cl.Act(context.Background(), id, event.SourceUser, p)
	if err != nil {
		t.Fatalf("%s: %+v: %v", id, p, err)
	}
	res, ok := obs.Payload.(files.Result)
	if !ok {
		t.Fatalf("%s: %+v: got %s %+v", id, p, obs.Kind(), obs.Payload)
	}
	return res
}

// TestFileActions takes every file action through a real daemon with a
// native sandbox: they run inside it, relative paths start at the
// shell's directory, edits are recorded with a diff and can be undone.
func TestFileActions(t *testing.T) {
	td := startDaemon(t, nativeConfig(t))
	ctx := context.Background()
	info, err := td.cl.CreateSession(ctx, daemon.CreateRequest{ID: "f"})
	if err != nil {
		t.Fatal(err)
	}
	ws := info.Workspace

	res := fileAct(t, td.cl, "f", files.Create{Path: "src/a.py", Content: "def f():\n    return 1\n\nprint(f())\n"})
	if !res.OK || res.Path != "/workspace/src/a.py" || res.Unsandboxed || !strings.Contains(res.Diff, "+++ b/workspace/src/a.py") {
		t.Fatalf("create: %+v", res)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "src/a.py")); string(b) != "def f():\n    return 1\n\nprint(f())\n" {
		t.Fatalf("on the host: %q", b)
	}
	if res := fileAct(t, td.cl, "f", files.Create{Path: "src/a.py", Content: "x"}); res.OK || res.Error != files.CodeExists {
		t.Errorf("create over an existing file: %+v", res)
	}
	run(t, td.cl, "f", "cd src")
	res = fileAct(t, td.cl, "f", files.StrReplace{Path: "a.py", Old: "return 1", New: "return 2"})
	if !res.OK || !strings.Contains(res.Output, "     2\t    return 2\n") || !strings.Contains(res.Diff, "-    return 1\n+    return 2\n") {
		t.Fatalf("str_replace relative to the shell's cwd: %+v", res)
	}
	res = fileAct(t, td.cl, "f", files.StrReplace{Path: "a.py", Old: "f()", New: "g()"})
	if res.OK || !strings.Contains(res.Output, "matched 2 times") || !strings.Contains(res.Output, "lines 1, 4") {
		t.Errorf("two matches: %+v", res)
	}
	res = fileAct(t, td.cl, "f", files.Insert{Path: "/workspace/src/a.py", Line: 2, Text: "    # two"})
	if !res.OK || !strings.Contains(res.Output, "     3\t    # two\n") {
		t.Errorf("insert: %+v", res)
	}
	res = fileAct(t, td.cl, "f", files.View{Path: "a.py", FromLine: 2, ToLine: 3})
	if !res.OK || res.Output != "Here's the result of running `cat -n` on /workspace/src/a.py:\n     2\t    return 2\n     3\t    # two\n" {
		t.Errorf("view range: %q", res.Output)
	}
	run(t, td.cl, "f", "mkdir -p deep/er/est .hid && touch deep/er/est/x .hid/y")
	res = fileAct(t, td.cl, "f", files.View{Path: "."})
	if !res.OK || !strings.Contains(res.Output, "/workspace/src/deep/er/\n") || strings.Contains(res.Output, "est") || strings.Contains(res.Output, ".hid") {
		t.Errorf("directory view: %q", res.Output)
	}
	for range 2 {
		if res := fileAct(t, td.cl, "f", files.Undo{Path: "a.py"}); !res.OK {
			t.Fatalf("undo: %+v", res)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "src/a.py")); string(b) != "def f():\n    return 1\n\nprint(f())\n" {
		t.Errorf("after two undos: %q", b)
	}
	if res := fileAct(t, td.cl, "f", files.Undo{Path: "a.py"}); !res.OK || !strings.Contains(res.Output, "removed") {
		t.Errorf("undo of the create: %+v", res)
	}
	if _, err := os.Stat(filepath.Join(ws, "src/a.py")); !os.IsNotExist(err) {
		t.Errorf("the created file is still there: %v", err)
	}
	if res := fileAct(t, td.cl, "f", files.Undo{Path: "a.py"}); res.OK || res.Error != "no_history" {
		t.Errorf("undo with nothing left: %+v", res)
	}
	// Protected paths refuse edits; the shipped default protects .harness/.
	res = fileAct(t, td.cl, "f", files.Create{Path: "/workspace/.harness/x", Content: "x"})
	if res.OK || res.Error != files.CodeProtected || !strings.Contains(res.Output, "protected path") {
		t.Errorf("create under a protected path: %+v", res)
	}
	// The file as seen from inside: the sandbox's own user made it.
	fileAct(t, td.cl, "f", files.Create{Path: "/tmp/t", Content: "hi\n"})
	if out := run(t, td.cl, "f", "stat -c '%u %a' /tmp/t; cat /tmp/t"); out.Output != "0 644\nhi\n" {
		t.Errorf("a file made in the sandbox's /tmp: %q", out.Output)
	}
	// Modes are kept.
	run(t, td.cl, "f", "printf 'echo 1\\n' > /workspace/run.sh && chmod 750 /workspace/run.sh")
	fileAct(t, td.cl, "f", files.StrReplace{Path: "/workspace/run.sh", Old: "1", New: "2"})
	if out := run(t, td.cl, "f", "stat -c %a /workspace/run.sh; /workspace/run.sh"); out.Output != "750\n2\n" {
		t.Errorf("mode after an edit: %q", out.Output)
	}
	// The shell exits: its init is gone, the file action says so and
	// how to go on; after a command starts a new shell it works again.
	obs, err := td.cl.Act(ctx, "f", event.SourceUser, event.CmdRun{Command: "exit"})
	t.Logf("exit: %+v %v", obs.Payload, err)
	res = fileAct(t, td.cl, "f", files.View{Path: "/workspace/run.sh"})
	t.Logf("view after exit: %s %s", res.Error, res.Output)
	if !res.OK {
		if res.Error != "unavailable" || !strings.Contains(res.Output, "run any command") {
			t.Errorf("after the shell exited: %+v", res)
		}
		run(t, td.cl, "f", "true")
		res = fileAct(t, td.cl, "f", files.View{Path: "/workspace/run.sh"})
	}
	if !res.OK {
		t.Errorf("after a new shell: %+v", res)
	}
	// The actions are in the log, answered by file_result.
	var kinds []string
	td.cl.Events(ctx, "f", 0, false, func(ev event.Event) error {
		if strings.HasPrefix(string(ev.Kind()), "file_") {
			kinds = append(kinds, string(ev.Kind()))
		}
		return nil
	})
	if len(kinds) < 10 || kinds[0] != "file_create" || kinds[1] != "file_result" {
		t.Errorf("recorded: %v", kinds)
	}
}

// TestFileActionHooksThroughDaemon: a user policy vetoes edits under
// .github/ (recorded and answered with hook_veto, nothing written), and
// the shipped secrets policy redacts what a file view shows. Driver
// "none": the file actions run in the daemon, said to be unsandboxed.
func TestFileActionHooksThroughDaemon(t *testing.T) {
	dir := t.TempDir()
	pol := filepath.Join(dir, "policies")
	os.Mkdir(pol, 0o755)
	policy := `harness.on("action.*", function(ev)
  if ev.kind ~= "file_view" and ev.kind:sub(1, 5) == "file_" and (ev.path:match("^%.github/") or ev.path:find("/%.github/", 1)) then
    return harness.veto("CI workflows are edited by people")
  end
end)`
	if err := os.WriteFile(filepath.Join(pol, "ci.lua"), []byte(policy), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t, dir)
	cfg.Hooks.Dirs = []string{pol}
	td := startDaemon(t, cfg)
	ctx := context.Background()
	info, err := td.cl.CreateSession(ctx, daemon.CreateRequest{ID: "h"})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := td.cl.Act(ctx, "h", event.SourceAgent, files.Create{Path: ".github/workflows/ci.yml", Content: "on: push\n"})
	if v, ok := ev.Payload.(event.HookVeto); err != nil || !ok || !strings.Contains(v.Reason, "CI workflows") {
		t.Fatalf("edit under .github/: %+v %v", ev, err)
	}
	if _, err := os.Stat(filepath.Join(info.Workspace, ".github")); err == nil {
		t.Error("a vetoed file_create wrote")
	}
	res := fileAct(t, td.cl, "h", files.Create{Path: "env.txt", Content: "KEY=AKIAIOSFODNN7EXAMPLE\n"})
	if !res.OK || !res.Unsandboxed || res.Path != filepath.Join(info.Workspace, "env.txt") {
		t.Fatalf("create with driver none: %+v", res)
	}
	res = fileAct(t, td.cl, "h", files.View{Path: "env.txt"})
	if strings.Contains(res.Output, "AKIAIOSFODNN7EXAMPLE") || !strings.Contains(res.Output, "REDACTED") {
		t.Errorf("view not redacted: %q", res.Output)
	}
}
