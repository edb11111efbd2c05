package openai_test

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/cmd/harnessd/serve"
	"github.com/harnessd/harnessd/core/agent"
	"github.com/harnessd/harnessd/core/api"
	"github.com/harnessd/harnessd/core/config"
	"github.com/harnessd/harnessd/core/daemon"
	"github.com/harnessd/harnessd/core/event"
	"github.com/harnessd/harnessd/core/files"
)

// TestOpenAIAgentEditsFiles: the openai agent's model edits with
// str_replace_editor, in a native sandbox: create, a str_replace that
// matches twice (the error names the lines), a widened one, a view of a
// range, a malformed call answered with guidance, undo, finish. The
// model sees each result as its tool call's answer.
func TestOpenAIAgentEditsFiles(t *testing.T) {
	ed := "str_replace_editor"
	model := &fakeModel{t: t}
	model.turns = []turn{
		{tool: ed, args: jsonArgs(map[string]any{"command": "create", "path": "/workspace/calc.py", "file_text": "def add(a, b):\n    return a - b\n\ndef sub(a, b):\n    return a - b\n"})},
		{tool: ed, args: jsonArgs(map[string]any{"command": "str_replace", "path": "calc.py", "old_str": "return a - b", "new_str": "return a + b"}),
			check: expectLast("tool", "File created successfully at: /workspace/calc.py")},
		{tool: ed, args: jsonArgs(map[string]any{"command": "str_replace", "path": "/workspace/calc.py", "old_str": "(a, b):\n    return a - b\n\ndef sub", "new_str": "(a, b):\n    return a + b\n\ndef sub"}),
			check: expectLast("tool", "ERROR: No replacement was performed: old matched 2 times in /workspace/calc.py, starting on lines 2, 5.")},
		{tool: ed, args: jsonArgs(map[string]any{"command": "view", "path": "/workspace/calc.py", "view_range": []int{2, 2}, "file_text": ""}),
			check: expectLast("tool", "     2\t    return a + b\n")},
		{tool: ed, args: jsonArgs(map[string]any{"command": "view", "path": "/workspace/calc.py", "view_range": []int{2, 2}}),
			check: expectLast("user", `"file_text" does not apply to view`)},
		{tool: ed, args: jsonArgs(map[string]any{"command": "undo_edit", "path": "/workspace/calc.py"}),
			check: expectLast("tool", "cat -n` on /workspace/calc.py:\n     2\t    return a + b\n")},
		{tool: "finish", args: jsonArgs(map[string]any{"message": "done"}), check: expectLast("tool", "undone successfully")},
	}
	srv := httptest.NewServer(model)
	defer srv.Close()
	dir := t.TempDir()
	cfg := config.Default()
	cfg.Daemon.DataDir = dir
	cfg.Daemon.Socket = filepath.Join(dir, "h.sock")
	cfg.Daemon.ShutdownGrace = config.Duration{Duration: time.Second}
	cfg.Sandbox.Driver = config.DriverNative
	cfg.Sandbox.PoolSize = 1
	cfg.Sandbox.MemoryMB = 256
	a := cfg.Agents["openai"]
	a.BaseURL = srv.URL + "/v1"
	a.Model = "test-model"
	a.APIKeyEnv = "HARNESSD_TEST_OPENAI_KEY"
	a.Timeout = config.Duration{Duration: 30 * time.Second}
	cfg.Agents["openai"] = a
	t.Setenv("HARNESSD_TEST_OPENAI_KEY", "sk-test")

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	ready := make(chan string, 1)
	served := make(chan error, 1)
	go func() {
		served <- serve.Run(ctx, serve.Options{Config: cfg, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Ready: func(s string) { ready <- s }, AgentExe: os.Args[0]})
	}()
	var socket string
	select {
	case socket = <-ready:
	case err := <-served:
		t.Fatal(err)
	}
	cl := api.NewClient(socket)
	defer cl.Close()
	sess, err := cl.CreateSession(ctx, daemon.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	run, err := cl.StartRun(ctx, sess.ID, agent.Request{Agent: "openai", Task: "Make add add."})
	if err != nil {
		t.Fatal(err)
	}
	var end agent.Info
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if end, err = cl.Run(ctx, run.ID); err != nil {
			t.Fatal(err)
		}
		if end.State == agent.StateEnded || time.Now().After(deadline) {
			break
		}
	}
	if end.Reason != agent.ReasonFinished || len(model.reqs) != len(model.turns) {
		t.Fatalf("%+v after %d requests", end, len(model.reqs))
	}
	if b, _ := os.ReadFile(filepath.Join(sess.Workspace, "calc.py")); string(b) != "def add(a, b):\n    return a - b\n\ndef sub(a, b):\n    return a - b\n" {
		t.Errorf("calc.py after the undo: %q", b)
	}
	var results int
	cl.Events(ctx, sess.ID, 0, false, func(ev event.Event) error {
		if r, ok := ev.Payload.(files.Result); ok {
			results++
			if r.Op == "str_replace" && r.OK && !strings.Contains(r.Diff, "-    return a - b\n+    return a + b\n") {
				t.Errorf("diff %q", r.Diff)
			}
		}
		return nil
	})
	if results != 5 {
		t.Errorf("%d file_result events, want 5", results)
	}
	stop()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
}
