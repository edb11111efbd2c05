package parse

import (
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/core/event"
	"github.com/harnessd/harnessd/core/files"
	"github.com/harnessd/harnessd/core/python"
)

// checkAction fails t if a breaks the package's promises: one of the four
// kinds as a value, InvalidAction with Reason and Guidance, and a CmdRun with a
// command unless the tool-call contract gives the empty command a meaning.
// Every test and both fuzz targets run it on every result.
func checkAction(t testing.TB, a event.Payload, fromText bool) {
	t.Helper()
	switch v := a.(type) {
	case event.CmdRun:
		if fromText && strings.TrimSpace(v.Command) == "" {
			t.Fatalf("Text gave CmdRun with an empty command: %#v", v)
		}
		if v.Command == "" && v.IsInput {
			t.Fatalf("CmdRun with is_input and an empty command: %#v", v)
		}
		if v.TimeoutS < 0 || v.TimeoutS > MaxTimeout.Seconds() {
			t.Fatalf("CmdRun timeout out of range: %#v", v)
		}
		if fromText && (v.IsInput || v.Reset || v.TimeoutS != 0) {
			t.Fatalf("Text set a tool-call-only field: %#v", v)
		}
	case event.Finish, event.Message:
	case files.View, files.Create, files.StrReplace, files.Insert, files.Undo:
		if fromText {
			t.Fatalf("Text gave a file action: %#v", v)
		}
		if err := v.(interface{ Validate() error }).Validate(); err != nil {
			t.Fatalf("file action that does not validate: %#v: %v", v, err)
		}
	case python.Run:
		if fromText {
			t.Fatalf("Text gave a python_run: %#v", v)
		}
		if err := v.Validate(); err != nil || v.IsInput || v.Reset || v.TimeoutS != 0 {
			t.Fatalf("python_run that does not validate or sets what the tool has not: %#v: %v", v, err)
		}
	case event.InvalidAction:
		if v.Reason == "" || v.Guidance == "" {
			t.Fatalf("InvalidAction without reason or guidance: %#v", v)
		}
		if v.Reason == reasonInternal {
			t.Fatalf("parser panicked: %s", v.Guidance)
		}
	default:
		t.Fatalf("not one of the four action kinds: %#v (%T)", a, a)
	}
}

// want describes an expected result; for InvalidAction, guidance lists
// substrings the guidance must contain.
type want struct {
	action   event.Payload
	guidance []string
}

func check(t *testing.T, got event.Payload, w want, fromText bool) {
	t.Helper()
	checkAction(t, got, fromText)
	if m, ok := w.action.(event.InvalidAction); ok {
		gm, ok := got.(event.InvalidAction)
		if !ok {
			t.Fatalf("got %#v, want InvalidAction %q", got, m.Reason)
		}
		if gm.Reason != m.Reason {
			t.Fatalf("reason = %q, want %q\nguidance: %s", gm.Reason, m.Reason, gm.Guidance)
		}
		for _, s := range w.guidance {
			if !strings.Contains(gm.Guidance, s) {
				t.Errorf("guidance lacks %q:\n%s", s, gm.Guidance)
			}
		}
		return
	}
	if got != w.action {
		t.Fatalf("got  %#v\nwant %#v", got, w.action)
	}
}

func run(cmd string) want  { return want{action: event.CmdRun{Command: cmd}} }
func msg(text string) want { return want{action: event.Message{Text: text}} }
func fin(m string) want    { return want{action: event.Finish{Message: m}} }
func bad(reason string, guidance ...string) want {
	return want{action: event.InvalidAction{Reason: reason}, guidance: guidance}
}

