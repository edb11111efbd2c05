package agent_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/harnessd/harnessd/cmd/harnessd/serve"
	"github.com/harnessd/harnessd/core/agent"
	"github.com/harnessd/harnessd/core/api"
	"github.com/harnessd/harnessd/core/config"
	"github.com/harnessd/harnessd/core/daemon"
	"github.com/harnessd/harnessd/core/event"
)

// serveHelperEnv names the data directory of a `harnessd serve` the test
// binary runs as a subprocess, to be killed with SIGKILL.
const serveHelperEnv = "AGENT_TEST_SERVE"

// waitingScript is a run that starts a long command and would then only
// think: it is still going when its daemon stops.
var waitingScript = []string{
	`{"think": "first, wait", "usage": {"prompt_tokens": 7, "completion_tokens": 3, "cost": 0.5}}`,
	`{"action": {"kind": "cmd_run", "command": "sleep 60", "timeout_s": 120}, "usage": {"prompt_tokens": 10, "completion_tokens": 5, "cost": 1}}`,
	`{"think": "never reached"}`,
}

// durableConfig is testConfig over dir (so a second daemon can open the
// same store), with the native sandbox (its init dies with a killed
// daemon) and the waiting script.
func durableConfig(dir, mark string) config.Config {
	cfg := baseConfig(dir, mark)
	cfg.Daemon.ShutdownGrace = config.Duration{Duration: 300 * time.Millisecond}
	cfg.Sandbox.Driver = config.DriverNative
	cfg.Sandbox.PoolSize = 0
	cfg.Hooks.Builtin = false
	path := filepath.Join(dir, "waiting.jsonl")
	a := cfg.Agents["scripted"]
	a.Script = path
	cfg.Agents["scripted"] = a
	return cfg
}

// serveHelper is `harnessd serve` over dir until SIGTERM (or SIGKILL).
func serveHelper(dir string) int {
	cfg := durableConfig(dir, os.Getenv("TEST_MARK"))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	err := serve.Run(ctx, serve.Options{Config: cfg, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), AgentExe: os.Args[0]})
	if err != nil {
		return 1
	}
	return 0
}

// startWaitingRun starts the waiting script in a new session and returns
// once its command runs.
func startWaitingRun(t *testing.T, cl *api.Client) (session string, run agent.Info) {
	t.Helper()
	ctx := context.Background()
	s, err := cl.CreateSession(ctx, daemon.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := cl.StartRun(ctx, s.ID, agent.Request{Agent: "scripted", Task: "wait"})
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var last event.Kind
		cl.Events(ctx, s.ID, 0, false, func(ev event.Event) error { last = ev.Kind(); return nil })
		if last == event.KindCmdRun {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the command did not start")
		}
	}
	return s.ID, r
}

// checkEnded checks, on a daemon started after the one that drove the run
// ended, that the run is known with reason and its usage up to the long
// command, that its run_ended is in the session's events before
// sandbox_stopped, and that the session lists it.
func checkEnded(t *testing.T, td *testDaemon, sid string, r agent.Info, reason string) {
	t.Helper()
	ctx := context.Background()
	got, err := td.cl.Run(ctx, r.ID)
	if err != nil {
		t.Fatalf("GET /v1/runs/%s after the restart: %v", r.ID, err)
	}
	if got.State != agent.StateEnded || got.Reason != reason || got.Session != sid || got.Agent != "scripted" || got.Task != "wait" ||
		got.Steps != 2 || got.Tokens != 25 || got.Cost != 1.5 || got.StartSeq != r.StartSeq || got.EndSeq == 0 ||
		got.Limits.MaxSteps != r.Limits.MaxSteps || got.Ended.IsZero() || !got.Started.Equal(r.Started) {
		t.Errorf("run after the restart: %+v\nstarted as %+v", got, r)
	}
	evs := events(t, td, sid)
	k := kinds(evs)
	if !slices.Equal(k[len(k)-2:], []string{"run_ended", "sandbox_stopped"}) {
		t.Errorf("the session's last events: %v", k)
	}
	ends := ofKind[agent.RunEnded](evs)
	if len(ends) != 1 || ends[0].Run != r.ID || ends[0].Reason != reason || ends[0].Steps != 2 || ends[0].Tokens != 25 {
		t.Errorf("run_ended: %+v", ends)
	}
	if evs[len(evs)-2].Seq != got.EndSeq {
		t.Errorf("end_seq %d, run_ended is seq %d", got.EndSeq, evs[len(evs)-2].Seq)
	}
	list, err := td.cl.SessionRuns(ctx, sid)
	if err != nil || len(list) != 1 || list[0].ID != r.ID || list[0].Reason != reason {
		t.Errorf("GET /v1/sessions/%s/runs: %+v %v", sid, list, err)
	}
	if _, err := td.cl.Run(ctx, "rnothere"); !isAPIError(err, 404, "not_found") {
		t.Errorf("an unknown run: %v", err)
	}
}

// TestRunsAfterShutdown: a run going when the daemon stops (SIGTERM) ends
// with reason shutdown, and the next daemon on the same store still knows
// it.
func TestRunsAfterShutdown(t *testing.T) {
	dir := t.TempDir()
	_, mark := testConfig(t)
	cfg := durableConfig(dir, mark)
	os.WriteFile(cfg.Agents["scripted"].Script, []byte(waitingScript[0]+"\n"+waitingScript[1]+"\n"+waitingScript[2]+"\n"), 0o644)
	td := startDaemon(t, cfg, mark)
	sid, r := startWaitingRun(t, td.cl)
	td.shutdown()
	noStrays(t, mark)

	td2 := startDaemon(t, cfg, mark)
	checkEnded(t, td2, sid, r, agent.ReasonShutdown)
}

// TestRunsAfterCrash: a run going when the daemon is killed (SIGKILL)
// gets, from the next daemon on the same store, a run_ended with reason
// daemon_stopped before its session's sandbox_stopped, and its record
// still answers GET /v1/runs/{id}.
func TestRunsAfterCrash(t *testing.T) {
	dir := t.TempDir()
	_, mark := testConfig(t)
	cfg := durableConfig(dir, mark)
	os.WriteFile(cfg.Agents["scripted"].Script, []byte(waitingScript[0]+"\n"+waitingScript[1]+"\n"+waitingScript[2]+"\n"), 0o644)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), serveHelperEnv+"="+dir, "TEST_MARK="+mark)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	cl := api.NewClient(cfg.Daemon.Socket)
	defer cl.Close()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, err := cl.Health(context.Background()); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the daemon did not answer in 30s")
		}
	}
	sid, r := startWaitingRun(t, cl)
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	// The plugin notices its parent is gone and exits.
	noStrays(t, mark)

	td := startDaemon(t, cfg, mark)
	checkEnded(t, td, sid, r, agent.ReasonDaemonStopped)
}
