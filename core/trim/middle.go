package trim

import (
	"bytes"
	"hash/maphash"
)

// middle takes the lines between the head and the tail, in order, and
// keeps the blocks worth showing: a line containing a keyword opens a
// block, its kind decides which following (and preceding) lines belong to
// it, and finished blocks become candidates for the budget. Blocks alike
// (same kind, same first and last line up to numbers) are kept once, with
// a count. Memory is bounded: at most maxCands blocks of at most
// blockLimit lines each.
type middle struct {
	t    *Trimmer
	open *block

	// recent holds the last plain lines before the next block, for the
	// kinds whose explanation comes first (go test -v, gcc's "In function").
	recent   [recentN]line
	recentAt int // next slot
	recentK  int // slots in use

	// plain is the run of plain lines just before the line being taken,
	// when it came in bulk; plainNext is the number of that line. Context
	// is taken from it only if a block starts there.
	plain     []byte
	plainNext int

	cands   []*block
	byKey   map[uint64]*block
	seq     int    // blocks opened, for ties
	scratch []byte // for key
	spare   *block // a block counted with one alike, for reuse

	candBytes int // text held by cands
}

const (
	recentN    = 8
	maxCands   = 256
	maxConsume = 400 // lines one block may take before it is closed

	// maxCandBytes bounds the text the candidates hold, whatever the
	// length of their lines.
	maxCandBytes = 1 << 20
)

// block is one failure with its context.
type block struct {
	kind   kind
	score  int
	indent int // of the trigger line
	phase  int // kind-specific progress
	seq    int

	lines    []bline
	trig     int // index of the trigger in lines
	dropped  int // lines of the block not kept
	consumed int
	bytes    int // text held, once closed

	similar     int // later blocks alike, not kept
	simFirst    int // line of the first of them
	simLast     int // and of the last
	simAdjacent bool
	lastNo      int
}

type bline struct {
	line
	imp uint8 // 0 shown first; higher, later
	sel bool
}

var seed = maphash.MakeSeed()

// line takes one middle line, whole or cut (then match says whether it
// holds a keyword).
func (m *middle) line(l *line, match int8) {
	if b := m.open; b != nil {
		in, end := b.cont(l.text)
		if in {
			m.add(b, l)
			if end || b.consumed >= maxConsume {
				m.close()
			}
			return
		}
		m.close()
	}
	if m.t.matching {
		if match == matchUnknown {
			match = m.t.test(l.text)
		}
		if match == matchYes {
			m.start(l)
			return
		}
	}
	m.remember(l)
}

// span takes whole middle lines, first numbered no, in bulk: plain lines
// are only counted; lines from a keyword hit to the end of its block are
// taken one by one.
func (m *middle) span(span []byte, no int) {
	off := 0
	for off < len(span) {
		if m.open == nil {
			p := -1
			if m.t.matching {
				p = m.t.m.next(span, off)
			}
			end := len(span)
			if p >= 0 {
				end = bytes.LastIndexByte(span[:p], '\n') + 1
			}
			if end > off {
				plain := span[off:end]
				n := bytes.Count(plain, []byte{'\n'})
				no += n
				off = end
				if p < 0 {
					m.rememberTail(plain, no)
					return
				}
				m.plain, m.plainNext = plain, no
			}
			if p < 0 {
				return
			}
		}
		i := bytes.IndexByte(span[off:], '\n')
		text := span[off : off+i]
		l := line{text: text[:min(len(text), m.t.lineCap)], no: no, size: int64(i), nl: true}
		match := matchUnknown
		if len(text) > m.t.lineCap {
			match = m.t.test(text)
		}
		m.line(&l, match)
		m.plain = nil
		off += i + 1
		no++
	}
}

// remember keeps a plain line as possible context of the next block.
func (m *middle) remember(l *line) {
	r := &m.recent[m.recentAt]
	r.text = append(r.text[:0], l.text...)
	r.no, r.size, r.nl = l.no, l.size, l.nl
	m.recentAt = (m.recentAt + 1) % recentN
	m.recentK = min(m.recentK+1, recentN)
}

