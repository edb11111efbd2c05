package config

import (
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/BurntSushi/toml"
)

// keyLines returns the 1-based line that first mentions each key of a TOML
// document, keyed by toml.Key.String(), with the same paths the TOML
// library's MetaData.Keys gives: a key's parent tables have the line of
// the header or dotted key that first names them, keys of an inline table
// are below the inline table's key, and the tables of an array of tables
// carry no index.
//
// The library keeps key positions to itself, so this is a scanner of its
// own. It is meant for documents the library has accepted and does not
// check syntax; on anything else it returns what it found and never
// panics or loops.
func keyLines(src string) map[string]int { return scan(src).lines }

// A position is where the document first mentions a value: the line, and
// the rank of that mention among all the document's (seq), so that the
// keys of a table can be taken in the order they were written.
type position struct{ line, seq int }

// keyPositions returns the position of every key of a TOML document, as
// keyLines does, and also of every table or array in an array, keyed by
// path.String(): each element of an array of tables has its own keys
// ("hooks[1].event"), where keyLines has one ("hooks.event").
func keyPositions(src string) map[string]position { return scan(src).pos }

// scan scans a document for keyLines and keyPositions.
func scan(src string) *scanner {
	sc := scanner{s: src, lines: map[string]int{}, pos: map[string]position{}, arrays: map[string]int{}}
	for i := 0; i < len(src); i++ {
		if src[i] == '\n' {
			sc.nl = append(sc.nl, i)
		}
	}
	sc.s = strings.TrimPrefix(src, "\ufeff")
	sc.base = len(src) - len(sc.s)
	sc.document()
	return &sc
}

type scanner struct {
	s     string
	i     int // offset in s
	base  int // offset of s in the original source (a byte order mark)
	nl    []int
	lines map[string]int // for keyLines
	pos   map[string]position

	// arrays counts the elements of each array of tables seen so far
	// ("[[hooks]]"), keyed by path.String(): a later header below it is
	// in its last element.
	arrays map[string]int
}

// line returns the 1-based line of offset i of s.
func (sc *scanner) line(i int) int {
	return sort.SearchInts(sc.nl, sc.base+i) + 1
}

// record notes the position of p and of each of its parents not seen yet.
func (sc *scanner) record(p path, at int) {
	full, plain := p.prefixes()
	// When a path is recorded so are its parents: look back only as far
	// as the first one seen, so a deep document costs no more than its
	// keys' length.
	n := len(p)
	for n > 0 && !hasKey(sc.pos, full[n-1]) {
		n--
	}
	for ; n < len(p); n++ {
		sc.pos[full[n]] = position{sc.line(at), len(sc.pos)}
		if !hasKey(sc.lines, plain[n]) { // keyLines has no indices
			sc.lines[plain[n]] = sc.line(at)
		}
	}
}

// hasKey reports whether m has the key k.
func hasKey[V any](m map[string]V, k string) bool { _, ok := m[k]; return ok }

func (sc *scanner) peek() byte {
	if sc.i < len(sc.s) {
		return sc.s[sc.i]
	}
	return 0
}

func (sc *scanner) has(prefix string) bool { return strings.HasPrefix(sc.s[sc.i:], prefix) }

// blanks skips spaces and tabs; with newlines, also newlines and comments.
func (sc *scanner) blanks(newlines bool) {
	for sc.i < len(sc.s) {
		switch sc.s[sc.i] {
		case ' ', '\t', '\r':
			sc.i++
		case '\n':
			if !newlines {
				return
			}
			sc.i++
		case '#':
			if !newlines {
				return
			}
			sc.comment()
		default:
			return
		}
	}
}

func (sc *scanner) comment() {
	if j := strings.IndexByte(sc.s[sc.i:], '\n'); j >= 0 {
		sc.i += j
	} else {
		sc.i = len(sc.s)
	}
}

// document scans the top level: headers and key/value pairs.
func (sc *scanner) document() {
	var table path
	for sc.i < len(sc.s) {
		start := sc.i
		sc.blanks(true)
		if sc.i >= len(sc.s) {
			return
		}
		if sc.peek() == '[' {
			at := sc.i
			sc.i++
			array := sc.peek() == '['
			if array {
				sc.i++
			}
			table = sc.header(sc.keyParts(), array)
			if len(table) > 0 {
				sc.record(table, at)
			}
			sc.blanks(false)
			for sc.peek() == ']' {
				sc.i++
			}
		} else {
			sc.keyValue(table)
		}
		if sc.i == start {
			sc.i++ // not TOML; move on rather than loop
		}
	}
}

// header returns the path of the table a header names: [a.b] or, if
// array, [[a.b]], which adds an element to the array of tables a.b. A part
// of the header that is an array of tables stands for its last element.
func (sc *scanner) header(parts toml.Key, array bool) path {
	var p path
	for i, k := range parts {
		p = p.child(k)
		s := p.String()
		if array && i == len(parts)-1 {
			sc.arrays[s]++
		}
		if n := sc.arrays[s]; n > 0 {
			p = p.elem(n - 1)
		}
	}
	return p
}

