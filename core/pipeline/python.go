package pipeline

import (
	"context"

	"github.com/harnessd/harnessd/core/event"
	"github.com/harnessd/harnessd/core/python"
)

// OutputObservation is an observation that carries a program's output
// as a cmd_output does (python_result): the observation hooks trim and
// redact it as one (hooks.Pipeline).
type OutputObservation interface {
	event.Payload
	AsCmdOutput() event.CmdOutput
	WithCmdOutput(event.CmdOutput) event.Payload
}

var _ OutputObservation = python.Result{}

// runPython is python_run's executor: the session's persistent Python,
// in its sandbox.
func runPython(ctx context.Context, c *Call) (Outcome, error) {
	res, tr, err := c.Session.PythonFor(ctx, c.Action.Seq, c.Action.Payload.(python.Run))
	return Outcome{Observation: res, Trim: &tr}, err
}
