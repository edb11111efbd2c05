package legacy

import "bytes"

// matcher finds keywords in runs of lines.
//
// Each keyword gets its own vectorised scan (bytes.IndexByte, assembly)
// for one "anchor" byte of it, the byte that is currently rarest in the
// stream; a candidate is then checked with bytes.Equal. A scan for a byte
// that is absent runs at tens of GB/s, so six of them over a chunk cost far
// less than one byte-at-a-time pass of a multi-pattern automaton, whose
// table lookups form a dependency chain of several cycles per byte. The
// anchor matters: bytes.Index anchors on the first byte, and "panic:" in a
// log full of "p" would stop the scan every few bytes. Byte frequencies are
// sampled from the stream now and then (see sample), so the choice follows
// the content. When even the rarest byte is common, the search falls back
// to bytes.Index, whose brute-force assembly handles dense candidates.
type matcher struct {
	kws    [][]byte
	anchor []int // offset of the anchor byte in each keyword
	maxLen int   // longest keyword, for matches that straddle two writes
	next   []int // scratch for scan: next hit of each keyword
	freq   [256]uint32

	sampled   int // bytes scanned since the last sample
	hasSample bool
}

// The matcher re-estimates byte frequencies from sampleSize bytes of every
// sampleEvery bytes scanned: cheap (0.4%), and often enough to follow a
// stream whose content changes.
const (
	sampleEvery = 1 << 20
	sampleSize  = 4 << 10
)

// newMatcher keeps the usable keywords: an empty keyword would match every
// line and one containing '\n' could never match within a line, so both are
// dropped; duplicates are dropped so they cost no extra pass.
func newMatcher(keywords []string) matcher {
	var m matcher
	seen := make(map[string]bool, len(keywords))
	for _, k := range keywords {
		if k == "" || seen[k] || bytes.IndexByte([]byte(k), '\n') >= 0 {
			continue
		}
		seen[k] = true
		m.kws = append(m.kws, []byte(k))
		m.maxLen = max(m.maxLen, len(k))
	}
	m.next = make([]int, len(m.kws))
	m.anchor = make([]int, len(m.kws))
	return m
}

// any reports whether b contains any keyword. It serves single lines, for
// which bytes.Index's brute-force path is already the fastest.
func (m *matcher) any(b []byte) bool {
	for _, k := range m.kws {
		if bytes.Index(b, k) >= 0 {
			return true
		}
	}
	return false
}

// sample adds the byte frequencies of b to the running estimate (older
// samples weigh half as much each time) and re-picks every keyword's
// anchor.
func (m *matcher) sample(b []byte) {
	for i := range m.freq {
		m.freq[i] >>= 1
	}
	for _, c := range b {
		m.freq[c]++
	}
	for i, k := range m.kws {
		best := 0
		for o := range k {
			if m.freq[k[o]] < m.freq[k[best]] {
				best = o
			}
		}
		m.anchor[i] = best
	}
}

// scan finds the lines of span that contain a keyword. span must be whole
// lines, each ending in '\n'. It appends the start offsets of the first
// limit such lines to hits and returns them with the number of all such
// lines. A line counts once however many keywords it holds.
func (m *matcher) scan(span []byte, hits []int, limit int) ([]int, int) {
	if len(span) == 0 {
		return hits, 0
	}
	if m.sampled += len(span); m.sampled >= sampleEvery || !m.hasSample {
		m.sample(span[:min(len(span), sampleSize)])
		m.sampled, m.hasSample = 0, true
	}
	next := m.next
	for i := range m.kws {
		next[i] = m.index(span, i, 0)
	}
	n := 0
	for {
		pos := -1
		for _, h := range next {
			if h >= 0 && (pos < 0 || h < pos) {
				pos = h
			}
		}
		if pos < 0 {
			return hits, n
		}
		end := pos + bytes.IndexByte(span[pos:], '\n') // found: span ends in '\n'
		if n < limit {
			hits = append(hits, bytes.LastIndexByte(span[:pos], '\n')+1)
		}
		n++
		// Every keyword whose next hit is on this line moves past it.
		for i, h := range next {
			if h >= 0 && h < end {
				next[i] = m.index(span, i, end+1)
			}
		}
	}
}

// index returns the position of the first occurrence of keyword i in s at
// or after from, or -1.
func (m *matcher) index(s []byte, i, from int) int {
	k := m.kws[i]
	o := m.anchor[i]
	c := k[o]
	p := from + o // where the anchor of a match at from would be
	fails := 0
	for p < len(s) {
		j := bytes.IndexByte(s[p:], c)
		if j < 0 {
			return -1
		}
		j += p
		start := j - o
		if start+len(k) <= len(s) && bytes.Equal(s[start:start+len(k)], k) {
			return start
		}
		p = j + 1
		// Many false candidates: the anchor is common here. Let bytes.Index
		// take the rest; it switches to a brute-force scan.
		if fails++; fails > 8+(p-from)>>4 {
			if r := bytes.Index(s[start+1:], k); r >= 0 {
				return start + 1 + r
			}
			return -1
		}
	}
	return -1
}
