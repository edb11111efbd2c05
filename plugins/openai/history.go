package openai

import (
	"encoding/json"
	"fmt"
	"strings"

	pb "github.com/harnessd/harnessd/plugins/proto"
)

// rawEvent is an event as the session records it, read with the fields
// the history needs: the plugin reads events as any external plugin
// would, from their JSON.
type rawEvent struct {
	Seq    uint64 `json:"seq"`
	Source string `json:"source"`
	Cause  uint64 `json:"cause"`
	Kind   string `json:"kind"`

	Command  string  `json:"command"`
	IsInput  bool    `json:"is_input"`
	TimeoutS float64 `json:"timeout_s"`
	Reset    bool    `json:"reset"`

	ExitCode     int    `json:"exit_code"`
	Cwd          string `json:"cwd"`
	Output       string `json:"output"`
	DurationMS   int64  `json:"duration_ms"`
	TimedOut     bool   `json:"timed_out"`
	Note         string `json:"note"`
	ShellRebuilt bool   `json:"shell_rebuilt"`
	Trimmed      *struct {
		LinesTotal   int    `json:"lines_total"`
		LinesOmitted int    `json:"lines_omitted"`
		OutputID     string `json:"output_id"`
	} `json:"trimmed"`

	Text     string `json:"text"`
	Message  string `json:"message"`
	Reason   string `json:"reason"`
	Guidance string `json:"guidance"`
	Hook     string `json:"hook"`
	Agent    string `json:"agent"`
	Task     string `json:"task"`
	Error    string `json:"error"`

	Run     string `json:"run"`
	Action  string `json:"action"`
	Thought string `json:"thought"`
}

func decodeEvents(raws [][]byte) ([]rawEvent, error) {
	out := make([]rawEvent, 0, len(raws))
	for _, r := range raws {
		var ev rawEvent
		if err := json.Unmarshal(r, &ev); err != nil {
			return nil, fmt.Errorf("event %.80s: %w", r, err)
		}
		out = append(out, ev)
	}
	return out, nil
}

const systemTools = `You are an autonomous software engineering agent. You work in a Linux sandbox on the project in the current directory (/workspace), through one persistent bash shell: the working directory, exported variables and background jobs persist from one command to the next.

Act one step at a time with the tools:
- execute_bash runs one command and shows its output, exit code and working directory. Long outputs are trimmed to their first and last lines and the lines with errors; a placeholder says what was left out. A command that prints nothing new for a while comes back with exit code -1 while it goes on running: call execute_bash with an empty command to wait for more output, or with command "C-c" and is_input true to interrupt it. Use timeout (seconds) for commands that may hang.
- think records your reasoning without acting.
- finish ends the task, with a short summary of what you did and how you checked it.

Work on your own: nobody answers questions. Check your work by running it before you finish.`

const systemCodeAct = `You are an autonomous software engineering agent. You work in a Linux sandbox on the project in the current directory (/workspace), through one persistent bash shell: the working directory, exported variables and background jobs persist from one command to the next.

Act one step at a time. Each reply holds exactly one command in a fenced block:

` + "```bash\nls -la\n```" + `

and you will see its output, exit code and working directory. Long outputs are trimmed to their first and last lines and the lines with errors. A command that prints nothing new for a while comes back with exit code -1 while it goes on running. When the task is done, reply with <finish>a short summary of what you did and how you checked it</finish> instead of a command.

Work on your own: nobody answers questions. Check your work by running it before you finish.`

