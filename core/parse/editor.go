package parse

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/harnessd/harnessd/core/event"
	"github.com/harnessd/harnessd/core/files"
)

// editorTools are the names of OpenHands' file editor tool.
var editorTools = []string{"str_replace_editor"}

// editorFields are the editor's fields, in the order guidance lists them,
// and the commands each field belongs to besides command and path.
var (
	editorFields   = []string{"command", "path", "file_text", "old_str", "new_str", "insert_line", "view_range"}
	editorCommands = []string{"view", "create", "str_replace", "insert", "undo_edit"}
	editorUses     = map[string][]string{
		"view":        {"view_range"},
		"create":      {"file_text"},
		"str_replace": {"old_str", "new_str"},
		"insert":      {"insert_line", "new_str"},
		"undo_edit":   {},
	}
)

const editorExample = `{"command": "str_replace", "path": "/workspace/main.py", "old_str": "return 1", "new_str": "return 2"}`

// editorArgs are the editor's arguments as decoded so far; nil means
// absent (or null).
type editorArgs struct {
	command, path, fileText, oldStr, newStr *string
	insertLine                              *int
	viewRange                               []int
	set                                     map[string]bool // non-null fields given
}

// editorCall decodes OpenHands' str_replace_editor call strictly into
// one of the file actions: exact field names and types, only the fields
// the command uses, and guidance that shows the corrected call.
func editorCall(tool string, args []byte) event.Payload {
	ms, m := object(tool, args, editorExample, func(ms []member) string {
		e, _ := decodeEditor(ms)
		return e.canonical()
	})
	if m != nil {
		return *m
	}
	e, problems := decodeEditor(ms)
	if e.command == nil && len(problems) == 0 {
		problems = append(problems, `missing "command" (one of `+strings.Join(editorCommands, ", ")+")")
	}
	if e.path == nil && len(problems) == 0 {
		problems = append(problems, `missing "path"`)
	}
	cmd := ""
	if e.command != nil {
		cmd = *e.command
		uses, ok := editorUses[cmd]
		if !ok {
			problems = append(problems, fmt.Sprintf("unknown command %q; the commands are %s", shorten(cmd, 40), strings.Join(editorCommands, ", ")))
		}
		for _, f := range editorFields[2:] {
			if ok && e.set[f] && !contains(uses, f) {
				problems = append(problems, fmt.Sprintf("%q does not apply to %s (it takes %s)", f, cmd, usesText(uses)))
			}
		}
		switch {
		case !ok:
		case cmd == "create" && e.fileText == nil:
			problems = append(problems, `create needs "file_text", the whole content of the new file`)
		case cmd == "str_replace" && e.oldStr == nil:
			problems = append(problems, `str_replace needs "old_str", the exact text to replace`)
		case cmd == "insert" && (e.insertLine == nil || e.newStr == nil):
			problems = append(problems, `insert needs "insert_line" (the line to insert after, 0 for the top) and "new_str" (the text)`)
		case cmd == "view" && e.viewRange != nil && len(e.viewRange) != 2:
			problems = append(problems, `"view_range" is two line numbers, [start, end], end -1 for the end of the file`)
		}
	}
	if len(problems) > 0 {
		g := "The " + tool + " tool takes: command (" + strings.Join(editorCommands, ", ") + "), path (string), and per command: " +
			"view: view_range ([start, end], optional); create: file_text; str_replace: old_str, new_str; insert: insert_line (integer), new_str; undo_edit: nothing else. "
		if c := e.canonical(); c != "" {
			g += "Resend as:\n" + c
		} else {
			g += "For example:\n" + editorExample
		}
		return event.InvalidAction{Reason: joinProblems(problems), Guidance: g}
	}
	a := editorAction(cmd, *e.path, e)
	if v, ok := a.(interface{ Validate() error }); ok {
		if err := v.Validate(); err != nil {
			return event.InvalidAction{
				Reason:   fmt.Sprintf("%s: %v", cmd, err),
				Guidance: "Nothing was changed. Fix that and resend, for example:\n" + orExample(e.canonical(), editorExample),
			}
		}
	}
	return a
}

