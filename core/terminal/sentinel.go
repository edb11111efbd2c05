package terminal

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// The prompt marker. bash renders PS1 as one OSC string that carries the
// prompt's metadata:
//
//	ESC ] 7777 ; <nonce> ; p ; <\#> ; <$?> ; <$SHELLOPTS> ; <${#PS1}> ; <${PWD@Q}> BEL
//
// and PS2 as ESC ] 7777 ; <nonce> ; c BEL. PS1's value holds the nonce only
// as octal prompt escapes and ESC and BEL only as \e and \a, so no variable,
// function or trace that bash prints (set, declare -p, xtrace) contains the
// raw marker: only deliberately expanding PS1 (echo "${PS1@P}") renders it.
// Even then a marker decides nothing: the kernel's view of bash does (see
// procView). The marker is OSC-framed so that package clean drops it if it
// ever reached the output.
const oscTag = "\x1b]7777;"

// promptMeta is what one prompt reports.
type promptMeta struct {
	N        int    // bash's command number (\#): one more per command line read
	ExitCode int    // $?
	Opts     string // $SHELLOPTS: colon-separated set -o options that are on
	PS1Len   int    // ${#PS1}: differs from ours when a command changed PS1
	Cwd      string // $PWD
}

// opt reports whether SHELLOPTS had option name on.
func (m promptMeta) opt(name string) bool {
	for o := range strings.SplitSeq(m.Opts, ":") {
		if o == name {
			return true
		}
	}
	return false
}

// editing reports whether readline line editing was on (set -o vi/emacs).
func (m promptMeta) editing() bool { return m.opt("vi") || m.opt("emacs") }

// markers are the byte strings that frame prompts for one nonce, and the
// prompt strings that render them (made once: every command compares
// PS1's length with ours).
type markers struct {
	prefix []byte // oscTag + nonce + ";"
	p1, p2 string // ps1 and ps2
}

func newMarkers(nonce string) markers {
	o := octal(nonce)
	return markers{
		prefix: []byte(oscTag + nonce + ";"),
		p1:     `\e]7777;` + o + `;p;\#;$?;${SHELLOPTS};${#PS1};${PWD@Q}\a`,
		p2:     `\e]7777;` + o + `;c\a`,
	}
}

// ps1 returns the value of PS1 that renders a prompt marker, and ps2 the
// continuation marker. Both are meant to be single-quoted in the rc file.
func (m markers) ps1() string { return m.p1 }

func (m markers) ps2() string { return m.p2 }

func (m markers) nonce() string {
	return string(m.prefix[len(oscTag) : len(m.prefix)-1])
}

// octal spells s as prompt-string octal escapes, so the text itself never
// appears in the variable's value.
func octal(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		fmt.Fprintf(&b, `\%03o`, s[i])
	}
	return b.String()
}

// maxMeta bounds the bytes held between a marker's prefix and its BEL. A
// real prompt is a few hundred bytes (the cwd is the long part); anything
// longer is not ours.
const maxMeta = 16 << 10

// scanEvent is what the scanner found in the stream.
type scanEvent int

const (
	scanNone   scanEvent = iota
	scanPrompt           // a complete PS1 marker
	scanPS2              // the continuation marker
	scanBad              // a marker with our nonce whose body did not parse
)

// scanner cuts markers out of the raw PTY byte stream. Bytes that are not
// part of a marker go to out unchanged; a partial marker at the end of a
// chunk is held back until the next chunk decides it.
type scanner struct {
	m       markers
	out     io.Writer
	pending []byte // held back: a possible marker start, or a marker in progress
	inMeta  bool   // pending starts with the full prefix
}

// feed scans p. It stops at the first marker and returns the event, its
// metadata, and the unconsumed rest of p (bytes after the marker).
func (s *scanner) feed(p []byte) (scanEvent, promptMeta, []byte, error) {
	buf := p
	if len(s.pending) > 0 {
		s.pending = append(s.pending, p...)
		buf = s.pending
	}
	ev, meta, consumed, err := s.scan(buf)
	rest := buf[consumed:]
	if ev != scanNone {
		// Copy rest out: it may alias pending, which is reset below.
		rest = append([]byte(nil), rest...)
		s.pending = s.pending[:0]
		return ev, meta, rest, err
	}
	// Everything not consumed is held back.
	if len(s.pending) > 0 {
		n := copy(s.pending, rest)
		s.pending = s.pending[:n]
	} else {
		s.pending = append(s.pending, rest...)
	}
	return scanNone, promptMeta{}, nil, err
}

