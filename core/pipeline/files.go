package pipeline

import (
	"context"
	"errors"

	"github.com/harnessd/harnessd/core/event"
	"github.com/harnessd/harnessd/core/files"
)

// fileKinds are the file actions, all carried out by editFile.
var fileKinds = []event.Payload{files.View{}, files.Create{}, files.StrReplace{}, files.Insert{}, files.Undo{}}

// editFile is the executor of the file actions (package files): the
// session's sandbox performs them, as the sandbox's user in its mount
// namespace; a relative path starts at the shell's current directory. A
// long result is trimmed as a command's output is, the whole text kept.
func editFile(ctx context.Context, c *Call) (Outcome, error) {
	s := c.Session
	ed := files.Editor{Files: s.Files(), Cwd: s.Cwd(), History: s.FileHistory()}
	res, err := ed.Do(ctx, c.Action.Payload)
	// A long view is the common case; an edit's snippet or a create's
	// first lines can be long too (a minified file is one line).
	res.Output, res.Trimmed = s.TrimText(ctx, res.Output)
	if errors.Is(err, files.ErrUnavailable) && ctx.Err() == nil {
		// The observation says so and what to do; a run goes on (an
		// executor's error ends an agent's run).
		err = nil
	}
	return Outcome{Observation: res}, err
}

func handleFiles(p *Pipeline) {
	for _, k := range fileKinds {
		p.Handle(k.Kind(), ExecutorFunc(editFile))
	}
}
