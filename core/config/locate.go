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
func keyLines(src string) map[string]int {
	sc := scanner{s: src, lines: map[string]int{}}
	for i := 0; i < len(src); i++ {
		if src[i] == '\n' {
			sc.nl = append(sc.nl, i)
		}
	}
	sc.s = strings.TrimPrefix(src, "\ufeff")
	sc.base = len(src) - len(sc.s)
	sc.document()
	return sc.lines
}

type scanner struct {
	s     string
	i     int // offset in s
	base  int // offset of s in the original source (a byte order mark)
	nl    []int
	lines map[string]int
}

// line returns the 1-based line of offset i of s.
func (sc *scanner) line(i int) int {
	return sort.SearchInts(sc.nl, sc.base+i) + 1
}

// record notes the line of path and of each of its parents not seen yet.
func (sc *scanner) record(path toml.Key, at int) {
	for n := 1; n <= len(path); n++ {
		k := path[:n].String()
		if _, ok := sc.lines[k]; !ok {
			sc.lines[k] = sc.line(at)
		}
	}
}

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
	var table toml.Key
	for sc.i < len(sc.s) {
		start := sc.i
		sc.blanks(true)
		if sc.i >= len(sc.s) {
			return
		}
		if sc.peek() == '[' {
			at := sc.i
			sc.i++
			if sc.peek() == '[' {
				sc.i++
			}
			table = sc.keyParts()
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

// keyValue scans "key = value" below the table prefix.
func (sc *scanner) keyValue(prefix toml.Key) {
	at := sc.i
	parts := sc.keyParts()
	if len(parts) == 0 {
		return
	}
	path := append(prefix[:len(prefix):len(prefix)], parts...)
	sc.record(path, at)
	sc.blanks(false)
	if sc.peek() != '=' {
		return
	}
	sc.i++
	sc.blanks(false)
	sc.value(path)
}

// value scans one value; inline tables in it hold keys below path.
func (sc *scanner) value(path toml.Key) {
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
		sc.list(']', func() { sc.value(path) })
	case sc.peek() == '{':
		sc.i++
		sc.list('}', func() { sc.keyValue(path) })
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
