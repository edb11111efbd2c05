package parse

import (
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// pyToJSON converts a Python literal (a dict, list or scalar as repr() would
// print it) to JSON text. py reports whether anything Python-only was seen
// (single-quoted strings, True/False/None, tuples); ok whether the result is
// valid JSON. Trailing commas are dropped, so it also repairs that JSON slip.
//
// It exists only to write guidance: the converted text is shown to the model
// as the correct form and is never decoded into an action, because a guess
// at what the model meant must not run.
func pyToJSON(s string) (out string, py, ok bool) {
	if d, isDict := dictCall(s); isDict {
		s, py = d, true
	}
	var sb strings.Builder
	// A comma is held back until the next token: dropped before a closing
	// bracket, written before anything else. (Rewriting the buffer instead
	// would be quadratic on "[1,][1,]...".)
	pending := false
	var ws strings.Builder // whitespace after a held-back comma
	for i := 0; i < len(s); {
		c := s[i]
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
			if pending {
				ws.WriteByte(c)
			} else {
				sb.WriteByte(c)
			}
			i++
			continue
		}
		if c == ',' {
			if pending {
				return "", py, false // ",," is not a literal in either language
			}
			pending = true
			i++
			continue
		}
		closer := c == '}' || c == ']' || c == ')'
		if pending && !closer {
			sb.WriteByte(',')
		}
		if pending {
			sb.WriteString(ws.String())
			ws.Reset()
		}
		pending = false
		switch {
		case c == '{' || c == '[' || c == ':':
			sb.WriteByte(c)
			i++
		case c == '(':
			sb.WriteByte('[')
			py = true
			i++
		case closer:
			if c == ')' {
				c = ']'
			}
			sb.WriteByte(c)
			i++
		case c == '\'' || c == '"' || (strings.IndexByte("rRuU", c) >= 0 && i+1 < len(s) && (s[i+1] == '\'' || s[i+1] == '"')):
			str, n, good := pyString(s[i:])
			if !good {
				return "", py, false
			}
			if c != '"' || strings.HasPrefix(s[i:], `"""`) {
				py = true
			}
			sb.WriteString(jsonString(str))
			i += n
		case c == '-' || c == '+' || c == '.' || (c >= '0' && c <= '9'):
			j := i + 1
			for j < len(s) && strings.IndexByte("0123456789.eE+-_", s[j]) >= 0 {
				j++
			}
			sb.WriteString(strings.TrimPrefix(strings.ReplaceAll(s[i:j], "_", ""), "+"))
			i = j
		default:
			j := i
			for j < len(s) && (s[j] == '_' || s[j] >= 'a' && s[j] <= 'z' || s[j] >= 'A' && s[j] <= 'Z') {
				j++
			}
			switch s[i:j] {
			case "True":
				sb.WriteString("true")
				py = true
			case "False":
				sb.WriteString("false")
				py = true
			case "None":
				sb.WriteString("null")
				py = true
			case "true", "false", "null":
				sb.WriteString(s[i:j])
			default:
				return "", py, false
			}
			i = j
		}
	}
	if pending {
		return "", py, false
	}
	out = sb.String()
	return out, py, json.Valid([]byte(out))
}

// pyString reads one Python string literal at the start of s (single,
// double or triple quoted, with an optional r or u prefix) and returns its
// value and length.
func pyString(s string) (string, int, bool) {
	start, raw := 0, false
	switch s[0] {
	case 'r', 'R':
		start, raw = 1, true
	case 'u', 'U':
		start = 1
	}
	q := s[start]
	quote := s[start : start+1]
	if strings.HasPrefix(s[start:], strings.Repeat(quote, 3)) {
		quote = strings.Repeat(quote, 3)
	}
	var sb strings.Builder
	for i := start + len(quote); i < len(s); {
		c := s[i]
		switch {
		case strings.HasPrefix(s[i:], quote):
			return sb.String(), i + len(quote), true
		case c == '\n' && len(quote) == 1:
			return "", 0, false
		case c == '\\' && raw && i+1 < len(s):
			// A raw string keeps its backslashes; one still escapes the quote.
			sb.WriteByte(c)
			sb.WriteByte(s[i+1])
			i += 2
		case c == '\\' && i+1 < len(s):
			e := s[i+1]
			i += 2
			switch e {
			case q:
				sb.WriteByte(e)
			case 'n':
				sb.WriteByte('\n')
			case 't':
				sb.WriteByte('\t')
			case 'r':
				sb.WriteByte('\r')
			case '\\', '\'', '"':
				sb.WriteByte(e)
			case '\n':
				// A backslash-newline continues the literal.
			default:
				// Python keeps unknown escapes as written.
				sb.WriteByte('\\')
				sb.WriteByte(e)
			}
		default:
			r, n := utf8.DecodeRuneInString(s[i:])
			sb.WriteRune(r)
			i += n
		}
	}
	return "", 0, false
}

// dictCall rewrites a top-level dict(name=value, ...) call as the dict
// literal {"name": value, ...}; ok is false for anything else.
func dictCall(s string) (string, bool) {
	t := strings.TrimSpace(s)
	if !strings.HasPrefix(t, "dict(") || !strings.HasSuffix(t, ")") {
		return "", false
	}
	body := t[len("dict(") : len(t)-1]
	var sb strings.Builder
	sb.WriteByte('{')
	depth, key := 0, true
	for i := 0; i < len(body); {
		c := body[i]
		switch {
		case c == '\'' || c == '"':
			_, n, ok := pyString(body[i:])
			if !ok {
				return "", false
			}
			sb.WriteString(body[i : i+n])
			i += n
			continue
		case c == '(' || c == '[' || c == '{':
			depth++
		case c == ')' || c == ']' || c == '}':
			depth--
		case c == ',' && depth == 0:
			key = true
			sb.WriteByte(c)
			i++
			continue
		case key && depth == 0 && (c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'):
			j := i
			for j < len(body) && (body[j] == '_' || body[j] >= 'a' && body[j] <= 'z' || body[j] >= 'A' && body[j] <= 'Z' || body[j] >= '0' && body[j] <= '9') {
				j++
			}
			k := j
			for k < len(body) && body[k] == ' ' {
				k++
			}
			if k >= len(body) || body[k] != '=' {
				return "", false
			}
			sb.WriteString(jsonString(body[i:j]))
			sb.WriteByte(':')
			i, key = k+1, false
			continue
		}
		if c != ' ' && c != '\t' && c != '\n' {
			key = false
		}
		sb.WriteByte(c)
		i++
	}
	sb.WriteByte('}')
	return sb.String(), true
}
