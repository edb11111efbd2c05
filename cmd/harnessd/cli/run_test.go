package cli_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harnessd/harnessd/cmd/harnessd/cli"
	"github.com/harnessd/harnessd/cmd/harnessd/serve"
	"github.com/harnessd/harnessd/core/config"
	"github.com/harnessd/harnessd/core/sandbox"
	"github.com/harnessd/harnessd/plugins/builtin"
)

// TestMain makes the test binary the sandbox init and the built-in agents,
// as harnessd is.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == sandbox.InitCommand {
		sandbox.InitMain()
	}
	if len(os.Args) > 2 && os.Args[1] == builtin.Command {
		os.Exit(builtin.Main(os.Args[2:]))
	}
	os.Exit(m.Run())
}

// daemon starts `harnessd serve` in this process with the scripted agent
// replaying steps, and returns its socket.
func daemon(t *testing.T, steps ...string) string {
	t.Helper()
	return daemonWith(t, map[string][]string{"scripted": steps})
}

// daemonWith starts a daemon with one scripted agent per script.
func daemonWith(t *testing.T, scripts map[string][]string) string {
	t.Helper()
	dir := t.TempDir()
	cfg := config.Default()
	cfg.Daemon.DataDir = dir
	cfg.Daemon.Socket = filepath.Join(dir, "h.sock")
	cfg.Daemon.ShutdownGrace = config.Duration{Duration: time.Second}
	cfg.Sandbox.Driver = config.DriverNone
	cfg.Run.Agent = "scripted"
	for name, steps := range scripts {
		script := filepath.Join(dir, name+".jsonl")
		os.WriteFile(script, []byte(strings.Join(steps, "\n")+"\n"), 0o644)
		a := cfg.Agents["scripted"]
		a.Script = script
		cfg.Agents[name] = a
	}
	ctx, stop := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- serve.Run(ctx, serve.Options{Config: cfg, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			Ready: func(s string) { ready <- s }, AgentExe: os.Args[0]})
	}()
	t.Cleanup(func() { stop(); <-done })
	select {
	case s := <-ready:
		return s
	case err := <-done:
		t.Fatal(err)
	}
	return ""
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func runCLI(ctx context.Context, socket string, args ...string) (string, string, int) {
	var out, errw syncBuf
	code := cli.Main(ctx, append(args, "--socket", socket), cli.Env{Stdout: &out, Stderr: &errw, Getenv: func(string) string { return "" }})
	return out.String(), errw.String(), code
}

// TestRun: `harnessd run "task"` makes a session, prints the run as it
// goes, and exits 0 when the agent finished.
func TestRun(t *testing.T) {
	socket := daemon(t,
		`{"reply": "`+"```bash\\necho hi from the agent > out.txt && cat out.txt\\n```"+`", "thought": "write it", "usage": {"prompt_tokens": 10, "completion_tokens": 5, "cost": 0.002}}`,
		`{"reply": "<finish>wrote out.txt</finish>"}`,
	)
	ws := t.TempDir()
	out, errOut, code := runCLI(context.Background(), socket, "run", "--workspace", ws, "write out.txt")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{
		"▶ run r", "task: write out.txt",
		"[1] 💭 write it",
		"[1] $ echo hi from the agent > out.txt && cat out.txt",
		"    │ hi from the agent\n    └ exit 0 · " + ws,
		"[2] ✔ finish: wrote out.txt",
		"ended: finished · 2 steps · 15 tokens · $0.0020",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if b, err := os.ReadFile(filepath.Join(ws, "out.txt")); err != nil || string(b) != "hi from the agent\n" {
		t.Errorf("out.txt: %q %v", b, err)
	}
	t.Logf("harnessd run:\n%s", out)
	if !strings.Contains(errOut, "[harnessd] session s") {
		t.Errorf("stderr: %s", errOut)
	}
}

// TestRunStopped: Ctrl-C stops the run cleanly (run_ended recorded, the
// plugin killed) and the exit status says so; a run that ends without
// finishing exits 1.
func TestRunStopped(t *testing.T) {
	socket := daemon(t, `{"think": "slow", "sleep_ms": 60000}`)
	ctx, ctrlC := context.WithCancel(context.Background())
	time.AfterFunc(700*time.Millisecond, ctrlC)
	begin := time.Now()
	out, errOut, code := runCLI(ctx, socket, "run", "slow task")
	if code != cli.ExitRunStopped || !strings.Contains(out, "ended: stopped") || !strings.Contains(errOut, "stopping the run (Ctrl-C)") {
		t.Fatalf("exit %d after %s\n%s%s", code, time.Since(begin), out, errOut)
	}
	if took := time.Since(begin); took > 10*time.Second {
		t.Errorf("stopping took %s", took)
	}
	out, errOut, code = runCLI(context.Background(), socket, "run", "--wall", "500ms", "x")
	if code != 1 || !strings.Contains(out, "ended: wall_clock") {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	if _, errOut, code := runCLI(context.Background(), socket, "run", "--agent", "nope", "x"); code != 1 || !strings.Contains(errOut, "unknown agent") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}

// TestReplayDelegation: a session where an agent delegated reads back as a
// whole history, the sub-run's events between the delegate and its answer.
func TestReplayDelegation(t *testing.T) {
	socket := daemonWith(t, map[string][]string{
		"scripted": {`{"action": {"kind": "delegate", "agent": "helper", "task": "say hi"}}`, `{"reply": "<finish>done</finish>"}`},
		"helper":   {`{"action": {"kind": "cmd_run", "command": "echo hi"}}`, `{"reply": "<finish>said hi</finish>"}`},
	})
	out, errOut, code := runCLI(context.Background(), socket, "run", "--json", "delegate")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	var session string
	for _, l := range strings.Split(out, "\n") {
		if i := strings.Index(l, `"session":"`); i >= 0 {
			session = strings.SplitN(l[i+11:], `"`, 2)[0]
			break
		}
	}
	out, errOut, code = runCLI(context.Background(), socket, "replay", session)
	if code != 0 || !strings.Contains(out, "# delegating to helper: say hi") || !strings.Contains(out, "# delegated run r") || !strings.Contains(errOut, "no gaps") {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	out, _, _ = runCLI(context.Background(), socket, "events", session)
	if !strings.Contains(out, "run_ended") || !strings.Contains(out, "finished, 2 steps") {
		t.Fatalf("%s", out)
	}
}