func toolDefs() []tool {
	obj := func(props map[string]any, required ...string) map[string]any {
		return map[string]any{"type": "object", "properties": props, "required": required}
	}
	str := func(d string) map[string]any { return map[string]any{"type": "string", "description": d} }
	return []tool{
		{Type: "function", Function: toolDef{Name: "execute_bash", Description: "Run a bash command in the persistent shell and see its output.", Parameters: obj(map[string]any{
			"command":  str("The command. Empty: wait for more output of the command still running. With is_input: keys for the running program, such as C-c or C-d, or a line of text."),
			"is_input": map[string]any{"type": "boolean", "description": "Send command as input to the running program instead of running it."},
			"timeout":  map[string]any{"type": "number", "description": "Seconds after which the command is interrupted."},
			"reset":    map[string]any{"type": "boolean", "description": "Kill the shell and start a fresh one first."},
		}, "command")}},
		{Type: "function", Function: toolDef{Name: "think", Description: "Think out loud: plan, reason about what you saw. Does not act.", Parameters: obj(map[string]any{
			"thought": str("Your reasoning."),
		}, "thought")}},
		{Type: "function", Function: toolDef{Name: "finish", Description: "The task is done (or cannot be done): end with a summary.", Parameters: obj(map[string]any{
			"message": str("What you did and how you checked it."),
		})}},
	}
}

// builder turns a run's events into chat messages.
type builder struct {
	tools    bool
	msgs     []message
	open     []string // tool call ids awaiting their result
	thought  string   // the current step's thought, for its action
	agentRun map[uint64]string
}

// messages is the conversation of a run so far: the system prompt with the
// repository guidance, the task, then what happened since the run
// started, the run's own actions as the model's turns. Sub-runs it
// delegated to are left out; their result is not.
func messages(req *pb.StepRequest, evs []rawEvent, tools bool) []message {
	b := &builder{tools: tools, agentRun: map[uint64]string{}}
	sys := systemCodeAct
	if tools {
		sys = systemTools
	}
	if g := req.GetGuidance(); len(g) > 0 {
		var sb strings.Builder
		sb.WriteString(sys)
		sb.WriteString("\n\nThe repository's guidance for agents follows; follow it.")
		for _, f := range g {
			fmt.Fprintf(&sb, "\n\n## %s\n\n%s", f.GetPath(), strings.TrimSpace(f.GetText()))
		}
		sys = sb.String()
	}
	b.add(message{Role: "system", Content: sys})
	b.add(message{Role: "user", Content: req.GetTask()})

	start := 0
	for i, ev := range evs {
		if ev.Kind == "run_started" && ev.Run == req.GetRun() {
			start = i + 1
		}
	}
	depth := 0
	for _, ev := range evs[start:] {
		switch {
		case ev.Kind == "run_started":
			depth++
			continue
		case ev.Kind == "run_ended" && depth > 0:
			depth--
			continue
		case depth > 0:
			continue
		}
		b.event(ev, req.GetRun())
	}
	b.close()
	return b.msgs
}

func (b *builder) add(m message) {
	if m.Role != "tool" {
		b.close()
	}
	b.msgs = append(b.msgs, m)
}

// close answers tool calls that never got a result, which the API
// requires.
func (b *builder) close() {
	open := b.open
	b.open = nil
	for _, id := range open {
		b.msgs = append(b.msgs, message{Role: "tool", ToolCallID: id, Content: "(no result was recorded)"})
	}
}

func (b *builder) call(seq uint64, name string, args any, codeact string) {
	thought := b.thought
	b.thought = ""
	if !b.tools {
		b.add(message{Role: "assistant", Content: strings.TrimSpace(thought + "\n\n" + codeact)})
		b.agentRun[seq] = ""
		return
	}
	id := fmt.Sprintf("call_%d", seq)
	a, _ := json.Marshal(args)
	b.add(message{Role: "assistant", Content: thought, ToolCalls: []toolCall{{ID: id, Type: "function", Function: function{Name: name, Arguments: string(a)}}}})
	b.open = append(b.open, id)
	b.agentRun[seq] = id
}

// result answers the tool call of the action seq, or, for one the model
// did not make, tells it what happened.
func (b *builder) result(cause, seq uint64, text, maskedText string, otherwise string) {
	if id, ok := b.agentRun[cause]; ok && b.tools {
		b.msgs = append(b.msgs, message{Role: "tool", ToolCallID: id, Content: text, seq: seq, maskedForm: maskedText})
		for i, o := range b.open {
			if o == id {
				b.open = append(b.open[:i], b.open[i+1:]...)
				break
			}
		}
		return
	}
	if _, ok := b.agentRun[cause]; ok {
		otherwise = "Observation:\n"
	}
	b.add(message{Role: "user", Content: otherwise + text, seq: seq, maskedForm: otherwise + maskedText})
}