// keyValue scans "key = value" below the table prefix.
//
// The paths of keys and values grow in place (append, without a copy, so
// that depth costs no time squared): each is done with before a sibling
// overwrites it, and record keeps strings, not paths.
func (sc *scanner) keyValue(prefix path) {
	at := sc.i
	parts := sc.keyParts()
	if len(parts) == 0 {
		return
	}
	p := prefix
	for _, k := range parts {
		p = append(p, step{key: k})
	}
	sc.record(p, at)
	sc.blanks(false)
	if sc.peek() != '=' {
		return
	}
	sc.i++
	sc.blanks(false)
	sc.value(p)
}

// value scans one value at p; inline tables in it hold keys below p.
func (sc *scanner) value(p path) {
	switch {
	case sc.has(`"""`):
		sc.i += 3
		sc.multiline(`"""`, true)
	case sc.has(`'''`):
		sc.i += 3
		sc.multiline(`'''`, false)
	case sc.peek() == '"':
		sc.basic()
	case sc.peek() == '\'':
		sc.literal()
	case sc.peek() == '[':
		sc.i++
		n := 0
		sc.list(']', func() {
			e := append(p, step{index: n, elem: true})
			n++
			if sc.peek() == '{' {
				// A table, whose keys have this element's line. An
				// array in an array has the line of its key: noting
				// each would cost time squared in their depth.
				sc.record(e, sc.i)
			}
			sc.value(e)
		})
	case sc.peek() == '{':
		sc.i++
		sc.list('}', func() { sc.keyValue(p) })
	default:
		// A number, boolean or datetime; a datetime may hold a space.
		for sc.i < len(sc.s) && strings.IndexByte(",]}#\n", sc.s[sc.i]) < 0 {
			sc.i++
		}
	}
}

// list scans the items of an array or inline table up to end.
func (sc *scanner) list(end byte, item func()) {
	for sc.i < len(sc.s) {
		sc.blanks(true)
		switch sc.peek() {
		case end:
			sc.i++
			return
		case ',':
			sc.i++
			continue
		case 0:
			return
		}
		start := sc.i
		item()
		if sc.i == start {
			sc.i++
		}
	}
}

// keyParts scans a possibly dotted key and returns its parts.
func (sc *scanner) keyParts() toml.Key {
	var parts toml.Key
	for {
		sc.blanks(false)
		switch sc.peek() {
		case '"':
			parts = append(parts, sc.basic())
		case '\'':
			parts = append(parts, sc.literal())
		default:
			j := sc.i
			for j < len(sc.s) && strings.IndexByte(" \t\r\n.=[]{},#\"'", sc.s[j]) < 0 {
				j++
			}
			if j == sc.i {
				return parts
			}
			parts = append(parts, sc.s[sc.i:j])
			sc.i = j
		}
		sc.blanks(false)
		if sc.peek() != '.' {
			return parts
		}
		sc.i++
	}
}

// literal scans a 'literal string' and returns its content.
func (sc *scanner) literal() string {
	sc.i++
	j := strings.IndexAny(sc.s[sc.i:], "'\n")
	if j < 0 {
		v := sc.s[sc.i:]
		sc.i = len(sc.s)
		return v
	}
	v := sc.s[sc.i : sc.i+j]
	sc.i += j
	if sc.peek() == '\'' {
		sc.i++
	}
	return v
}

// basic scans a "basic string" and returns its content, escapes decoded.
func (sc *scanner) basic() string {
	sc.i++
	var b strings.Builder
	for sc.i < len(sc.s) {
		c := sc.s[sc.i]
		switch c {
		case '"':
			sc.i++
			return b.String()
		case '\n':
			return b.String()
		case '\\':
			sc.i++
			sc.escape(&b)
		default:
			b.WriteByte(c)
			sc.i++
		}
	}
	return b.String()
}

// escape decodes the escape sequence after a backslash.
func (sc *scanner) escape(b *strings.Builder) {
	if sc.i >= len(sc.s) {
		return
	}
	c := sc.s[sc.i]
	sc.i++
	hex := 0
	switch c {
	case 'b':
		b.WriteByte('\b')
	case 't':
		b.WriteByte('\t')
	case 'n':
		b.WriteByte('\n')
	case 'f':
		b.WriteByte('\f')
	case 'r':
		b.WriteByte('\r')
	case 'e':
		b.WriteByte(0x1b)
	case 'x':
		hex = 2
	case 'u':
		hex = 4
	case 'U':
		hex = 8
	default: // '"', '\\' and anything invalid
		b.WriteByte(c)
	}
	if hex == 0 {
		return
	}
	if sc.i+hex > len(sc.s) {
		sc.i = len(sc.s)
		return
	}
	n, err := strconv.ParseUint(sc.s[sc.i:sc.i+hex], 16, 32)
	sc.i += hex
	if err == nil {
		b.WriteRune(rune(n)) // an invalid code point becomes U+FFFD
	} else {
		b.WriteRune(utf8.RuneError)
	}
}

// multiline skips a multi-line string up to its closing delimiter, which
// may be followed by up to two more quotes that belong to the content.
func (sc *scanner) multiline(delim string, escapes bool) {
	for sc.i < len(sc.s) {
		if escapes && sc.s[sc.i] == '\\' {
			sc.i += 2
			continue
		}
		if sc.has(delim) {
			sc.i += 3
			for n := 0; n < 2 && sc.peek() == delim[0]; n++ {
				sc.i++
			}
			return
		}
		sc.i++
	}
	sc.i = min(sc.i, len(sc.s))
}
