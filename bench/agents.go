package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	plugin "github.com/hashicorp/go-plugin"

	"github.com/harnessd/harnessd/cmd/harnessd/serve"
	"github.com/harnessd/harnessd/core/agent"
	"github.com/harnessd/harnessd/core/api"
	"github.com/harnessd/harnessd/core/config"
	"github.com/harnessd/harnessd/core/daemon"
	"github.com/harnessd/harnessd/core/event"
	"github.com/harnessd/harnessd/plugins"
	"github.com/harnessd/harnessd/plugins/builtin"
	pb "github.com/harnessd/harnessd/plugins/proto"
)

// benchAgent is the agent of the plugin boundary's figures: it answers
// every step at once with an empty command, so what is timed is the
// boundary itself.
const benchAgent = "bench-empty"

type emptyAgent struct{}

func (emptyAgent) Info(context.Context) (*pb.InfoResponse, error) {
	return &pb.InfoResponse{Name: benchAgent, Version: "1"}, nil
}

func (emptyAgent) Step(context.Context, *pb.StepRequest, plugins.Host) (*pb.StepResponse, error) {
	return &pb.StepResponse{Action: &pb.StepResponse_CmdRun{CmdRun: &pb.CmdRun{}}}, nil
}

// pluginChild serves the bench's agents when this binary is re-executed
// as one: `bench plugin bench-empty`, or a built-in agent for the run
// figures.
func pluginChild() (int, bool) {
	if len(os.Args) < 3 || os.Args[1] != builtin.Command {
		return 0, false
	}
	if os.Args[2] == benchAgent {
		plugins.Serve(emptyAgent{}, nil)
		return 0, true
	}
	return builtin.Main(os.Args[2:]), true
}

