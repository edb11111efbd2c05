package trim

import (
	"encoding/binary"
	"slices"
	"strings"
	"sync"
)

// matcher finds lines containing any keyword, ignoring ASCII case.
//
// It makes one pass over a run of lines, reading two bytes at a time as a
// 16-bit number and looking it up in a 64 Ki-bit table. Each keyword
// registers two overlapping pairs of its bytes, in every case, so that
// whatever the parity of its position one of them is read: a pass costs
// one load and one bit test per two bytes. The pairs chosen are the
// rarest in ordinary text ("rr" and "ro" for "error"), so a pass stops at
// few places, and there the keywords registered for that pair are compared
// in full. One pass serves any number of keywords, where a search per
// keyword would read the stream once for each.
type matcher struct {
	kws     [][]byte // case-folded keywords
	tab     [1 << 16 / 64]uint64
	pairIdx map[uint16]int // pair -> index in anchors, while building
	anchors [][]anchor
	idx     []uint16 // pair -> 1 + index in anchors; 0: none (1<<16 entries when there are keywords)
	maxLen  int
}

// anchor is a keyword registered under a pair: the pair is at off in it
// (off is -1 for the pair that ends with a two-byte keyword's first byte).
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

// matchers caches the matchers of the keyword lists in use: a matcher is
// read-only once built, and building one costs a 128 KiB table, too much
// for every command. The cache holds a few lists (the default and those
// of the hooks in use); past that, matchers are built and not kept.
var matchers struct {
	sync.Mutex
	m map[string]*matcher
}

const maxCachedMatchers = 32

// matcherFor returns the matcher of keywords, from the cache if it can.
func matcherFor(keywords []string) *matcher {
	key := strings.Join(keywords, "\x00")
	matchers.Lock()
	defer matchers.Unlock()
	if m, ok := matchers.m[key]; ok {
		return m
	}
	m := newMatcher(keywords)
	if matchers.m == nil {
		matchers.m = map[string]*matcher{}
	}
	if len(matchers.m) < maxCachedMatchers {
		matchers.m[key] = m
	}
	return m
}

// newMatcher keeps the usable keywords: an empty keyword would match every
// line and one containing '\n' could never match within a line, so both
// are dropped, as are duplicates (after folding case).
func newMatcher(keywords []string) *matcher {
	m := &matcher{pairIdx: map[uint16]int{}}
	seen := map[string]bool{}
	for _, k := range keywords {
		f := foldString(k)
		if f == "" || seen[f] || strings.IndexByte(f, '\n') >= 0 {
			continue
		}
		seen[f] = true
		kw := []byte(f)
		i := len(m.kws)
		m.kws = append(m.kws, kw)
		m.maxLen = max(m.maxLen, len(kw))
		switch len(kw) {
		case 1: // every pair it starts or ends
			for c := range 256 {
				m.add(kw[0], byte(c), anchor{i, 0})
				m.add(byte(c), kw[0], anchor{i, -1})
			}
		case 2: // itself, and every pair that ends with its first byte
			m.add(kw[0], kw[1], anchor{i, 0})
			for c := range 256 {
				m.add(byte(c), kw[0], anchor{i, -1})
			}
		default: // the rarest three bytes, as two pairs
			best := 0
			for o := 1; o+2 < len(kw); o++ {
				if rarity(kw[o:]) < rarity(kw[best:]) {
					best = o
				}
			}
			m.add(kw[best], kw[best+1], anchor{i, best})
			m.add(kw[best+1], kw[best+2], anchor{i, best + 1})
		}
	}
	if len(m.kws) > 0 {
		m.idx = make([]uint16, 1<<16)
		for p, i := range m.pairIdx {
			m.idx[p] = uint16(i + 1)
		}
	}
	m.pairIdx = nil
	return m
}

// rarity scores the three bytes at the start of b: lower is rarer.
func rarity(b []byte) int {
	return max(pairFreq(b[0], b[1]), pairFreq(b[1], b[2]))
}

// commonPairs are the most frequent letter pairs of English text and of
// logs, most frequent first.
const commonPairs = "th he in er an re on at en nd ti es or te of ed is it al ar st to nt ng se ha as ou io le ve co me de hi ri ro ic ne ea ra ce li ch ll be ma si om ur ca el ta la ns ge ly ei os no pe do su pa ec ac ot di ol tr sh ss ee us mi il lo ad ie ts ab rt ct em rs ok ue ck eb ug"

// pairFreq guesses how common the pair (a, b) is: the common pairs by
// rank, others by their letters.
func pairFreq(a, b byte) int {
	if i := strings.Index(commonPairs, string([]byte{a, b})); i >= 0 && i%3 == 0 {
		return 10000 - i
	}
	if a == ' ' || b == ' ' {
		return 12000
	}
	return freq[a] * freq[b]
}

