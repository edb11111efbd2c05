package mcp

import (
	"context"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harnessd/harnessd/core/event"
	"github.com/harnessd/harnessd/core/files"
)

// The file tools are the file actions (core/files), one tool each, sent
// through the API like exec's commands: the same pipeline, so the same
// hooks veto them and the same log records them, and the sandbox's init
// does the reading and writing, so a path resolves inside the sandbox.

const pathDoc = "absolute inside the sandbox (/workspace/...), or relative to the shell's current directory"

// FileViewIn is file_view's input.
type FileViewIn struct {
	Session  string `json:"session,omitempty" jsonschema:"the session (default: this connection's own, created on first use)"`
	Path     string `json:"path" jsonschema:"the file or directory: absolute inside the sandbox (/workspace/...), or relative to the shell's current directory"`
	FromLine int    `json:"from_line,omitempty" jsonschema:"first line to show, 1-based (default 1)"`
	ToLine   int    `json:"to_line,omitempty" jsonschema:"last line to show, inclusive; -1 or omitted: to the end"`
}

// FileCreateIn is file_create's input.
type FileCreateIn struct {
	Session   string `json:"session,omitempty" jsonschema:"the session (default: this connection's own, created on first use)"`
	Path      string `json:"path" jsonschema:"the new file: absolute inside the sandbox (/workspace/...), or relative to the shell's current directory; missing directories are made"`
	Content   string `json:"content" jsonschema:"the whole file's text"`
	Overwrite bool   `json:"overwrite,omitempty" jsonschema:"replace the file if it exists (default: an existing file is refused)"`
}

// FileStrReplaceIn is file_str_replace's input.
type FileStrReplaceIn struct {
	Session string `json:"session,omitempty" jsonschema:"the session (default: this connection's own, created on first use)"`
	Path    string `json:"path" jsonschema:"the file to edit: absolute inside the sandbox (/workspace/...), or relative to the shell's current directory"`
	Old     string `json:"old" jsonschema:"text that occurs exactly once in the file, whitespace included; widen it with neighbouring lines if it occurs more than once"`
	New     string `json:"new" jsonschema:"what replaces it (may be empty)"`
}

// FileInsertIn is file_insert's input.
type FileInsertIn struct {
	Session string `json:"session,omitempty" jsonschema:"the session (default: this connection's own, created on first use)"`
	Path    string `json:"path" jsonschema:"the file to edit: absolute inside the sandbox (/workspace/...), or relative to the shell's current directory"`
	Line    int    `json:"line" jsonschema:"insert after this line (0: at the top)"`
	Text    string `json:"text" jsonschema:"the lines to insert"`
}

// FileUndoIn is file_undo's input.
type FileUndoIn struct {
	Session string `json:"session,omitempty" jsonschema:"the session (default: this connection's own, created on first use)"`
	Path    string `json:"path" jsonschema:"the file whose last edit in this session to revert"`
}

// File is a file tool's result: the API's file_result, and how to go on.
type File struct {
	Session      string `json:"session"`
	OK           bool   `json:"ok" jsonschema:"whether the action did what it asked; if not, output says why and what to change"`
	Path         string `json:"path" jsonschema:"the path as the sandbox resolved it"`
	Output       string `json:"output" jsonschema:"the file or the edited region with line numbers, or what went wrong"`
	Diff         string `json:"diff,omitempty" jsonschema:"the edit as a unified diff"`
	OutputID     string `json:"output_id,omitempty" jsonschema:"set when a long view was trimmed: read the rest with output_read"`
	LinesTotal   int    `json:"lines_total,omitempty"`
	LinesOmitted int    `json:"lines_omitted,omitempty"`
	Paging       string `json:"paging,omitempty" jsonschema:"how to read what was trimmed"`
	Seq          uint64 `json:"seq" jsonschema:"the observation's seq in the session's event log"`
}