func TestText(t *testing.T) {
	tests := []struct {
		name  string
		reply string
		want  want
	}{
		// The reference harness's outcomes.
		{"closed bash block", "```bash\nls -la /tmp/x\n```", run("ls -la /tmp/x")},
		{"reference unclosed inline", "Okay, let me check: ```bash ls -la /tmp/x",
			bad("code block fence not closed", "close", "```bash\nls -la /tmp/x\n```")},
		{"plain text", "The directory is empty, nothing to do.", msg("The directory is empty, nothing to do.")},
		{"she bash", "```she bash\nls -la\n```", run("ls -la")},
		{"reference resend one line", "Sorry. Resending: ```bash ls -la /tmp/harness_workspace ```", run("ls -la /tmp/harness_workspace")},

		// Labels.
		{"sh", "```sh\npwd\n```", run("pwd")},
		{"shell", "```shell\npwd\n```", run("pwd")},
		{"zsh", "```zsh\npwd\n```", run("pwd")},
		{"unlabelled", "```\npwd\n```", run("pwd")},
		{"Bash capitalised", "```Bash\npwd\n```", run("pwd")},
		{"BASH", "```BASH\npwd\n```", run("pwd")},
		{"bassh", "```bassh\npwd\n```", run("pwd")},
		{"bsah transposed", "```bsah\npwd\n```", run("pwd")},
		{"shel", "```shel\npwd\n```", run("pwd")},
		{"conosle", "```conosle\npwd\n```", run("pwd")},
		{"words before the shell name", "```my bash\npwd\n```", run("pwd")},
		{"pandoc braces", "```{.bash}\npwd\n```", run("pwd")},
		{"attribute ignored", "```bash {linenos=true}\npwd\n```", run("pwd")},
		{"python shown", "Here is the fix:\n```python\nprint(1)\n```", msg("Here is the fix:\n```python\nprint(1)\n```")},
		{"json shown", "```json\n{\"a\": 1}\n```", msg("```json\n{\"a\": 1}\n```")},
		{"haskell hs is not sh", "```hs\nmain = print 1\n```", msg("```hs\nmain = print 1\n```")},
		{"unknown label shown", "```pyhton\nprint(1)\n```", msg("```pyhton\nprint(1)\n```")},
		{"python shown then bash run", "```python\nprint(1)\n```\nNow:\n```bash\npython3 x.py\n```", run("python3 x.py")},

		// Fences.
		{"tilde fence", "~~~bash\nls\n~~~", run("ls")},
		{"four backticks hold three", "````bash\necho '```'\n```\n````", run("echo '```'\n```")},
		{"short closer does not close", "````bash\nls\n```", bad("code block fence not closed", "````")},
		{"longer closer closes", "```bash\nls\n`````", run("ls")},
		{"tilde does not close backticks", "```bash\nls\n~~~", bad("code block fence not closed")},
		{"mid-line opener", "Let me check: ```bash\nls -la\n```", run("ls -la")},
		{"indented in a list", "1. Build:\n   ```bash\n   cd x\n     make\n   ```", run("cd x\n  make")},
		{"crlf", "```bash\r\nls\r\n```\r\n", run("ls")},
		{"heredoc with fences", "```bash\ncat > README.md <<'EOF'\n# T\n```\ncode\n```\nEOF\n```", run("cat > README.md <<'EOF'\n# T\n```\ncode\n```\nEOF")},
		{"heredoc dash tabs", "```bash\ncat <<-END\n\t```\n\tEND\n```", run("cat <<-END\n\t```\n\tEND")},
		{"heredoc never ended falls back", "```bash\ncat <<EOF\nhi\n```", run("cat <<EOF\nhi")},
		{"quoted heredoc marker is not one", "```bash\necho \"<<EOF\"\n```", run("echo \"<<EOF\"")},
		{"heredoc marker in a comment", "```bash\necho hi # <<EOF\n```", run("echo hi # <<EOF")},
		{"here-string is not a heredoc", "```bash\ncat <<< EOF\n```", run("cat <<< EOF")},
		{"arithmetic shift", "```bash\necho $((1<<2))\n```", run("echo $((1<<2))")},
		{"two heredocs on a line", "```bash\ncat <<A <<'B'\n```\nA\n```\nB\n```", run("cat <<A <<'B'\n```\nA\n```\nB")},
		{"nested labelled fence", "```bash\nprintf '%s\\n' x\n```python\nx\n```\n```", run("printf '%s\\n' x\n```python\nx\n```")},
		{"second opener before close", "```bash\nls\n```bash\npwd\n```", bad("code block fence not closed", "```bash\nls\n```")},
		{"one-line block on its own line", "```ls -la```", run("ls -la")},
		{"one-line mention in prose", "Run ```make clean``` later.", msg("Run ```make clean``` later.")},
		{"label mentioned", "Use ```bash``` blocks.", msg("Use ```bash``` blocks.")},
		{"inline code is prose", "Run `ls` then `pwd`.", msg("Run `ls` then `pwd`.")},
		{"backticks in inline code", "The fence is `` ``` ``.", msg("The fence is `` ``` ``.")},
		{"stray fence in prose", "The block uses ``` as delimiter.", bad("code block fence not closed")},

		// Console transcripts.
		{"console prompt and output", "```console\n$ ls\nfile1\n$ pwd\n/tmp\n```", run("ls\npwd")},
		{"console continuation", "```console\n$ for i in 1 2; do\n> echo $i\n> done\n1\n```", run("for i in 1 2; do\necho $i\ndone")},
		{"console without prompts", "```console\nls\n```", run("ls")},
		{"bash all prompted", "```bash\n$ ls\n$ pwd\n```", run("ls\npwd")},
		{"bash partly prompted kept", "```bash\necho $ HOME\n$ ls\n```", run("echo $ HOME\n$ ls")},
		{"terminal transcript", "```terminal\n$ make\n```", run("make")},

		// InvalidAction.
		{"unclosed", "Let me look:\n```bash\nls -la /tmp/x", bad("code block fence not closed", "```bash\nls -la /tmp/x\n```")},
		{"unclosed python", "```python\nprint(", bad("code block fence not closed", "```bash")},
		{"unclosed after a good block", "```bash\nls\n```\nthen\n```bash\nrm -rf x", bad("code block fence not closed")},
		{"two blocks", "```bash\nls\n```\nand\n```bash\npwd\n```", bad("more than one command block (2)", "One action per turn", "&&", "ls && pwd")},
		{"a command and the output it expects", "```bash\nls\n```\nOutput:\n```\nfile1\nfile2\n```", run("ls")},
		{"a bare block before the command", "```\nfile1\n```\n```bash\nls\n```", bad("more than one command block (2)")},
		{"two labelled blocks and output", "```bash\nls\n```\n```\nx\n```\n```sh\npwd\n```", bad("more than one command block (3)")},
		{"two multi-line blocks", "```bash\ncd x\nls\n```\n```sh\npwd\n```", bad("more than one command block (2)", "cd x\nls\npwd")},
		{"empty block", "```bash\n   \n```", bad("empty code block", "```bash\nls -la\n```")},
		{"empty unlabelled block", "```\n```", bad("empty code block")},
		{"command on fence line", "```bash ls -la\n```", bad("command on the opening fence line", "```bash\nls -la\n```")},
		{"command as label", "```ls -la\n```", bad("command on the opening fence line", "```bash\nls -la\n```")},
		{"text after label", "```bash cd /repo\nmake\n```", bad("text after the fence label", `"cd /repo"`, "```bash\nmake\n```")},
		{"console prompts only output", "```console\n$\n```", bad("empty code block")},
		{"empty reply", "", bad("empty reply", "```bash")},
		{"whitespace reply", " \n\t\r\n ", bad("empty reply")},

		// Finish.
		{"finish tag", "<finish>All tests pass.</finish>", fin("All tests pass.")},
		{"finish case", "<FINISH>done</Finish>", fin("done")},
		{"finish empty takes prose", "Fixed the bug in x.go.\n<finish></finish>", fin("Fixed the bug in x.go.")},
		{"finish self-closing", "Done.\n<finish/>", fin("Done.")},
		{"finish unclosed", "<finish>Done: fixed", fin("Done: fixed")},
		{"finish with shown command", "<finish>Verify with:\n```bash\nmake test\n```\n</finish>", fin("Verify with:\n```bash\nmake test\n```")},
		{"finish with code shown", "Done.\n```python\nx=1\n```\n<finish>ok</finish>", fin("ok")},
		{"finish in inline code is talk", "I will send `<finish>` at the end.", msg("I will send `<finish>` at the end.")},
		{"finish in a block is a command", "```bash\necho '<finish>'\n```", run("echo '<finish>'")},
		{"finished is not finish", "<finished>no</finished>", msg("<finished>no</finished>")},
		{"finish and command", "```bash\nls\n```\n<finish>done</finish>", bad("command and finish in one reply", "One action per turn")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			check(t, Text(tt.reply), tt.want, true)
		})
	}
}

