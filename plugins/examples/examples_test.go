// Package examples_test builds the example agents and drives a run with
// each, end to end: a real daemon, real plugin processes, real sessions.
package examples_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/cmd/harnessd/serve"
	"github.com/harnessd/harnessd/core/agent"
	"github.com/harnessd/harnessd/core/api"
	"github.com/harnessd/harnessd/core/config"
	"github.com/harnessd/harnessd/core/daemon"
	"github.com/harnessd/harnessd/core/event"
	"github.com/harnessd/harnessd/plugins"
)

// TestMain is also a host that starts the Python agent, says its pid and
// waits to be killed (TestPythonParentKilled).
func TestMain(m *testing.M) {
	if os.Getenv("EXAMPLES_PARENT") == "1" {
		script, _ := filepath.Abs("python/agent.py")
		p, err := plugins.Start(context.Background(), plugins.Config{Command: []string{python, script}, Env: append(plugins.BaseEnv, "TEST_MARK="+os.Getenv("TEST_MARK"))})
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println(p.PID())
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestPythonParentKilled: the Python agent exits by itself when the
// daemon that started it is killed with SIGKILL.
func TestPythonParentKilled(t *testing.T) {
	mark := fmt.Sprintf("%s-%d", t.Name(), time.Now().UnixNano())
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "EXAMPLES_PARENT=1", "TEST_MARK="+mark)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line := make([]byte, 256)
	n, _ := out.Read(line)
	if _, err := strconv.Atoi(strings.TrimSpace(string(line[:n]))); err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the parent said %q", line[:n])
	}
	cmd.Process.Kill()
	cmd.Wait()
	noStrays(t, mark) // within 5s
}

// python is Debian's interpreter, which has python3-grpcio (scripts/test
// installs it); a python3 earlier in PATH (pyenv) may not.
const python = "/usr/bin/python3"

type harness struct {
	cl   *api.Client
	mark string
}

// start runs a daemon whose agents are the examples: census (Go, pinned
// by its SHA-256) and recipe (Python).
func start(t *testing.T) *harness {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "census")
	build := exec.Command("go", "build", "-o", bin, "./go")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./go: %v\n%s", err, out)
	}
	sum, err := plugins.FileSHA256(bin)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(python, "-c", "import grpc, cryptography, google.protobuf").CombinedOutput(); err != nil {
		t.Fatalf("%s lacks grpcio, cryptography or protobuf (Debian: python3-grpcio python3-cryptography python3-protobuf; scripts/test installs them): %v\n%s", python, err, out)
	}
	script, err := filepath.Abs("python/agent.py")
	if err != nil {
		t.Fatal(err)
	}
	mark := fmt.Sprintf("%s-%d", t.Name(), time.Now().UnixNano())
	cfg := config.Default()
	cfg.Daemon.DataDir = dir
	cfg.Daemon.Socket = filepath.Join(dir, "h.sock")
	cfg.Daemon.ShutdownGrace = config.Duration{Duration: time.Second}
	cfg.Sandbox.Driver = config.DriverNone
	cfg.Agents["census"] = config.Agent{Command: []string{bin}, SHA256: sum, Env: map[string]string{"TEST_MARK": mark}}
	cfg.Agents["recipe"] = config.Agent{Command: []string{python, script}, Env: map[string]string{"TEST_MARK": mark}}
	ctx, stop := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	go func() {
		done <- serve.Run(ctx, serve.Options{Config: cfg, Logger: log, Ready: func(s string) { ready <- s }})
	}()
	var socket string
	select {
	case socket = <-ready:
	case err := <-done:
		t.Fatal(err)
	}
	h := &harness{cl: api.NewClient(socket), mark: mark}
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Error(err)
		}
		noStrays(t, mark)
	})
	return h
}

