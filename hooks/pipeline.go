package hooks

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"unicode/utf8"

	"github.com/harnessd/harnessd/core/event"
	"github.com/harnessd/harnessd/core/files"
	"github.com/harnessd/harnessd/core/pipeline"
	"github.com/harnessd/harnessd/core/session"
	"github.com/harnessd/harnessd/core/trim"
)

// Pipeline adapts an Engine to the action pipeline's Hooks: action hooks
// decide before an action is recorded, observation hooks retrim and redact
// what the model is shown. Outputs is where full outputs are kept, so a
// hook's trim settings apply to the whole output, not to what the default
// trimmer already kept.
type Pipeline struct {
	Engine  *Engine
	Outputs trim.OutputStore
	Logger  *slog.Logger
}

var _ pipeline.Hooks = (*Pipeline)(nil)

func sessionOf(s *session.Session) Session {
	return Session{ID: s.ID(), Workspace: s.Workdir(), Profile: s.Profile()}
}

// BeforeAction runs the action hooks.
func (p *Pipeline) BeforeAction(ctx context.Context, s *session.Session, _ event.Source, a event.Payload) (pipeline.Decision, error) {
	d, err := p.Engine.Action(ctx, sessionOf(s), a)
	if err != nil {
		return pipeline.Decision{}, err
	}
	if d.Err != nil && p.Logger != nil {
		p.Logger.Warn("action hook failed", "session", s.ID(), "hook", d.Hook, "verdict", d.Verdict, "err", d.Err)
	}
	out := pipeline.Decision{Hook: d.Hook, Reason: d.Reason, Action: d.Action}
	switch d.Verdict {
	case Veto:
		out.Verdict = pipeline.Veto
	case Ask:
		out.Verdict = pipeline.Ask
	case Rewrite:
		out.Verdict = pipeline.Rewrite
	default:
		out.Verdict = pipeline.Allow
	}
	return out, nil
}

// AfterObservation runs the observation hooks on a command's output: their
// trim settings are applied to the full output, their character budget
// cuts what is left, and their redactions replace secrets in what the model
// sees (the stored full output stays as printed, for audit; pages read
// through the API are redacted by RedactPage). A failing hook withholds
// the output rather than show what a redaction may have been meant to hide.
func (p *Pipeline) AfterObservation(ctx context.Context, s *session.Session, action event.Event, o *pipeline.Outcome) error {
	if fr, ok := o.Observation.(files.Result); ok {
		return p.afterFile(ctx, s, action, o, fr)
	}
	if oo, ok := o.Observation.(pipeline.OutputObservation); ok {
		// A python_result: its output as a command's, then back.
		inner := pipeline.Outcome{Observation: oo.AsCmdOutput(), Trim: o.Trim}
		err := p.AfterObservation(ctx, s, action, &inner)
		if out, ok := inner.Observation.(event.CmdOutput); ok {
			o.Observation = oo.WithCmdOutput(out)
		}
		return err
	}
	out, ok := o.Observation.(event.CmdOutput)
	if !ok {
		return nil
	}
	st, err := p.Engine.Observation(ctx, sessionOf(s), action.Payload, out)
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		out.Output = ""
		out.Note = strings.TrimSpace(out.Note + " The output is withheld: an observation hook failed (" + err.Error() + "); read it with the output id if you may.")
		o.Observation = out
		return nil
	}
	// A budget asked for is the trimmer's, so the failure lines are what
	// stays; the cut below is left for budgets under trim.MinMaxChars.
	over := st.MaxChars > 0 && utf8.RuneCountInString(out.Output) > st.MaxChars
	if st.Trim != nil || over {
		cfg := trim.DefaultConfig()
		if st.Trim != nil {
			cfg = *st.Trim
		}
		if st.MaxChars > 0 {
			cfg.MaxChars = min(cfg.MaxChars, st.MaxChars)
		}
		if err := p.retrim(ctx, &out, o.Trim, cfg); err != nil && p.Logger != nil {
			p.Logger.Warn("observation hook trim not applied", "session", s.ID(), "err", err)
		}
	}
	if st.MaxChars > 0 && utf8.RuneCountInString(out.Output) > st.MaxChars {
		out.Output = cutChars(out.Output, st.MaxChars)
	}
	if len(st.Redactions) > 0 {
		out.Output = Redact(out.Output, st.Redactions)
	}
	o.Observation = out
	return nil
}

