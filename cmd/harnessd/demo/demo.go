// Package demo is harnessd's scripted walkthrough, run the way a real
// client runs: it starts a daemon on a temporary socket, creates a session
// over the API, sends a canned agent's replies through the daemon's parser
// into the session's shell, and prints every event from the API's event
// stream as it arrives. Each act checks what it shows, so the demo fails
// loudly if a pillar breaks. At the end the daemon is shut down as SIGTERM
// would, and the store is reopened to check that its history matches the
// live stream byte for byte.
package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/harnessd/harnessd/cmd/harnessd/serve"
	"github.com/harnessd/harnessd/core/agent"
	"github.com/harnessd/harnessd/core/api"
	"github.com/harnessd/harnessd/core/config"
	"github.com/harnessd/harnessd/core/daemon"
	"github.com/harnessd/harnessd/core/event"
	"github.com/harnessd/harnessd/core/files"
	"github.com/harnessd/harnessd/core/python"
	"github.com/harnessd/harnessd/store"
)

// Options configures a demo run. The zero value is the README's demo.
type Options struct {
	// Dir is where the demo keeps its socket, store and workspace; default
	// a new temporary directory, kept so the store can be inspected
	// afterwards.
	Dir string
	// Config supplies the daemon's settings; the zero value means
	// config.Default(). Its socket, data directory and store path are
	// replaced by ones in Dir, and its scripted agent's script by the
	// demo's.
	Config *config.Config
	// AgentExe is the binary serving the built-in agents; default the
	// running one (harnessd itself).
	AgentExe string
	// Logger receives the daemon's log; default: discarded, so the
	// transcript stays readable.
	Logger *slog.Logger
}

// act is one step of the script: what the model says and what must be true
// of the outcome.
type act struct {
	title   string
	replies []daemon.Reply               // model replies, in order (a malformed one, then its fix)
	want    string                       // what the act shows, printed when it holds
	ok      func(o event.CmdOutput) bool // whether it holds, for a command
	// okFile and okPython are ok for an act whose reply is a file edit
	// or a Python cell.
	okFile   func(r files.Result) bool
	okPython func(r python.Result) bool
	// vetoed, if set, must hold of a hook_veto the act's replies got.
	vetoed func(v event.HookVeto) bool
}

func text(s string) daemon.Reply { return daemon.Reply{Text: s} }