// rememberTail remembers the last lines of plain, whose line after the
// last is numbered next.
func (m *middle) rememberTail(plain []byte, next int) {
	end := len(plain)
	var starts [recentN]int
	k := 0
	for k < recentN && end > 0 {
		s := bytes.LastIndexByte(plain[:end-1], '\n') + 1
		starts[k] = s
		k++
		end = s
	}
	for j := k - 1; j >= 0; j-- {
		s := starts[j]
		e := s + bytes.IndexByte(plain[s:], '\n')
		text := plain[s:e]
		m.remember(&line{text: text[:min(len(text), m.t.lineCap)], no: next - 1 - j, size: int64(e - s), nl: true})
	}
}

// start opens a block at its trigger line l.
func (m *middle) start(l *line) {
	k, score := classify(l.text)
	b := m.spare
	m.spare = nil
	if b == nil {
		b = &block{}
	}
	lines := b.lines[:0]
	*b = block{kind: k, score: score, indent: max(indent(l.text), 0), seq: m.seq, lines: lines}
	m.seq++
	// Context before the trigger: the recent plain lines just above it.
	if m.plain != nil && m.plainNext == l.no {
		m.rememberTail(m.plain, l.no)
		m.plain = nil
	}
	if lim := preLimit[k]; lim > 0 {
		var pre []line
		for j := 1; j <= m.recentK && len(pre) < lim; j++ {
			r := &m.recent[(m.recentAt-j+recentN)%recentN]
			if r.no != l.no-j || !preOK(k, b.indent, r.text) {
				break
			}
			pre = append(pre, *r)
		}
		for j := len(pre) - 1; j >= 0; j-- {
			b.push(&pre[j])
			b.lines[len(b.lines)-1].imp = 1
		}
	}
	m.recentK = 0
	b.trig = len(b.lines)
	m.add(b, l)
	m.open = b
}

func preOK(k kind, trigIndent int, text []byte) bool { return pre(k, trigIndent, text) }

// add appends a line to block b, keeping at most blockLimit lines: the
// first ones, or for a traceback the header and the last ones.
func (m *middle) add(b *block, l *line) {
	b.consumed++
	b.lastNo = l.no
	if b.kind == kindGoFail {
		// The passing subtests of a failing test say nothing.
		if t := bytes.TrimLeft(l.text, " \t"); bytes.HasPrefix(t, []byte("--- PASS")) || bytes.HasPrefix(t, []byte("--- SKIP")) {
			b.dropped++
			return
		}
	}
	if len(b.lines) < blockLimit[b.kind] {
		b.push(l)
		return
	}
	b.dropped++
	if b.kind == kindPyTrace {
		// Rotate the oldest frame's buffer to the end for the new line.
		old := b.lines[b.trig+1]
		copy(b.lines[b.trig+1:], b.lines[b.trig+2:])
		old.line = line{text: append(old.text[:0], l.text...), no: l.no, size: l.size, nl: l.nl}
		old.imp, old.sel = 0, false
		b.lines[len(b.lines)-1] = old
	}
}

// push appends a copy of l, reusing the buffer of a line the block held
// before it was reused.
func (b *block) push(l *line) {
	var buf []byte
	if n := len(b.lines); n < cap(b.lines) {
		buf = b.lines[:n+1][n].text[:0]
	}
	b.lines = append(b.lines, bline{line: line{text: append(buf, l.text...), no: l.no, size: l.size, nl: l.nl}})
}

// close ends the open block and makes it a candidate, or counts it with
// one alike.
func (m *middle) close() {
	b := m.open
	if b == nil {
		return
	}
	m.open = nil
	m.recentK = 0
	rank(b)
	var key uint64
	key, m.scratch = b.key(m.scratch)
	if m.byKey == nil {
		m.byKey = map[uint64]*block{}
	}
	if first, ok := m.byKey[key]; ok {
		if first.similar == 0 {
			first.simFirst = b.lines[0].no
			first.simAdjacent = true
		}
		first.simAdjacent = first.simAdjacent && b.lines[0].no == first.lastNo+1
		first.similar++
		first.simLast = b.lastNo
		first.lastNo = b.lastNo
		m.spare = b
		return
	}
	m.byKey[key] = b
	m.cands = append(m.cands, b)
	for i := range b.lines {
		b.bytes += len(b.lines[i].text)
	}
	m.candBytes += b.bytes
	for len(m.cands) > maxCands || m.candBytes > maxCandBytes && len(m.cands) > 1 {
		// Drop the latest of the lowest score.
		worst := 0
		for i, c := range m.cands {
			if c.score < m.cands[worst].score || c.score == m.cands[worst].score && c.seq > m.cands[worst].seq {
				worst = i
			}
		}
		w := m.cands[worst]
		var k uint64
		k, m.scratch = w.key(m.scratch)
		delete(m.byKey, k)
		m.candBytes -= w.bytes
		m.cands = append(m.cands[:worst], m.cands[worst+1:]...)
	}
}