func (s *Server) addFileTools() {
	lines := func(p map[string]*jsonschema.Schema) {
		p["from_line"].Minimum = ptr(1.0)
		p["to_line"].Minimum = ptr(-1.0)
	}
	sdk.AddTool(s.sdk, &sdk.Tool{
		Name:        "file_view",
		Title:       "View a file",
		Description: "Show a file with line numbers (cat -n), or lines from_line..to_line of it; a directory's entries two levels deep. Paths are " + pathDoc + ". Binary and huge files are described, not printed.",
		InputSchema: schema[FileViewIn](lines),
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)},
	}, fileTool(s, func(in FileViewIn) (string, event.Payload) {
		return in.Session, files.View{Path: in.Path, FromLine: in.FromLine, ToLine: in.ToLine}
	}))
	sdk.AddTool(s.sdk, &sdk.Tool{
		Name:        "file_create",
		Title:       "Create a file",
		Description: "Write a new file with the given content (an existing file is refused unless overwrite). Paths are " + pathDoc + ".",
		// overwrite replaces a file: destructive.
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: false, DestructiveHint: ptr(true), IdempotentHint: false, OpenWorldHint: ptr(false)},
	}, fileTool(s, func(in FileCreateIn) (string, event.Payload) {
		return in.Session, files.Create{Path: in.Path, Content: in.Content, Overwrite: in.Overwrite}
	}))
	sdk.AddTool(s.sdk, &sdk.Tool{
		Name:  "file_str_replace",
		Title: "Replace text in a file",
		Description: "Replace the one occurrence of old in a file with new, and show the edited region with line numbers. " +
			"If old occurs zero or several times nothing changes and the answer says where it matched; make old longer. Paths are " + pathDoc + ".",
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: false, DestructiveHint: ptr(true), IdempotentHint: false, OpenWorldHint: ptr(false)},
	}, fileTool(s, func(in FileStrReplaceIn) (string, event.Payload) {
		return in.Session, files.StrReplace{Path: in.Path, Old: in.Old, New: in.New}
	}))
	sdk.AddTool(s.sdk, &sdk.Tool{
		Name:        "file_insert",
		Title:       "Insert lines into a file",
		Description: "Insert text after line `line` of a file (0: at the top), and show the region with line numbers. Paths are " + pathDoc + ".",
		InputSchema: schema[FileInsertIn](func(p map[string]*jsonschema.Schema) { p["line"].Minimum = ptr(0.0) }),
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: false, DestructiveHint: ptr(false), IdempotentHint: false, OpenWorldHint: ptr(false)},
	}, fileTool(s, func(in FileInsertIn) (string, event.Payload) {
		return in.Session, files.Insert{Path: in.Path, Line: in.Line, Text: in.Text}
	}))
	sdk.AddTool(s.sdk, &sdk.Tool{
		Name:        "file_undo",
		Title:       "Undo a file edit",
		Description: "Revert this session's last edit (create, str_replace, insert) of a file.",
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: false, DestructiveHint: ptr(true), IdempotentHint: false, OpenWorldHint: ptr(false)},
	}, fileTool(s, func(in FileUndoIn) (string, event.Payload) {
		return in.Session, files.Undo{Path: in.Path}
	}))
}

// fileTool makes the handler of one file tool: the action from its input,
// sent in the named (or the connection's default) session, in turn with
// its execs.
func fileTool[In any](s *Server, action func(In) (string, event.Payload)) sdk.ToolHandlerFor[In, File] {
	return func(ctx context.Context, req *sdk.CallToolRequest, in In) (*sdk.CallToolResult, File, error) {
		named, a := action(in)
		id, err := s.session(ctx, req, named, true)
		if err != nil {
			return nil, File{}, err
		}
		release, err := s.turn(ctx, id)
		if err != nil {
			return nil, File{}, err
		}
		defer release()
		what := fmt.Sprintf("%s in session %s", a.Kind(), id)
		obs, err := s.cl.Act(ctx, id, event.SourceAgent, a)
		if err != nil {
			return nil, File{}, actionable(what, err)
		}
		switch p := obs.Payload.(type) {
		case files.Result:
			out := File{Session: id, OK: p.OK, Path: p.Path, Output: p.Output, Diff: p.Diff, Seq: obs.Seq}
			out.OutputID, out.LinesTotal, out.LinesOmitted, out.Paging = paging(p.Trimmed, "file_view with from_line and to_line")
			res := text(out.Output)
			// A failed edit is the model's to correct (widen old, create
			// the file first): a tool error with the explanation.
			res.IsError = !p.OK
			return res, out, nil
		case event.HookVeto:
			return nil, File{}, fmt.Errorf("refused by harnessd policy %s: %s. Nothing was read or written; change the action, or ask the user to allow it", p.Hook, p.Reason)
		case event.InvalidAction:
			return nil, File{}, fmt.Errorf("invalid action: %s %s", p.Reason, p.Guidance)
		}
		return nil, File{}, fmt.Errorf("%s: harnessd answered %s, not a file_result", what, obs.Kind())
	}
}