// Run plays the script and writes a readable transcript to w: every event
// as the daemon's event stream delivers it, after the store has committed
// it.
func Run(ctx context.Context, w io.Writer, opts Options) error {
	dir := opts.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "harnessd-demo-")
		if err != nil {
			return err
		}
		dir = d
	}
	cfg := config.Default()
	if opts.Config != nil {
		cfg = *opts.Config
	}
	cfg.Daemon.Socket = filepath.Join(dir, "harnessd.sock")
	cfg.Daemon.DataDir = dir
	cfg.Store.Path = filepath.Join(dir, "harnessd.db")
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}

	// The script: what a model would say, act by act. The scripted agent
	// replays it from a real plugin process, and every reply goes through
	// the daemon's parser and pipeline, as a model's would.
	var ws string // the session's workspace, once it exists
	cwd := func(o event.CmdOutput) string { return o.Cwd }
	var pid int // the shell's, from the first observation
	var shellPID string

	acts := []act{
		{
			title:   "Act 1 · create a workspace and export a variable",
			replies: []daemon.Reply{text("I'll set things up.\n```bash\nmkdir -p project && cd project && export PROJECT_ENV=harnessd && echo READY\n```")},
			want:    "exit 0, cwd <workspace>/project, output READY",
			ok: func(o event.CmdOutput) bool {
				pid = o.PID
				return o.ExitCode == 0 && strings.HasSuffix(cwd(o), "/project") && o.Output == "READY\n"
			},
		},
		{
			title:   "Act 2 · the next command sees the same directory and variable",
			replies: []daemon.Reply{text("```bash\npwd && echo \"PROJECT_ENV=$PROJECT_ENV\" && echo \"shell=$$\"\n```")},
			want:    "cwd and PROJECT_ENV inherited by the same shell",
			ok: func(o event.CmdOutput) bool {
				lines := strings.Split(o.Output, "\n")
				if len(lines) < 3 {
					return false
				}
				shellPID = lines[2]
				return strings.HasSuffix(lines[0], "/project") && lines[1] == "PROJECT_ENV=harnessd" && o.PID == pid
			},
		},
		{
			title:   "Act 3 · `false` reports its exit code",
			replies: []daemon.Reply{text("```sh\nfalse\n```")},
			want:    "exit code 1",
			ok:      func(o event.CmdOutput) bool { return o.ExitCode == 1 },
		},
		{
			title: "Act 4 · 100,001 lines of log with a Traceback in the middle",
			replies: []daemon.Reply{text("```bash\nfor i in $(seq 1 100000); do echo \"log line $i\"; " +
				"if [ \"$i\" = 50000 ]; then echo 'Traceback (most recent call last): simulated failure'; fi; done\n```")},
			want: "100,001 lines trimmed to head + tail + the Traceback line, with exact counts",
			ok: func(o event.CmdOutput) bool {
				t := o.Trimmed
				return t != nil && t.LinesTotal == 100001 && t.OutputID != "" &&
					strings.Contains(o.Output, "Traceback (most recent call last)") &&
					strings.HasPrefix(o.Output, "log line 1\n") && strings.HasSuffix(o.Output, "log line 100000\n")
			},
		},
		{
			title: "Act 5 · a malformed reply becomes an observation the model corrects",
			replies: []daemon.Reply{
				text("Okay, let me check the environment:\n```bash\nls -la"),
				text("Sorry, the fence was not closed. Resending:\n```bash\nls -la | head -3\n```"),
			},
			want: "invalid_action first, then the corrected command ran",
			ok: func(o event.CmdOutput) bool {
				return o.ExitCode == 0 && strings.HasPrefix(o.Output, "total")
			},
		},
		{
			title: "Act 6 · a guardrail: `sudo rm -rf /` is vetoed by a Lua policy before it is recorded as run; the model corrects itself",
			replies: []daemon.Reply{
				text("Let me clean up everything:\n```bash\nsudo rm -rf /\n```"),
				text("That was refused. Cleaning up only the build directory:\n```bash\nrm -rf ./build && echo cleaned\n```"),
			},
			want:   "hook_veto naming the policy, then the narrower command ran",
			ok:     func(o event.CmdOutput) bool { return o.ExitCode == 0 && o.Output == "cleaned\n" },
			vetoed: func(v event.HookVeto) bool { return strings.Contains(v.Hook, "dangerous.lua") },
		},
		{
			title:   "Act 7 · `sleep 5` under a 0.3 s hard timeout (a tool call) is interrupted; the shell survives",
			replies: []daemon.Reply{{Tool: "execute_bash", Arguments: []byte(`{"command": "sleep 5", "timeout": 0.3}`)}},
			want:    "timed out and interrupted; same shell",
			ok: func(o event.CmdOutput) bool {
				return o.TimedOut && !o.ShellRebuilt && o.PID == pid && o.DurationMS < 3000
			},
		},
		{
			title:   "Act 8 · the shell is still the same one",
			replies: []daemon.Reply{text("```bash\necho \"shell=$$ cwd=$PWD\"\n```")},
			want:    "same shell and cwd after all of the above",
			ok: func(o event.CmdOutput) bool {
				return strings.HasPrefix(o.Output, shellPID+" cwd=") && strings.HasSuffix(strings.TrimSpace(o.Output), "/project") && o.PID == pid
			},
		},
	}
	tool := func(name, args string) daemon.Reply { return daemon.Reply{Tool: name, Arguments: []byte(args)} }
	acts = append(acts,
		act{
			title:   "Act 9 · a file written with OpenHands' str_replace_editor, inside the sandbox",
			replies: []daemon.Reply{tool("str_replace_editor", `{"command": "create", "path": "calc.py", "file_text": "def add(a, b):\n    return a - b\n"}`)},
			want:    "calc.py created in the shell's directory, shown with line numbers",
			okFile: func(r files.Result) bool {
				return r.OK && strings.HasSuffix(r.Path, "/project/calc.py") && strings.Contains(r.Output, "2\t    return a - b")
			},
		},
		act{
			title:   "Act 10 · the bug fixed by a str_replace, recorded with its diff",
			replies: []daemon.Reply{tool("str_replace_editor", `{"command": "str_replace", "path": "calc.py", "old_str": "return a - b", "new_str": "return a + b"}`)},
			want:    "exactly one match replaced; the diff is in the event",
			okFile: func(r files.Result) bool {
				return r.OK && strings.Contains(r.Diff, "-    return a - b") && strings.Contains(r.Diff, "+    return a + b")
			},
		},
		act{
			title:   "Act 11 · the fix checked in the session's persistent Python (execute_ipython_cell)",
			replies: []daemon.Reply{tool("execute_ipython_cell", `{"code": "import calc\nresult = calc.add(2, 3)\nresult"}`)},
			want:    "the cell imports the edited file and shows 5",
			okPython: func(r python.Result) bool {
				return r.ExitCode == 0 && strings.TrimSpace(r.Output) == "5"
			},
		},
	)
	if cfg.Sandbox.Driver == config.DriverNative {
		acts = append(acts, act{
			title: "Act 12 · the sandbox: secrets unreadable, system read-only, no network, host untouched",
			replies: []daemon.Reply{text("```bash\n" +
				"test -r /etc/shadow && echo shadow-read || echo shadow-denied\n" +
				"touch /usr/harnessd-was-here 2>/dev/null && echo usr-written || echo usr-read-only\n" +
				"(exec 3<>/dev/tcp/1.1.1.1/80) 2>/dev/null && echo net-open || echo net-none\n" +
				"echo from-the-sandbox > note.txt && echo wrote-workspace\n```")},
			want: "each attempt refused, and the workspace file is on the host",
			ok: func(o event.CmdOutput) bool {
				note, err := os.ReadFile(filepath.Join(ws, "project", "note.txt"))
				_, touched := os.Stat("/usr/harnessd-was-here")
				return o.Output == "shadow-denied\nusr-read-only\nnet-none\nwrote-workspace\n" &&
					err == nil && string(note) == "from-the-sandbox\n" && errors.Is(touched, os.ErrNotExist)
			},
		})
	}

	var steps []string
	firstStep := map[int]int{} // a step's number -> the act it opens
	for i, a := range acts {
		firstStep[len(steps)+1] = i
		for _, r := range a.replies {
			steps = append(steps, scriptStep(r))
		}
	}
	steps = append(steps, scriptStep(text("All done. <finish>demo complete</finish>")))
	script := filepath.Join(dir, "demo-script.jsonl")
	if err := os.WriteFile(script, []byte(strings.Join(steps, "\n")+"\n"), 0o644); err != nil {
		return err
	}
	cfg.Agents = maps.Clone(cfg.Agents)
	scripted := cfg.Agents[config.BuiltinScripted]
	scripted.Builtin, scripted.Command, scripted.Script = config.BuiltinScripted, nil, script
	cfg.Agents[config.BuiltinScripted] = scripted

	// The daemon, as `harnessd serve` runs it, until stopDaemon.
	daemonCtx, stopDaemon := context.WithCancel(context.WithoutCancel(ctx))
	defer stopDaemon()
	ready := make(chan string, 1)
	served := make(chan error, 1)
	go func() {
		served <- serve.Run(daemonCtx, serve.Options{Config: cfg, Logger: log, Ready: func(s string) { ready <- s }, AgentExe: opts.AgentExe})
	}()
	var socket string
	select {
	case socket = <-ready:
	case err := <-served:
		return fmt.Errorf("daemon did not start: %w", err)
	case <-ctx.Done():
		return ctx.Err()
	}
	daemonDone := false
	defer func() {
		if !daemonDone {
			stopDaemon()
			<-served
		}
	}()

	p := &printer{w: w}
	p.f("== harnessd demo: a daemon on a temporary socket, an agent plugin driving one session through its API ==\n")
	p.f("[harness] daemon pid %d serving %s; store %s (durability %s)\n", os.Getpid(), socket, cfg.Store.Path, cfg.Store.Durability)

	cl := api.NewClient(socket)
	defer cl.Close()
	const id = "demo"
	info, err := cl.CreateSession(ctx, daemon.CreateRequest{ID: id, Labels: map[string]string{"agent": "scripted"}})
	if err != nil {
		return err
	}
	ws = info.Workspace
	p.f("[harness] POST /v1/sessions -> session %q, shell pid %d, workspace %s\n", info.ID, info.PID, ws)
	p.f("[harness] GET /v1/sessions/%s/events?follow=true: every event below arrives on that stream\n", id)

	// Follow the session's events over the API, as a client would.
	events := make(chan event.Event, 64)
	followed := make(chan error, 1)
	go func() {
		defer close(events)
		followed <- cl.Events(ctx, id, 0, true, func(ev event.Event) error {
			events <- ev
			return nil
		})
	}()
	p.events, p.errs = events, followed
	if err := p.until(1); err != nil {
		return err
	}

	run, err := cl.StartRun(ctx, id, agent.Request{Agent: config.BuiltinScripted, Task: "show what the harness does: a persistent shell, exit codes, trimming, malformed replies, timeouts, the sandbox"})
	if err != nil {
		return err
	}
	p.f("[harness] POST /v1/sessions/%s/runs {agent: scripted} -> run %s: the agent is its own process (`harnessd plugin scripted`, go-plugin over gRPC with AutoMTLS), replaying %d replies a model could have sent\n", id, run.ID, len(steps))

	var failed []string
	var bigOutput string
	act := -1
	ran := map[int]bool{}    // acts whose command's output came back
	vetoed := map[int]bool{} // acts whose veto came back
	ended, err := p.follow(run.ID, func(e event.Event) {
		switch v := agent.Unwrap(e).(type) {
		case agent.AgentStep:
			if i, ok := firstStep[v.Step]; ok && v.Run == run.ID {
				act = i
				p.f("\n──────── %s ────────\n", acts[i].title)
			}
		case event.HookVeto:
			if act >= 0 && acts[act].vetoed != nil && acts[act].vetoed(v) {
				vetoed[act] = true
			}
		case files.Result, python.Result:
			if act < 0 || ran[act] {
				return
			}
			ran[act] = true
			a := acts[act]
			fr, isFile := v.(files.Result)
			pr, isPy := v.(python.Result)
			if (isFile && a.okFile != nil && a.okFile(fr)) || (isPy && a.okPython != nil && a.okPython(pr)) {
				p.f("  ✓ %s\n", a.want)
			} else {
				p.f("  ✗ expected %s\n", a.want)
				failed = append(failed, a.title)
			}
		case event.CmdOutput:
			if act < 0 || ran[act] || acts[act].ok == nil {
				return
			}
			ran[act] = true
			if v.Trimmed != nil && v.Trimmed.LinesTotal > 100000 {
				bigOutput = v.Trimmed.OutputID
			}
			if acts[act].ok(v) {
				p.f("  ✓ %s\n", acts[act].want)
			} else {
				p.f("  ✗ expected %s\n", acts[act].want)
				failed = append(failed, acts[act].title)
			}
		}
	})
	if err != nil {
		return err
	}
	for i, a := range acts {
		if !ran[i] {
			failed = append(failed, a.title+": no command ran")
		}
		if a.vetoed != nil && !vetoed[i] {
			failed = append(failed, a.title+": no hook_veto")
		}
	}
	if ended.Reason != agent.ReasonFinished {
		failed = append(failed, "the run ended with "+ended.Reason+", not finished")
	}
	end, err := cl.Run(ctx, run.ID)
	if err != nil {
		return err
	}
	gone := "the plugin process is gone"
	if end.PluginPID == 0 || end.PluginPID == os.Getpid() {
		failed = append(failed, "the agent did not run as a process of its own")
	} else if _, err := os.Stat(fmt.Sprintf("/proc/%d", end.PluginPID)); err == nil {
		gone = "the plugin process is STILL THERE"
		failed = append(failed, "the plugin outlived its run")
	}
	p.f("\n[harness] GET /v1/runs/%s -> %s after %d steps (%s): %q; plugin pid %d: %s\n", run.ID, end.Reason, end.Steps, end.Ended.Sub(end.Started).Round(time.Millisecond), end.Message, end.PluginPID, gone)

	if bigOutput != "" {
		page, err := cl.Output(ctx, bigOutput, 50000, 50002)
		if err != nil {
			return fmt.Errorf("read back output %s: %w", bigOutput, err)
		}
		p.f("\n[outputs] GET /v1/outputs/%s?from_line=50000&to_line=50002 (of %d lines):\n", bigOutput, page.Total)
		for _, l := range strings.SplitAfter(strings.TrimSuffix(page.Text, "\n"), "\n") {
			p.f("      | %s\n", strings.TrimSuffix(l, "\n"))
		}
	}

	p.f("\n[harness] stopping the daemon as SIGTERM does: the session is recorded as interrupted, the store closed\n")
	stopDaemon()
	daemonDone = true
	if err := <-served; err != nil {
		return fmt.Errorf("daemon shutdown: %w", err)
	}
	if err := p.until(end.EndSeq + 1); err != nil {
		return err
	}
	if err := <-followed; err != nil {
		return fmt.Errorf("event stream: %w", err)
	}
	p.f("[harness] the event stream ended cleanly after sandbox_stopped\n")

	// Replay from the store alone, the daemon gone: the same events, byte
	// for byte, as the stream delivered live.
	st, err := store.Open(cfg.Store.Path, nil)
	if err != nil {
		return err
	}
	defer st.Close()
	rec, err := st.Session(ctx, id)
	if err != nil {
		return err
	}
	replayed := 0
	kinds := map[event.Kind]int{}
	if err := st.Read(ctx, id, 0, func(e event.Event) error {
		replayed++
		kinds[e.Kind()]++
		live, ok := p.seen[e.Seq]
		if !ok {
			return fmt.Errorf("replay: event %d was never delivered live", e.Seq)
		}
		a, err := e.MarshalJSON()
		if err != nil {
			return err
		}
		if b, err := live.MarshalJSON(); err != nil || string(a) != string(b) {
			return fmt.Errorf("replay: event %d differs from what was delivered", e.Seq)
		}
		return nil
	}); err != nil {
		return err
	}
	if replayed != len(p.seen) {
		return fmt.Errorf("replay: %d events in the store, %d delivered live", replayed, len(p.seen))
	}
	p.f("\n-------- summary --------\n")
	p.f("%d events replayed from %s after shutdown, identical to the live stream: %d cmd_run, %d cmd_output, %d invalid_action; session state %q; shell pid %d throughout\n",
		replayed, cfg.Store.Path, kinds[event.KindCmdRun], kinds[event.KindCmdOutput], kinds[event.KindInvalidAction], rec.State, pid)
	p.f("inspect it later: `harnessd serve --data %s` and `harnessd replay --socket %s %s`\n", dir, socket, id)
	if p.err != nil {
		return p.err
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d act(s) failed: %s", len(failed), strings.Join(failed, "; "))
	}
	p.f("all %d acts passed\n", len(acts))
	return p.err
}