// editorAction maps a decoded, complete call to its file action.
func editorAction(cmd, p string, e editorArgs) event.Payload {
	switch cmd {
	case "view":
		v := files.View{Path: p}
		if len(e.viewRange) == 2 {
			v.FromLine, v.ToLine = e.viewRange[0], e.viewRange[1]
			if v.FromLine < 1 || v.ToLine < -1 || v.ToLine == 0 || (v.ToLine != -1 && v.ToLine < v.FromLine) {
				return event.InvalidAction{
					Reason:   fmt.Sprintf("view_range [%d, %d] is not a range of lines", v.FromLine, v.ToLine),
					Guidance: `Lines count from 1; view_range is [start, end] with end >= start, or -1 for the end of the file, e.g. {"command": "view", "path": ` + jsonString(p) + `, "view_range": [1, 40]}.`,
				}
			}
		}
		return v
	case "create":
		return files.Create{Path: p, Content: *e.fileText}
	case "str_replace":
		n := ""
		if e.newStr != nil {
			n = *e.newStr
		}
		return files.StrReplace{Path: p, Old: *e.oldStr, New: n}
	case "insert":
		return files.Insert{Path: p, Line: *e.insertLine, Text: *e.newStr}
	}
	return files.Undo{Path: p}
}

func usesText(uses []string) string {
	if len(uses) == 0 {
		return "only path"
	}
	return strings.Join(uses, " and ")
}

// decodeEditor reads the editor's members, strictly; problems name each
// field that is unknown or of the wrong type.
func decodeEditor(ms []member) (editorArgs, []string) {
	e := editorArgs{set: map[string]bool{}}
	var problems []string
	for _, m := range ms {
		if isNull(m.raw) {
			continue
		}
		switch m.key {
		case "command", "path", "file_text", "old_str", "new_str":
			var s string
			if err := json.Unmarshal(m.raw, &s); err != nil {
				problems = append(problems, fmt.Sprintf("%q must be a string, not %s", m.key, jsonKind(m.raw)))
				continue
			}
			e.set[m.key] = true
			switch m.key {
			case "command":
				e.command = &s
			case "path":
				e.path = &s
			case "file_text":
				e.fileText = &s
			case "old_str":
				e.oldStr = &s
			case "new_str":
				e.newStr = &s
			}
		case "insert_line":
			f, ok := numberValue(m.raw, false)
			if !ok || f != math.Trunc(f) || f < 0 || f > 1e9 {
				problems = append(problems, `"insert_line" must be a whole number of lines >= 0, not `+jsonText(m.raw))
				continue
			}
			n := int(f)
			e.insertLine, e.set[m.key] = &n, true
		case "view_range":
			var r []float64
			if err := json.Unmarshal(m.raw, &r); err != nil {
				problems = append(problems, `"view_range" must be a list of two line numbers, not `+jsonText(m.raw))
				continue
			}
			e.viewRange = []int{}
			for _, f := range r {
				if f != math.Trunc(f) || math.Abs(f) > 1e9 {
					problems = append(problems, `"view_range" holds whole line numbers, not `+jsonText(m.raw))
					e.viewRange = nil
					break
				}
				e.viewRange = append(e.viewRange, int(f))
			}
			e.set[m.key] = true
		default:
			problems = append(problems, unknownField(m.key, editorFields))
		}
	}
	return e, problems
}

// canonical renders what the call plausibly meant as the JSON to send:
// only the fields its command takes; "" when there is no command and path
// to show. Long texts are shown as placeholders.
func (e editorArgs) canonical() string {
	if e.command == nil || e.path == nil || len(*e.path) > 300 {
		return ""
	}
	uses, ok := editorUses[*e.command]
	if !ok {
		return ""
	}
	short := func(s *string, placeholder string) string {
		if s == nil || len(*s) > 300 {
			return jsonString(placeholder)
		}
		return jsonString(*s)
	}
	var b strings.Builder
	b.WriteString(`{"command": ` + jsonString(*e.command) + `, "path": ` + jsonString(*e.path))
	for _, f := range uses {
		switch f {
		case "file_text":
			b.WriteString(`, "file_text": ` + short(e.fileText, "<the whole file>"))
		case "old_str":
			b.WriteString(`, "old_str": ` + short(e.oldStr, "<the exact text to replace>"))
		case "new_str":
			b.WriteString(`, "new_str": ` + short(e.newStr, "<the new text>"))
		case "insert_line":
			n := 0
			if e.insertLine != nil {
				n = *e.insertLine
			}
			fmt.Fprintf(&b, `, "insert_line": %d`, n)
		case "view_range":
			if len(e.viewRange) == 2 {
				fmt.Fprintf(&b, `, "view_range": [%d, %d]`, e.viewRange[0], e.viewRange[1])
			}
		}
	}
	b.WriteString("}")
	return b.String()
}