func (b *builder) event(ev rawEvent, run string) {
	agent := ev.Source == "agent"
	switch ev.Kind {
	case "agent_step":
		if ev.Run != run {
			return
		}
		if ev.Action != "think" {
			b.thought = ev.Thought
			return
		}
		b.call(ev.Seq, "think", map[string]string{"thought": ev.Thought}, "Thought: "+ev.Thought)
		if b.tools {
			b.result(ev.Seq, 0, "Your thought has been logged.", "", "")
		}
	case "cmd_run":
		args := map[string]any{"command": ev.Command}
		if ev.IsInput {
			args["is_input"] = true
		}
		if ev.TimeoutS > 0 {
			args["timeout"] = ev.TimeoutS
		}
		if ev.Reset {
			args["reset"] = true
		}
		if !agent {
			b.add(message{Role: "user", Content: fmt.Sprintf("(The user ran a command in the shell: %s)", ev.Command)})
			return
		}
		shown := ev.Command
		if ev.IsInput {
			shown = "(keys: " + ev.Command + ")"
		}
		b.call(ev.Seq, "execute_bash", args, "```bash\n"+shown+"\n```")
	case "cmd_output":
		text, masked := render(ev)
		b.result(ev.Cause, ev.Seq, text, masked, "Output of the user's command:\n")
	case "hook_veto":
		t := fmt.Sprintf("Refused by the policy %s: %s. Do something else.", ev.Hook, ev.Reason)
		b.result(ev.Cause, 0, t, t, "")
	case "invalid_action":
		t := "Your last reply could not be used: " + ev.Reason
		if ev.Guidance != "" {
			t += "\n" + ev.Guidance
		}
		b.add(message{Role: "user", Content: t})
	case "message":
		if agent {
			thought := b.thought
			b.thought = ""
			b.add(message{Role: "assistant", Content: strings.TrimSpace(thought + "\n\n" + ev.Text)})
		} else {
			b.add(message{Role: "user", Content: ev.Text})
		}
	case "delegate":
		if agent {
			b.thought = ""
			b.add(message{Role: "assistant", Content: fmt.Sprintf("(Delegated to agent %s: %s)", ev.Agent, ev.Task)})
		}
	case "delegate_result":
		t := fmt.Sprintf("The delegated run of agent %s ended (%s)", ev.Agent, ev.Reason)
		if ev.Message != "" {
			t += ": " + ev.Message
		}
		if ev.Error != "" {
			t += " — " + ev.Error
		}
		b.add(message{Role: "user", Content: t})
	}
}

// render shows an observation to the model, and its masked form: the
// first and last lines, the exit code and the output id, so the agent can
// page it back.
func render(o rawEvent) (full, masked string) {
	var state string
	switch {
	case o.ExitCode == -1:
		state = fmt.Sprintf("[still running, no new output for a while; cwd %s. Send an empty command to wait for more, or C-c with is_input to interrupt]", o.Cwd)
	default:
		state = fmt.Sprintf("[exit code %d, cwd %s]", o.ExitCode, o.Cwd)
	}
	if o.TimedOut {
		state = strings.TrimSuffix(state, "]") + ", timed out and interrupted]"
	}
	if o.ShellRebuilt {
		state += "\n[the shell was restarted: the working directory and variables are reset]"
	}
	if o.Note != "" {
		state += "\n[" + o.Note + "]"
	}
	out := o.Output
	if out != "" && !strings.HasSuffix(out, "\n") {
		out += "\n"
	}
	full = out + state
	lines := strings.Split(strings.TrimSuffix(o.Output, "\n"), "\n")
	id := ""
	if o.Trimmed != nil && o.Trimmed.OutputID != "" {
		id = ", full output " + o.Trimmed.OutputID
	}
	if len(lines) <= 2 {
		return full, full
	}
	masked = fmt.Sprintf("%s\n[... %d lines masked to save context%s ...]\n%s\n%s", lines[0], len(lines)-2, id, lines[len(lines)-1], state)
	return full, masked
}