// agents measures the plugin boundary: a Step round trip through
// go-plugin beside the same call in process and beside `true` through a
// warm terminal; a plugin's start; and a 100-step scripted run end to end.
func (b *bench) agents(ctx context.Context, s *Section) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	n, starts, runSteps := b.opts.n, 50, 100
	if b.opts.quick {
		starts, runSteps = 10, 20
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	req := &pb.StepRequest{Session: "s", Run: "r", Task: "bench", Events: [][]byte{[]byte(`{"v":1,"session":"s","seq":1,"kind":"sandbox_started","driver":"none"}`)}}

	// Start, then Step, through go-plugin.
	var startT []time.Duration
	var proc *plugins.Process
	for i := range starts {
		begin := time.Now()
		p, err := plugins.Start(ctx, plugins.Config{Command: []string{exe, builtin.Command, benchAgent}, Env: plugins.BaseEnv, Logger: quiet})
		if err != nil {
			return fmt.Errorf("start the plugin: %w", err)
		}
		startT = append(startT, time.Since(begin))
		if i == starts-1 {
			proc = p
		} else {
			p.Kill()
		}
	}
	defer proc.Kill()
	step := func(ctx context.Context) error {
		_, err := proc.Step(ctx, req)
		return err
	}
	for range warmUp {
		if err := step(ctx); err != nil {
			return err
		}
	}
	rpc, err := timeN(ctx, n, step)
	if err != nil {
		return err
	}
	local := emptyAgent{}
	inproc, err := timeN(ctx, n, func(ctx context.Context) error {
		_, err := local.Step(ctx, req, plugins.NoHost{})
		return err
	})
	if err != nil {
		return err
	}
	warm, err := b.warmLatency(ctx)
	if err != nil {
		return err
	}
	st := summarize(startT)

	// Where a start's time goes, each kind timed in turn in the same loop
	// so that load moves them together: plugins.Start (P-256 keys, the
	// plugin's made by the host); the same start through go-plugin with
	// AutoMTLS, as plugins.Start did before (a P-521 key made on each
	// side); the same without TLS; and the exec alone (the binary run
	// without the magic cookie: runtime and package init, then exit).
	var mtlsT, plainT, execT, againT []time.Duration
	goPlugin := func(auto bool) (time.Duration, error) {
		cmd := exec.Command(exe, builtin.Command, benchAgent)
		cmd.Env = plugins.BaseEnv
		c := plugin.NewClient(&plugin.ClientConfig{HandshakeConfig: plugins.Handshake, Plugins: plugin.PluginSet{plugins.PluginName: &plugins.GRPCPlugin{}},
			Cmd: cmd, AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC}, SkipHostEnv: true, AutoMTLS: auto, Logger: hclog.NewNullLogger()})
		defer c.Kill()
		begin := time.Now()
		rpcc, err := c.Client()
		if err != nil {
			return 0, err
		}
		if _, err := rpcc.Dispense(plugins.PluginName); err != nil {
			return 0, err
		}
		gc, ok := rpcc.(*plugin.GRPCClient)
		if !ok {
			return 0, fmt.Errorf("go-plugin client %T", rpcc)
		}
		if _, err := pb.NewAgentClient(gc.Conn).Info(ctx, &pb.InfoRequest{}); err != nil {
			return 0, err
		}
		return time.Since(begin), nil
	}
	for range starts {
		d, err := goPlugin(true)
		if err != nil {
			return fmt.Errorf("start with AutoMTLS: %w", err)
		}
		mtlsT = append(mtlsT, d)
		if d, err = goPlugin(false); err != nil {
			return fmt.Errorf("start without TLS: %w", err)
		}
		plainT = append(plainT, d)
		cmd := exec.Command(exe, builtin.Command, benchAgent)
		cmd.Env = plugins.BaseEnv
		begin := time.Now()
		_ = cmd.Run() // exits 1: no magic cookie
		execT = append(execT, time.Since(begin))
		begin = time.Now()
		p, err := plugins.Start(ctx, plugins.Config{Command: []string{exe, builtin.Command, benchAgent}, Env: plugins.BaseEnv, Logger: quiet})
		if err != nil {
			return fmt.Errorf("start the plugin: %w", err)
		}
		againT = append(againT, time.Since(begin))
		p.Kill()
	}
	mtls, plain, execOnly := summarize(mtlsT), summarize(plainT), summarize(execT)
	// plugins.Start's figure: the first loop's starts and these, which
	// ran beside the baselines.
	st = summarize(append(startT, againT...))

	// A scripted run end to end, through an in-process daemon.
	run, err := b.scriptedRun(ctx, runSteps)
	if err != nil {
		return err
	}
	run.plugin = time.Duration(run.steps) * rpc.p50

	s.Notes = append(s.Notes,
		fmt.Sprintf("step: plugins.Process.Step to a Go plugin (this binary re-executed, go-plugin over gRPC on a unix socket with mutual TLS) answering an empty cmd_run, with one event in the request; %d timed after %d untimed. In process: the same agent's Step called directly.", rpc.n, warmUp),
		fmt.Sprintf("start: plugins.Start (exec, go-plugin's handshake with mutual TLS on P-256 certificates the host makes for both sides, Info), %d times; beside it, in the same loop, the same start through go-plugin with AutoMTLS (what plugins.Start did before: a P-521 certificate made on each side), without TLS, and the exec alone (the binary run without the magic cookie: runtime and package init, then exit).", st.n),
		fmt.Sprintf("run: %d steps of the scripted agent (a plugin process), each `true` in the session's shell (driver none, strict durability: each step commits agent_step, cmd_run and cmd_output), through POST /v1/sessions/{id}/runs. The command is cmd_run to cmd_output; the agent is the Step round trip above; the harness's share is what is left of the wall time.", run.steps),
	)
	s.Rows = append(s.Rows,
		Row{
			Name: "Step through go-plugin p50", Figure: dur(rpc.p50),
			Baseline: labelled("in process", dur(inproc.p50)),
			Ratio:    ratio(rpc.p50.Seconds(), inproc.p50.Seconds()), RatioOf: "plugin/in-process",
			Target: "< 300 µs", Status: passIf(rpc.p50 < 300*time.Microsecond),
		},
		Row{
			Name: "Step through go-plugin p99", Figure: dur(rpc.p99),
			Baseline: labelled("in process", dur(inproc.p99)),
			Ratio:    ratio(rpc.p99.Seconds(), inproc.p99.Seconds()), RatioOf: "plugin/in-process",
		},
		Row{
			Name: "Step vs `true` in a warm terminal p50", Figure: dur(rpc.p50),
			Baseline: labelled("warm terminal", dur(warm.p50)),
			Ratio:    ratio(rpc.p50.Seconds(), warm.p50.Seconds()), RatioOf: "step/true",
		},
		Row{
			Name: "plugin start p50", Figure: dur(st.p50),
			Baseline: labelled("AutoMTLS (before)", dur(mtls.p50)),
			Ratio:    ratio(st.p50.Seconds(), mtls.p50.Seconds()), RatioOf: "now/before",
			Target: "< 50 ms", Status: passIf(st.p50 < 50*time.Millisecond),
		},
		Row{
			Name: "plugin start p99", Figure: dur(st.p99),
			Baseline: labelled("AutoMTLS (before)", dur(mtls.p99)),
			Ratio:    ratio(st.p99.Seconds(), mtls.p99.Seconds()), RatioOf: "now/before",
		},
		Row{
			Name: "plugin start vs no TLS p50", Figure: dur(st.p50),
			Baseline: labelled("without TLS", dur(plain.p50)),
			Ratio:    ratio(st.p50.Seconds(), plain.p50.Seconds()), RatioOf: "mtls/plain",
		},
		Row{
			Name: "plugin start vs exec alone p50", Figure: dur(st.p50),
			Baseline: labelled("exec alone", dur(execOnly.p50)),
			Ratio:    ratio(st.p50.Seconds(), execOnly.p50.Seconds()), RatioOf: "start/exec",
		},
		Row{
			Name: fmt.Sprintf("%d-step scripted run, per step", run.steps), Figure: dur(run.wall / time.Duration(run.steps)),
			Baseline: labelled("command", dur(run.commands/time.Duration(run.steps))),
			Ratio:    ratio(run.wall.Seconds(), run.commands.Seconds()), RatioOf: "step/command",
		},
		Row{
			Name: "harness's share of a scripted run", Figure: Measure{Value: run.share(), Unit: unitFraction},
			Baseline: labelled("agent", Measure{Value: float64(run.plugin) / float64(run.wall), Unit: unitFraction}),
			Ratio:    ratio(run.share(), float64(run.plugin)/float64(run.wall)), RatioOf: "harness/agent",
		},
	)
	return nil
}