// afterFile runs the observation hooks on the text a file action shows
// the model (a view of a .env file holds secrets as a cat of it would),
// as the output of a command: their redactions and character budget
// apply to it. The diff stays as recorded, for audit, as a command's
// stored full output does.
func (p *Pipeline) afterFile(ctx context.Context, s *session.Session, action event.Event, o *pipeline.Outcome, fr files.Result) error {
	st, err := p.Engine.Observation(ctx, sessionOf(s), action.Payload, event.CmdOutput{ExitCode: fr.ExitCode, Output: fr.Output})
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		fr.Output = "The file's text is withheld: an observation hook failed (" + err.Error() + ")."
		o.Observation = fr
		return nil
	}
	if st.MaxChars > 0 && utf8.RuneCountInString(fr.Output) > st.MaxChars {
		fr.Output = cutChars(fr.Output, st.MaxChars)
	}
	if len(st.Redactions) > 0 {
		fr.Output = Redact(fr.Output, st.Redactions)
	}
	o.Observation = fr
	return nil
}

// retrim trims the whole output again with cfg: from the store when the
// default trimmer cut it, else from the text the model would have seen,
// which is then all of it.
func (p *Pipeline) retrim(ctx context.Context, out *event.CmdOutput, res *trim.Result, cfg trim.Config) error {
	id := ""
	if out.Trimmed != nil {
		id = out.Trimmed.OutputID
	}
	if id == "" && out.Trimmed != nil {
		return errors.New("the full output was not kept")
	}
	tr := trim.New(cfg, nil)
	if id == "" {
		tr.Write([]byte(out.Output))
	} else {
		var read int64
		for from := 1; ; {
			l, err := p.Outputs.ReadLines(ctx, id, from, 0)
			if err != nil {
				return fmt.Errorf("read output %s: %w", id, err)
			}
			tr.Write([]byte(l.Text))
			read += int64(len(l.Text))
			if l.To >= l.Total || l.To < from {
				break
			}
			from = l.To + 1
		}
		if res != nil && read < res.BytesTotal {
			// The store kept only the start (store.max_output_mb): a
			// view of that would hide the end the default view shows.
			return fmt.Errorf("output %s: only %d of its %d bytes were stored; the default view stays", id, read, res.BytesTotal)
		}
	}
	r := tr.Result(id)
	out.Output = r.Text
	if r.Trimmed || r.LinesCut > 0 {
		out.Trimmed = &event.Trimmed{LinesTotal: r.LinesTotal, LinesOmitted: r.LinesOmitted, BytesOmitted: r.BytesOmitted, OutputID: id}
	}
	if res != nil {
		*res = r
	}
	return nil
}

// cutChars keeps the first n characters of s and says what was cut.
func cutChars(s string, n int) string {
	i, count := 0, 0
	for i < len(s) && count < n {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
		count++
	}
	return s[:i] + fmt.Sprintf("\n[... %d more characters cut: an observation hook's budget is %d characters]\n", utf8.RuneCountInString(s[i:]), n)
}

// RedactPage applies the observation hooks' redactions to a page of a
// stored output, as the model would have been shown it.
func (p *Pipeline) RedactPage(ctx context.Context, sessionID, text string) (string, error) {
	st, err := p.Engine.Observation(ctx, Session{ID: sessionID}, nil, event.CmdOutput{Output: text})
	if err != nil {
		return "", err
	}
	return Redact(text, st.Redactions), nil
}

// SessionEvent runs the session.start and session.end hooks.
func (p *Pipeline) SessionEvent(ctx context.Context, s *session.Session, name string) error {
	return p.Engine.Event(ctx, sessionOf(s), name)
}
