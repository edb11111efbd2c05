package trim

import "bytes"

// matcher finds lines containing any keyword, ignoring ASCII case.
//
// It makes one pass over a run of lines, looking up each pair of adjacent
// bytes (case-folded) in a 64 Ki-bit table. Each keyword registers one of
// its pairs, the one that is rarest in ordinary text ("rr" for "error",
// "xc" for "exception"), so a pass stops at few places, and there every
// keyword registered for that pair is compared in full. One pass serves
// any number of keywords, where a search per keyword would read the
// stream once for each; and the pair table, unlike a first-byte search,
// is not slowed by keywords whose letters are common.
type matcher struct {
	kws    [][]byte // case-folded keywords
	tab    [1 << 16 / 64]uint64
	byPair map[uint16][]anchor
	maxLen int
}

// anchor is a keyword registered under a pair: the pair is at off in it.
type anchor struct {
	kw  int
	off int
}

// fold maps ASCII upper case to lower case and every other byte to itself.
var fold = func() (t [256]byte) {
	for i := range t {
		t[i] = byte(i)
		if i >= 'A' && i <= 'Z' {
			t[i] = byte(i) + 'a' - 'A'
		}
	}
	return t
}()

// freq is a rough frequency of each byte in command output, used only to
// choose each keyword's anchor pair; a wrong guess costs speed, never a
// match.
var freq = func() (t [256]int) {
	for i := range t {
		t[i] = 2 // punctuation, non-ASCII
	}
	for i, c := range "etaoinsrhldcumfpgwybvkxjqz" {
		t['a'+c-'a'] = 60 - 2*i
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = 20
	}
	t[' '], t['\t'], t['.'], t['/'], t[':'], t['_'], t['-'], t['='] = 80, 20, 20, 20, 10, 10, 10, 10
	return t
}()

// newMatcher keeps the usable keywords: an empty keyword would match every
// line and one containing '\n' could never match within a line, so both
// are dropped, as are duplicates (after folding case).
func newMatcher(keywords []string) matcher {
	m := matcher{byPair: map[uint16][]anchor{}}
	seen := map[string]bool{}
	for _, k := range keywords {
		f := foldString(k)
		if f == "" || seen[f] || bytes.IndexByte([]byte(f), '\n') >= 0 {
			continue
		}
		seen[f] = true
		kw := []byte(f)
		i := len(m.kws)
		m.kws = append(m.kws, kw)
		m.maxLen = max(m.maxLen, len(kw))
		if len(kw) == 1 {
			// One byte: every pair it starts, '\n' included.
			for c := range 256 {
				m.add(uint16(kw[0])<<8|uint16(c), anchor{i, 0})
			}
			continue
		}
		best := 0
		for o := 1; o+1 < len(kw); o++ {
			if freq[kw[o]]*freq[kw[o+1]] < freq[kw[best]]*freq[kw[best+1]] {
				best = o
			}
		}
		m.add(uint16(kw[best])<<8|uint16(kw[best+1]), anchor{i, best})
	}
	return m
}

func (m *matcher) add(pair uint16, a anchor) {
	m.tab[pair>>6] |= 1 << (pair & 63)
	m.byPair[pair] = append(m.byPair[pair], a)
}

func foldString(s string) string {
	b := []byte(s)
	for i, c := range b {
		b[i] = fold[c]
	}
	return string(b)
}

// equalFold reports whether s equals the folded keyword kw, ignoring ASCII
// case.
func equalFold(s, kw []byte) bool {
	for i, c := range kw {
		if fold[s[i]] != c {
			return false
		}
	}
	return true
}

// check reports whether a keyword registered under the pair at p of s
// occurs there.
func (m *matcher) check(s []byte, p int, pair uint16) bool {
	for _, a := range m.byPair[pair] {
		kw := m.kws[a.kw]
		start := p - a.off
		if start >= 0 && start+len(kw) <= len(s) && equalFold(s[start:], kw) {
			return true
		}
	}
	return false
}

// next returns the offset of the first byte at or after from where a
// keyword occurs in span, or -1. span is whole lines, each ending in '\n'.
func (m *matcher) next(span []byte, from int) int {
	if len(m.kws) == 0 || from >= len(span) {
		return -1
	}
	tab := &m.tab
	prev := uint16(fold[span[from]])
	for i := from + 1; i < len(span); i++ {
		pair := prev<<8 | uint16(fold[span[i]])
		prev = pair & 0xff
		if tab[pair>>6]&(1<<(pair&63)) != 0 && m.check(span, i-1, pair) {
			return i - 1
		}
	}
	return -1
}

// line reports whether the line text (without its '\n') contains a
// keyword. It gives the same answer as next on the line followed by '\n'.
func (m *matcher) line(text []byte) bool {
	if len(m.kws) == 0 || len(text) == 0 {
		return false
	}
	tab := &m.tab
	for i := range text {
		c := byte('\n')
		if i+1 < len(text) {
			c = text[i+1]
		}
		pair := uint16(fold[text[i]])<<8 | uint16(fold[c])
		if tab[pair>>6]&(1<<(pair&63)) != 0 && m.check(text, i, pair) {
			return true
		}
	}
	return false
}

// any reports whether b contains a keyword, b being any part of a line.
// It serves lines too long to keep whole, which are tested piece by piece.
func (m *matcher) any(b []byte) bool {
	for _, kw := range m.kws {
		for i := 0; i+len(kw) <= len(b); i++ {
			if fold[b[i]] == kw[0] && equalFold(b[i:], kw) {
				return true
			}
		}
	}
	return false
}
