package parse

import (
	"strings"
	"unicode"
)

// fence is the run of backticks or tildes that opens a code block.
type fence struct {
	char byte
	n    int
}

func (f fence) String() string { return strings.Repeat(string(f.char), f.n) }

// block is one code block found in a reply.
type block struct {
	fence fence
	label labelInfo
	// info is the opening fence's info string, trimmed.
	info string
	// extra is info text after the label that is not a renderer attribute:
	// usually a command typed on the fence line ("```bash ls -la").
	extra string
	// content is what lies between the fences, dedented; for a one-line
	// block it is the text after the label.
	content string
	inline  bool
	closed  bool
	// start and end are the block's byte range in the reply, fences
	// included, so the finish tag search can skip code.
	start, end int
}

// span is a byte range of the reply that is code, not prose.
type span struct{ start, end int }

// scanner finds the code blocks and inline code spans of a reply.
//
// It follows CommonMark where models follow it and bends where they
// don't: a fence may open in the middle of a line ("let me check: ```bash"),
// a block may sit on one line ("```bash ls```"), a fence may be indented
// any amount (lists), and stray backtick runs are remembered as unclosed
// fences instead of being read as prose. Tildes count only at the start of a
// line, since "~~~" in running text is decoration, not code.
type scanner struct {
	s      string
	lines  []span
	blocks []block
	code   []span
	// heredocBudget bounds the lines spent on heredoc-aware searches that
	// failed: each failure reads to the end of the reply, and a reply full
	// of unterminated heredocs would otherwise cost quadratic time.
	heredocBudget int
}

func scanReply(s string) *scanner {
	sc := &scanner{s: s}
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == '\n' {
			sc.lines = append(sc.lines, span{start, i})
			start = i + 1
		}
	}
	sc.heredocBudget = 4*len(sc.lines) + 64
	for i := 0; i < len(sc.lines); {
		i = sc.scanLine(i)
	}
	return sc
}

func (sc *scanner) line(i int) string { return sc.s[sc.lines[i].start:sc.lines[i].end] }

// scanLine scans line i and returns the index of the next line to scan.
func (sc *scanner) scanLine(i int) int {
	ln := sc.line(i)
	off := sc.lines[i].start
	col := 0
	if ind := indentOf(ln); ind < len(ln) && (ln[ind] == '`' || ln[ind] == '~') {
		if n := runLen(ln, ind); n >= 3 {
			next, c, done := sc.open(i, ind, n, true)
			if done {
				return next
			}
			col = c
		}
	}
	for col < len(ln) {
		j := strings.IndexByte(ln[col:], '`')
		if j < 0 {
			break
		}
		p := col + j
		n := runLen(ln, p)
		if n < 3 {
			// An inline code span (`x` or ``x``) hides what is inside it,
			// so "`<finish>`" or "`` ``` ``" in prose is only talk.
			if q := findRun(ln, p+n, '`', n, true); q >= 0 {
				sc.code = append(sc.code, span{off + p, off + q + n})
				col = q + n
			} else {
				col = p + n
			}
			continue
		}
		next, c, done := sc.open(i, p, n, false)
		if done {
			return next
		}
		col = c
	}
	return i + 1
}

// open handles a fence run of n chars at column p of line i. A fence closed
// on the same line is a one-line block and scanning goes on at column c of
// the same line (done false); otherwise it opens a block and next is the
// line after its closing fence, or the end of the reply if it has none.
func (sc *scanner) open(i, p, n int, lineStart bool) (next, c int, done bool) {
	ln := sc.line(i)
	off := sc.lines[i].start
	char := ln[p]
	f := fence{char, n}
	rest := ln[p+n:]

	if q := findRun(rest, 0, char, n, false); q >= 0 {
		qn := runLen(rest, q)
		end := p + n + q + qn
		whole := lineStart && strings.TrimSpace(ln[end:]) == ""
		sc.oneLine(f, rest[:q], off+p, off+end, whole)
		return 0, end, false
	}

	info := strings.TrimSpace(rest)
	words := strings.Fields(info)
	li := resolveLabel(words)
	b := block{fence: f, label: li, info: info, start: off + p}
	if extra := afterWords(info, li.used); extra != "" && !allAttributes(extra) {
		b.extra = extra
	}
	indent := 0
	if lineStart {
		indent = p
	}
	heredocs := li.kind != labelOther && sc.heredocBudget > 0
	closeLine := sc.findClose(i+1, f, indent, heredocs)
	if closeLine < 0 && heredocs {
		// The heredoc never ended (a forgotten EOF line): fall back to
		// plain fence matching rather than call the block unclosed.
		sc.heredocBudget -= len(sc.lines) - i
		closeLine = sc.findClose(i+1, f, indent, false)
	}
	last := len(sc.lines)
	if closeLine >= 0 {
		b.closed = true
		last = closeLine
		b.end = sc.lines[closeLine].end
	} else {
		b.end = len(sc.s)
	}
	var body []string
	for j := i + 1; j < last; j++ {
		body = append(body, dedent(sc.line(j), indent))
	}
	b.content = strings.Join(body, "\n")
	sc.blocks = append(sc.blocks, b)
	sc.code = append(sc.code, span{b.start, b.end})
	return last + 1, 0, true
}