// add registers a under the pair (a, b) in every case.
func (m *matcher) add(a, b byte, an anchor) {
	for _, x := range cases(a) {
		for _, y := range cases(b) {
			p := uint16(x) | uint16(y)<<8 // as binary.LittleEndian reads it
			m.tab[p>>6] |= 1 << (p & 63)
			j, ok := m.pairIdx[p]
			if !ok {
				j = len(m.anchors)
				m.anchors = append(m.anchors, nil)
				m.pairIdx[p] = j
			}
			if !slices.Contains(m.anchors[j], an) {
				m.anchors[j] = append(m.anchors[j], an)
			}
		}
	}
}

// cases returns c and, for a letter, its upper case.
func cases(c byte) []byte {
	if c >= 'a' && c <= 'z' {
		return []byte{c, c - 'a' + 'A'}
	}
	return []byte{c}
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

// check reports whether a keyword registered under the pair p, read at
// i, occurs in s there.
func (m *matcher) check(s []byte, i int, p uint16) bool {
	for _, a := range m.anchors[m.idx[p]-1] {
		kw := m.kws[a.kw]
		start := i - a.off
		if start >= 0 && start+len(kw) <= len(s) && equalFold(s[start:], kw) {
			return true
		}
	}
	return false
}

// next returns the offset of a byte at or after from in the first line of
// span[from:] that contains a keyword, or -1. span is whole lines, each
// ending in '\n', and from is the start of one.
func (m *matcher) next(span []byte, from int) int {
	if len(m.kws) == 0 {
		return -1
	}
	tab := &m.tab
	i := from
	for ; i+32 <= len(span); i += 32 {
		b := span[i : i+32 : i+32]
		w, v := binary.LittleEndian.Uint64(b), binary.LittleEndian.Uint64(b[8:])
		x, y := binary.LittleEndian.Uint64(b[16:]), binary.LittleEndian.Uint64(b[24:])
		if tab[uint16(w)>>6]&(1<<(w&63))|tab[uint16(w>>16)>>6]&(1<<(w>>16&63))|
			tab[uint16(w>>32)>>6]&(1<<(w>>32&63))|tab[uint16(w>>48)>>6]&(1<<(w>>48&63))|
			tab[uint16(v)>>6]&(1<<(v&63))|tab[uint16(v>>16)>>6]&(1<<(v>>16&63))|
			tab[uint16(v>>32)>>6]&(1<<(v>>32&63))|tab[uint16(v>>48)>>6]&(1<<(v>>48&63))|
			tab[uint16(x)>>6]&(1<<(x&63))|tab[uint16(x>>16)>>6]&(1<<(x>>16&63))|
			tab[uint16(x>>32)>>6]&(1<<(x>>32&63))|tab[uint16(x>>48)>>6]&(1<<(x>>48&63))|
			tab[uint16(y)>>6]&(1<<(y&63))|tab[uint16(y>>16)>>6]&(1<<(y>>16&63))|
			tab[uint16(y>>32)>>6]&(1<<(y>>32&63))|tab[uint16(y>>48)>>6]&(1<<(y>>48&63)) == 0 {
			continue
		}
		break
	}
	for ; i+8 <= len(span); i += 8 {
		w := binary.LittleEndian.Uint64(span[i:])
		p0, p1, p2, p3 := uint16(w), uint16(w>>16), uint16(w>>32), uint16(w>>48)
		if tab[p0>>6]&(1<<(p0&63))|tab[p1>>6]&(1<<(p1&63))|tab[p2>>6]&(1<<(p2&63))|tab[p3>>6]&(1<<(p3&63)) == 0 {
			continue
		}
		for j, p := range [4]uint16{p0, p1, p2, p3} {
			if tab[p>>6]&(1<<(p&63)) != 0 && m.check(span, i+2*j, p) {
				return i + 2*j
			}
		}
	}
	for ; i+1 < len(span); i += 2 {
		p := binary.LittleEndian.Uint16(span[i:])
		if tab[p>>6]&(1<<(p&63)) != 0 && m.check(span, i, p) {
			return i
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
	i := 0
	for ; i+1 < len(text); i += 2 {
		p := binary.LittleEndian.Uint16(text[i:])
		if tab[p>>6]&(1<<(p&63)) != 0 && m.check(text, i, p) {
			return true
		}
	}
	if i < len(text) { // the last byte, with the '\n' after it
		p := uint16(text[i]) | '\n'<<8
		return tab[p>>6]&(1<<(p&63)) != 0 && m.check(text, i, p)
	}
	return false
}

// any reports whether b contains a keyword, b being any part of a line.
// It serves lines too long to keep whole, which are tested piece by piece:
// line's scan finds a keyword anywhere in its text.
func (m *matcher) any(b []byte) bool { return m.line(b) }
