package shcmd

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// quoting says how backslashes in a literal are read.
type quoting int

const (
	unquoted quoting = iota // \x is x
	dquoted                 // \$ \` \" \\ escape, others stay
	heredoc                 // \$ \` \\ escape, others stay
)

// expand appends to dst the argv words wd becomes: usually one, several
// for a brace expansion ({a,b}) or for "$@" when the positional
// parameters are known.
func (w *walker) expand(dst []word, wd *syntax.Word, c ctx) []word {
	if c.params != nil && !c.open {
		if pe := soleParam(wd); pe != nil && pe.Param != nil && (pe.Param.Value == "@" || pe.Param.Value == "*") {
			for _, p := range c.params.words {
				dst = append(dst, word{text: p.text, guessed: p.known()})
			}
			return dst
		}
	}
	if n := braces(wd); n > maxBraces {
		// Expanding would take too long; what it gives is not known.
		r := w.render(wd, c)
		r.lit, r.guessed = false, false
		return append(dst, r)
	} else if n > 0 {
		cl := &syntax.Word{Parts: append([]syntax.WordPart(nil), wd.Parts...)}
		if syntax.SplitBraces(cl) {
			start := len(dst)
			ok := true
			for ew, err := range expand.BracesSeq(nil, cl) {
				if err != nil || len(dst)-start >= maxBraceWords || ew == nil {
					ok = false
					break
				}
				dst = append(dst, w.render(ew, c))
			}
			if ok && len(dst) > start {
				return dst
			}
			dst = dst[:start]
			r := w.render(wd, c)
			r.lit, r.guessed = false, false
			return append(dst, r)
		}
	}
	return append(dst, w.render(wd, c))
}

// braces counts the '{' in the unquoted literals of wd.
func braces(wd *syntax.Word) int {
	n := 0
	for _, p := range wd.Parts {
		if l, ok := p.(*syntax.Lit); ok {
			n += strings.Count(l.Value, "{")
		}
	}
	return n
}

// soleParam returns the parameter expansion that is all of wd ($@ or "$@").
func soleParam(wd *syntax.Word) *syntax.ParamExp {
	if len(wd.Parts) != 1 {
		return nil
	}
	switch p := wd.Parts[0].(type) {
	case *syntax.ParamExp:
		if simpleParam(p) {
			return p
		}
	case *syntax.DblQuoted:
		if len(p.Parts) == 1 {
			if pe, ok := p.Parts[0].(*syntax.ParamExp); ok && simpleParam(pe) {
				return pe
			}
		}
	}
	return nil
}

// render returns wd after quote removal, with what is computed at run time
// kept as written.
func (w *walker) render(wd *syntax.Word, c ctx) word {
	if wd == nil {
		return word{lit: true}
	}
	if len(wd.Parts) == 1 {
		if l, ok := wd.Parts[0].(*syntax.Lit); ok {
			return word{text: unescape(l.Value, unquoted), lit: true}
		}
	}
	r := word{lit: true, guessed: true}
	var b strings.Builder
	w.parts(&b, wd.Parts, unquoted, c, &r)
	r.text = b.String()
	if r.lit {
		r.guessed = false
	}
	return r
}

// renderDoc returns the text of a here-document: as written when its
// delimiter is quoted, else with escapes read and expansions kept as
// written.
func (w *walker) renderDoc(body, delim *syntax.Word, c ctx) word {
	quoted := delim == nil
	if delim != nil {
		for _, p := range delim.Parts {
			l, ok := p.(*syntax.Lit)
			if !ok || strings.IndexByte(l.Value, '\\') >= 0 {
				quoted = true
			}
		}
	}
	if quoted {
		var b strings.Builder
		for _, p := range body.Parts {
			if l, ok := p.(*syntax.Lit); ok {
				b.WriteString(l.Value)
			} else {
				b.WriteString(w.print(p))
			}
		}
		return word{text: b.String(), lit: true}
	}
	r := word{lit: true, guessed: true}
	var b strings.Builder
	w.parts(&b, body.Parts, heredoc, c, &r)
	r.text = b.String()
	if r.lit {
		r.guessed = false
	}
	return r
}