// timeN times n calls of fn.
func timeN(ctx context.Context, n int, fn func(context.Context) error) (latencies, error) {
	d := make([]time.Duration, 0, n)
	for range n {
		begin := time.Now()
		if err := fn(ctx); err != nil {
			return latencies{}, err
		}
		d = append(d, time.Since(begin))
	}
	return summarize(d), nil
}

// runFigures is what a scripted run took.
type runFigures struct {
	steps    int
	wall     time.Duration // run_started to run_ended
	commands time.Duration // cmd_run to cmd_output, summed
	plugin   time.Duration // the agent's time: steps × a Step round trip
}

func (r runFigures) share() float64 {
	if r.wall <= 0 {
		return 0
	}
	return float64(r.wall-r.commands-r.plugin) / float64(r.wall)
}

// scriptedRun runs the scripted agent through steps `true` commands and a
// finish in a daemon of its own.
func (b *bench) scriptedRun(ctx context.Context, steps int) (runFigures, error) {
	dir, err := os.MkdirTemp(b.tmp, "run-")
	if err != nil {
		return runFigures{}, err
	}
	script := filepath.Join(dir, "script.jsonl")
	lines := strings.Repeat(`{"action": {"kind": "cmd_run", "command": "true"}}`+"\n", steps-1) + `{"action": {"kind": "finish", "message": "done"}}` + "\n"
	if err := os.WriteFile(script, []byte(lines), 0o644); err != nil {
		return runFigures{}, err
	}
	exe, err := os.Executable()
	if err != nil {
		return runFigures{}, err
	}
	cfg := config.Default()
	cfg.Daemon.DataDir = dir
	cfg.Daemon.Socket = filepath.Join(dir, "h.sock")
	cfg.Sandbox.Driver = config.DriverNone
	a := cfg.Agents[config.BuiltinScripted]
	a.Script = script
	cfg.Agents[config.BuiltinScripted] = a
	dctx, stop := context.WithCancel(ctx)
	defer stop()
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- serve.Run(dctx, serve.Options{Config: cfg, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			Ready: func(s string) { ready <- s }, AgentExe: exe})
	}()
	defer func() { stop(); <-done }()
	var socket string
	select {
	case socket = <-ready:
	case err := <-done:
		return runFigures{}, err
	}
	cl := api.NewClient(socket)
	defer cl.Close()
	sess, err := cl.CreateSession(ctx, daemon.CreateRequest{})
	if err != nil {
		return runFigures{}, err
	}
	run, err := cl.StartRun(ctx, sess.ID, agent.Request{Agent: config.BuiltinScripted, Task: "bench", Limits: agent.Limits{MaxSteps: steps + 1}})
	if err != nil {
		return runFigures{}, err
	}
	var f runFigures
	var begin, end, ran time.Time
	follow, cancel := context.WithCancel(ctx)
	defer cancel()
	err = cl.Events(follow, sess.ID, 0, true, func(ev event.Event) error {
		switch v := agent.Unwrap(ev).(type) {
		case agent.RunStarted:
			begin = ev.Time
		case agent.AgentStep:
			f.steps++
		case event.CmdRun:
			ran = ev.Time
		case event.CmdOutput:
			f.commands += ev.Time.Sub(ran)
		case agent.RunEnded:
			end = ev.Time
			if v.Reason != agent.ReasonFinished {
				return fmt.Errorf("the run ended with %s: %s", v.Reason, v.Error)
			}
			cancel()
		}
		return nil
	})
	if err != nil && follow.Err() == nil {
		return runFigures{}, err
	}
	if end.IsZero() {
		return runFigures{}, fmt.Errorf("run %s did not end", run.ID)
	}
	f.wall = end.Sub(begin)
	return f, nil
}
