package hooks

import (
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"

	lua "github.com/yuin/gopher-lua"

	"github.com/harnessd/harnessd/core/event"
	"github.com/harnessd/harnessd/core/trim"
)

// ObservationSettings is what the observation hooks ask for one output.
// The zero value asks for nothing: the caller's defaults apply.
//
// When several hooks answer: Trim starts from trim.DefaultConfig and takes,
// for head, tail, max_keep and line_cap, the largest value any hook gave
// (the hooks together keep everything any one of them wanted kept), and
// the keywords of all of them added to the defaults; MaxChars is the
// smallest budget given; Redactions are all of them, in file order.
type ObservationSettings struct {
	Trim       *trim.Config // nil: no hook asked; use the caller's default
	MaxChars   int          // the most characters of output to show; 0: no limit asked
	Redactions []Redaction
}

// Redaction replaces what Pattern matches by "[REDACTED Label]".
type Redaction struct {
	// Pattern is a Go regular expression (RE2 syntax). If it has a group
	// named "secret", only that group is replaced: with
	// `(?i)authorization:\s*(?P<secret>.+)` the header name stays.
	Pattern *regexp.Regexp
	Label   string
	Hook    string // the file:line of the hook that asked for it
}

// Limits on what an observation hook may ask for.
const (
	maxKeywords = 256
	maxRedacts  = 256
)

// observation runs the observation hooks. See Engine.Observation.
func (w *worker) observation(ctx context.Context, s Session, action, obs event.Payload) (ObservationSettings, error) {
	w.setSession(s)
	kind := event.KindCmdOutput
	if obs != nil {
		kind = obs.Kind()
	} else if action != nil && action.Kind() != event.KindCmdRun {
		return ObservationSettings{}, nil
	}
	var m merger
	var errs []error
	for _, hi := range w.byClass[classObservation] {
		h := &w.handlers[hi]
		if h.kind != "" && h.kind != kind {
			continue
		}
		obsT := w.payloadTable(obs)
		if obs == nil {
			obsT.RawSetString("kind", lua.LString(kind))
		}
		w.call = &call{class: classObservation}
		ret, err := w.invoke(ctx, h, obsT, w.payloadTable(action))
		w.call = nil
		if err == nil {
			err = m.add(w, h, ret)
		}
		if err != nil {
			if ctx.Err() != nil {
				return m.out, ctx.Err()
			}
			if w.set.files[h.file].failOpen {
				w.set.eng.log.Warn("observation hook failed; its source is fail-open, so it is skipped", "err", err, "session", s.ID)
				continue
			}
			errs = append(errs, err)
		}
	}
	return m.out, errors.Join(errs...)
}

// merger merges the answers of observation hooks.
type merger struct {
	out                          ObservationSettings
	head, tail, maxKeep, lineCap bool // set by a hook yet
	seenKeyword, seenRe          map[string]bool
	seenRedact                   map[redactKey]bool // from smallRedacts on (seenRedaction)
}

// add reads what one observation hook returned and merges it.
func (m *merger) add(w *worker, h *handler, ret lua.LValue) error {
	fail := func(format string, args ...any) error {
		return &FileError{File: w.set.files[h.file].name, Line: h.line, Err: ErrHook, Msg: fmt.Sprintf(format, args...)}
	}
	if ret == lua.LNil {
		return nil
	}
	t, ok := ret.(*lua.LTable)
	if !ok {
		return fail("observation hook returned a %s; return a table {trim=…, max_chars=…, redact=…} or nothing", ret.Type())
	}
	var err error
	t.ForEach(func(k, v lua.LValue) {
		if err != nil {
			return
		}
		switch key, _ := k.(lua.LString); key {
		case "trim":
			err = m.trim(v, fail)
		case "max_chars":
			var n int
			if n, err = count(v, "max_chars", math.MaxInt32, fail); err == nil && n > 0 {
				if m.out.MaxChars == 0 || n < m.out.MaxChars {
					m.out.MaxChars = n
				}
			}
		case "redact":
			err = m.redact(w, h, v, fail)
		default:
			err = fail("observation hook returned an unknown setting %v (known: trim, max_chars, redact)", k)
		}
	})
	return err
}

