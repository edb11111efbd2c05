package mcp

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harnessd/harnessd/core/event"
	"github.com/harnessd/harnessd/core/python"
)

// PythonIn is python_run's input.
type PythonIn struct {
	Session  string  `json:"session,omitempty" jsonschema:"the session (default: this connection's own, created on first use)"`
	Code     string  `json:"code" jsonschema:"Python code, run as one cell of the session's persistent interpreter (variables and imports carry over); the last expression's value is shown; empty reads more output of a cell still running"`
	IsInput  bool    `json:"is_input,omitempty" jsonschema:"send code as input to the running cell instead: a line for input(), or C-c to interrupt it"`
	TimeoutS float64 `json:"timeout_s,omitempty" jsonschema:"hard timeout in seconds: past it the cell gets KeyboardInterrupt, then Python is restarted (default: the daemon's terminal.hard_timeout)"`
	Reset    bool    `json:"reset,omitempty" jsonschema:"restart Python before the cell: every variable and import is dropped"`
}

// Python is python_run's result: the API's python_result, and how to go on.
type Python struct {
	Session      string `json:"session"`
	ExitCode     int    `json:"exit_code" jsonschema:"0: the cell ran to its end; 1: an exception (error) ended it; -1: still running (python_run with empty code reads more, is_input with C-c interrupts)"`
	StillRunning bool   `json:"still_running"`
	Output       string `json:"output" jsonschema:"what the cell printed, and its traceback, trimmed when long"`
	Error        string `json:"error,omitempty" jsonschema:"the exception that ended the cell, e.g. ZeroDivisionError"`
	StateLost    bool   `json:"state_lost,omitempty" jsonschema:"the interpreter was restarted: earlier variables and imports are gone"`
	OutputID     string `json:"output_id,omitempty" jsonschema:"set when the output was trimmed: read any lines of it with output_read"`
	LinesTotal   int    `json:"lines_total,omitempty"`
	LinesOmitted int    `json:"lines_omitted,omitempty"`
	Paging       string `json:"paging,omitempty" jsonschema:"how to read what was trimmed"`
	TimedOut     bool   `json:"timed_out,omitempty"`
	DurationMS   int64  `json:"duration_ms"`
	Note         string `json:"note,omitempty" jsonschema:"what harnessd has to say: a restart, a timeout, what to do next"`
	Seq          uint64 `json:"seq" jsonschema:"the observation's seq in the session's event log"`
}

func (s *Server) addPythonTool() {
	sdk.AddTool(s.sdk, &sdk.Tool{
		Name:  "python_run",
		Title: "Run Python",
		Description: "Run Python code in the session's persistent interpreter (IPython when the sandbox has it), inside its sandbox: variables and imports carry over between calls. " +
			"Returns what it printed and, if it failed, the traceback and the exception's name. exit_code -1: still running (empty code reads more, is_input with C-c interrupts).",
		InputSchema: schema[PythonIn](func(p map[string]*jsonschema.Schema) { p["timeout_s"].Minimum = ptr(0.0) }),
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: false, DestructiveHint: ptr(true), IdempotentHint: false, OpenWorldHint: ptr(true)},
	}, s.pythonRun)
}

func (s *Server) pythonRun(ctx context.Context, req *sdk.CallToolRequest, in PythonIn) (*sdk.CallToolResult, Python, error) {
	id, err := s.session(ctx, req, in.Session, true)
	if err != nil {
		return nil, Python{}, err
	}
	if !in.IsInput {
		release, err := s.turn(ctx, id)
		if err != nil {
			return nil, Python{}, err
		}
		defer release()
	}
	stop := s.progress(ctx, req)
	obs, err := s.cl.Act(ctx, id, event.SourceAgent, python.Run{Code: in.Code, IsInput: in.IsInput, TimeoutS: in.TimeoutS, Reset: in.Reset})
	stop()
	if ctx.Err() != nil && !in.IsInput {
		// As exec: a cancelled call interrupts its cell (KeyboardInterrupt),
		// through the pipeline, so the log says so.
		ictx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, ierr := s.cl.Act(ictx, id, event.SourceAgent, python.Run{Code: "C-c", IsInput: true}); ierr != nil {
			s.opts.Logger.Warn("mcp: interrupting a cancelled python_run", "session", id, "err", ierr)
		}
		return nil, Python{}, fmt.Errorf("python_run cancelled; the cell in session %s was interrupted: %w", id, context.Cause(ctx))
	}
	if err != nil {
		return nil, Python{}, actionable("python_run in session "+id, err)
	}
	switch p := obs.Payload.(type) {
	case python.Result:
		out := Python{Session: id, ExitCode: p.ExitCode, StillRunning: p.ExitCode == -1, Output: p.Output, Error: p.Error, StateLost: p.StateLost,
			TimedOut: p.TimedOut, DurationMS: p.DurationMS, Note: p.Note, Seq: obs.Seq}
		out.OutputID, out.LinesTotal, out.LinesOmitted, out.Paging = paging(p.Trimmed, "")
		return text(pythonText(out)), out, nil
	case event.HookVeto:
		return nil, Python{}, fmt.Errorf("refused by harnessd policy %s: %s. The code did not run; change it, or ask the user to allow it", p.Hook, p.Reason)
	case event.InvalidAction:
		return nil, Python{}, fmt.Errorf("invalid action: %s %s", p.Reason, p.Guidance)
	}
	return nil, Python{}, fmt.Errorf("python_run in session %s: harnessd answered %s, not a python_result", id, obs.Kind())
}

// pythonText is what the model reads of a cell: the output, then one
// bracketed line of how it ended.
func pythonText(p Python) string {
	var b strings.Builder
	b.WriteString(p.Output)
	if p.Output != "" && !strings.HasSuffix(p.Output, "\n") {
		b.WriteString("\n")
	}
	switch {
	case p.StillRunning:
		b.WriteString("[still running")
	case p.Error != "":
		fmt.Fprintf(&b, "[error %s", p.Error)
	default:
		b.WriteString("[done")
	}
	fmt.Fprintf(&b, "; %d ms", p.DurationMS)
	if p.StateLost {
		b.WriteString("; Python was restarted: earlier variables are gone")
	}
	b.WriteString("]")
	if p.Paging != "" {
		b.WriteString("\n" + p.Paging)
	}
	if p.Note != "" {
		b.WriteString("\n" + p.Note)
	}
	return b.String()
}
