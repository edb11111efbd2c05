package terminal

import (
	"strings"
)

// The key syntax of input (IsInput, SendKeys) is described in the package
// documentation, under Keys.

// parsedInput is an input turned into bytes.
type parsedInput struct {
	bytes    []byte
	hasKey   bool // a key token was used: never add Enter
	endsLine bool // the text ends with \n or \r
}

// keyCode returns the bytes for a key name (without brackets). app is
// DECCKM (application cursor keys), which changes arrows, Home and End.
func keyCode(name string, app bool) ([]byte, bool) {
	n := strings.ToLower(name)
	csi := func(s string) []byte {
		if app {
			return []byte("\x1bO" + s)
		}
		return []byte("\x1b[" + s)
	}
	switch n {
	case "enter", "cr", "return", "ret":
		return []byte{'\r'}, true
	case "esc", "escape":
		return []byte{0x1b}, true
	case "tab":
		return []byte{'\t'}, true
	case "space":
		return []byte{' '}, true
	case "bs", "backspace":
		return []byte{0x7f}, true
	case "del", "delete":
		return []byte("\x1b[3~"), true
	case "insert", "ins":
		return []byte("\x1b[2~"), true
	case "up":
		return csi("A"), true
	case "down":
		return csi("B"), true
	case "right":
		return csi("C"), true
	case "left":
		return csi("D"), true
	case "home":
		return csi("H"), true
	case "end":
		return csi("F"), true
	case "pageup", "pgup":
		return []byte("\x1b[5~"), true
	case "pagedown", "pgdn", "pagedn":
		return []byte("\x1b[6~"), true
	case "lt":
		return []byte{'<'}, true
	}
	if f, ok := fkeys[n]; ok {
		return []byte(f), true
	}
	for _, p := range []string{"c-", "ctrl-", "ctrl+", "^"} {
		rest, found := strings.CutPrefix(n, p)
		if !found || len(rest) != 1 {
			continue
		}
		c := rest[0]
		switch {
		case c >= 'a' && c <= 'z':
			return []byte{c - 'a' + 1}, true
		case c == '@' || c == ' ' || c == '2':
			return []byte{0}, true
		case c == '[':
			return []byte{0x1b}, true
		case c == '\\':
			return []byte{0x1c}, true
		case c == ']':
			return []byte{0x1d}, true
		case c == '^' || c == '6':
			return []byte{0x1e}, true
		case c == '_' || c == '/':
			return []byte{0x1f}, true
		case c == '?':
			return []byte{0x7f}, true
		}
	}
	for _, p := range []string{"m-", "a-", "alt-", "alt+", "meta-"} {
		if !strings.HasPrefix(n, p) || len(name) == len(p) {
			continue
		}
		rest := name[len(p):]
		if len(rest) == 1 {
			return []byte{0x1b, rest[0]}, true
		}
		if b, ok := keyCode(rest, app); ok {
			return append([]byte{0x1b}, b...), true
		}
	}
	return nil, false
}

var fkeys = map[string]string{
	"f1": "\x1bOP", "f2": "\x1bOQ", "f3": "\x1bOR", "f4": "\x1bOS",
	"f5": "\x1b[15~", "f6": "\x1b[17~", "f7": "\x1b[18~", "f8": "\x1b[19~",
	"f9": "\x1b[20~", "f10": "\x1b[21~", "f11": "\x1b[23~", "f12": "\x1b[24~",
}

// bareKeys are the key names accepted without brackets when they are the
// whole input (as older clients send them: "C-c", "ESC", "Enter").
func bareKey(s string, app bool) ([]byte, bool) {
	k := strings.TrimSpace(s)
	if k == "" || strings.ContainsAny(k, " \t\n<>") {
		return nil, false
	}
	switch strings.ToLower(k) {
	case "enter", "esc", "escape", "tab":
		return keyCode(k, app)
	}
	lk := strings.ToLower(k)
	for _, p := range []string{"c-", "ctrl-", "ctrl+", "^"} {
		if strings.HasPrefix(lk, p) {
			return keyCode(k, app)
		}
	}
	return nil, false
}

// parseInput turns input text into the bytes to write. app is DECCKM.
func parseInput(s string, app bool) parsedInput {
	if b, ok := bareKey(s, app); ok {
		return parsedInput{bytes: b, hasKey: true}
	}
	var p parsedInput
	for i := 0; i < len(s); {
		if s[i] == '<' {
			if j := strings.IndexByte(s[i+1:], '>'); j > 0 && j <= 12 {
				if b, ok := keyCode(s[i+1:i+1+j], app); ok {
					p.bytes = append(p.bytes, b...)
					p.hasKey = true
					i += j + 2
					continue
				}
			}
		}
		p.bytes = append(p.bytes, s[i])
		i++
	}
	if n := len(s); n > 0 && (s[n-1] == '\n' || s[n-1] == '\r') {
		p.endsLine = true
	}
	return p
}

// KeyBytes turns input in the key syntax of is_input into the bytes a
// program on a terminal reads, for a PTY other than a terminal's own (a
// Python cell's). line says plain text was given without a key or line
// end: a line-mode program waits for Enter, which the caller adds.
func KeyBytes(keys string) (b []byte, line bool) {
	in := parseInput(keys, false)
	return in.bytes, !in.hasKey && !in.endsLine
}
