// Package scripted is the built-in agent that replays a script: a fixed
// list of steps, one per step of the run, whatever the session shows. The
// demo and the tests drive runs with it.
//
// # Basics
//
// Its settings (harness.toml's [agents.NAME] with builtin = "scripted")
// name the script, a file of one JSON object per line (blank lines and
// lines starting with # are skipped), or give its steps inline. Each step
// is one of:
//
//	{"reply": "text the model wrote"}                       parsed by harnessd (fenced command, <finish>)
//	{"tool": "execute_bash", "arguments": {"command": "ls"}} a tool call, parsed by harnessd
//	{"tool": "execute_bash", "arguments": "{'command': 'ls'}"} arguments as the model wrote them
//	{"action": {"kind": "cmd_run", "command": "ls"}}         an action event: cmd_run, message, finish, delegate
//	{"think": "a thought"}                                   a step with only a thought
//
// and may add "thought", "sleep_ms" (wait before answering, like a slow
// model) and "usage" ({"prompt_tokens", "completion_tokens", "cost"}).
// Which step comes next is counted from the run's own agent_step events,
// so a restarted process goes on where the last one stopped. After the
// last step it finishes, saying the script ended.
package scripted

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/harnessd/harnessd/core/event"
	"github.com/harnessd/harnessd/plugins"
	pb "github.com/harnessd/harnessd/plugins/proto"
)

// Name is the built-in agent's name.
const Name = "scripted"

// Settings are the agent's settings.
type Settings struct {
	Script string `json:"script,omitempty"` // a file of steps, one JSON object per line
	Steps  []Step `json:"steps,omitempty"`  // or the steps themselves
}