// count reads a whole number in [0, max].
func count(v lua.LValue, name string, max int, fail func(string, ...any) error) (int, error) {
	n, ok := v.(lua.LNumber)
	if !ok || n < 0 || float64(n) != math.Trunc(float64(n)) || float64(n) > float64(max) {
		return 0, fail("%s must be a whole number from 0 to %d, not %v", name, max, v)
	}
	return int(n), nil
}

func (m *merger) trim(v lua.LValue, fail func(string, ...any) error) error {
	t, ok := v.(*lua.LTable)
	if !ok {
		return fail("trim must be a table {head=, tail=, keep={…}, max_keep=, line_cap=}, not a %s", v.Type())
	}
	if m.out.Trim == nil {
		cfg := trim.DefaultConfig()
		m.out.Trim = &cfg
		m.seenKeyword = map[string]bool{}
		for _, k := range cfg.Keywords {
			m.seenKeyword[k] = true
		}
	}
	cfg := m.out.Trim
	var err error
	t.ForEach(func(k, v lua.LValue) {
		if err != nil {
			return
		}
		key, _ := k.(lua.LString)
		setMax := func(dst *int, set *bool, limit int) {
			var n int
			if n, err = count(v, "trim."+string(key), limit, fail); err != nil {
				return
			}
			if !*set || n > *dst {
				*dst = n
			}
			*set = true
		}
		switch key {
		case "head":
			setMax(&cfg.Head, &m.head, trim.MaxLines)
		case "tail":
			setMax(&cfg.Tail, &m.tail, trim.MaxLines)
		case "max_keep":
			setMax(&cfg.MaxKeep, &m.maxKeep, trim.MaxLines)
		case "line_cap":
			setMax(&cfg.LineCap, &m.lineCap, trim.MaxLineCap)
		case "keep":
			list, ok := v.(*lua.LTable)
			if !ok {
				err = fail("trim.keep must be a list of strings")
				return
			}
			for i := 1; i <= list.Len(); i++ {
				s, ok := list.RawGetInt(i).(lua.LString)
				if !ok || s == "" || strings.ContainsRune(string(s), '\n') {
					err = fail("trim.keep[%d] must be a non-empty one-line string", i)
					return
				}
				if m.seenKeyword[string(s)] {
					continue
				}
				if len(cfg.Keywords) >= maxKeywords {
					err = fail("trim.keep: more than %d keywords in all", maxKeywords)
					return
				}
				m.seenKeyword[string(s)] = true
				cfg.Keywords = append(cfg.Keywords, string(s))
			}
		default:
			err = fail("trim has no setting %v (known: head, tail, keep, max_keep, line_cap)", k)
		}
	})
	return err
}

func (m *merger) redact(w *worker, h *handler, v lua.LValue, fail func(string, ...any) error) error {
	list, ok := v.(*lua.LTable)
	if !ok {
		return fail("redact must be a list of {pattern=, label=}")
	}
	for i := 1; i <= list.Len(); i++ {
		r, ok := list.RawGetInt(i).(*lua.LTable)
		if !ok {
			return fail("redact[%d] must be a table {pattern=, label=}", i)
		}
		pat, ok := r.RawGetString("pattern").(lua.LString)
		if !ok || pat == "" {
			return fail("redact[%d].pattern must be a Go regular expression", i)
		}
		label := "secret"
		switch l := r.RawGetString("label").(type) {
		case lua.LString:
			label = string(l)
		case *lua.LNilType:
		default:
			return fail("redact[%d].label must be a string", i)
		}
		if !validLabel(label) {
			return fail("redact[%d].label %q: use 1 to 64 letters, digits, '_', '-' or '.'", i, label)
		}
		re, err := w.set.eng.regex.compile(string(pat))
		if err != nil {
			return fail("redact[%d].pattern: %v", i, err)
		}
		if m.seenRedaction(label, string(pat)) {
			continue
		}
		if len(m.out.Redactions) >= maxRedacts {
			return fail("redact: more than %d patterns in all", maxRedacts)
		}
		m.out.Redactions = append(m.out.Redactions, Redaction{Pattern: re, Label: label, Hook: w.whereOf(h)})
	}
	return nil
}