// key identifies blocks that are alike: the same kind, trigger and last
// line once digits are ignored.
func (b *block) key(scratch []byte) (uint64, []byte) {
	scratch = append(scratch[:0], byte(b.kind))
	scratch = appendShape(scratch, b.lines[b.trig].text)
	scratch = append(scratch, '\n')
	scratch = appendShape(scratch, b.lines[len(b.lines)-1].text)
	return maphash.Bytes(seed, scratch), scratch
}

// appendShape appends text with every run of digits as one '#'.
func appendShape(dst, text []byte) []byte {
	for len(text) > 0 {
		i := 0
		for i < len(text) && !isDigit(text[i]) {
			i++
		}
		dst = append(dst, text[:i]...)
		text = text[i:]
		if len(text) > 0 {
			dst = append(dst, '#')
			for len(text) > 0 && isDigit(text[0]) {
				text = text[1:]
			}
		}
	}
	return dst
}

// shapeEqual reports whether two lines differ at most in their numbers.
func shapeEqual(a, b []byte) bool {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		da, db := isDigit(a[i]), isDigit(b[j])
		if da && db {
			for i < len(a) && isDigit(a[i]) {
				i++
			}
			for j < len(b) && isDigit(b[j]) {
				j++
			}
			continue
		}
		if a[i] != b[j] {
			return false
		}
		i++
		j++
	}
	return i == len(a) && j == len(b)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// rank sets the importance of each line of a finished block: the trigger
// and what names the failure first, then the lines that explain it, then
// the rest.
func rank(b *block) {
	n := len(b.lines)
	for i := range b.lines {
		l := &b.lines[i]
		after := i - b.trig
		switch {
		case after == 0:
			l.imp = 0
		case indent(l.text) < 0:
			l.imp = 3
		case after < 0:
			l.imp = 1
		default:
			l.imp = 2
			switch b.kind {
			case kindPyTrace:
				switch {
				case i == n-1 && b.consumed > 1:
					l.imp = 0 // the exception
				case isCaret(l.text):
					l.imp = 3
				case i >= n-3:
					l.imp = 1 // the frame that raised
				case !libFrame(l.text) && !(i > 0 && libFrame(b.lines[i-1].text)):
					l.imp = 1 // a frame of the program's own code
				}
			case kindPytest:
				if bytes.HasPrefix(l.text, []byte("E ")) {
					l.imp = 0
				} else if after <= 2 || i == n-1 {
					l.imp = 1
				}
			case kindJava:
				if bytes.HasPrefix(l.text, []byte("Caused by: ")) {
					l.imp = 0
				} else if after <= 3 {
					l.imp = 1
				}
			case kindTAP:
				t := bytes.TrimSpace(l.text)
				switch {
				case bytes.Equal(t, []byte("---")) || bytes.Equal(t, []byte("...")) || bytes.HasPrefix(t, []byte("duration_ms")):
					l.imp = 3
				case after <= 8 || tapKey(t):
					l.imp = 1
				}
			case kindPanic:
				if after <= 4 {
					l.imp = 1
				}
			default:
				if after <= 3 {
					l.imp = 1
				}
			}
		}
	}
}

// tapKey matches the YAML keys of a TAP diagnostic that say what failed.
func tapKey(t []byte) bool {
	for _, k := range []string{"error:", "expected:", "actual:", "message:", "at:", "location:", "operator:"} {
		if bytes.HasPrefix(t, []byte(k)) {
			return true
		}
	}
	return false
}

// isCaret matches a line of only carets and tildes under a source line.
func isCaret(text []byte) bool {
	t := bytes.TrimSpace(text)
	return len(t) > 0 && len(bytes.Trim(t, "^~-")) == 0
}

// libFrame matches a Python frame in the standard library or a package.
func libFrame(text []byte) bool {
	return bytes.Contains(text, []byte("/lib/python")) || bytes.Contains(text, []byte("site-packages"))
}