// oneLine records a block opened and closed on one line, such as
// "```bash ls -la```". Only an explicit shell label, or a block that is the
// whole line, makes it a command: "run ```make clean``` later" in prose is a
// mention, not an order.
func (sc *scanner) oneLine(f fence, inner string, start, end int, whole bool) {
	sc.code = append(sc.code, span{start, end})
	words := strings.Fields(inner)
	if len(words) == 0 {
		return
	}
	li := resolveLabel(words)
	b := block{fence: f, label: li, info: strings.TrimSpace(inner), inline: true, closed: true, start: start, end: end}
	switch li.kind {
	case labelShell, labelOther:
		b.content = afterWords(inner, li.used)
		if b.content == "" {
			return // "use a ```bash``` block": talk about a label
		}
	default:
		if !whole {
			return
		}
		b.label = labelInfo{kind: labelShell}
		b.content = strings.TrimSpace(inner)
	}
	sc.blocks = append(sc.blocks, b)
}

// findClose returns the line, from line from on, that closes a block opened
// by f, or -1.
//
// Two refinements over CommonMark keep a model's file-writing commands
// whole. Inside a heredoc body (cat > README.md <<'EOF' ... EOF) fence
// lines are text, so a markdown file with its own ``` blocks can be written
// from a ```bash block. And a fence line with a label ("```python") opens a
// nested level that the next bare fence closes, instead of that bare fence
// ending the outer block early.
func (sc *scanner) findClose(from int, f fence, indent int, heredocs bool) int {
	depth := 0
	var docs []heredoc
	for j := from; j < len(sc.lines); j++ {
		ln := dedent(sc.line(j), indent)
		if len(docs) > 0 {
			if docs[0].ends(ln) {
				docs = docs[1:]
			}
			continue
		}
		ind := indentOf(ln)
		if r := runLen(ln, ind); r >= f.n && ln[ind] == f.char {
			tail := strings.TrimSpace(ln[ind+r:])
			if tail == "" {
				if depth == 0 {
					return j
				}
				depth--
				continue
			}
			if f.char == '~' || strings.IndexByte(tail, '`') < 0 {
				depth++
				continue
			}
		}
		if heredocs {
			docs = heredocStarts(ln)
		}
	}
	return -1
}

// heredoc is a here-document delimiter a command line opened.
type heredoc struct {
	word      string
	stripTabs bool // <<- strips leading tabs from the body and the delimiter
}

func (h heredoc) ends(line string) bool {
	if h.stripTabs {
		line = strings.TrimLeft(line, "\t")
	}
	return line == h.word
}

// heredocStarts returns the here-documents a shell line opens, in order. It
// is a light lexer (quotes, backslashes, comments), good enough to know when
// fence lines are file content; when it is wrong, findClose's caller falls
// back to plain fence matching.
func heredocStarts(l string) []heredoc {
	var docs []heredoc
	inSingle, inDouble := false, false
	for k := 0; k < len(l); k++ {
		c := l[k]
		switch {
		case inSingle:
			if c == '\'' {
				inSingle = false
			}
		case c == '\\':
			k++
		case inDouble:
			if c == '"' {
				inDouble = false
			}
		case c == '\'':
			inSingle = true
		case c == '"':
			inDouble = true
		case c == '#' && (k == 0 || l[k-1] == ' ' || l[k-1] == '\t'):
			return docs
		case c == '<' && k+1 < len(l) && l[k+1] == '<':
			if k+2 < len(l) && l[k+2] == '<' {
				k += 2 // <<< is a here-string, not a heredoc
				continue
			}
			m := k + 2
			h := heredoc{}
			if m < len(l) && l[m] == '-' {
				h.stripTabs = true
				m++
			}
			for m < len(l) && (l[m] == ' ' || l[m] == '\t') {
				m++
			}
			w := m
			for w < len(l) && !strings.ContainsRune(" \t;|&<>()", rune(l[w])) {
				w++
			}
			word := strings.NewReplacer(`'`, "", `"`, "", `\`, "").Replace(l[m:w])
			// A digit is far more likely $((1<<2)) than a delimiter.
			if word != "" && (word[0] < '0' || word[0] > '9') {
				h.word = word
				docs = append(docs, h)
			}
			k = max(w-1, k+1)
		}
	}
	return docs
}

// indentOf returns the number of leading spaces and tabs of l.
func indentOf(l string) int {
	i := 0
	for i < len(l) && (l[i] == ' ' || l[i] == '\t') {
		i++
	}
	return i
}

// runLen returns the length of the run of l[p] starting at p (0 if p is out
// of range).
func runLen(l string, p int) int {
	if p >= len(l) {
		return 0
	}
	n := 1
	for p+n < len(l) && l[p+n] == l[p] {
		n++
	}
	return n
}

// findRun returns the start of the first maximal run of c in l at or after
// from whose length is exactly n (exact) or at least n, or -1.
func findRun(l string, from int, c byte, n int, exact bool) int {
	for p := from; p < len(l); {
		if l[p] != c {
			p++
			continue
		}
		r := runLen(l, p)
		if r == n || (!exact && r > n) {
			return p
		}
		p += r
	}
	return -1
}

// dedent removes up to n leading spaces or tabs, as CommonMark removes the
// opening fence's indentation from each content line.
func dedent(l string, n int) string {
	i := 0
	for i < n && i < len(l) && (l[i] == ' ' || l[i] == '\t') {
		i++
	}
	return l[i:]
}

// afterWords returns s without its first k whitespace-separated words,
// trimmed.
func afterWords(s string, k int) string {
	// The same notion of space as strings.Fields, so k words of Fields are
	// exactly the k words skipped here.
	s = strings.TrimSpace(s)
	for ; k > 0 && s != ""; k-- {
		i := strings.IndexFunc(s, unicode.IsSpace)
		if i < 0 {
			return ""
		}
		s = strings.TrimSpace(s[i:])
	}
	return s
}

// allAttributes reports whether every word of s is a renderer attribute.
func allAttributes(s string) bool {
	for _, w := range strings.Fields(s) {
		if !isAttribute(w) {
			return false
		}
	}
	return true
}
