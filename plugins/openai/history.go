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

	// python_run and python_result.
	Code      string `json:"code"`
	StateLost bool   `json:"state_lost"`

	// The file actions (file_view, file_create, …) and file_result.
	Path      string `json:"path"`
	FromLine  int    `json:"from_line"`
	ToLine    int    `json:"to_line"`
	Content   string `json:"content"`
	Overwrite bool   `json:"overwrite"`
	Old       string `json:"old"`
	New       string `json:"new"`
	Line      int    `json:"line"`
	Op        string `json:"op"`
	OK        bool   `json:"ok"`
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
- str_replace_editor views, creates and edits files: view shows a file with line numbers (or a directory two levels deep); str_replace replaces text that occurs exactly once (copy it exactly, with its indentation); insert adds text after a line; undo_edit reverts your last edit of a file. Prefer it to sed or heredocs for editing.
- execute_ipython_cell runs Python code in a persistent Python session (IPython when installed): variables and imports persist from one cell to the next, the value of the last expression is shown, and an error shows its traceback. A cell still running comes back with "still running": call it with empty code to wait.
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
		editorTool(),
		{Type: "function", Function: toolDef{Name: "execute_ipython_cell", Description: "Run a cell of Python code in a persistent Python session (IPython when the sandbox has it) and see its output. Variables and imports persist between cells; the last expression's value is shown.", Parameters: obj(map[string]any{
			"code": str("The Python code to run. Empty: wait for more output of the cell still running."),
		}, "code")}},
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
	case "file_view", "file_create", "file_str_replace", "file_insert", "file_undo":
		args := editorArgs(ev)
		if !agent {
			b.add(message{Role: "user", Content: fmt.Sprintf("(The user used the file editor: %s %s)", args["command"], ev.Path)})
			return
		}
		a, _ := json.Marshal(args)
		b.call(ev.Seq, "str_replace_editor", args, "str_replace_editor "+string(a))
	case "file_result":
		text, masked := renderFile(ev)
		b.result(ev.Cause, ev.Seq, text, masked, "Result of the user's file action:\n")
	case "python_run":
		if !agent {
			b.add(message{Role: "user", Content: "(The user ran a Python cell:\n" + ev.Code + ")"})
			return
		}
		b.call(ev.Seq, "execute_ipython_cell", map[string]any{"code": ev.Code}, "```python\n"+ev.Code+"\n```")
	case "python_result":
		text, masked := renderPython(ev)
		b.result(ev.Cause, ev.Seq, text, masked, "Output of the user's Python cell:\n")
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

// editorTool is OpenHands' str_replace_editor, with its schema, so that
// models trained on it call it as they learned to; harnessd parses the
// call (core/parse) into its file actions.
func editorTool() tool {
	desc := func(d string) map[string]any { return map[string]any{"type": "string", "description": d} }
	return tool{Type: "function", Function: toolDef{Name: "str_replace_editor",
		Description: "Custom editing tool for viewing, creating and editing files in plain-text format\n" +
			"* State is persistent across command calls and discussions with the user\n" +
			"* If `path` is a file, `view` displays the result of applying `cat -n`. If `path` is a directory, `view` lists non-hidden files and directories up to 2 levels deep\n" +
			"* The `create` command cannot be used if the specified `path` already exists as a file\n" +
			"* If a `command` generates a long output, it will be truncated\n" +
			"* The `undo_edit` command will revert the last edit made to the file at `path`\n\n" +
			"Notes for using the `str_replace` command:\n" +
			"* The `old_str` parameter should match EXACTLY one or more consecutive lines from the original file. Be mindful of whitespaces!\n" +
			"* If the `old_str` parameter is not unique in the file, the replacement will not be performed. Make sure to include enough context in `old_str` to make it unique\n" +
			"* The `new_str` parameter should contain the edited lines that should replace the `old_str`",
		Parameters: map[string]any{"type": "object", "required": []string{"command", "path"}, "properties": map[string]any{
			"command": map[string]any{"type": "string", "enum": []string{"view", "create", "str_replace", "insert", "undo_edit"},
				"description": "The commands to run. Allowed options are: `view`, `create`, `str_replace`, `insert`, `undo_edit`."},
			"path":      desc("Absolute path to file or directory, e.g. `/workspace/file.py` or `/workspace`."),
			"file_text": desc("Required parameter of `create` command, with the content of the file to be created."),
			"old_str":   desc("Required parameter of `str_replace` command containing the string in `path` to replace."),
			"new_str":   desc("Optional parameter of `str_replace` command containing the new string (if not given, no string will be added). Required parameter of `insert` command containing the string to insert."),
			"insert_line": map[string]any{"type": "integer",
				"description": "Required parameter of `insert` command. The `new_str` will be inserted AFTER the line `insert_line` of `path`."},
			"view_range": map[string]any{"type": "array", "items": map[string]any{"type": "integer"},
				"description": "Optional parameter of `view` command when `path` points to a file. If none is given, the full file is shown. If provided, the file will be shown in the indicated line number range, e.g. [11, 12] will show lines 11 and 12. Indexing at 1 to start. Setting `[start_line, -1]` shows all lines from `start_line` to the end of the file."},
		}},
	}}
}

// editorArgs renders a file action as the str_replace_editor call that
// asks for it.
func editorArgs(ev rawEvent) map[string]any {
	args := map[string]any{"path": ev.Path}
	switch ev.Kind {
	case "file_view":
		args["command"] = "view"
		if ev.FromLine != 0 || ev.ToLine != 0 {
			args["view_range"] = []int{max(ev.FromLine, 1), ev.ToLine}
		}
	case "file_create":
		args["command"], args["file_text"] = "create", ev.Content
	case "file_str_replace":
		args["command"], args["old_str"], args["new_str"] = "str_replace", ev.Old, ev.New
	case "file_insert":
		args["command"], args["insert_line"], args["new_str"] = "insert", ev.Line, ev.Text
	case "file_undo":
		args["command"] = "undo_edit"
	}
	return args
}

// renderFile shows a file action's result, and its masked form.
func renderFile(o rawEvent) (full, masked string) {
	full = o.Output
	if !o.OK {
		full = "ERROR: " + full
	}
	lines := strings.Split(strings.TrimSuffix(full, "\n"), "\n")
	if len(lines) <= 2 {
		return full, full
	}
	return full, fmt.Sprintf("%s\n[... %d lines masked to save context; view the file again if you need them ...]\n%s", lines[0], len(lines)-2, lines[len(lines)-1])
}

// renderPython shows a Python cell's result, and its masked form.
func renderPython(o rawEvent) (full, masked string) {
	var state string
	switch {
	case o.ExitCode == -1:
		state = "[the cell is still running: send empty code to wait for more output]"
	case o.Error != "":
		state = "[the cell ended with " + o.Error + "]"
	}
	if o.StateLost {
		state = strings.TrimSpace(state + "\n[Python was restarted: variables and imports of earlier cells are gone]")
	}
	if o.Note != "" {
		state = strings.TrimSpace(state + "\n[" + o.Note + "]")
	}
	out := o.Output
	if out != "" && !strings.HasSuffix(out, "\n") && state != "" {
		out += "\n"
	}
	full = out + state
	if full == "" {
		full = "[the cell ran and printed nothing]"
	}
	lines := strings.Split(strings.TrimSuffix(o.Output, "\n"), "\n")
	if len(lines) <= 2 {
		return full, full
	}
	return full, strings.TrimSpace(fmt.Sprintf("%s\n[... %d lines masked to save context ...]\n%s\n%s", lines[0], len(lines)-2, lines[len(lines)-1], state))
}
