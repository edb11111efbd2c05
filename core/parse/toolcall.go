package parse

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/harnessd/harnessd/core/event"
	"github.com/harnessd/harnessd/core/python"
)

// Tool names ToolCall accepts. The shell tool has several names because
// models arrive trained on different harnesses: bash (Anthropic style),
// execute_bash (OpenHands CodeAct), terminal (OpenHands SDK), run.
var (
	bashTools  = []string{"bash", "execute_bash", "terminal", "run"}
	otherTools = []string{"finish", "message", "think"}
	// pythonTools run a cell in the session's persistent Python:
	// OpenHands CodeAct's IPython tool.
	pythonTools = []string{"execute_ipython_cell"}
)

// Examples shown in guidance: the correct form of each tool's arguments.
const (
	bashExample    = `{"command": "ls -la", "is_input": false}`
	finishExample  = `{"message": "what was done and the result"}`
	messageExample = `{"text": "what you want to say"}`
	thinkExample   = `{"thought": "your reasoning"}`
	pythonExample  = `{"code": "import math\nmath.sqrt(2)"}`
)

// ToolCall parses an OpenAI-style tool call: the function name and its JSON
// arguments string, as the model sent them. It never panics and never
// returns nil.
//
// The arguments are decoded strictly (exact field names, exact JSON types,
// one object and nothing after it): a loosely read call could run a command
// the model did not mean, while a InvalidAction that shows the correct JSON costs
// one turn. See the package documentation for each tool's fields.
func ToolCall(name string, arguments []byte) (a event.Payload) {
	defer recoverAction(&a)
	arguments = unwrapArguments(arguments)
	n := strings.ToLower(strings.TrimSpace(name))
	// Some servers leak the namespace of the function ("functions.bash").
	n = strings.TrimPrefix(n, "functions.")
	switch {
	case n == "":
		return event.InvalidAction{
			Reason:   "tool call has no name",
			Guidance: "Every tool call needs a function name. To run a command, call bash with " + bashExample + ".",
		}
	case contains(bashTools, n):
		return bashCall(n, arguments)
	case contains(editorTools, n):
		return editorCall(n, arguments)
	case contains(pythonTools, n):
		a := simpleCall(n, arguments, "code", true, pythonExample, func(s string) event.Payload { return python.Run{Code: s} })
		if r, ok := a.(python.Run); ok {
			if err := r.Validate(); err != nil {
				return event.InvalidAction{Reason: "code: " + err.Error(), Guidance: "Send one cell of Python source as a string, for example:\n" + pythonExample}
			}
		}
		return a
	case n == "finish":
		return simpleCall(n, arguments, "message", false, finishExample, func(s string) event.Payload { return event.Finish{Message: s} })
	case n == "message":
		return simpleCall(n, arguments, "text", true, messageExample, func(s string) event.Payload { return event.Message{Text: s} })
	case n == "think":
		return simpleCall(n, arguments, "thought", true, thinkExample, func(s string) event.Payload { return event.Message{Text: s} })
	}
	return event.InvalidAction{
		Reason: fmt.Sprintf("unknown tool %q", shorten(strings.TrimSpace(name), 60)),
		Guidance: "There is no tool by that name. The tools are: " + strings.Join(append(append(append(append([]string{}, bashTools...), editorTools...), pythonTools...), otherTools...), ", ") +
			". To run a shell command, call bash with " + bashExample + "; to end the task, call finish with " + finishExample + ".",
	}
}