// scriptStep is one step of the scripted agent's script: the reply as the
// model sent it.
func scriptStep(r daemon.Reply) string {
	var b []byte
	if r.Tool != "" {
		b, _ = json.Marshal(map[string]any{"tool": r.Tool, "arguments": json.RawMessage(r.Arguments)})
	} else {
		b, _ = json.Marshal(map[string]string{"reply": r.Text})
	}
	return string(b)
}

// follow prints delivered events until the run's run_ended, calling fn
// after printing each, and returns the run as run_ended tells it.
func (p *printer) follow(run string, fn func(event.Event)) (agent.RunEnded, error) {
	if p.seen == nil {
		p.seen = map[uint64]event.Event{}
	}
	for {
		select {
		case e, ok := <-p.events:
			if !ok {
				err := <-p.errs
				return agent.RunEnded{}, fmt.Errorf("event stream ended before the run did: %v", err)
			}
			p.seen[e.Seq] = e
			if _, step := agent.Unwrap(e).(agent.AgentStep); step {
				fn(e) // the act's title goes before its first step
				p.event(e)
			} else {
				p.event(e)
				fn(e)
			}
			if end, ok := agent.Unwrap(e).(agent.RunEnded); ok && end.Run == run {
				return end, nil
			}
		case <-time.After(30 * time.Second):
			return agent.RunEnded{}, errors.New("no event for 30s")
		}
	}
}

