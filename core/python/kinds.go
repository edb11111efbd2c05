package python

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/harnessd/harnessd/core/event"
)

// The action kind and the observation that answers it.
const (
	KindRun    event.Kind = "python_run"
	KindResult event.Kind = "python_result"
)

// MaxCodeBytes bounds a cell's code.
const MaxCodeBytes = 1 << 20

// Run runs Code as one cell of the session's persistent Python. With
// IsInput, Code is text or keys (the syntax of cmd_run's is_input) for
// the cell that is running: a line for input(), or C-c to interrupt it.
// An empty Code waits for more of a running cell's output.
type Run struct {
	Code     string  `json:"code"`
	IsInput  bool    `json:"is_input,omitempty"`
	TimeoutS float64 `json:"timeout_s,omitempty"` // hard timeout in seconds; 0 = the configured hard_timeout
	Reset    bool    `json:"reset,omitempty"`     // restart Python first: every variable and import is dropped
}

// Result answers a python_run: what the cell printed (trimmed as a
// command's output is, the whole kept under Trimmed.OutputID), and how
// it ended.
type Result struct {
	// ExitCode is 0 when the cell ran to its end, 1 when an exception
	// (Error) or the interpreter's death ended it, -1 while it runs.
	ExitCode int    `json:"exit_code"`
	Output   string `json:"output"`
	// Error is the name of the exception that ended the cell
	// (ZeroDivisionError, KeyboardInterrupt, SyntaxError).
	Error      string         `json:"error,omitempty"`
	Trimmed    *event.Trimmed `json:"trimmed,omitempty"`
	DurationMS int64          `json:"duration_ms"`
	TimedOut   bool           `json:"timed_out,omitempty"`
	// StateLost says the interpreter that ran earlier cells is gone
	// (killed, exited, or reset): their variables and imports are too.
	StateLost   bool   `json:"state_lost,omitempty"`
	IPython     bool   `json:"ipython,omitempty"`     // cells run in IPython's InteractiveShell
	Note        string `json:"note,omitempty"`        // what happened and what to do next
	Unsandboxed bool   `json:"unsandboxed,omitempty"` // driver "none": Python runs on the host as the daemon's user
}

// Kind implements event.Payload.
func (Run) Kind() event.Kind { return KindRun }

// Kind implements event.Payload.
func (Result) Kind() event.Kind { return KindResult }

func init() {
	event.Register[Run](KindRun, event.Action)
	event.Register[Result](KindResult, event.Observation)
}

// Validate implements the pipeline's check.
func (r Run) Validate() error {
	switch {
	case len(r.Code) > MaxCodeBytes:
		return fmt.Errorf("code is %d bytes; at most %d", len(r.Code), MaxCodeBytes)
	case !utf8.ValidString(r.Code):
		return errors.New("code is not valid UTF-8")
	case r.IsInput && r.Code == "":
		return errors.New(`is_input with empty code: give the text to type (a line for input()) or keys such as "C-c"`)
	case r.IsInput && r.Reset:
		return errors.New("reset cannot be combined with is_input")
	case r.TimeoutS < 0:
		return fmt.Errorf("timeout_s %v is negative", r.TimeoutS)
	}
	return nil
}

// AsCmdOutput is the result as a command's output, for the observation
// hooks, which trim and redact outputs (hooks.Pipeline).
func (r Result) AsCmdOutput() event.CmdOutput {
	return event.CmdOutput{ExitCode: r.ExitCode, Output: r.Output, Trimmed: r.Trimmed, DurationMS: r.DurationMS, TimedOut: r.TimedOut, Note: r.Note}
}

// WithCmdOutput returns r with the output, its trimming and note as the
// observation hooks left them.
func (r Result) WithCmdOutput(o event.CmdOutput) event.Payload {
	r.Output, r.Trimmed, r.Note = o.Output, o.Trimmed, o.Note
	return r
}