// unwrapArguments accepts arguments in the form OpenAI's chat completions
// carry them: function.arguments is a string holding the JSON text, and a
// client that passes it through as-is sends a JSON string. One such level
// is unwrapped; a string inside that string is the model encoding its
// arguments twice, which object refuses with guidance.
func unwrapArguments(args []byte) []byte {
	t := bytes.TrimSpace(args)
	if len(t) == 0 || t[0] != '"' {
		return args
	}
	var inner string
	if err := json.Unmarshal(t, &inner); err != nil {
		return args
	}
	if in := strings.TrimSpace(inner); in == "" || in[0] == '{' || in[0] == '"' {
		return []byte(inner)
	}
	return args
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// member is one key and its raw value in a JSON object, in input order.
type member struct {
	key string
	raw json.RawMessage
}

// object decodes arguments as one JSON object. On failure it returns a
// InvalidAction for the named tool, whose guidance shows the corrected
// arguments when they can be derived (fix turns decodable members into the
// tool's canonical JSON).
func object(tool string, args []byte, example string, fix func([]member) string) ([]member, *event.InvalidAction) {
	trimmed := bytes.TrimSpace(args)
	if len(trimmed) == 0 {
		return nil, nil // no arguments at all: the same as {}
	}
	bad := func(reason, guidance string) ([]member, *event.InvalidAction) {
		return nil, &event.InvalidAction{Reason: reason, Guidance: guidance}
	}
	resend := func(members []member) string {
		if c := fix(members); c != "" {
			return "Resend the call to " + tool + " with these arguments:\n" + c
		}
		return "Resend the call to " + tool + " with arguments like " + example
	}

	dec := json.NewDecoder(bytes.NewReader(trimmed))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		if conv, py, ok := pyToJSON(string(trimmed)); ok && py {
			ms, _ := members(json.RawMessage(conv))
			return bad("arguments are a Python literal, not JSON",
				"Tool arguments must be JSON: double quotes around strings and keys, true/false/null instead of True/False/None. "+resend(ms))
		}
		return bad("arguments are not valid JSON: "+syntaxDetail(err, trimmed), jsonHint(err, trimmed)+resend(fixedMembers(trimmed)))
	}
	if rest := bytes.TrimSpace(trimmed[dec.InputOffset():]); len(rest) > 0 {
		ms, _ := members(raw)
		return bad("trailing data after the JSON arguments",
			"Send exactly one JSON object per call, with nothing after it; make one tool call per turn. "+resend(ms))
	}
	switch raw[0] {
	case '{':
	case '"':
		// A JSON string holding the JSON: the arguments were encoded twice.
		var inner string
		if json.Unmarshal(raw, &inner) == nil {
			if ms, err := members(json.RawMessage(strings.TrimSpace(inner))); err == nil {
				return bad("arguments are a JSON string, not an object",
					"The arguments were encoded twice: send the object itself, not a string containing it. "+resend(ms))
			}
		}
		fallthrough
	default:
		return bad("arguments are not a JSON object", "Send the arguments as one JSON object of named fields. "+resend(nil))
	}
	ms, err := members(raw)
	if err != nil {
		return bad(err.Error(), "Each field may appear once. "+resend(ms))
	}
	return ms, nil
}

// members splits a JSON object into its members, rejecting duplicate keys
// (encoding/json would silently keep the last one).
func members(raw json.RawMessage) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, errors.New("arguments are not a JSON object")
	}
	var ms []member
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return ms, errors.New("arguments are not a JSON object")
		}
		key, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return ms, errors.New("arguments are not a JSON object")
		}
		if seen[key] {
			return ms, fmt.Errorf("field %q appears twice", shorten(key, 40))
		}
		seen[key] = true
		ms = append(ms, member{key, v})
	}
	return ms, nil
}

// bashArgs are the shell tool's arguments as decoded so far; nil means
// absent (or null).
type bashArgs struct {
	command *string
	isInput *bool
	timeout *float64
	reset   *bool
}

func bashCall(tool string, args []byte) event.Payload {
	ms, m := object(tool, args, bashExample, func(ms []member) string {
		b, _ := decodeBash(ms, true)
		return b.canonical()
	})
	if m != nil {
		return *m
	}
	b, problems := decodeBash(ms, false)
	if len(problems) > 0 {
		// Guidance shows what the model plausibly meant ("true" as true),
		// so the correction is concrete.
		b, _ = decodeBash(ms, true)
		g := "The " + tool + " tool takes only: command (string, required), is_input (boolean), " +
			"timeout (number of seconds, 0 to " + fmt.Sprint(MaxTimeout.Seconds()) + "), reset (boolean). "
		if b.timeout != nil && *b.timeout > MaxTimeout.Seconds() {
			g += "For a long job, run it and ask for more output later with an empty command. "
			b.timeout = nil
		}
		if b.timeout != nil && *b.timeout < 0 {
			b.timeout = nil
		}
		if c := b.canonical(); c != "" {
			g += "Resend as:\n" + c
		} else {
			g += "For example:\n" + bashExample
		}
		return event.InvalidAction{Reason: joinProblems(problems), Guidance: g}
	}

	cmd := *b.command
	isInput := b.isInput != nil && *b.isInput
	reset := b.reset != nil && *b.reset
	if !isInput && strings.TrimSpace(cmd) == "" {
		cmd = "" // "show more output" (or reset only): one spelling of empty
	}
	if inner, ok := nestedArgs(cmd); ok {
		return event.InvalidAction{
			Reason: "command holds the arguments object, not a shell command",
			Guidance: "The command field must be the shell command itself. Resend as:\n" +
				orExample(inner.canonical(), bashExample),
		}
	}
	if argv, ok := argvList(cmd); ok {
		c := argvCmd(argv)
		return event.InvalidAction{
			Reason: "command is a list, not a shell command string",
			Guidance: "The command field is one string, as typed at a shell prompt. Resend as:\n" +
				orExample(bashArgs{command: &c, isInput: b.isInput}.canonical(), bashExample),
		}
	}
	switch {
	case isInput && reset:
		return event.InvalidAction{
			Reason: "reset cannot be combined with is_input",
			Guidance: `reset rebuilds the shell; is_input types into the program that is running. Send one of them, e.g. ` +
				`{"command": "C-c", "is_input": true} to interrupt, or {"command": "", "reset": true} to rebuild the shell.`,
		}
	case isInput && cmd == "":
		return event.InvalidAction{
			Reason: "is_input with an empty command",
			Guidance: `With is_input true, command is the text or keys to send to the running program, e.g. ` +
				`{"command": "C-c", "is_input": true} to interrupt it, or {"command": "y", "is_input": true} to answer a prompt. ` +
				`To just see more output, send {"command": "", "is_input": false}.`,
		}
	}
	var timeout float64
	if b.timeout != nil {
		timeout = *b.timeout
	}
	return event.CmdRun{Command: cmd, IsInput: isInput, TimeoutS: timeout, Reset: reset}
}

