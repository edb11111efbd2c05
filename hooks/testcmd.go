package hooks

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/harnessd/harnessd/core/event"
	"github.com/harnessd/harnessd/core/trim"
)

// MaxTestOutput is the most output Test reads.
const MaxTestOutput = 64 << 20

// Test is `harnessd hooks test PATH --command CMD [--output FILE]`: it
// loads the hooks at path (a .lua file or a directory of them), asks them
// about a cmd_run of command, and prints the verdict word (veto, ask,
// rewrite or allow) on the first line, then "hook: file:line" and
// "reason: …" when there are, and "command: …" for a rewrite. With output
// non-nil, it then prints what the observation hooks make of that output:
// the settings they ask for and the text a model would be shown (trimmed,
// redacted, cut to max_chars).
//
// A file that does not load is an error (naming file:line); a verdict,
// even veto, is not.
func Test(ctx context.Context, path string, command string, output io.Reader, w io.Writer) error {
	return TestDir(ctx, Dir{Path: path}, command, output, w)
}

// TestDir is Test for any Dir, such as Builtin.
func TestDir(ctx context.Context, dir Dir, command string, output io.Reader, w io.Writer) error {
	return TestAction(ctx, dir, event.CmdRun{Command: command}, output, w)
}

// TestAction is Test for any action (`harnessd hooks test PATH --action
// JSON`): a file edit or a python cell is judged by the hooks of its
// kind. For a file action, output is the text a file_view would show,
// which the observation hooks may redact and cut as they would a view,
// but do not trim.
func TestAction(ctx context.Context, dir Dir, action event.Payload, output io.Reader, w io.Writer) error {
	e, err := Load(Options{Dirs: []Dir{dir}})
	if err != nil {
		return err
	}
	s := Session{ID: "test", Workspace: "/workspace", Profile: "test"}
	d, err := e.Action(ctx, s, action)
	if err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintln(&b, d.Verdict)
	if d.Hook != "" {
		fmt.Fprintf(&b, "hook: %s\n", d.Hook)
	}
	if d.Reason != "" {
		fmt.Fprintf(&b, "reason: %s\n", d.Reason)
	}
	if d.Action != nil {
		if cr, ok := d.Action.(event.CmdRun); ok {
			fmt.Fprintf(&b, "command: %s\n", cr.Command)
		} else if j, err := json.Marshal(event.Event{Payload: d.Action}); err == nil {
			fmt.Fprintf(&b, "action: %s\n", j)
		} else {
			fmt.Fprintf(&b, "action: %+v\n", d.Action)
		}
		action = d.Action
	}
	if output != nil {
		data, err := io.ReadAll(io.LimitReader(output, MaxTestOutput+1))
		if err != nil {
			return fmt.Errorf("read output: %w", err)
		}
		if len(data) > MaxTestOutput {
			return fmt.Errorf("output is longer than %d bytes", MaxTestOutput)
		}
		set, err := e.Observation(ctx, s, action, event.CmdOutput{Output: string(data)})
		if err != nil {
			fmt.Fprintf(&b, "observation hooks failed: %v\n", err)
		}
		if strings.HasPrefix(string(action.Kind()), "file_") {
			// As the pipeline treats a file action's text (afterFile):
			// redacted and cut, never trimmed.
			text := string(data)
			if set.MaxChars > 0 {
				fmt.Fprintf(&b, "max_chars: %d\n", set.MaxChars)
				if utf8.RuneCountInString(text) > set.MaxChars {
					text = cutChars(text, set.MaxChars)
				}
			}
			for _, r := range set.Redactions {
				fmt.Fprintf(&b, "redact: %s %s (%s)\n", r.Label, r.Pattern, r.Hook)
			}
			text = Redact(text, set.Redactions)
			fmt.Fprintln(&b, "--- the file's text as a model would see it ---")
			b.WriteString(text)
			if !strings.HasSuffix(text, "\n") {
				b.WriteString("\n")
			}
			_, err = io.WriteString(w, b.String())
			return err
		}
		cfg := trim.DefaultConfig()
		if set.Trim != nil {
			cfg = *set.Trim
			fmt.Fprintf(&b, "trim: max_chars=%d head=%d tail=%d max_keep=%d line_cap=%d keep=%q\n", cfg.MaxChars, cfg.Head, cfg.Tail, cfg.MaxKeep, cfg.LineCap, cfg.Keywords)
		} else {
			fmt.Fprintln(&b, "trim: (no hook asked; the defaults are shown)")
		}
		if set.MaxChars > 0 {
			fmt.Fprintf(&b, "max_chars: %d\n", set.MaxChars)
			cfg.MaxChars = min(cfg.MaxChars, set.MaxChars)
		}
		for _, r := range set.Redactions {
			fmt.Fprintf(&b, "redact: %s %s (%s)\n", r.Label, r.Pattern, r.Hook)
		}
		tr := trim.New(cfg, nil)
		_, _ = tr.Write(data)
		text := Redact(tr.Result("").Text, set.Redactions)
		if set.MaxChars > 0 {
			if r := []rune(text); len(r) > set.MaxChars {
				text = string(r[:set.MaxChars]) + fmt.Sprintf("\n[... cut at %d characters]", set.MaxChars)
			}
		}
		fmt.Fprintln(&b, "--- output as a model would see it ---")
		b.WriteString(text)
		if !strings.HasSuffix(text, "\n") {
			b.WriteString("\n")
		}
	}
	_, err = io.WriteString(w, b.String())
	return err
}
