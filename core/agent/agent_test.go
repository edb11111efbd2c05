package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harnessd/harnessd/cmd/harnessd/serve"
	"github.com/harnessd/harnessd/core/agent"
	"github.com/harnessd/harnessd/core/api"
	"github.com/harnessd/harnessd/core/config"
	"github.com/harnessd/harnessd/core/daemon"
	"github.com/harnessd/harnessd/core/event"
	"github.com/harnessd/harnessd/plugins"
	pb "github.com/harnessd/harnessd/plugins/proto"
)

// testDaemon is a real `harnessd serve` in this process, on a real socket
// over a real store, whose agents are real plugin processes (this test
// binary, re-executed).
type testDaemon struct {
	t      *testing.T
	cl     *api.Client
	mark   string // in every agent's environment, to find strays
	stop   context.CancelFunc
	done   chan error
	socket string
}

// testConfig is the default config in a temp dir, sessions on the host
// (driver none) unless a test asks for sandboxes, with the agents the
// tests use.
func testConfig(t *testing.T) (config.Config, string) {
	mark := fmt.Sprintf("%s-%d", t.Name(), time.Now().UnixNano())
	return baseConfig(t.TempDir(), mark), mark
}

// baseConfig is testConfig's over dir, its plugins' processes marked with
// mark (see noStrays).
func baseConfig(dir, mark string) config.Config {
	cfg := config.Default()
	cfg.Daemon.DataDir = dir
	cfg.Daemon.Socket = filepath.Join(dir, "h.sock")
	cfg.Daemon.ShutdownGrace = config.Duration{Duration: 2 * time.Second}
	cfg.Sandbox.Driver = config.DriverNone
	cfg.Terminal.SoftTimeout = config.Duration{Duration: 5 * time.Second}
	cfg.Run.StepTimeout = config.Duration{Duration: 20 * time.Second}
	for _, mode := range []string{"test-garbage", "test-exit", "test-hang", "test-sigkill", "test-nonsense", "test-host"} {
		cfg.Agents[mode] = config.Agent{Command: []string{os.Args[0], "plugin", mode}, Env: map[string]string{"TEST_MARK": mark}}
	}
	a := cfg.Agents["scripted"]
	a.Env = map[string]string{"TEST_MARK": mark}
	cfg.Agents["scripted"] = a
	return cfg
}