// decodeBash reads the shell tool's members. In lenient mode (used only to
// write guidance) it coerces what a model plausibly meant ("true" for true,
// "30" for 30, ["ls", "-la"] for "ls -la") and reports no problems; the
// result is never run.
func decodeBash(ms []member, lenient bool) (bashArgs, []string) {
	var b bashArgs
	var problems []string
	for _, m := range ms {
		key := m.key
		if lenient {
			// "Command", "timeout_s": show them under the right name.
			if k, ok := suggestField(key, bashFields); ok && k != key {
				if hasKey(ms, k) {
					continue // the real field is there too; it wins
				}
				key = k
			}
		}
		switch key {
		case "command":
			if isNull(m.raw) {
				continue
			}
			var s string
			if json.Unmarshal(m.raw, &s) == nil {
				b.command = &s
			} else if lenient {
				if argv, ok := stringList(m.raw); ok {
					c := argvCmd(argv)
					b.command = &c
				}
			} else {
				problems = append(problems, `"command" must be a string, not `+jsonKind(m.raw))
			}
		case "is_input", "reset":
			if isNull(m.raw) {
				continue
			}
			v, ok := boolValue(m.raw, lenient)
			if !ok && !lenient {
				problems = append(problems, fmt.Sprintf("%q must be true or false, not %s", key, jsonText(m.raw)))
				continue
			}
			if ok && key == "is_input" {
				b.isInput = &v
			} else if ok {
				b.reset = &v
			}
		case "timeout":
			if isNull(m.raw) {
				continue
			}
			v, ok := numberValue(m.raw, lenient)
			switch {
			case !ok && !lenient:
				problems = append(problems, `"timeout" must be a number of seconds, not `+jsonText(m.raw))
			case !ok:
			case v < 0:
				b.timeout = &v
				problems = append(problems, fmt.Sprintf(`"timeout" must not be negative (got %v)`, v))
			case v > MaxTimeout.Seconds():
				b.timeout = &v
				problems = append(problems, fmt.Sprintf(`"timeout" is in seconds and at most %v (got %v)`, MaxTimeout.Seconds(), v))
			default:
				b.timeout = &v
			}
		default:
			problems = append(problems, unknownField(m.key, bashFields))
		}
	}
	if b.command == nil && !lenient && !hasKey(ms, "command") {
		problems = append(problems, `missing "command"`)
	}
	if lenient {
		problems = nil
	}
	return b, problems
}

// canonical renders the arguments as the JSON a model should send, or ""
// without a command to show. A command too long to echo back is replaced by
// a placeholder: guidance stays short and the model still has its own text.
func (b bashArgs) canonical() string {
	if b.command == nil {
		return ""
	}
	cmd := *b.command
	if len(cmd) > 300 {
		cmd = "<your command>"
	}
	var sb strings.Builder
	sb.WriteString(`{"command": ` + jsonString(cmd))
	sb.WriteString(fmt.Sprintf(`, "is_input": %v`, b.isInput != nil && *b.isInput))
	if b.timeout != nil && *b.timeout >= 0 && *b.timeout <= MaxTimeout.Seconds() {
		sb.WriteString(`, "timeout": ` + formatNumber(*b.timeout))
	}
	if b.reset != nil && *b.reset {
		sb.WriteString(`, "reset": true`)
	}
	sb.WriteString("}")
	return sb.String()
}

