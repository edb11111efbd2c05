package shcmd

import "strings"

// plainWords splits src into its words when src is one simple command
// spelled with ordinary characters only: letters, digits, - _ . / , : + @
// % ^ = # (= not in the first word, which would be an assignment, # not
// first in a word, where it opens a comment) and single-quoted text of
// printable ASCII ('*.go', --include='*.go'), blanks between words, and
// maybe a comment of printable ASCII at the end. Such a line means to the
// shell exactly its words with the quotes taken out (no expansions,
// globs, operators or keywords), so the parser has nothing to add: most
// agent commands (ls -la, go test ./..., grep -rn 'TODO' .) are analysed
// without it. ok is false for anything else, which the parser reads.
func plainWords(src string) (words []word, ok bool) {
	n := 0 // words
	for i := 0; i < len(src); {
		c := src[i]
		if c == ' ' || c == '\t' {
			i++
			continue
		}
		if c == '#' {
			// A comment, to the end of the line: printable ASCII only (a
			// newline would end it, invalid UTF-8 the parser refuses).
			for k := i + 1; k < len(src); k++ {
				if b := src[k]; b != '\t' && (b < 0x20 || b >= 0x7f) {
					return nil, false
				}
			}
			break
		}
		j, quoted := plainWordEnd(src, i)
		if j < 0 {
			return nil, false
		}
		if n == 0 {
			// Not an assignment, a keyword or an empty name (quoted or
			// not: the parser is left what is near them).
			w := src[i:j]
			if quoted {
				w = unquotePlain(w)
			}
			if w == "" || keyword[w] {
				return nil, false
			}
			for k := i; k < j; k++ {
				if src[k] == '=' {
					return nil, false
				}
			}
		}
		n++
		i = j
	}
	words = make([]word, 0, n)
	for i := 0; i < len(src); {
		c := src[i]
		if c == ' ' || c == '\t' {
			i++
			continue
		}
		if c == '#' {
			break
		}
		j, quoted := plainWordEnd(src, i)
		w := src[i:j]
		if quoted {
			w = unquotePlain(w)
		}
		words = append(words, word{text: w, lit: true})
		i = j
	}
	return words, true
}

// plainWordEnd returns where the plain word starting at src[i] ends (a
// blank or the end of src), and whether it has quotes; -1 if what starts
// there is not a plain word.
func plainWordEnd(src string, i int) (end int, quoted bool) {
	j := i
	for j < len(src) {
		c := src[j]
		switch {
		case plainByte[c]:
			j++
		case c == '\'':
			k := j + 1
			for k < len(src) && src[k] != '\'' {
				if b := src[k]; b != '\t' && (b < 0x20 || b >= 0x7f) {
					return -1, false
				}
				k++
			}
			if k == len(src) {
				return -1, false // unclosed
			}
			j, quoted = k+1, true
		case c == ' ' || c == '\t':
			return j, quoted
		default:
			return -1, false
		}
	}
	return j, quoted
}

// unquotePlain is a plain word with its quotes taken out: the parser's
// literal parts and single-quoted parts, joined.
func unquotePlain(w string) string {
	if len(w) >= 2 && w[0] == '\'' && w[len(w)-1] == '\'' && strings.IndexByte(w[1:len(w)-1], '\'') < 0 {
		return w[1 : len(w)-1]
	}
	var b strings.Builder
	b.Grow(len(w))
	for k := 0; k < len(w); k++ {
		if w[k] != '\'' {
			b.WriteByte(w[k])
		}
	}
	return b.String()
}

// plainAndOr is pipelines of plain commands joined by && or ||, each
// pipeline commands joined by |.
type plainAndOr [][][]word

// plainList reads src when it is plain commands (as plainWords reads them)
// joined by the operators ;, &&, || and |, each written as a word of its
// own ("make && make test", not "make&&make test"), with maybe a comment
// at the end: ls -la && git status | head -n 5. It returns its and-or
// lists, in order. ok is false for anything else, a line without an
// operator included (plainWords reads those), and for a line an operator
// starts or ends or two operators follow each other in, which the parser
// reads (and refuses, or reads as more than commands).
func plainList(src string) (list []plainAndOr, ok bool) {
	end := len(src) // where the commands end: a comment or the end
	hasOp := false
	for i := 0; i < len(src); {
		c := src[i]
		if c == ' ' || c == '\t' {
			i++
			continue
		}
		if c == '#' {
			end = i
			break
		}
		j := plainTokenEnd(src, i, len(src))
		if j < 0 {
			return nil, false
		}
		if isPlainOp(src[i:j]) {
			hasOp = true
		}
		i = j
	}
	if !hasOp {
		return nil, false
	}
	if end < len(src) {
		// The comment, as plainWords reads one.
		if _, ok := plainWords(src[end:]); !ok {
			return nil, false
		}
	}
	var (
		andOr plainAndOr
		pipe  [][]word
	)
	start := 0
	for i := 0; i <= end; {
		if i < end && (src[i] == ' ' || src[i] == '\t') {
			i++
			continue
		}
		j := i
		if i < end {
			j = plainTokenEnd(src, i, end)
		}
		op := src[i:j]
		if i < end && !isPlainOp(op) {
			i = j
			continue
		}
		// A command ends at i: the end, or an operator.
		words, ok := plainWords(src[start:i])
		if !ok || len(words) == 0 {
			return nil, false
		}
		pipe = append(pipe, words)
		if op != "|" {
			andOr = append(andOr, pipe)
			pipe = nil
		}
		if op == ";" || i == end {
			list = append(list, andOr)
			andOr = nil
		}
		if i == end {
			break
		}
		start, i = j, j
	}
	return list, true
}

// plainTokenEnd returns where the token at src[i] ends, before end: an
// operator (&&, ||, | or ;) or a plain word; -1 for anything else.
func plainTokenEnd(src string, i, end int) int {
	j := i
	for j < end && (src[j] == '&' || src[j] == '|' || src[j] == ';') {
		j++
	}
	if j > i {
		if j < end && src[j] != ' ' && src[j] != '\t' {
			return -1 // ls&&x, &&x: the parser reads what that is
		}
		return j
	}
	j, _ = plainWordEnd(src[:end], i)
	return j
}

func isPlainOp(t string) bool { return t == "&&" || t == "||" || t == "|" || t == ";" }

// plainByte holds the bytes a plain word may have ('#' only after its
// first byte: at the start it opens a comment).
var plainByte = func() (t [256]bool) {
	for c := 'a'; c <= 'z'; c++ {
		t[c] = true
	}
	for c := 'A'; c <= 'Z'; c++ {
		t[c] = true
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for _, c := range "-_./,:+@%^=#" {
		t[c] = true
	}
	return t
}()

// keyword holds the words that mean more than a command name at the start
// of a command, for bash or for the parser (declarations and let).
var keyword = map[string]bool{
	"if": true, "then": true, "elif": true, "else": true, "fi": true, "for": true, "in": true, "do": true,
	"done": true, "while": true, "until": true, "case": true, "esac": true, "function": true, "select": true,
	"time": true, "coproc": true, "declare": true, "local": true, "export": true, "readonly": true,
	"typeset": true, "nameref": true, "let": true,
}
