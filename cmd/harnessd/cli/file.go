package cli

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/harnessd/harnessd/core/event"
	"github.com/harnessd/harnessd/core/files"
)

const fileUsage = `want one of:
  file view SESSION PATH [--lines A-B]
  file create SESSION PATH [--overwrite] (--content TEXT | --from FILE, - for stdin)
  file replace SESSION PATH --old TEXT --new TEXT
  file insert SESSION PATH --line N (--text TEXT | --from FILE, - for stdin)
  file undo SESSION PATH`

// file runs `harnessd file view|create|replace|insert|undo`: one file
// action, through the pipeline as any action (hooks, log), run inside the
// session's sandbox. It prints what the model would be shown; --diff
// prints the recorded diff of an edit instead.
func (c *cmd) file(args []string) int {
	if len(args) == 0 {
		c.name = "file"
		return c.usage(fileUsage)
	}
	op := args[0]
	fs, socket := c.flags("file " + op)
	lines := fs.String("lines", "", "view: lines A-B (1-based, inclusive; A- means to the end)")
	overwrite := fs.Bool("overwrite", false, "create: replace an existing file")
	content := fs.String("content", "", "create: the file's content")
	from := fs.String("from", "", "create, insert: read the text from FILE (- for stdin)")
	old := fs.String("old", "", "replace: the exact text to replace (it must occur once)")
	repl := fs.String("new", "", "replace: the text to put in its place")
	line := fs.Int("line", -1, "insert: the line to insert after (0: the top)")
	text := fs.String("text", "", "insert: the text to insert")
	diff := fs.Bool("diff", false, "print the edit's recorded unified diff instead of the edited region")
	pos, err := parse(fs, args[1:])
	if err != nil {
		return 2
	}
	if len(pos) != 2 {
		return c.usage(fileUsage)
	}
	id, path := pos[0], pos[1]
	readFrom := func(s *string) error {
		if *from == "" {
			return nil
		}
		var b []byte
		var err error
		if *from == "-" {
			b, err = io.ReadAll(io.LimitReader(os.Stdin, files.MaxFileBytes+1))
		} else {
			b, err = os.ReadFile(*from)
		}
		*s = string(b)
		return err
	}
	var a event.Payload
	switch op {
	case "view":
		v := files.View{Path: path}
		if *lines != "" {
			x, y, _ := strings.Cut(*lines, "-")
			n, err := strconv.Atoi(x)
			if err != nil || n < 1 {
				return c.usage("--lines %q: want A-B, e.g. 10-20, or A- for A to the end", *lines)
			}
			v.FromLine, v.ToLine = n, -1
			if y != "" {
				m, err := strconv.Atoi(y)
				if err != nil || m < n {
					return c.usage("--lines %q: want A-B with B >= A", *lines)
				}
				v.ToLine = m
			} else if !strings.Contains(*lines, "-") {
				v.ToLine = n
			}
		}
		a = v
	case "create":
		if err := readFrom(content); err != nil {
			return c.fail(err)
		}
		a = files.Create{Path: path, Content: *content, Overwrite: *overwrite}
	case "replace", "str_replace":
		a = files.StrReplace{Path: path, Old: *old, New: *repl}
	case "insert":
		if *line < 0 {
			return c.usage("insert needs --line N (the line to insert after; 0 for the top)")
		}
		if err := readFrom(text); err != nil {
			return c.fail(err)
		}
		a = files.Insert{Path: path, Line: *line, Text: *text}
	case "undo":
		a = files.Undo{Path: path}
	default:
		return c.usage("unknown file command %q; %s", op, fileUsage)
	}
	obs, err := c.client(*socket).Act(c.ctx, id, event.SourceUser, a)
	if err != nil {
		return c.fail(err)
	}
	if c.json {
		b, _ := obs.MarshalJSON()
		fmt.Fprintf(c.env.Stdout, "%s\n", b)
	}
	switch o := obs.Payload.(type) {
	case event.HookVeto:
		if !c.json {
			fmt.Fprintf(c.env.Stderr, "[harnessd] not done: %s (hook %s)\n", o.Reason, o.Hook)
		}
		return ExitVetoed
	case files.Result:
		if c.json {
			break
		}
		switch {
		case !o.OK:
			io.WriteString(c.env.Stderr, o.Output)
			if !strings.HasSuffix(o.Output, "\n") {
				fmt.Fprintln(c.env.Stderr)
			}
		case *diff:
			io.WriteString(c.env.Stdout, o.Diff)
		default:
			io.WriteString(c.env.Stdout, o.Output)
		}
		if o.Trimmed != nil {
			fmt.Fprintf(c.env.Stderr, "[harnessd] the view was trimmed; all of it: harnessd output %s\n", o.Trimmed.OutputID)
		}
		if !o.OK {
			return 1
		}
		return 0
	default:
		return c.fail(fmt.Errorf("unexpected reply: %s", obs.Kind()))
	}
	if r, ok := obs.Payload.(files.Result); ok && !r.OK {
		return 1
	}
	return 0
}

// fileTranscript renders a file action as the command line that would
// have asked for it.
func fileTranscript(a event.Payload) string {
	switch a := a.(type) {
	case files.View:
		if a.FromLine != 0 || a.ToLine != 0 {
			return fmt.Sprintf("✎ view %s (lines %d to %d)\n", a.Path, a.FromLine, a.ToLine)
		}
		return fmt.Sprintf("✎ view %s\n", a.Path)
	case files.Create:
		return fmt.Sprintf("✎ create %s (%d bytes%s)\n", a.Path, len(a.Content), map[bool]string{true: ", overwrite"}[a.Overwrite])
	case files.StrReplace:
		return fmt.Sprintf("✎ replace in %s: %q → %q\n", a.Path, shortText(a.Old), shortText(a.New))
	case files.Insert:
		return fmt.Sprintf("✎ insert into %s after line %d: %q\n", a.Path, a.Line, shortText(a.Text))
	case files.Undo:
		return fmt.Sprintf("✎ undo the last edit of %s\n", a.Path)
	}
	return ""
}

func fileResultTranscript(r files.Result) string {
	var b strings.Builder
	b.WriteString(r.Output)
	if r.Output != "" && !strings.HasSuffix(r.Output, "\n") {
		b.WriteByte('\n')
	}
	if r.Diff != "" {
		b.WriteString(r.Diff)
	}
	fmt.Fprintf(&b, "[%s %s · %s · %dms", r.Op, map[bool]string{true: "ok", false: "failed"}[r.OK], r.Path, r.DurationMS)
	if r.Trimmed != nil && r.Trimmed.OutputID != "" {
		fmt.Fprintf(&b, " · full view: harnessd output %s", r.Trimmed.OutputID)
	}
	b.WriteString("]\n")
	return b.String()
}

func shortText(s string) string {
	if len(s) > 60 {
		return s[:57] + "..."
	}
	return s
}