// simpleCall decodes the tools whose arguments are one string field.
func simpleCall(tool string, args []byte, field string, required bool, example string, make func(string) event.Payload) event.Payload {
	render := func(ms []member) string {
		for _, m := range ms {
			var s string
			if m.key == field && json.Unmarshal(m.raw, &s) == nil && len(s) <= 300 {
				return "{" + jsonString(field) + ": " + jsonString(s) + "}"
			}
		}
		return ""
	}
	ms, m := object(tool, args, example, render)
	if m != nil {
		return *m
	}
	var problems []string
	var value *string
	for _, m := range ms {
		if m.key != field {
			problems = append(problems, unknownField(m.key, []string{field}))
			continue
		}
		if isNull(m.raw) {
			continue
		}
		var s string
		if err := json.Unmarshal(m.raw, &s); err != nil {
			problems = append(problems, fmt.Sprintf("%q must be a string, not %s", field, jsonKind(m.raw)))
			continue
		}
		value = &s
	}
	if value == nil && required && len(problems) == 0 {
		problems = append(problems, fmt.Sprintf("missing %q", field))
	}
	if len(problems) > 0 {
		return event.InvalidAction{
			Reason: joinProblems(problems),
			Guidance: "The " + tool + " tool takes one field, " + field + " (a string). Resend as:\n" +
				orExample(render(ms), example),
		}
	}
	if value == nil {
		return make("")
	}
	return make(*value)
}

// joinProblems lists the first few problems: the Reason stays a line even
// for an object with a thousand unknown fields.
func joinProblems(problems []string) string {
	if len(problems) > 3 {
		return strings.Join(problems[:3], "; ") + fmt.Sprintf("; and %d more", len(problems)-3)
	}
	return strings.Join(problems, "; ")
}

func orExample(s, example string) string {
	if s == "" {
		return example
	}
	return s
}

// unknownField names a field the tool does not take, pointing at the
// intended one when only case or spelling differ ("Command", "timeout_s").
func unknownField(key string, allowed []string) string {
	if a, ok := suggestField(key, allowed); ok {
		return fmt.Sprintf("unknown field %q (did you mean %q?)", shorten(key, 40), a)
	}
	return fmt.Sprintf("unknown field %q", shorten(key, 40))
}

// suggestField returns the allowed field key most likely stands for.
func suggestField(key string, allowed []string) (string, bool) {
	k := strings.ToLower(key)
	for _, a := range allowed {
		if k == a || strings.HasPrefix(k, a) || (len(k) <= 20 && editDistance(k, a) <= 2) {
			return a, true
		}
	}
	return "", false
}

// bashFields are the shell tool's fields, in the order guidance lists them.
var bashFields = []string{"command", "is_input", "timeout", "reset"}

func hasKey(ms []member, key string) bool {
	for _, m := range ms {
		if m.key == key && !isNull(m.raw) {
			return true
		}
	}
	return false
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

func boolValue(raw json.RawMessage, lenient bool) (bool, bool) {
	var v bool
	if json.Unmarshal(raw, &v) == nil {
		return v, true
	}
	if !lenient {
		return false, false
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		switch strings.ToLower(strings.TrimSpace(s)) {
		case "true", "yes", "1":
			return true, true
		case "false", "no", "0", "":
			return false, true
		}
	}
	var f float64
	if json.Unmarshal(raw, &f) == nil && (f == 0 || f == 1) {
		return f == 1, true
	}
	return false, false
}

func numberValue(raw json.RawMessage, lenient bool) (float64, bool) {
	var f float64
	if json.Unmarshal(raw, &f) == nil {
		return f, !math.IsNaN(f) && !math.IsInf(f, 0)
	}
	if !lenient {
		return 0, false
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		s = strings.TrimSuffix(strings.TrimSpace(strings.ToLower(s)), "s")
		if json.Unmarshal([]byte(s), &f) == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
			return f, true
		}
	}
	return 0, false
}