// run runs an agent through a task in a new session on ws and returns the
// run as it ended, with the session's events.
func (h *harness) run(t *testing.T, agentName, task, ws string) (agent.Info, []event.Event) {
	t.Helper()
	ctx := context.Background()
	sess, err := h.cl.CreateSession(ctx, daemon.CreateRequest{Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	r, err := h.cl.StartRun(ctx, sess.ID, agent.Request{Agent: agentName, Task: task})
	if err != nil {
		t.Fatal(err)
	}
	var end agent.Info
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(25 * time.Millisecond) {
		if end, err = h.cl.Run(ctx, r.ID); err != nil {
			t.Fatal(err)
		}
		if end.State == agent.StateEnded {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("run still going after 60s: %+v", end)
		}
	}
	var evs []event.Event
	h.cl.Events(ctx, sess.ID, 0, false, func(ev event.Event) error { evs = append(evs, ev); return nil })
	return end, evs
}

// TestGoExample: the census agent greps, pages the trimmed output back
// through the host services, and counts.
func TestGoExample(t *testing.T) {
	h := start(t)
	ws := t.TempDir()
	for i, n := range []int{150, 100, 50} {
		var b strings.Builder
		for j := range n {
			fmt.Fprintf(&b, "line %d has the needle\nline %d does not\n", j, j)
		}
		os.WriteFile(filepath.Join(ws, fmt.Sprintf("f%d.txt", i)), []byte(b.String()), 0o644)
	}
	end, evs := h.run(t, "census", "needle", ws)
	if end.Reason != agent.ReasonFinished || end.Message != `300 lines mention "needle", in 3 files` {
		t.Fatalf("%+v", end)
	}
	// The model-facing observation was trimmed: the count came from the
	// full output, read back.
	i := slices.IndexFunc(evs, func(e event.Event) bool { return e.Kind() == event.KindCmdOutput })
	if out := evs[i].Payload.(event.CmdOutput); out.Trimmed == nil || out.Trimmed.LinesOmitted == 0 {
		t.Fatalf("the grep's output was not trimmed: %+v", out.Trimmed)
	}
	if end, _ := h.run(t, "census", "haystack", ws); end.Message != `no line mentions "haystack"` {
		t.Fatalf("%+v", end)
	}
}

// TestPythonExample: the recipe agent, in Python, runs a recipe's
// commands one per step and stops at the first that fails.
func TestPythonExample(t *testing.T) {
	h := start(t)
	ws := t.TempDir()
	end, evs := h.run(t, "recipe", "Make a.txt, show it, then fail.\n$ echo one > a.txt\n$ cat a.txt\n$ false\n$ echo never", ws)
	if end.Reason != agent.ReasonFinished || end.Message != "`false` failed with exit code 1 after 3 of 4 commands" || end.Steps != 4 {
		t.Fatalf("%+v", end)
	}
	var cmds []string
	for _, ev := range evs {
		if c, ok := ev.Payload.(event.CmdRun); ok {
			cmds = append(cmds, c.Command)
		}
		if s, ok := agent.Unwrap(ev).(agent.AgentStep); ok && s.Step == 1 && s.Thought != "step 1 of the recipe" {
			t.Errorf("thought %q", s.Thought)
		}
	}
	if !slices.Equal(cmds, []string{"echo one > a.txt", "cat a.txt", "false"}) {
		t.Fatalf("commands %q", cmds)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(b) != "one\n" {
		t.Fatalf("a.txt %q", b)
	}
	end, _ = h.run(t, "recipe", "$ true\n$ echo ok", ws)
	if end.Message != "all 2 commands of the recipe succeeded" {
		t.Fatalf("%+v", end)
	}
}

// noStrays fails if a process with mark in its environment (an agent
// plugin of this test) is still running.
func noStrays(t *testing.T, mark string) {
	t.Helper()
	env := "TEST_MARK=" + mark
	deadline := time.Now().Add(5 * time.Second)
	for {
		var left []string
		dirs, _ := os.ReadDir("/proc")
		for _, d := range dirs {
			if _, err := strconv.Atoi(d.Name()); err != nil {
				continue
			}
			b, err := os.ReadFile("/proc/" + d.Name() + "/environ")
			if err != nil || !slices.Contains(strings.Split(string(b), "\x00"), env) {
				continue
			}
			if st, _ := os.ReadFile("/proc/" + d.Name() + "/stat"); strings.Contains(string(st), ") Z ") {
				continue
			}
			left = append(left, d.Name())
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("stray agent processes: %v", left)
		}
		time.Sleep(25 * time.Millisecond)
	}
}
