package cli

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/harnessd/harnessd/core/event"
	"github.com/harnessd/harnessd/core/python"
)

// py runs `harnessd py SESSION -- CODE`: one cell in the session's
// persistent Python (python_run), through the pipeline as any action,
// its output printed as it is printed. Exit 0 when the cell ran to its
// end, 1 when an exception ended it, ExitStillRunning while it runs.
func (c *cmd) py(args []string) int {
	fs, socket := c.flags("py")
	timeout := fs.Duration("timeout", 0, "hard timeout for the cell (default: terminal.hard_timeout)")
	input := fs.Bool("input", false, "send CODE as input to the running cell (a line for input(), or C-c)")
	reset := fs.Bool("reset", false, "restart Python first: every variable and import is dropped")
	from := fs.String("from", "", "read the cell from FILE (- for stdin)")
	trimmed := fs.Bool("trimmed", false, "print what the model is shown once the call returns, instead of the output as it is printed")
	pos, err := parse(fs, args)
	if err != nil {
		return 2
	}
	if len(pos) == 0 {
		return c.usage("want SESSION -- CODE")
	}
	id, rest := pos[0], pos[1:]
	if len(rest) > 0 && rest[0] == "--" {
		rest = rest[1:]
	}
	code := strings.Join(rest, " ")
	if *from != "" {
		var b []byte
		if *from == "-" {
			b, err = io.ReadAll(io.LimitReader(os.Stdin, python.MaxCodeBytes+1))
		} else {
			b, err = os.ReadFile(*from)
		}
		if err != nil {
			return c.fail(err)
		}
		code = string(b)
	}
	obs, w, rc, done := c.actWatched(*socket, id, python.Run{Code: code, IsInput: *input, Reset: *reset, TimeoutS: timeout.Seconds()}, !*trimmed)
	if done {
		return rc
	}
	out, ok := obs.Payload.(python.Result)
	if !ok {
		w.stop(0, false)
		return c.fail(fmt.Errorf("unexpected reply: %s", obs.Kind()))
	}
	switch {
	case c.json:
		b, _ := obs.MarshalJSON()
		fmt.Fprintf(c.env.Stdout, "%s\n", b)
	case w != nil && w.stop(obs.Cause, out.Output == ""):
	default:
		if w != nil {
			fmt.Fprintf(c.env.Stderr, "[harnessd] %s; what the model was shown follows\n", w.missed(obs.Cause))
		}
		io.WriteString(c.env.Stdout, out.Output)
		if out.Trimmed != nil && out.Trimmed.OutputID != "" {
			fmt.Fprintf(c.env.Stderr, "[harnessd] full output: harnessd output %s\n", out.Trimmed.OutputID)
		}
	}
	if !c.json && out.Note != "" {
		fmt.Fprintf(c.env.Stderr, "[harnessd] %s\n", out.Note)
	}
	switch {
	case out.ExitCode == -1:
		fmt.Fprintf(c.env.Stderr, "[harnessd] still running; `harnessd py %s --` reads more, `harnessd py --input %s -- C-c` interrupts\n", id, id)
		return ExitStillRunning
	case out.ExitCode != 0:
		return 1
	}
	return 0
}

// pythonTranscript renders a python_run and its result for replay.
func pythonTranscript(p event.Payload) string {
	switch p := p.(type) {
	case python.Run:
		switch {
		case p.IsInput:
			return fmt.Sprintf("py< %s\n", p.Code)
		case p.Code == "":
			return "py> (wait for more output)\n"
		}
		return "py> " + strings.ReplaceAll(strings.TrimRight(p.Code, "\n"), "\n", "\n... ") + "\n"
	case python.Result:
		var b strings.Builder
		b.WriteString(p.Output)
		if p.Output != "" && !strings.HasSuffix(p.Output, "\n") {
			b.WriteByte('\n')
		}
		switch {
		case p.ExitCode == -1:
			fmt.Fprintf(&b, "[still running · %dms", p.DurationMS)
		case p.Error != "":
			fmt.Fprintf(&b, "[%s · %dms", p.Error, p.DurationMS)
		default:
			fmt.Fprintf(&b, "[ok · %dms", p.DurationMS)
		}
		if p.StateLost {
			b.WriteString(" · state lost")
		}
		if p.Trimmed != nil && p.Trimmed.OutputID != "" {
			fmt.Fprintf(&b, " · full output: harnessd output %s", p.Trimmed.OutputID)
		}
		b.WriteString("]\n")
		if p.Note != "" {
			fmt.Fprintf(&b, "[note: %s]\n", p.Note)
		}
		return b.String()
	}
	return ""
}