func TestToolCall(t *testing.T) {
	tests := []struct {
		name string
		tool string
		args string
		want want
	}{
		{"bash", "bash", `{"command": "ls -la"}`, run("ls -la")},
		{"execute_bash", "execute_bash", `{"command": "ls", "is_input": false}`, run("ls")},
		{"run", "run", `{"command": "ls"}`, run("ls")},
		{"terminal", "terminal", `{"command": "ls"}`, run("ls")},
		{"name case and namespace", " functions.Bash ", `{"command": "ls"}`, run("ls")},
		{"all fields", "bash", `{"command": "make", "is_input": false, "timeout": 2.5, "reset": true}`,
			want{action: event.CmdRun{Command: "make", TimeoutS: 2.5, Reset: true}}},
		{"integer timeout", "bash", `{"command": "sleep 1", "timeout": 30}`, want{action: event.CmdRun{Command: "sleep 1", TimeoutS: 30}}},
		{"max timeout", "bash", `{"command": "x", "timeout": 3600}`, want{action: event.CmdRun{Command: "x", TimeoutS: 3600}}},
		{"null fields are absent", "bash", `{"command": "ls", "timeout": null, "is_input": null}`, run("ls")},
		{"keys pass through", "bash", `{"command": "C-c", "is_input": true}`, want{action: event.CmdRun{Command: "C-c", IsInput: true}}},
		{"input newline kept", "bash", `{"command": "\n", "is_input": true}`, want{action: event.CmdRun{Command: "\n", IsInput: true}}},
		{"empty command polls", "bash", `{"command": ""}`, run("")},
		{"blank command polls", "bash", `{"command": "  \n"}`, run("")},
		{"reset only", "bash", `{"command": "", "reset": true}`, want{action: event.CmdRun{Reset: true}}},
		{"shell group is a command", "bash", `{"command": "{ ls; pwd; }"}`, run("{ ls; pwd; }")},
		{"test command is a command", "bash", `{"command": "[ -f x ] && cat x"}`, run("[ -f x ] && cat x")},
		{"html chars", "bash", `{"command": "a < b && c > d"}`, run("a < b && c > d")},

		{"is_input string", "bash", `{"command": "ls", "is_input": "true"}`,
			bad(`"is_input" must be true or false, not "true"`, `{"command": "ls", "is_input": true}`)},
		{"reset number", "bash", `{"command": "ls", "reset": 1}`, bad(`"reset" must be true or false, not 1`, `"reset": true`)},
		{"command number", "bash", `{"command": 5}`, bad(`"command" must be a string, not a number`, `"command"`)},
		{"command argv", "bash", `{"command": ["ls", "-la"]}`, bad(`"command" must be a string, not an array`, `{"command": "ls -la", "is_input": false}`)},
		{"timeout string", "bash", `{"command": "ls", "timeout": "30"}`, bad(`"timeout" must be a number of seconds, not "30"`, `"timeout": 30`)},
		{"timeout negative", "bash", `{"command": "ls", "timeout": -1}`, bad(`"timeout" must not be negative (got -1)`, `{"command": "ls", "is_input": false}`)},
		{"timeout huge", "bash", `{"command": "ls", "timeout": 1e300}`, bad(`"timeout" is in seconds and at most 3600 (got 1e+300)`, "more output", `{"command": "ls", "is_input": false}`)},
		{"timeout milliseconds", "bash", `{"command": "ls", "timeout": 30000}`, bad(`"timeout" is in seconds and at most 3600 (got 30000)`)},
		{"timeout overflow", "bash", `{"command": "ls", "timeout": 1e400}`, bad(`"timeout" must be a number of seconds, not 1e400`)},
		{"timeout NaN", "bash", `{"command": "ls", "timeout": NaN}`, bad("arguments are not valid JSON: invalid character 'N' looking for beginning of value (at byte 30 of 33)", "one JSON object", bashExample)},
		{"missing command", "bash", `{"is_input": true}`, bad(`missing "command"`, `{"command": "ls -la", "is_input": false}`)},
		{"null command", "bash", `{"command": null}`, bad(`missing "command"`)},
		{"no arguments", "bash", ``, bad(`missing "command"`)},
		{"unknown field", "bash", `{"command": "ls", "cwd": "/tmp"}`, bad(`unknown field "cwd"`, "command (string, required)", `{"command": "ls", "is_input": false}`)},
		{"case of a field", "bash", `{"Command": "ls"}`, bad(`unknown field "Command" (did you mean "command"?); missing "command"`, `{"command": "ls", "is_input": false}`)},
		{"timeout_s", "bash", `{"command": "ls", "timeout_s": 5}`, bad(`unknown field "timeout_s" (did you mean "timeout"?)`, `"timeout": 5`)},
		{"duplicate field", "bash", `{"command": "ls", "command": "rm -rf /"}`, bad(`field "command" appears twice`)},
		{"trailing data", "bash", `{"command": "ls"} x`, bad("trailing data after the JSON arguments", "one tool call per turn")},
		{"two objects", "bash", `{"command": "ls"}{"command": "pwd"}`, bad("trailing data after the JSON arguments")},
		{"cut off", "bash", `{"command": "ls`, bad("arguments are not valid JSON: it ends too early", "cut off")},
		{"raw newline", "bash", "{\"command\": \"cd x\nls\"}", bad("arguments are not valid JSON: invalid character '\\n' in string literal (at byte 18 of 22)", `\n`, `{"command": "cd x\nls", "is_input": false}`)},
		{"trailing comma", "bash", `{"command": "ls",}`, bad("arguments are not valid JSON: invalid character '}' looking for beginning of object key string (at byte 18 of 18)", "no comma", `{"command": "ls", "is_input": false}`)},
		{"python dict", "bash", `{'command': 'ls', 'is_input': False}`,
			bad("arguments are a Python literal, not JSON", "double quotes", "true/false/null", `{"command": "ls", "is_input": false}`)},
		{"python None and escapes", "bash", `{'command': 'echo \'hi\'', 'timeout': None}`,
			bad("arguments are a Python literal, not JSON", `{"command": "echo 'hi'", "is_input": false}`)},
		{"python triple quotes", "bash", "{'command': '''ls -la'''}", bad("arguments are a Python literal, not JSON", `{"command": "ls -la", "is_input": false}`)},
		{"python raw string", "bash", `{'command': r'grep "\d" x'}`, bad("arguments are a Python literal, not JSON", `{"command": "grep \"\\d\" x", "is_input": false}`)},
		{"python dict call", "bash", `dict(command='ls', timeout=5)`, bad("arguments are a Python literal, not JSON", `{"command": "ls", "is_input": false, "timeout": 5}`)},
		{"python mixed quotes", "bash", `{"command": "ls", "reset": True}`, bad("arguments are a Python literal, not JSON", `"reset": true`)},
		// OpenAI's function.arguments is a string of JSON text; passed through
		// as-is it is one level of string, which is accepted once.
		{"arguments as OpenAI sends them", "bash", `"{\"command\": \"ls\"}"`, run("ls")},
		{"empty arguments string", "finish", `""`, want{action: event.Finish{}}},
		{"double encoded", "bash", `"\"{\\\"command\\\": \\\"ls\\\"}\""`, bad("arguments are a JSON string, not an object", `{"command": "ls", "is_input": false}`)},
		{"array", "bash", `["ls"]`, bad("arguments are not a JSON object")},
		{"null", "bash", `null`, bad("arguments are not a JSON object")},
		{"nested arguments", "bash", `{"command": "{\"command\": \"ls\", \"is_input\": false}"}`, bad("command holds the arguments object, not a shell command", `{"command": "ls", "is_input": false}`)},
		{"nested python arguments", "bash", `{"command": "{'command': 'pwd'}"}`, bad("command holds the arguments object, not a shell command", `{"command": "pwd", "is_input": false}`)},
		{"argv in string", "bash", `{"command": "['grep', '-r', 'a b', '.']"}`, bad("command is a list, not a shell command string", `{"command": "grep -r 'a b' .", "is_input": false}`)},
		{"reset with input", "bash", `{"command": "C-c", "is_input": true, "reset": true}`, bad("reset cannot be combined with is_input")},
		{"input empty", "bash", `{"command": "", "is_input": true}`, bad("is_input with an empty command", `"C-c"`)},

		{"finish", "finish", `{"message": "done"}`, fin("done")},
		{"finish no args", "finish", ``, fin("")},
		{"finish empty object", "finish", `{}`, fin("")},
		{"finish unknown field", "finish", `{"message": "ok", "task_completed": true}`, bad(`unknown field "task_completed"`, `{"message": "ok"}`)},
		{"finish wrong type", "finish", `{"message": 3}`, bad(`"message" must be a string, not a number`, finishExample)},
		{"finish python", "finish", `{'message': 'ok'}`, bad("arguments are a Python literal, not JSON", `{"message": "ok"}`)},
		{"message", "message", `{"text": "hello"}`, msg("hello")},
		{"message missing", "message", `{}`, bad(`missing "text"`, messageExample)},
		{"think", "think", `{"thought": "try ls first"}`, msg("try ls first")},

		{"unknown tool", "execute_jupyter_cell", `{}`, bad(`unknown tool "execute_jupyter_cell"`, "bash, execute_bash, terminal, run, str_replace_editor, execute_ipython_cell, finish, message, think")},
		{"no name", "", `{"command": "ls"}`, bad("tool call has no name", bashExample)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			check(t, ToolCall(tt.tool, []byte(tt.args)), tt.want, false)
		})
	}
}

