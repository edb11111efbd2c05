package parse

import (
	"strings"
	"testing"

	"github.com/harnessd/harnessd/core/event"
)

// FuzzText holds Text to its promise on any input: no panic, and one of the
// four kinds with its invariants (checkAction).
func FuzzText(f *testing.F) {
	for _, s := range []string{
		"", " ", "plain talk", "```bash\nls\n```", "```bash ls", "```she bash\nls\n```",
		"Okay, let me check: ```bash ls -la /tmp/x", "Resending: ```bash ls ```",
		"````\n```\n````", "~~~\nls\n~~~", "```bash\nls\n```\n```sh\npwd\n```",
		"```\n\n```", "```console\n$ ls\nout\n> x\n```", "```bash\ncat <<'EOF'\n```\nEOF\n```",
		"```bash\ncat <<-A <<B\n\tA\nB\n```", "<finish>x</finish>", "<finish/>", "<FINISH>",
		"`<finish>` ``` `` x", "```python\nx\n```", "``````", "``` ```", "```{.bash}\nls\n```",
		"```bash\necho $((1<<2))\n```", "\r\n```\r\nls\r\n```", "\xff```\xfe\n\x00\n```",
		"```İ\nls\n```", "<finish>```bash\nls\n```</finish>", "1. x\n    ```bash\n    ls\n    ```",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, reply string) {
		checkAction(t, Text(reply), true)
	})
}

// FuzzToolCall does the same for ToolCall, over every tool name.
func FuzzToolCall(f *testing.F) {
	for _, s := range []struct{ name, args string }{
		{"bash", `{"command": "ls"}`}, {"bash", `{"command": ""}`}, {"bash", `{"command": "", "is_input": true}`},
		{"execute_bash", `{"command": "C-c", "is_input": true, "timeout": 1.5, "reset": false}`},
		{"bash", `{'command': 'ls', 'is_input': False}`}, {"bash", `"{\"command\": \"ls\"}"`},
		{"bash", `{"command": "ls", "timeout": -1e308}`}, {"bash", `{"command": "ls", "timeout": 1e-320}`},
		{"bash", `{"command": "ls"}{}`}, {"bash", `{"command": "{'command': ('a',)}"}`}, {"bash", `[1,][`},
		{"bash", "{\"command\": \"a\nb\"}"}, {"bash", `{"command": ["a", 1]}`}, {"bash", `{"a":1,"a":2}`},
		{"finish", `{"message": null}`}, {"message", `{"text": "hi"}`}, {"think", `{}`}, {"nope", ``},
		{"run", `{"Command": "ls", "timeout_s": "30s"}`}, {"terminal", `{"command": "['x']"}`},
		{"bash", "\xff\xfe"}, {"bash", `{"command": "\ud800"}`},
		{"str_replace_editor", `{"command": "view", "path": "/w/a.py", "view_range": [1, -1]}`},
		{"execute_ipython_cell", `{"code": "x = 1\nx + 1"}`},
		{"execute_ipython_cell", `{"code": ["print(1)"]}`},
		{"str_replace_editor", `{"command": "create", "path": "a", "file_text": "x\n"}`},
		{"str_replace_editor", `{"command": "str_replace", "path": "a", "old_str": "x", "new_str": null}`},
		{"str_replace_editor", `{"command": "insert", "path": "a", "insert_line": 3, "new_str": "y"}`},
		{"str_replace_editor", `{"command": "undo_edit", "path": "a", "file_text": ""}`},
		{"str_replace_editor", `{"command": "view", "path": "a", "view_range": [1.5, "2"]}`},
	} {
		f.Add(s.name, []byte(s.args))
	}
	f.Fuzz(func(t *testing.T, name string, args []byte) {
		checkAction(t, ToolCall(name, args), false)
		// The same arguments under each real tool name, so the fuzzer does
		// not have to discover the names to reach the decoders.
		for _, n := range append(append(append(append([]string{}, bashTools...), editorTools...), pythonTools...), otherTools...) {
			a := ToolCall(n, args)
			checkAction(t, a, false)
			// (A backslash may spell the key with escapes: "\u0063ommand".)
			if r, ok := a.(event.CmdRun); ok && !strings.Contains(string(args), "command") && !strings.Contains(string(args), `\`) {
				t.Fatalf("CmdRun %#v from arguments without a command: %q", r, args)
			}
		}
	})
}