// scan consumes as much of buf as it can decide and reports how much.
func (s *scanner) scan(buf []byte) (scanEvent, promptMeta, int, error) {
	pos := 0
	for {
		if s.inMeta {
			body := buf[pos+len(s.m.prefix):]
			i := bytes.IndexByte(body, '\a')
			// A body longer than maxMeta is not a marker of ours: let the
			// bytes through, minus the prefix so the nonce never leaks.
			// The same verdict whether the BEL has arrived or not, so it
			// does not depend on how reads split the stream.
			if i > maxMeta || i < 0 && len(body) > maxMeta {
				s.inMeta = false
				pos += len(s.m.prefix)
				continue
			}
			if i < 0 {
				return scanNone, promptMeta{}, pos, nil
			}
			s.inMeta = false
			end := pos + len(s.m.prefix) + i + 1
			ev, meta := parseMarker(body[:i])
			return ev, meta, end, nil
		}
		rest := buf[pos:]
		i := bytes.Index(rest, s.m.prefix)
		if i < 0 {
			keep := partialSuffix(rest, s.m.prefix)
			if _, err := s.out.Write(rest[:len(rest)-keep]); err != nil {
				return scanNone, promptMeta{}, len(buf) - keep, err
			}
			return scanNone, promptMeta{}, len(buf) - keep, nil
		}
		if i > 0 {
			if _, err := s.out.Write(rest[:i]); err != nil {
				return scanNone, promptMeta{}, pos + i, err
			}
		}
		pos += i
		s.inMeta = true
	}
}

// parseMarker reads a marker's body (between the prefix and the BEL).
func parseMarker(body []byte) (scanEvent, promptMeta) {
	s := string(body)
	if s == "c" {
		return scanPS2, promptMeta{}
	}
	f := strings.SplitN(s, ";", 7)
	if len(f) != 6 || f[0] != "p" {
		return scanBad, promptMeta{}
	}
	var m promptMeta
	var err error
	if m.N, err = strconv.Atoi(f[1]); err != nil {
		return scanBad, promptMeta{}
	}
	if m.ExitCode, err = strconv.Atoi(f[2]); err != nil {
		return scanBad, promptMeta{}
	}
	m.Opts = f[3]
	if m.PS1Len, err = strconv.Atoi(f[4]); err != nil {
		return scanBad, promptMeta{}
	}
	if m.Cwd, err = unquote(f[5]); err != nil {
		return scanBad, promptMeta{}
	}
	return scanPrompt, m
}

// partialSuffix reports the length of the longest suffix of b that is a
// proper prefix of needle, so a marker split across reads is not emitted.
func partialSuffix(b, needle []byte) int {
	n := len(needle) - 1
	if n > len(b) {
		n = len(b)
	}
	for ; n > 0; n-- {
		if bytes.HasPrefix(needle, b[len(b)-n:]) {
			return n
		}
	}
	return 0
}

// flushPartial writes out what is held back when the caller stops waiting
// (a soft timeout), except a marker in progress, which stays.
func (s *scanner) flushPartial() error {
	if s.inMeta || len(s.pending) == 0 {
		return nil
	}
	if bytes.HasPrefix(s.m.prefix, s.pending) {
		return nil // may still become a marker
	}
	_, err := s.out.Write(s.pending)
	s.pending = s.pending[:0]
	return err
}

// reset forgets any partial state, for a new shell.
func (s *scanner) reset() {
	s.pending = s.pending[:0]
	s.inMeta = false
}

// unquote decodes bash's ${var@Q} quoting: a concatenation of '...'
// strings, $'...' ANSI-C strings and backslash-escaped characters.
func unquote(q string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(q); {
		switch {
		case q[i] == '\'':
			j := strings.IndexByte(q[i+1:], '\'')
			if j < 0 {
				return "", fmt.Errorf("unterminated '")
			}
			b.WriteString(q[i+1 : i+1+j])
			i += j + 2
		case strings.HasPrefix(q[i:], "$'"):
			n, err := ansiC(&b, q[i+2:])
			if err != nil {
				return "", err
			}
			i += 2 + n
		case q[i] == '\\' && i+1 < len(q):
			b.WriteByte(q[i+1])
			i += 2
		default:
			b.WriteByte(q[i])
			i++
		}
	}
	return b.String(), nil
}

// ansiC decodes the body of a $'...' string up to its closing quote into b
// and returns how many bytes of s it used, the quote included.
func ansiC(b *strings.Builder, s string) (int, error) {
	for i := 0; i < len(s); {
		c := s[i]
		if c == '\'' {
			return i + 1, nil
		}
		if c != '\\' || i+1 >= len(s) {
			b.WriteByte(c)
			i++
			continue
		}
		e := s[i+1]
		i += 2
		switch e {
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
		case 'c':
			if i < len(s) {
				b.WriteByte(s[i] & 0x1f)
				i++
			}
		case 'x', 'u', 'U':
			max := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
			j := i
			for j < len(s) && j-i < max && isHex(s[j]) {
				j++
			}
			if j == i {
				b.WriteByte('\\')
				b.WriteByte(e)
				continue
			}
			v, _ := strconv.ParseUint(s[i:j], 16, 32)
			if e == 'x' {
				b.WriteByte(byte(v))
			} else {
				b.WriteRune(rune(v))
			}
			i = j
		case '0', '1', '2', '3', '4', '5', '6', '7':
			j := i - 1
			for j < len(s) && j-(i-1) < 3 && s[j] >= '0' && s[j] <= '7' {
				j++
			}
			v, _ := strconv.ParseUint(s[i-1:j], 8, 16)
			b.WriteByte(byte(v))
			i = j
		default: // \\ \' \" \? and anything else: the character itself
			b.WriteByte(e)
		}
	}
	return 0, fmt.Errorf("unterminated $'")
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}