// TestGuidanceShort keeps guidance a few lines, whatever the model sent:
// a huge command is not echoed back.
func TestGuidanceShort(t *testing.T) {
	big := strings.Repeat("echo x; ", 10000)
	for _, a := range []event.Payload{
		Text("```bash\n" + big),
		Text("```bash\n" + big + "\n```\n```bash\nls\n```"),
		ToolCall("bash", []byte(`{"command": "`+big+`", "is_input": "no"}`)),
		ToolCall("bash", []byte(`{'command': '`+big+`'}`)),
		ToolCall(strings.Repeat("x", 10000), nil),
	} {
		m, ok := a.(event.InvalidAction)
		if !ok {
			t.Fatalf("got %T, want InvalidAction", a)
		}
		if len(m.Guidance) > 1000 || len(m.Reason) > 200 {
			t.Errorf("guidance %d bytes, reason %d bytes:\n%.300s", len(m.Guidance), len(m.Reason), m.Guidance)
		}
	}
}

func TestEditDistance(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		d    int
	}{
		{"bash", "bash", 0}, {"bassh", "bash", 1}, {"bsah", "bash", 1}, {"she", "sh", 1},
		{"ls", "sh", 2}, {"", "abc", 3}, {"shel", "shell", 1}, {"ca", "abc", 3},
	} {
		if d := editDistance(tt.a, tt.b); d != tt.d {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tt.a, tt.b, d, tt.d)
		}
	}
}