// printer writes the transcript and remembers the first write error. Events
// are printed as the bus delivers them.
type printer struct {
	w      io.Writer
	err    error
	events <-chan event.Event
	errs   <-chan error // the stream's end
	seen   map[uint64]event.Event
}

func (p *printer) f(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, args...)
	}
}

// until prints delivered events up to and including seq.
func (p *printer) until(seq uint64) error {
	if p.seen == nil {
		p.seen = map[uint64]event.Event{}
	}
	for {
		if _, ok := p.seen[seq]; ok {
			return nil
		}
		select {
		case e, ok := <-p.events:
			if !ok {
				err := <-p.errs
				return fmt.Errorf("event stream ended before event %d: %v", seq, err)
			}
			p.seen[e.Seq] = e
			p.event(e)
		case <-time.After(10 * time.Second):
			return fmt.Errorf("event %d was not delivered within 10s", seq)
		}
	}
}

func (p *printer) event(e event.Event) {
	head := fmt.Sprintf("  #%-3d %-7s %-15s", e.Seq, e.Source, e.Kind())
	switch pl := agent.Unwrap(e).(type) {
	case agent.RunStarted:
		p.f("%s run=%s agent=%s max_steps=%d\n", head, pl.Run, pl.Agent, pl.Limits.MaxSteps)
	case agent.AgentStep:
		p.f("%s step %d: %s (%dms in the plugin)\n", head, pl.Step, pl.Action, pl.DurationMS)
	case agent.RunEnded:
		p.f("%s run=%s reason=%s steps=%d %q\n", head, pl.Run, pl.Reason, pl.Steps, pl.Message)
	case agent.GuidanceLoaded:
		p.f("%s %s\n", head, strings.Join(pl.Files, ", "))
	case event.CmdRun:
		p.f("%s %s\n", head, oneLine(pl.Command, 90))
	case event.CmdOutput:
		p.cmdOutput(head, e.Cause, pl)
	case event.InvalidAction:
		p.f("%s %s\n        guidance: %s\n", head, pl.Reason, oneLine(pl.Guidance, 150))
	case event.HookVeto:
		p.f("%s (answers #%d) %s: %s\n", head, e.Cause, pl.Hook, oneLine(pl.Reason, 100))
	case event.Message:
		p.f("%s %s\n", head, oneLine(pl.Text, 90))
	case event.Finish:
		p.f("%s %s\n", head, oneLine(pl.Message, 90))
	case event.SandboxStarted:
		p.f("%s driver=%s sandbox=%s workdir=%s\n", head, pl.Driver, pl.SandboxID, pl.Workdir)
	case event.SandboxStopped:
		p.f("%s sandbox=%s %s\n", head, pl.SandboxID, pl.Reason)
	case event.NetConnect:
		p.f("%s %s %s:%d allowed=%v %s\n", head, pl.Method, pl.Host, pl.Port, pl.Allowed, pl.Reason)
	case files.Create:
		p.f("%s %s (%d bytes)\n", head, pl.Path, len(pl.Content))
	case files.StrReplace:
		p.f("%s %s: %q -> %q\n", head, pl.Path, oneLine(pl.Old, 40), oneLine(pl.New, 40))
	case files.Result:
		p.f("%s (answers #%d) ok=%v %s %dms\n", head, e.Cause, pl.OK, pl.Path, pl.DurationMS)
		shown := pl.Output
		if pl.Diff != "" && pl.Op != "create" {
			shown = pl.Diff
		}
		p.lines(shown)
	case python.Run:
		p.f("%s %s\n", head, oneLine(pl.Code, 90))
	case python.Result:
		p.f("%s (answers #%d) exit=%d %s%dms\n", head, e.Cause, pl.ExitCode, map[bool]string{true: "error=" + pl.Error + " ", false: ""}[pl.Error != ""], pl.DurationMS)
		p.lines(pl.Output)
	default:
		p.f("%s\n", head)
	}
}