// jsonKind names the JSON type of raw for an error message.
func jsonKind(raw json.RawMessage) string {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 {
		return "nothing"
	}
	switch t[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// jsonText quotes a short raw value for an error message.
func jsonText(raw json.RawMessage) string {
	t := string(bytes.TrimSpace(raw))
	if len(t) > 40 {
		return jsonKind(raw)
	}
	return t
}

// jsonString encodes s as a JSON string without HTML escaping, so a command
// with < or & reads in guidance as the model wrote it.
func jsonString(s string) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return strings.TrimSuffix(buf.String(), "\n")
}

func formatNumber(f float64) string {
	b, err := json.Marshal(f)
	if err != nil {
		return "30"
	}
	return string(b)
}

// stringList decodes raw as a JSON array of strings.
func stringList(raw json.RawMessage) ([]string, bool) {
	var argv []string
	if json.Unmarshal(raw, &argv) != nil || len(argv) == 0 {
		return nil, false
	}
	return argv, true
}

// argvList reports whether a command string is really an argv list written
// as a JSON or Python list (["ls", "-la"], ['ls', '-la']), which no shell
// would run as meant. "[ -f x ]" and other test commands are not lists.
func argvList(cmd string) ([]string, bool) {
	t := strings.TrimSpace(cmd)
	if !strings.HasPrefix(t, "[") || !strings.HasSuffix(t, "]") {
		return nil, false
	}
	if argv, ok := stringList(json.RawMessage(t)); ok {
		return argv, true
	}
	if conv, _, ok := pyToJSON(t); ok {
		return stringList(json.RawMessage(conv))
	}
	return nil, false
}

// nestedArgs reports whether a command string is itself a tool-arguments
// object ({"command": "ls"} or its Python spelling) and returns it decoded.
// A shell group such as "{ ls; pwd; }" never parses as one.
func nestedArgs(cmd string) (bashArgs, bool) {
	t := strings.TrimSpace(cmd)
	if !strings.HasPrefix(t, "{") {
		return bashArgs{}, false
	}
	ms, err := members(json.RawMessage(t))
	if err != nil || !json.Valid([]byte(t)) {
		conv, _, ok := pyToJSON(t)
		if !ok {
			return bashArgs{}, false
		}
		if ms, err = members(json.RawMessage(conv)); err != nil {
			return bashArgs{}, false
		}
	}
	b, _ := decodeBash(ms, true)
	return b, b.command != nil
}

// argvCmd joins an argv list into a shell command, quoting where needed.
func argvCmd(argv []string) string {
	parts := make([]string, len(argv))
	for i, a := range argv {
		parts[i] = shellQuote(a)
	}
	return strings.Join(parts, " ")
}

func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// syntaxDetail describes a JSON decoding error briefly.
func syntaxDetail(err error, data []byte) string {
	var se *json.SyntaxError
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return "it ends too early"
	case errors.As(err, &se):
		return fmt.Sprintf("%s (at byte %d of %d)", se.Error(), se.Offset, len(data))
	}
	return err.Error()
}

// jsonHint gives the fix for the common ways models break JSON.
func jsonHint(err error, data []byte) string {
	var se *json.SyntaxError
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return "The arguments are cut off: close every string, } and ] before sending. "
	case errors.As(err, &se) && strings.Contains(se.Error(), "in string literal"):
		return `A JSON string cannot hold a raw line break or tab: write them as \n and \t. `
	}
	if _, py, ok := pyToJSON(string(data)); ok && !py {
		return "JSON allows no comma before } or ]. "
	}
	return "Tool arguments must be one JSON object. "
}

// fixedMembers tries the mechanical repairs (raw control characters inside
// strings, trailing commas) so guidance can show the corrected object.
func fixedMembers(data []byte) []member {
	fixed := escapeControls(string(data))
	if !json.Valid([]byte(fixed)) {
		conv, _, ok := pyToJSON(fixed)
		if !ok {
			return nil
		}
		fixed = conv
	}
	ms, err := members(json.RawMessage(fixed))
	if err != nil {
		return nil
	}
	return ms
}

// escapeControls escapes raw control characters inside JSON strings.
func escapeControls(s string) string {
	var sb strings.Builder
	in, esc := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case esc:
			esc = false
		case in && c == '\\':
			esc = true
		case c == '"':
			in = !in
		case in && c < 0x20:
			switch c {
			case '\n':
				sb.WriteString(`\n`)
			case '\t':
				sb.WriteString(`\t`)
			case '\r':
				sb.WriteString(`\r`)
			default:
				fmt.Fprintf(&sb, `\u%04x`, c)
			}
			continue
		}
		sb.WriteByte(c)
	}
	return sb.String()
}