func (w *walker) parts(b *strings.Builder, parts []syntax.WordPart, q quoting, c ctx, r *word) {
	for _, p := range parts {
		switch p := p.(type) {
		case *syntax.Lit:
			b.WriteString(unescape(p.Value, q))
		case *syntax.SglQuoted:
			if p.Dollar {
				b.WriteString(escapes(p.Value, ansiC))
			} else {
				b.WriteString(p.Value)
			}
		case *syntax.DblQuoted:
			w.parts(b, p.Parts, dquoted, c, r)
		case *syntax.ParamExp:
			r.lit = false
			if v, ok := w.param(p, c); ok {
				b.WriteString(v.text)
				if !v.known() {
					r.guessed = false
				}
				continue
			}
			r.guessed = false
			if simpleParam(p) {
				b.WriteString("$" + p.Param.Value)
			} else {
				b.WriteString(w.print(p))
			}
		case *syntax.ExtGlob:
			// A glob, like * and ?: kept as written, as they are.
			b.WriteString(p.Op.String())
			if p.Pattern != nil {
				b.WriteString(p.Pattern.Value)
			}
			b.WriteString(")")
		case *syntax.CmdSubst:
			r.lit = false
			if v, ok := w.substOut[p]; ok {
				b.WriteString(v.text)
				r.guessed = r.guessed && v.guessed
				continue
			}
			r.guessed = false
			b.WriteString(w.print(p))
		default:
			// $((…)), <(…), >(…)
			r.lit, r.guessed = false, false
			b.WriteString(w.print(p))
		}
	}
}

// simpleParam reports whether p is $name or ${name} with nothing else.
func simpleParam(p *syntax.ParamExp) bool {
	return p.Param != nil && p.NestedParam == nil && p.Index == nil && p.Exp == nil &&
		p.Slice == nil && p.Repl == nil && !p.Excl && !p.Length && !p.Width && !p.IsSet &&
		p.Names == 0 && p.Flags == nil && len(p.Modifiers) == 0
}

// param returns the value of a parameter expansion when it can be guessed:
// a positional parameter of a call we saw, a variable given a value in the
// text, or the default of ${x:-default} when x is not known.
func (w *walker) param(p *syntax.ParamExp, c ctx) (word, bool) {
	if p.Param == nil {
		return word{}, false
	}
	if !simpleParam(p) {
		return w.paramDefault(p, c)
	}
	if v, ok := w.sc.vars[p.Param.Value]; ok {
		return v, true
	}
	if c.params == nil || c.open {
		return word{}, false
	}
	name := p.Param.Value
	switch name {
	case "@", "*":
		var b strings.Builder
		known := true
		for i, x := range c.params.words {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(x.text)
			known = known && x.known()
		}
		return word{text: b.String(), guessed: known}, true
	case "#":
		return word{text: strconv.Itoa(len(c.params.words)), guessed: true}, true
	}
	n, err := strconv.Atoi(name)
	if err != nil || n < 0 {
		return word{}, false
	}
	if n == 0 {
		return word{text: c.params.zero.text, guessed: c.params.zero.known()}, true
	}
	if n > len(c.params.words) {
		return word{text: "", guessed: true}, true
	}
	x := c.params.words[n-1]
	return word{text: x.text, guessed: x.known()}, true
}

// paramDefault guesses ${x-d}, ${x:-d}, ${x=d}, ${x:=d}, ${x+a} and
// ${x:+a} (with x unknown, the default is the guess).
func (w *walker) paramDefault(p *syntax.ParamExp, c ctx) (word, bool) {
	if p.Exp == nil || p.NestedParam != nil || p.Index != nil || p.Slice != nil || p.Repl != nil ||
		p.Excl || p.Length || p.Width || p.IsSet || p.Names != 0 {
		return word{}, false
	}
	def := func() word {
		if p.Exp.Word == nil {
			return word{guessed: true}
		}
		d := w.render(p.Exp.Word, c)
		return word{text: d.text, guessed: d.known()}
	}
	v, known := w.sc.vars[p.Param.Value]
	switch p.Exp.Op {
	case syntax.DefaultUnset, syntax.DefaultUnsetOrNull, syntax.AssignUnset, syntax.AssignUnsetOrNull:
		if known && (v.text != "" || p.Exp.Op == syntax.DefaultUnset || p.Exp.Op == syntax.AssignUnset) {
			return v, true
		}
		return def(), true
	case syntax.AlternateUnset, syntax.AlternateUnsetOrNull:
		if known {
			if v.text == "" && p.Exp.Op == syntax.AlternateUnsetOrNull {
				return word{guessed: true}, true
			}
			return def(), true
		}
	}
	return word{}, false
}