// seenRedaction reports whether a redaction of label and pattern is
// merged already, and notes it as merged. A few are compared one by one
// (every output is hooked: a map per output cost more than the
// comparisons); past smallRedacts a map takes over.
func (m *merger) seenRedaction(label, pattern string) bool {
	key := redactKey{label, pattern}
	if m.seenRedact != nil {
		if m.seenRedact[key] {
			return true
		}
		m.seenRedact[key] = true
		return false
	}
	for _, r := range m.out.Redactions {
		if r.Label == label && r.Pattern.String() == pattern {
			return true
		}
	}
	if len(m.out.Redactions) >= smallRedacts {
		m.seenRedact = make(map[redactKey]bool, 2*smallRedacts)
		for _, r := range m.out.Redactions {
			m.seenRedact[redactKey{r.Label, r.Pattern.String()}] = true
		}
		m.seenRedact[key] = true
	}
	return false
}

// redactKey identifies a redaction for seenRedaction.
type redactKey struct{ label, pattern string }

// smallRedacts is how many redactions seenRedaction compares one by one.
const smallRedacts = 32

// whereOf is h's "file:line", for what its answers are credited to.
func (w *worker) whereOf(h *handler) string {
	if h.where == "" {
		h.where = fmt.Sprintf("%s:%d", w.set.files[h.file].name, h.line)
	}
	return h.where
}

func validLabel(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// Redact returns text with every match of rs replaced by "[REDACTED
// label]" (only the "secret" group of a pattern that has one). Matches are
// found in text as given; where matches of several patterns overlap, the
// span they cover together is replaced once, with the label of the first
// of them in rs.
func Redact(text string, rs []Redaction) string {
	type span struct{ start, end, prio int }
	var spans []span
	for i, r := range rs {
		if r.Pattern == nil {
			continue
		}
		group := r.Pattern.SubexpIndex("secret")
		for _, m := range r.Pattern.FindAllStringSubmatchIndex(text, -1) {
			s, e := m[0], m[1]
			if group >= 0 {
				s, e = m[2*group], m[2*group+1]
			}
			if s < 0 || e <= s {
				continue
			}
			spans = append(spans, span{s, e, i})
		}
	}
	if len(spans) == 0 {
		return text
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].start < spans[j].start })
	var b strings.Builder
	last := 0
	for i := 0; i < len(spans); {
		cur := spans[i]
		for i++; i < len(spans) && spans[i].start < cur.end; i++ {
			cur.end = max(cur.end, spans[i].end)
			cur.prio = min(cur.prio, spans[i].prio)
		}
		b.WriteString(text[last:cur.start])
		b.WriteString("[REDACTED " + rs[cur.prio].Label + "]")
		last = cur.end
	}
	b.WriteString(text[last:])
	return b.String()
}

// sessionEvent runs the hooks of session.start or session.end.
func (w *worker) sessionEvent(ctx context.Context, s Session, cl class, name string) error {
	w.setSession(s)
	var errs []error
	for _, hi := range w.byClass[cl] {
		h := &w.handlers[hi]
		ev := w.L.CreateTable(0, 1)
		ev.RawSetString("name", lua.LString(name))
		w.call = &call{class: cl}
		_, err := w.invoke(ctx, h, ev)
		w.call = nil
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if w.set.files[h.file].failOpen {
				w.set.eng.log.Warn("session hook failed; its source is fail-open", "err", err, "session", s.ID)
				continue
			}
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
