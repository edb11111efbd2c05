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
	Cwd      string // $PWD; empty when CwdCut
	CwdCut   bool   // $PWD was too long for a marker (maxMeta): Cwd is unknown
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
// real prompt is a few hundred bytes, the cwd being the long part; $PWD has
// no bound of its own (PATH_MAX limits one syscall's path, not how deep cd
// goes one relative step at a time), so a body that is still well-formed
// at this length is not held further: its cwd is skipped to the BEL and
// reported as unknown (promptMeta.CwdCut), its other fields kept.
const maxMeta = 64 << 10

// maxDigits bounds a marker's numeric fields.
const maxDigits = 19

// unexpanded is the rest of a PS1 body whose parameters bash did not
// expand (shopt -u promptvars): prompt escapes such as \# still are.
const unexpanded = "$?;${SHELLOPTS};${#PS1};${PWD@Q}"

// scanEvent is what the scanner found in the stream.
type scanEvent int

const (
	scanNone   scanEvent = iota
	scanPrompt           // a complete PS1 marker
	scanPS2              // the continuation marker
	scanBad              // PS1's marker with its parameters not expanded (promptvars off)
)

// scanner cuts markers out of the raw PTY byte stream. Bytes that are not
// part of a marker go to out unchanged; a partial marker at the end of a
// chunk is held back until the next chunk decides it. A marker's body is
// checked byte by byte as it arrives: at the first byte that no marker of
// ours has there, what was held is not a marker and goes to out (without
// the nonce-carrying prefix), so a forged prefix never swallows the output
// after it.
type scanner struct {
	m       markers
	out     io.Writer
	pending []byte      // held back: a possible marker start, or a marker in progress
	inMeta  bool        // pending starts with the full prefix
	checked int         // body bytes of the marker in progress known to be well-formed
	long    *promptMeta // a well-formed marker past maxMeta whose cwd is being skipped to its BEL
	escOut  bool        // the last byte written to out was ESC
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

// write passes output on and remembers whether it ended in ESC.
func (s *scanner) write(p []byte) error {
	if len(p) == 0 {
		return nil
	}
	s.escOut = p[len(p)-1] == 0x1b
	_, err := s.out.Write(p)
	return err
}

// scan consumes as much of buf as it can decide and reports how much.
func (s *scanner) scan(buf []byte) (scanEvent, promptMeta, int, error) {
	pos := 0
	for {
		if s.long != nil {
			// A well-formed marker past maxMeta: its cwd is skipped.
			j := firstCtl(buf[pos:])
			switch {
			case j < 0:
				return scanNone, promptMeta{}, len(buf), nil
			case buf[pos+j] == '\a':
				meta := *s.long
				s.long = nil
				return scanPrompt, meta, pos + j + 1, nil
			}
			s.long = nil
			pos = s.notMarker(buf, pos+j)
			continue
		}
		if s.inMeta {
			body := buf[pos+len(s.m.prefix):]
			v, n := s.examine(body)
			switch v {
			case bodyMore:
				return scanNone, promptMeta{}, pos, nil
			case bodyDone:
				s.inMeta, s.checked = false, 0
				ev, meta := parseMarker(body[:n])
				return ev, meta, pos + len(s.m.prefix) + n + 1, nil
			case bodyLong:
				if ev, meta := parseMarker(body[:n]); ev == scanPrompt {
					meta.Cwd, meta.CwdCut = "", true
					s.inMeta, s.checked, s.long = false, 0, &meta
					pos += len(s.m.prefix) + maxMeta
					continue
				}
				// A number out of range: not a marker of bash's.
			}
			// Not a marker: the body so far is output, the prefix (and
			// with it the nonce) is not.
			s.inMeta, s.checked = false, 0
			start := pos + len(s.m.prefix)
			if err := s.write(body[:n]); err != nil {
				return scanNone, promptMeta{}, start + n, err
			}
			pos = s.notMarker(buf, start+n)
			continue
		}
		rest := buf[pos:]
		i := bytes.Index(rest, s.m.prefix)
		if i < 0 {
			keep := partialSuffix(rest, s.m.prefix)
			return scanNone, promptMeta{}, len(buf) - keep, s.write(rest[:len(rest)-keep])
		}
		if err := s.write(rest[:i]); err != nil {
			return scanNone, promptMeta{}, pos + i, err
		}
		pos += i
		s.inMeta = true
	}
}

// notMarker goes on after bytes that turned out not to be a marker, at
// buf[at], the first byte a marker could not have had. The prefix was
// dropped; had the output before it ended in ESC, a "]" here would put
// ESC ] back together with what follows, which may spell the prefix
// again: that "]" is dropped too.
func (s *scanner) notMarker(buf []byte, at int) int {
	if s.escOut && at < len(buf) && buf[at] == ']' {
		return at + 1
	}
	return at
}

// bodyVerdict is what examine decided about a marker body so far.
type bodyVerdict int

const (
	bodyMore bodyVerdict = iota // well-formed so far, no BEL yet
	bodyDone                    // body[:n] is a whole body; body[n] is its BEL
	bodyNot                     // body[n] is a byte no marker of ours has there
	bodyLong                    // well-formed, and maxMeta bytes long without a BEL; the cwd starts at body[:n]'s end
)

// examine checks a marker body (the bytes after the prefix) as far as it
// has come. The verdict at each byte depends only on the bytes before it,
// so how reads split the stream changes nothing. The short head is checked
// anew each time; the cwd, the part that may be long, only from where the
// last call stopped.
func (s *scanner) examine(body []byte) (bodyVerdict, int) {
	b := body[:min(len(body), maxMeta)]
	v, n, cwd := checkHead(b)
	if v != bodyMore || cwd == 0 {
		if v == bodyMore && len(body) > len(b) {
			return bodyNot, len(b)
		}
		return v, n
	}
	from := max(cwd, s.checked)
	j := firstCtl(b[from:])
	if j >= 0 {
		if b[from+j] == '\a' {
			return bodyDone, from + j
		}
		return bodyNot, from + j
	}
	s.checked = len(b)
	if len(body) > len(b) {
		return bodyLong, cwd
	}
	return bodyMore, len(b)
}

// firstCtl returns the index of the first control byte in b, -1 if none:
// ${PWD@Q} writes every control character as an escape, so the first one
// ends a cwd (the BEL) or shows it was not one.
func firstCtl(b []byte) int {
	for i, c := range b {
		if c < 0x20 || c == 0x7f {
			return i
		}
	}
	return -1
}

// checkHead checks the head of a marker body, all but the cwd:
//
//	c                                  the continuation marker
//	p;<N>;<$?>;<SHELLOPTS>;<len>;      PS1's, with the cwd after it
//	p;<N>;$?;${SHELLOPTS};${#PS1};${PWD@Q}   PS1's, not expanded
//
// cwd is where the cwd starts once the head is whole (then v is bodyMore).
func checkHead(b []byte) (v bodyVerdict, n, cwd int) {
	if len(b) == 0 {
		return bodyMore, 0, 0
	}
	if b[0] == 'c' {
		switch {
		case len(b) == 1:
			return bodyMore, 1, 0
		case b[1] == '\a':
			return bodyDone, 1, 0
		}
		return bodyNot, 1, 0
	}
	if b[0] != 'p' {
		return bodyNot, 0, 0
	}
	i := 1
	for field := 0; field < 4; field++ {
		// Each field follows a ';'.
		if i == len(b) {
			return bodyMore, i, 0
		}
		if b[i] != ';' {
			return bodyNot, i, 0
		}
		i++
		if field == 1 && i < len(b) && b[i] == '$' {
			k := 0
			for k < len(unexpanded) && i+k < len(b) && b[i+k] == unexpanded[k] {
				k++
			}
			switch {
			case i+k == len(b):
				return bodyMore, i + k, 0
			case k < len(unexpanded):
				return bodyNot, i + k, 0
			case b[i+k] == '\a':
				return bodyDone, i + k, 0
			}
			return bodyNot, i + k, 0
		}
		j := i
		if field == 2 {
			// SHELLOPTS: option names (lower case, '-') joined by ':'.
			for j < len(b) && (b[j] >= 'a' && b[j] <= 'z' || b[j] == '-' || b[j] == ':') {
				j++
			}
		} else {
			for j < len(b) && j-i < maxDigits && b[j] >= '0' && b[j] <= '9' {
				j++
			}
			if j < len(b) && j == i {
				return bodyNot, j, 0 // a number has at least one digit
			}
		}
		i = j
	}
	switch {
	case i == len(b):
		return bodyMore, i, 0
	case b[i] != ';':
		return bodyNot, i, 0
	}
	return bodyMore, i + 1, i + 1
}

// parseMarker reads a marker's body (between the prefix and the BEL),
// which examine found well-formed.
func parseMarker(body []byte) (scanEvent, promptMeta) {
	s := string(body)
	if s == "c" {
		return scanPS2, promptMeta{}
	}
	// The cwd, last, may itself hold ';' (cd 'a;b'); nothing before it can.
	f := strings.SplitN(s, ";", 6)
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
	if s.inMeta || s.long != nil || len(s.pending) == 0 {
		return nil
	}
	if bytes.HasPrefix(s.m.prefix, s.pending) {
		return nil // may still become a marker
	}
	err := s.write(s.pending)
	s.pending = s.pending[:0]
	return err
}

// reset forgets any partial state, for a new shell.
func (s *scanner) reset() {
	s.pending = s.pending[:0]
	s.inMeta, s.checked, s.long, s.escOut = false, 0, nil, false
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