func TestPyToJSON(t *testing.T) {
	for _, tt := range []struct {
		in, out string
		py, ok  bool
	}{
		{`{'a': True, 'b': None, 'c': (1, 2,),}`, `{"a": true, "b": null, "c": [1, 2]}`, true, true},
		{`{"a": 1,}`, `{"a": 1}`, false, true},
		{`{'a': 'it\'s'}`, `{"a": "it's"}`, true, true},
		{`{'a': os.system('x')}`, ``, true, false},
		{`[1,,2]`, ``, false, false},
	} {
		out, py, ok := pyToJSON(tt.in)
		if ok != tt.ok || py != tt.py || (ok && out != tt.out) {
			t.Errorf("pyToJSON(%q) = %q, %v, %v; want %q, %v, %v", tt.in, out, py, ok, tt.out, tt.py, tt.ok)
		}
	}
}

// TestLargeInputs feeds replies built to hit the parser's slow paths; each
// must finish quickly, since a model (or a hostile agent plugin) controls
// the input. The budget is generous for -race; quadratic behaviour on
// these sizes would take minutes.
func TestLargeInputs(t *testing.T) {
	const n = 20000
	inputs := map[string]string{
		"unterminated heredocs": strings.Repeat("```bash\ncat <<EOF\nx\n```\n", n),
		"unmatched backticks":   strings.Repeat("` `` ", n) + "\n",
		"finish in code":        strings.Repeat("`<finish>` ", n),
		"open finish tags":      strings.Repeat("<finish", n),
		"stray fences":          strings.Repeat("a ```b``` c ", n),
		"long label":            "```" + strings.Repeat("b", 1<<20) + "\nls\n```",
		"nested openers":        "```bash\n" + strings.Repeat("```x\n", n),
	}
	for name, in := range inputs {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			checkAction(t, Text(in), true)
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
	args := map[string]string{
		"trailing commas": "[" + strings.Repeat("[1,],", n) + "]",
		"unknown fields":  "{" + strings.Repeat(`"x":1,`, n) + `"command":"ls"}`,
		"python strings":  "{" + strings.Repeat(`'x': 'y', `, n) + "}",
		"deep nesting":    strings.Repeat("[", n) + strings.Repeat("]", n),
	}
	for name, in := range args {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			a := ToolCall("bash", []byte(in))
			checkAction(t, a, false)
			if m, ok := a.(event.InvalidAction); ok && len(m.Reason) > 300 {
				t.Errorf("reason is %d bytes", len(m.Reason))
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
}

// TestRecover checks the last line of defence: a panic inside the parser
// becomes a InvalidAction, never a crash of the daemon.
func TestRecover(t *testing.T) {
	a := func() (a event.Payload) {
		defer recoverAction(&a)
		var m map[string]int
		m["x"]++ // a nil map write panics
		return nil
	}()
	m, ok := a.(event.InvalidAction)
	if !ok || m.Reason != reasonInternal || m.Guidance == "" {
		t.Fatalf("got %#v", a)
	}
}

// TestEditorToolCall: OpenHands' str_replace_editor maps to the file
// actions, strictly, with guidance that shows the corrected call.
func TestEditorToolCall(t *testing.T) {
	const tool = "str_replace_editor"
	for _, c := range []struct {
		args string
		w    want
	}{
		{`{"command": "view", "path": "/workspace"}`, want{action: files.View{Path: "/workspace"}}},
		{`{"command": "view", "path": "a.py", "view_range": [3, -1]}`, want{action: files.View{Path: "a.py", FromLine: 3, ToLine: -1}}},
		{`{"command": "create", "path": "/w/a.py", "file_text": "x = 1\n"}`, want{action: files.Create{Path: "/w/a.py", Content: "x = 1\n"}}},
		{`{"command": "str_replace", "path": "a", "old_str": "x", "new_str": "y"}`, want{action: files.StrReplace{Path: "a", Old: "x", New: "y"}}},
		{`{"command": "str_replace", "path": "a", "old_str": "x"}`, want{action: files.StrReplace{Path: "a", Old: "x"}}},
		{`{"command": "insert", "path": "a", "insert_line": 0, "new_str": "y"}`, want{action: files.Insert{Path: "a", Line: 0, Text: "y"}}},
		{`{"command": "undo_edit", "path": "a", "view_range": null}`, want{action: files.Undo{Path: "a"}}},
		{`{"command": "delete", "path": "a"}`, want{action: event.InvalidAction{Reason: `unknown command "delete"`}, guidance: []string{"view, create, str_replace, insert, undo_edit"}}},
		{`{"command": "view", "path": "a", "file_text": "x"}`, want{action: event.InvalidAction{Reason: `"file_text" does not apply to view`}, guidance: []string{`{"command": "view", "path": "a"}`}}},
		{`{"command": "insert", "path": "a", "insert_line": "3", "new_str": "y"}`, want{action: event.InvalidAction{Reason: `"insert_line" must be a whole number`}, guidance: []string{"insert_line (integer)"}}},
		{`{"command": "insert", "path": "a", "new_str": "y"}`, want{action: event.InvalidAction{Reason: `insert needs "insert_line"`}, guidance: []string{`"insert_line": 0`}}},
		{`{"command": "view", "path": "a", "view_range": [5, 2]}`, want{action: event.InvalidAction{Reason: "view_range [5, 2]"}, guidance: []string{"[1, 40]"}}},
		{`{"command": "str_replace", "path": "a", "old_str": "", "new_str": "y"}`, want{action: event.InvalidAction{Reason: "str_replace: old is empty"}, guidance: []string{`"old_str": ""`}}},
		{`{"command": "create", "path": "a"}`, want{action: event.InvalidAction{Reason: `create needs "file_text"`}, guidance: []string{`"file_text": "<the whole file>"`}}},
		{`{"cmd": "view", "path": "a"}`, want{action: event.InvalidAction{Reason: `unknown field "cmd"`}, guidance: []string{"For example"}}},
		{`{"command": "view"}`, want{action: event.InvalidAction{Reason: `missing "path"`}, guidance: []string{"path (string)"}}},
		{`{'command': 'view', 'path': 'a'}`, want{action: event.InvalidAction{Reason: "arguments are a Python literal"}, guidance: []string{`{"command": "view", "path": "a"}`}}},
	} {
		got := ToolCall(tool, []byte(c.args))
		checkAction(t, got, false)
		m, invalid := c.w.action.(event.InvalidAction)
		gm, gotInvalid := got.(event.InvalidAction)
		switch {
		case invalid != gotInvalid:
			t.Errorf("%s: got %#v, want %#v", c.args, got, c.w.action)
		case !invalid && got != c.w.action:
			t.Errorf("%s: got %#v, want %#v", c.args, got, c.w.action)
		case invalid && !strings.HasPrefix(gm.Reason, m.Reason):
			t.Errorf("%s: reason %q, want it to start %q", c.args, gm.Reason, m.Reason)
		}
		for _, s := range c.w.guidance {
			if !strings.Contains(gm.Guidance, s) {
				t.Errorf("%s: guidance lacks %q:\n%s", c.args, s, gm.Guidance)
			}
		}
	}
}