// unescape reads the backslashes of a literal in the given quoting.
func unescape(s string, q quoting) string {
	if strings.IndexByte(s, '\\') < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if ch != '\\' || i+1 == len(s) {
			b.WriteByte(ch)
			continue
		}
		next := s[i+1]
		switch {
		case next == '\n':
			i++ // line continuation
		case q == unquoted:
			b.WriteByte(next)
			i++
		case next == '$' || next == '`' || next == '\\' || (q == dquoted && next == '"'):
			b.WriteByte(next)
			i++
		default:
			b.WriteByte(ch)
		}
	}
	return b.String()
}

// escapeStyle selects which backslash escapes escapes reads.
type escapeStyle int

const (
	ansiC    escapeStyle = iota // $'…': \nnn octal, \cX, \' \"
	echoE                       // echo -e: \0nnn octal, \c ends the output
	printfFm                    // printf formats and %b: \nnn octal
)

// escapes interprets backslash escapes as $'…', echo -e or printf do.
func escapes(s string, style escapeStyle) string {
	if strings.IndexByte(s, '\\') < 0 {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		i++
		switch ch := s[i]; ch {
		case 'a':
			b.WriteByte('\a')
		case 'b':
			b.WriteByte('\b')
		case 'e', 'E':
			b.WriteByte(0x1b)
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'v':
			b.WriteByte('\v')
		case '\\':
			b.WriteByte('\\')
		case '\'', '"', '?':
			if style == ansiC || ch == '"' {
				b.WriteByte(ch)
			} else {
				b.WriteByte('\\')
				b.WriteByte(ch)
			}
		case 'c':
			if style == echoE {
				return b.String()
			}
			if style == ansiC && i+1 < len(s) {
				i++
				b.WriteByte(s[i] & 0x1f)
				continue
			}
			b.WriteString("\\c")
		case 'x':
			n, v := hexDigits(s[i+1:], 2)
			if n == 0 {
				b.WriteString("\\x")
				continue
			}
			b.WriteByte(byte(v))
			i += n
		case 'u', 'U':
			max := 4
			if ch == 'U' {
				max = 8
			}
			n, v := hexDigits(s[i+1:], max)
			if n == 0 {
				b.WriteByte('\\')
				b.WriteByte(ch)
				continue
			}
			if v > utf8.MaxRune {
				v = utf8.RuneError
			}
			b.WriteRune(rune(v))
			i += n
		default:
			if ch >= '0' && ch <= '7' {
				start, max := i, 3
				if style == echoE {
					if ch != '0' {
						b.WriteByte('\\')
						b.WriteByte(ch)
						continue
					}
					start, max = i+1, 3
				}
				v, n := 0, 0
				for n < max && start+n < len(s) && s[start+n] >= '0' && s[start+n] <= '7' {
					v = v*8 + int(s[start+n]-'0')
					n++
				}
				b.WriteByte(byte(v))
				i = start + n - 1
				continue
			}
			b.WriteByte('\\')
			b.WriteByte(ch)
		}
	}
	return b.String()
}

func hexDigits(s string, max int) (n int, v int) {
	for n < max && n < len(s) {
		d := s[n]
		switch {
		case d >= '0' && d <= '9':
			v = v*16 + int(d-'0')
		case d >= 'a' && d <= 'f':
			v = v*16 + int(d-'a'+10)
		case d >= 'A' && d <= 'F':
			v = v*16 + int(d-'A'+10)
		default:
			return n, v
		}
		n++
	}
	return n, v
}