func (p *printer) cmdOutput(head string, cause uint64, o event.CmdOutput) {
	state := fmt.Sprintf("exit=%d", o.ExitCode)
	if o.ExitCode == -1 {
		state = "running"
	}
	if o.TimedOut {
		state += " timed_out"
	}
	if o.ShellRebuilt {
		state += " shell_rebuilt"
	}
	p.f("%s (answers #%d) %s cwd=%s pid=%d %dms", head, cause, state, o.Cwd, o.PID, o.DurationMS)
	if t := o.Trimmed; t != nil {
		p.f(" [%d lines, %d omitted, full output %s]", t.LinesTotal, t.LinesOmitted, t.OutputID)
	}
	p.f("\n")
	text := strings.TrimSuffix(o.Output, "\n")
	if text != "" {
		lines := strings.Split(text, "\n")
		for i, l := range lines {
			if len(lines) > 14 && i >= 6 && i < len(lines)-6 {
				if i == 6 {
					p.f("        | … (the model sees %d more lines here; the placeholder and kept lines follow)\n", len(lines)-12)
				}
				if !strings.HasPrefix(l, "[") && !strings.Contains(l, "Traceback") {
					continue
				}
			}
			p.f("        | %s\n", oneLine(l, 160))
		}
	}
	if o.Note != "" {
		p.f("        note: %s\n", o.Note)
	}
}

// lines prints text indented, a line at most 160 runes.
func (p *printer) lines(text string) {
	text = strings.TrimSuffix(text, "\n")
	if text == "" {
		return
	}
	for _, l := range strings.Split(text, "\n") {
		if r := []rune(l); len(r) > 160 {
			l = string(r[:160]) + "…"
		}
		p.f("        | %s\n", l)
	}
}

// oneLine shortens s to one line of at most n runes for the transcript.
func oneLine(s string, n int) string {
	s = strings.ReplaceAll(strings.TrimSpace(s), "\n", " ⏎ ")
	r := []rune(s)
	if len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
