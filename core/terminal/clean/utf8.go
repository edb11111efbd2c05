package clean

// Results of scanRune.
const (
	runeOK    = iota // a complete, valid rune
	runeBad          // a maximal invalid subsequence, replaced by one U+FFFD
	runeShort        // a valid prefix cut off by the end of the input
)

// scanRune classifies the UTF-8 sequence at the start of p (p[0] >= 0x80)
// and returns its length. For runeBad the length is that of the maximal
// subpart (the longest prefix that could have started a valid sequence, at
// least 1), as Unicode §3.9 and the WHATWG decoder recommend: "\xe4\xb8A"
// is one U+FFFD and an "A", not two. That choice is also what makes a
// sequence split across Writes decode the same as an unsplit one, since a
// held-back prefix is by construction valid so far.
func scanRune(p []byte) (int, int) {
	lo, hi := byte(0x80), byte(0xbf) // range of the second byte
	var need int                     // continuation bytes after p[0]
	switch b := p[0]; {
	case b >= 0xc2 && b <= 0xdf:
		need = 1
	case b == 0xe0:
		need, lo = 2, 0xa0 // no overlong forms
	case b == 0xed:
		need, hi = 2, 0x9f // no surrogates
	case b >= 0xe1 && b <= 0xef:
		need = 2
	case b == 0xf0:
		need, lo = 3, 0x90 // no overlong forms
	case b >= 0xf1 && b <= 0xf3:
		need = 3
	case b == 0xf4:
		need, hi = 3, 0x8f // nothing above U+10FFFF
	default: // a continuation byte, C0/C1 lead, or 0xf5..0xff
		return 1, runeBad
	}
	for k := 1; k <= need; k++ {
		if k >= len(p) {
			return k, runeShort
		}
		if c := p[k]; c < lo || c > hi {
			return k, runeBad
		}
		lo, hi = 0x80, 0xbf
	}
	return need + 1, runeOK
}

// textRune returns the length of the rune at the start of p (p[0] >= 0x80)
// if it is complete, valid and printable, else 0.
func textRune(p []byte) int {
	n, st := scanRune(p)
	if st != runeOK || isC1(p[:n]) {
		return 0
	}
	return n
}

// isC1 reports whether the valid rune r is a C1 control (U+0080..U+009F).
// They are invisible, and some terminals act on them (U+009B as CSI), so
// they are dropped rather than passed to a model; they are never
// interpreted, which is what keeps 0x9B inside other runes safe.
func isC1(r []byte) bool {
	return len(r) == 2 && r[0] == 0xc2 && r[1] < 0xa0
}