func startDaemon(t *testing.T, cfg config.Config, mark string) *testDaemon {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	td := &testDaemon{t: t, mark: mark, stop: cancel, done: make(chan error, 1)}
	ready := make(chan string, 1)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	go func() {
		td.done <- serve.Run(ctx, serve.Options{Config: cfg, Logger: log, Ready: func(s string) { ready <- s }, AgentExe: os.Args[0]})
	}()
	select {
	case td.socket = <-ready:
	case err := <-td.done:
		t.Fatalf("serve: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("daemon not ready in 30s")
	}
	td.cl = api.NewClient(td.socket)
	t.Cleanup(func() {
		td.shutdown()
		noStrays(t, mark)
	})
	return td
}

func (td *testDaemon) shutdown() {
	if td.stop == nil {
		return
	}
	td.stop()
	td.stop = nil
	td.cl.Close()
	select {
	case err := <-td.done:
		if err != nil {
			td.t.Errorf("serve: %v", err)
		}
	case <-time.After(60 * time.Second):
		td.t.Fatal("daemon did not stop in 60s")
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
			cmd, _ := os.ReadFile("/proc/" + d.Name() + "/cmdline")
			left = append(left, d.Name()+" "+strings.ReplaceAll(string(cmd), "\x00", " "))
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

// script sets the scripted agent's steps.
func script(t *testing.T, cfg *config.Config, name string, steps ...string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), name+".jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(steps, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	a := cfg.Agents["scripted"]
	a.Script = path
	if name != "scripted" {
		a.Env = map[string]string{"TEST_MARK": a.Env["TEST_MARK"]}
	}
	cfg.Agents[name] = a
}

func newSession(t *testing.T, td *testDaemon) string {
	t.Helper()
	info, err := td.cl.CreateSession(context.Background(), daemon.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	return info.ID
}

// wait waits for a run to end and returns it.
func wait(t *testing.T, td *testDaemon, id string, within time.Duration) agent.Info {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		info, err := td.cl.Run(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if info.State == agent.StateEnded {
			return info
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s still %s after %s: %+v", id, info.State, within, info)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// events returns a session's events.
func events(t *testing.T, td *testDaemon, session string) []event.Event {
	t.Helper()
	var evs []event.Event
	if err := td.cl.Events(context.Background(), session, 0, false, func(ev event.Event) error {
		evs = append(evs, ev)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return evs
}

// kinds lists the kinds of evs, after the first.
func kinds(evs []event.Event) []string {
	var out []string
	for _, ev := range evs[1:] {
		out = append(out, string(ev.Kind()))
	}
	return out
}

func ofKind[T any](evs []event.Event) []T {
	var out []T
	for _, ev := range evs {
		if p, ok := agent.Unwrap(ev).(T); ok {
			out = append(out, p)
		}
	}
	return out
}

// TestScriptedRun drives the scripted agent, a real plugin process,
// through every kind of step: a CodeAct reply, a tool call, a malformed
// reply, a thought, a typed action, a message (nudged) and a finish.
func TestScriptedRun(t *testing.T) {
	cfg, mark := testConfig(t)
	script(t, &cfg, "scripted",
		`{"reply": "Let me create the file.\n`+"```bash\\necho hello > hello.txt && cat hello.txt\\n```"+`", "usage": {"prompt_tokens": 100, "completion_tokens": 20, "cost": 0.01}}`,
		`{"tool": "execute_bash", "arguments": {"command": "wc -c hello.txt"}, "thought": "checking the size"}`,
		`{"reply": "`+"```bash\\nls"+`"}`,
		`{"think": "the fence was not closed; resend"}`,
		`{"action": {"kind": "cmd_run", "command": "ls"}}`,
		`{"action": {"kind": "message", "text": "Should I also add a README?"}}`,
		`{"reply": "Done. <finish>created hello.txt</finish>", "usage": {"prompt_tokens": 50, "completion_tokens": 5, "cost": 0.005}}`,
	)
	td := startDaemon(t, cfg, mark)
	sid := newSession(t, td)
	info, err := td.cl.Session(context.Background(), sid)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(info.Workspace, "AGENTS.md"), []byte("Keep files small.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run, err := td.cl.StartRun(context.Background(), sid, agent.Request{Agent: "scripted", Task: "create hello.txt"})
	if err != nil {
		t.Fatal(err)
	}
	if run.State != agent.StateRunning || run.StartSeq != 2 || run.Limits.MaxSteps != 100 {
		t.Fatalf("%+v", run)
	}
	// One run at a time per session.
	if _, err := td.cl.StartRun(context.Background(), sid, agent.Request{Agent: "scripted", Task: "x"}); !isAPIError(err, 409, "run_active") {
		t.Fatalf("second run: %v, want 409", err)
	}
	end := wait(t, td, run.ID, 30*time.Second)
	if end.Reason != agent.ReasonFinished || end.Message != "created hello.txt" || end.Steps != 8 || end.Tokens != 175 || end.Cost < 0.0149 || end.Cost > 0.0151 {
		t.Fatalf("%+v", end)
	}
	evs := events(t, td, sid)
	want := []string{
		"run_started", "guidance_loaded",
		"agent_step", "cmd_run", "cmd_output",
		"agent_step", "cmd_run", "cmd_output",
		"agent_step", "invalid_action",
		"agent_step",
		"agent_step", "cmd_run", "cmd_output",
		"agent_step", "message", "message",
		"agent_step", "finish",
		"run_ended",
	}
	if got := kinds(evs); !slices.Equal(got, want) {
		t.Fatalf("kinds\n got %v\nwant %v", got, want)
	}
	outs := ofKind[event.CmdOutput](evs)
	if outs[0].Output != "hello\n" || !strings.HasPrefix(outs[1].Output, "6 hello.txt") {
		t.Fatalf("outputs %+v", outs)
	}
	steps := ofKind[agent.AgentStep](evs)
	if steps[0].Action != "reply" || steps[0].PromptTokens != 100 || steps[1].Thought != "checking the size" || steps[3].Action != "think" || steps[4].Action != "cmd_run" {
		t.Fatalf("steps %+v", steps)
	}
	msgs := ofKind[event.Message](evs)
	if msgs[0].Text != "Should I also add a README?" || msgs[1].Text != agent.DefaultNudge || evs[17].Source != event.SourceUser || evs[16].Source != event.SourceAgent {
		t.Fatalf("messages %+v", msgs)
	}
	if g := ofKind[agent.GuidanceLoaded](evs)[0]; !slices.Equal(g.Files, []string{"AGENTS.md"}) || g.Bytes != 18 || g.Run != run.ID {
		t.Fatalf("%+v", g)
	}
	ended := ofKind[agent.RunEnded](evs)[0]
	if ended.Run != run.ID || ended.Reason != "finished" || ended.Steps != 8 || ended.Tokens != 175 {
		t.Fatalf("%+v", ended)
	}
	// The session is still there for a person.
	if obs, err := td.cl.Act(context.Background(), sid, event.SourceUser, event.CmdRun{Command: "cat hello.txt"}); err != nil || obs.Payload.(event.CmdOutput).Output != "hello\n" {
		t.Fatalf("%+v, %v", obs, err)
	}
	// And a second run may start now.
	if _, err := td.cl.StartRun(context.Background(), sid, agent.Request{Agent: "scripted", Task: "again"}); err != nil {
		t.Fatal(err)
	}
}

func isAPIError(err error, status int, code string) bool {
	var ae *api.Error
	return errors.As(err, &ae) && ae.Status == status && ae.Code == code
}

// TestBadRequests: what the API refuses before any run starts.
func TestBadRequests(t *testing.T) {
	cfg, mark := testConfig(t)
	td := startDaemon(t, cfg, mark)
	sid := newSession(t, td)
	ctx := context.Background()
	for _, c := range []struct {
		session string
		req     agent.Request
		status  int
		code    string
	}{
		{sid, agent.Request{Agent: "nope", Task: "x"}, 400, "unknown_agent"},
		{sid, agent.Request{Agent: "scripted", Task: "  "}, 400, "bad_request"},
		{sid, agent.Request{Agent: "scripted", Task: "x", Limits: agent.Limits{MaxSteps: -1}}, 400, "bad_request"},
		{"nosuch", agent.Request{Agent: "scripted", Task: "x"}, 404, "not_found"},
	} {
		if _, err := td.cl.StartRun(ctx, c.session, c.req); !isAPIError(err, c.status, c.code) {
			t.Errorf("%+v: %v, want %d %s", c.req, err, c.status, c.code)
		}
	}
	if _, err := td.cl.Run(ctx, "rnope"); !isAPIError(err, 404, "not_found") {
		t.Errorf("%v", err)
	}
	if _, err := td.cl.StopRun(ctx, "rnope"); !isAPIError(err, 404, "not_found") {
		t.Errorf("%v", err)
	}
}

// TestLimits: max_steps and the token budget end a run.
func TestLimits(t *testing.T) {
	cfg, mark := testConfig(t)
	think := `{"think": "hmm", "usage": {"prompt_tokens": 10, "completion_tokens": 0}}`
	script(t, &cfg, "scripted", think, think, think, think, think, think)
	td := startDaemon(t, cfg, mark)
	sid := newSession(t, td)
	ctx := context.Background()
	r, err := td.cl.StartRun(ctx, sid, agent.Request{Agent: "scripted", Task: "t", Limits: agent.Limits{MaxSteps: 3}})
	if err != nil {
		t.Fatal(err)
	}
	if end := wait(t, td, r.ID, 20*time.Second); end.Reason != agent.ReasonMaxSteps || end.Steps != 3 {
		t.Fatalf("%+v", end)
	}
	r, err = td.cl.StartRun(ctx, sid, agent.Request{Agent: "scripted", Task: "t", Limits: agent.Limits{MaxTokens: 25}})
	if err != nil {
		t.Fatal(err)
	}
	if end := wait(t, td, r.ID, 20*time.Second); end.Reason != agent.ReasonMaxTokens || end.Tokens != 30 {
		t.Fatalf("%+v", end)
	}
	r, err = td.cl.StartRun(ctx, sid, agent.Request{Agent: "test-hang", Task: "t", Limits: agent.Limits{WallS: 0.5}})
	if err != nil {
		t.Fatal(err)
	}
	if end := wait(t, td, r.ID, 20*time.Second); end.Reason != agent.ReasonWallClock {
		t.Fatalf("%+v", end)
	}
}

// TestStop: a user's stop interrupts a slow step and a running command,
// records run_ended, and kills the plugin.
func TestStop(t *testing.T) {
	cfg, mark := testConfig(t)
	script(t, &cfg, "scripted",
		`{"action": {"kind": "cmd_run", "command": "sleep 30"}}`,
		`{"think": "never reached"}`,
	)
	td := startDaemon(t, cfg, mark)
	sid := newSession(t, td)
	ctx := context.Background()
	r, err := td.cl.StartRun(ctx, sid, agent.Request{Agent: "scripted", Task: "t"})
	if err != nil {
		t.Fatal(err)
	}
	// Wait for the command to be running.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if k := kinds(events(t, td, sid)); k[len(k)-1] == "cmd_run" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the command did not start")
		}
	}
	begin := time.Now()
	end, err := td.cl.StopRun(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if end.State != agent.StateEnded || end.Reason != agent.ReasonStopped || time.Since(begin) > 5*time.Second {
		t.Fatalf("%+v after %s", end, time.Since(begin))
	}
	evs := events(t, td, sid)
	if got := kinds(evs); !slices.Equal(got[len(got)-3:], []string{"cmd_run", "cmd_output", "run_ended"}) {
		t.Fatalf("kinds %v", got)
	}
	noStrays(t, mark)
	// Stopping again changes nothing.
	if again, err := td.cl.StopRun(ctx, r.ID); err != nil || again.Reason != agent.ReasonStopped {
		t.Fatalf("%+v, %v", again, err)
	}
}

// TestBrokenPlugins: a plugin killed with SIGKILL mid-step, one that
// hangs, one that prints garbage instead of the handshake, one that exits
// at once, and one that answers nonsense: each failure is an
// agent_crashed, the plugin is restarted with backoff, and after
// max_restarts the run ends with agent_failed. No process is left, and the
// session still works.
func TestBrokenPlugins(t *testing.T) {
	cfg, mark := testConfig(t)
	td := startDaemon(t, cfg, mark)
	for _, c := range []struct {
		agent, want string
	}{
		{"test-sigkill", "plugin process exited"},
		{"test-hang", "no answer within the step timeout"},
		{"test-garbage", "Unrecognized remote plugin message: Welcome to my agent!"},
		{"test-exit", "the plugin exited (exit status 3) before its handshake"},
		{"test-nonsense", "timeout_s -5"},
	} {
		t.Run(c.agent, func(t *testing.T) {
			sid := newSession(t, td)
			begin := time.Now()
			r, err := td.cl.StartRun(context.Background(), sid, agent.Request{Agent: c.agent, Task: "t",
				Limits: agent.Limits{MaxRestarts: 2, StepTimeoutS: 0.5}})
			if err != nil {
				t.Fatal(err)
			}
			end := wait(t, td, r.ID, 30*time.Second)
			if end.Reason != agent.ReasonAgentFailed || end.Restarts != 3 || !strings.Contains(end.Error, c.want) {
				t.Fatalf("%+v", end)
			}
			evs := events(t, td, sid)
			crashes := ofKind[event.AgentCrashed](evs)
			if len(crashes) != 3 || !strings.Contains(crashes[0].Reason, c.want) || !strings.Contains(crashes[0].Reason, r.ID) {
				t.Fatalf("crashes %+v", crashes)
			}
			if got := kinds(evs); got[len(got)-1] != "run_ended" {
				t.Fatalf("kinds %v", got)
			}
			t.Logf("%s: agent_failed after %s: %s", c.agent, time.Since(begin).Round(time.Millisecond), crashes[0].Reason)
			noStrays(t, mark)
			if obs, err := td.cl.Act(context.Background(), sid, event.SourceUser, event.CmdRun{Command: "echo alive"}); err != nil || obs.Payload.(event.CmdOutput).Output != "alive\n" {
				t.Fatalf("session after the run: %+v, %v", obs, err)
			}
		})
	}
}

// hostAgent runs a command with a long output at its first step, then
// pages that output back through the host, reads events and reports
// usage, and finishes with what it found.
func hostAgent(ctx context.Context, req *pb.StepRequest, h plugins.Host) (*pb.StepResponse, error) {
	var outputID string
	for _, raw := range req.GetEvents() {
		var ev struct {
			Kind    string `json:"kind"`
			Trimmed struct {
				OutputID string `json:"output_id"`
			} `json:"trimmed"`
		}
		json.Unmarshal(raw, &ev)
		if ev.Kind == "cmd_output" && ev.Trimmed.OutputID != "" {
			outputID = ev.Trimmed.OutputID
		}
	}
	if outputID == "" {
		// 13,893 bytes, more than trim.max_chars: trimmed, with an output id to page.
		return &pb.StepResponse{Action: &pb.StepResponse_CmdRun{CmdRun: &pb.CmdRun{Command: "seq 1 3000"}}}, nil
	}
	page, err := h.ReadOutput(ctx, outputID, 250, 252)
	if err != nil {
		return nil, err
	}
	_, foreign := h.ReadOutput(ctx, "o1", 1, 1) // not necessarily this session's
	evs, err := h.ReadEvents(ctx, 0, 2)
	if err != nil {
		return nil, err
	}
	u, err := h.ReportUsage(ctx, &pb.Usage{PromptTokens: 1000, CompletionTokens: 1, Cost: 0.25})
	if err != nil {
		return nil, err
	}
	msg := fmt.Sprintf("page=%q total=%d events=%d more=%v tokens=%d foreign=%v", page.GetText(), page.GetTotalLines(), len(evs.GetEvents()), evs.GetMore(), u.GetRunTokens(), foreign != nil)
	return &pb.StepResponse{Action: &pb.StepResponse_Finish{Finish: &pb.Finish{Message: msg}}}, nil
}

// TestHostServices: an agent pages back what trimming left out, reads
// events and reports usage over go-plugin's broker.
func TestHostServices(t *testing.T) {
	cfg, mark := testConfig(t)
	td := startDaemon(t, cfg, mark)
	// Another session's output, which the agent must not read.
	other := newSession(t, td)
	td.cl.Act(context.Background(), other, event.SourceUser, event.CmdRun{Command: "seq 1 1000"})
	sid := newSession(t, td)
	r, err := td.cl.StartRun(context.Background(), sid, agent.Request{Agent: "test-host", Task: "t"})
	if err != nil {
		t.Fatal(err)
	}
	end := wait(t, td, r.ID, 30*time.Second)
	want := `page="250\n251\n252\n" total=3000 events=2 more=true tokens=1001 foreign=true`
	if end.Reason != agent.ReasonFinished || end.Message != want || end.Tokens != 1001 || end.Cost != 0.25 {
		t.Fatalf("%+v\nwant message %s", end, want)
	}
}

// TestDelegate: an agent hands a subtask to another; the sub-run runs in
// the same session, inside the delegate's turn, and its finish message
// answers the delegate action.
func TestDelegate(t *testing.T) {
	cfg, mark := testConfig(t)
	script(t, &cfg, "helper",
		`{"action": {"kind": "cmd_run", "command": "echo from-the-helper > helper.txt"}, "usage": {"prompt_tokens": 7, "completion_tokens": 3}}`,
		`{"reply": "<finish>wrote helper.txt</finish>"}`,
	)
	script(t, &cfg, "scripted",
		`{"action": {"kind": "delegate", "agent": "helper", "task": "write helper.txt"}}`,
		`{"action": {"kind": "delegate", "agent": "nobody", "task": "x"}}`,
		`{"action": {"kind": "cmd_run", "command": "cat helper.txt"}}`,
		`{"reply": "<finish>the helper did it</finish>"}`,
	)
	td := startDaemon(t, cfg, mark)
	sid := newSession(t, td)
	r, err := td.cl.StartRun(context.Background(), sid, agent.Request{Agent: "scripted", Task: "get help"})
	if err != nil {
		t.Fatal(err)
	}
	end := wait(t, td, r.ID, 30*time.Second)
	if end.Reason != agent.ReasonFinished || end.Tokens != 10 {
		t.Fatalf("%+v", end)
	}
	evs := events(t, td, sid)
	want := []string{
		"run_started",
		"agent_step", "delegate",
		"run_started", "agent_step", "cmd_run", "cmd_output", "agent_step", "finish", "run_ended",
		"delegate_result",
		"agent_step", "delegate", "delegate_result",
		"agent_step", "cmd_run", "cmd_output",
		"agent_step", "finish", "run_ended",
	}
	if got := kinds(evs); !slices.Equal(got, want) {
		t.Fatalf("kinds\n got %v\nwant %v", got, want)
	}
	starts := ofKind[agent.RunStarted](evs)
	results := ofKind[agent.DelegateResult](evs)
	if starts[1].Parent != r.ID || starts[1].Agent != "helper" || results[0].Run != starts[1].Run ||
		results[0].Message != "wrote helper.txt" || results[0].Reason != "finished" || results[0].Tokens != 10 {
		t.Fatalf("starts %+v results %+v", starts, results)
	}
	if results[1].Reason != "refused" || !strings.Contains(results[1].Error, "unknown agent") {
		t.Fatalf("%+v", results[1])
	}
	delegate := evs[slices.IndexFunc(evs, func(e event.Event) bool { return e.Kind() == event.KindDelegate })]
	for _, ev := range evs {
		if ev.Kind() == agent.KindDelegateResult && ev.Cause == 0 {
			t.Fatalf("delegate_result answers no action: %+v", ev)
		}
	}
	if evs[11].Cause != delegate.Seq {
		t.Fatalf("delegate_result answers %d, want %d", evs[11].Cause, delegate.Seq)
	}
	if out := ofKind[event.CmdOutput](evs)[1]; out.Output != "from-the-helper\n" {
		t.Fatalf("%+v", out)
	}
}

// TestSessionDeleted: deleting the session ends its run.
func TestSessionDeleted(t *testing.T) {
	cfg, mark := testConfig(t)
	td := startDaemon(t, cfg, mark)
	sid := newSession(t, td)
	r, err := td.cl.StartRun(context.Background(), sid, agent.Request{Agent: "test-hang", Task: "t"})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if err := td.cl.DeleteSession(context.Background(), sid, false); err != nil {
		t.Fatal(err)
	}
	if end := wait(t, td, r.ID, 10*time.Second); end.Reason != agent.ReasonSessionEnded {
		t.Fatalf("%+v", end)
	}
	noStrays(t, mark)
}

// TestShutdown: a daemon that stops ends its runs first (run_ended with
// reason shutdown) and kills their plugins.
func TestShutdown(t *testing.T) {
	cfg, mark := testConfig(t)
	cfg.Daemon.ShutdownGrace = config.Duration{Duration: 300 * time.Millisecond}
	td := startDaemon(t, cfg, mark)
	sid := newSession(t, td)
	if _, err := td.cl.StartRun(context.Background(), sid, agent.Request{Agent: "test-hang", Task: "t"}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	td.shutdown()
	noStrays(t, mark)
	_ = syscall.Getpid
}

// TestRunSettledWhenEndedSeen: a client that sees run_ended on the event
// stream and asks for the run at once gets the ended run (its reason and
// run_ended's seq), not the running one: the demo's CI run asked in the
// moment between the event's commit and the run's Info (it read no
// reason, and waited for no later event). The moment is widened to 50 ms
// here (agent.SetSettleDelay).
func TestRunSettledWhenEndedSeen(t *testing.T) {
	agent.SetSettleDelay(t, 50*time.Millisecond)
	cfg, mark := testConfig(t)
	script(t, &cfg, "scripted", `{"reply": "<finish>done</finish>"}`)
	td := startDaemon(t, cfg, mark)
	sid := newSession(t, td)
	stop := errors.New("seen")
	for i := range 3 {
		run, err := td.cl.StartRun(context.Background(), sid, agent.Request{Agent: "scripted", Task: "finish"})
		if err != nil {
			t.Fatal(err)
		}
		var got agent.Info
		var seq uint64
		err = td.cl.Events(context.Background(), sid, run.StartSeq, true, func(ev event.Event) error {
			if e, ok := ev.Payload.(agent.RunEnded); ok && e.Run == run.ID {
				seq = ev.Seq
				var err error
				if got, err = td.cl.Run(context.Background(), run.ID); err != nil {
					return err
				}
				return stop
			}
			return nil
		})
		if !errors.Is(err, stop) {
			t.Fatal(err)
		}
		if got.State != agent.StateEnded || got.Reason != agent.ReasonFinished || got.EndSeq != seq {
			t.Fatalf("run %d: asked as run_ended (seq %d) arrived: %+v", i, seq, got)
		}
	}
}