// Step is one step of a script.
type Step struct {
	Reply     string          `json:"reply,omitempty"`
	Tool      string          `json:"tool,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Action    json.RawMessage `json:"action,omitempty"`
	Think     string          `json:"think,omitempty"`
	Thought   string          `json:"thought,omitempty"`
	SleepMS   int             `json:"sleep_ms,omitempty"`
	Usage     *Usage          `json:"usage,omitempty"`
}

// Usage is a step's pretend cost.
type Usage struct {
	PromptTokens     int64   `json:"prompt_tokens"`
	CompletionTokens int64   `json:"completion_tokens"`
	Cost             float64 `json:"cost"`
}

// Agent replays a script.
type Agent struct {
	steps []Step
}

// New returns an agent for the settings, reading the script file if they
// name one.
func New(s Settings) (*Agent, error) {
	steps := s.Steps
	if s.Script != "" {
		f, err := os.Open(s.Script)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		fs, err := ReadScript(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.Script, err)
		}
		steps = append(steps, fs...)
	}
	for i, st := range steps {
		if err := st.check(); err != nil {
			return nil, fmt.Errorf("step %d: %w", i+1, err)
		}
	}
	return &Agent{steps: steps}, nil
}

// ReadScript reads steps, one JSON object per line.
func ReadScript(r interface{ Read([]byte) (int, error) }) ([]Step, error) {
	var steps []Step
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	n := 0
	for sc.Scan() {
		n++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		var st Step
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&st); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		steps = append(steps, st)
	}
	return steps, sc.Err()
}

func (s Step) check() error {
	n := 0
	for _, set := range []bool{s.Reply != "", s.Tool != "", len(s.Action) > 0, s.Think != ""} {
		if set {
			n++
		}
	}
	if n != 1 {
		return errors.New("want exactly one of reply, tool, action and think")
	}
	if len(s.Action) > 0 {
		if _, err := s.action(); err != nil {
			return err
		}
	}
	return nil
}

// action decodes an action step with the event codec.
func (s Step) action() (*pb.StepResponse, error) {
	ev, err := event.Decode(s.Action)
	if err != nil {
		return nil, err
	}
	switch p := ev.Payload.(type) {
	case event.CmdRun:
		return &pb.StepResponse{Action: &pb.StepResponse_CmdRun{CmdRun: &pb.CmdRun{Command: p.Command, IsInput: p.IsInput, TimeoutS: p.TimeoutS, Reset_: p.Reset}}}, nil
	case event.Message:
		return &pb.StepResponse{Action: &pb.StepResponse_Message{Message: &pb.Message{Text: p.Text}}}, nil
	case event.Finish:
		return &pb.StepResponse{Action: &pb.StepResponse_Finish{Finish: &pb.Finish{Message: p.Message}}}, nil
	case event.Delegate:
		return &pb.StepResponse{Action: &pb.StepResponse_Delegate{Delegate: &pb.Delegate{Agent: p.Agent, Task: p.Task}}}, nil
	}
	return nil, fmt.Errorf("action %s: not one an agent sends", ev.Kind())
}

// Info implements plugins.Agent.
func (a *Agent) Info(context.Context) (*pb.InfoResponse, error) {
	return &pb.InfoResponse{Name: Name, Version: "1"}, nil
}

// Step implements plugins.Agent: the script's next step.
func (a *Agent) Step(ctx context.Context, req *pb.StepRequest, _ plugins.Host) (*pb.StepResponse, error) {
	done, err := stepsTaken(req)
	if err != nil {
		return nil, err
	}
	if done >= len(a.steps) {
		return &pb.StepResponse{Action: &pb.StepResponse_Finish{Finish: &pb.Finish{Message: "the script ended"}}}, nil
	}
	st := a.steps[done]
	if st.SleepMS > 0 {
		select {
		case <-time.After(time.Duration(st.SleepMS) * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	var resp *pb.StepResponse
	switch {
	case st.Reply != "":
		resp = &pb.StepResponse{Action: &pb.StepResponse_Reply{Reply: &pb.Reply{Text: st.Reply}}}
	case st.Tool != "":
		args := string(st.Arguments)
		var s string
		if json.Unmarshal(st.Arguments, &s) == nil {
			args = s // arguments given as the model's own text
		}
		resp = &pb.StepResponse{Action: &pb.StepResponse_Reply{Reply: &pb.Reply{Tool: st.Tool, Arguments: args}}}
	case len(st.Action) > 0:
		if resp, err = st.action(); err != nil {
			return nil, err
		}
	default:
		resp = &pb.StepResponse{Thought: st.Think}
	}
	if st.Thought != "" {
		resp.Thought = st.Thought
	}
	if u := st.Usage; u != nil {
		resp.Usage = &pb.Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, Cost: u.Cost, Model: "scripted"}
	}
	return resp, nil
}

// stepsTaken counts the run's agent_step events among all the session's:
// a process sees every event at its first step, so a restarted one counts
// right too. A process that has been stepping only sees new events, so
// the count is kept per run.
func stepsTaken(req *pb.StepRequest) (int, error) {
	n := 0
	for _, raw := range req.GetEvents() {
		var ev struct {
			Kind string `json:"kind"`
			Run  string `json:"run"`
		}
		if err := json.Unmarshal(raw, &ev); err != nil {
			return 0, fmt.Errorf("event %.80s: %w", raw, err)
		}
		if ev.Kind == "agent_step" && ev.Run == req.GetRun() {
			n++
		}
	}
	counts.add(req.GetRun(), n)
	return counts.get(req.GetRun()), nil
}

// counts keeps each run's step count across the steps of one process.
var counts = &runCounts{m: map[string]int{}}

type runCounts struct {
	mu sync.Mutex
	m  map[string]int
}

func (c *runCounts) add(run string, n int) { c.mu.Lock(); c.m[run] += n; c.mu.Unlock() }

func (c *runCounts) get(run string) int { c.mu.Lock(); defer c.mu.Unlock(); return c.m[run] }

// Main serves the agent with the settings in the environment; it is
// `harnessd plugin scripted`. Settings it cannot use are the answer to
// Info, so the host records why the agent failed.
func Main() int {
	var s Settings
	err := plugins.Settings(&s)
	var a plugins.Agent
	if err == nil {
		a, err = New(s)
	}
	if err != nil {
		a = plugins.Broken(fmt.Errorf("scripted agent: %w", err))
	}
	plugins.Serve(a, nil)
	return 0
}
