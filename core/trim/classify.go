package trim

import (
	"bytes"
	"sync"
)

// kind is the shape of a block: what starts it, which lines after (and
// sometimes before) it belong to it, and which of them matter most.
type kind uint8

const (
	kindLine     kind = iota // a keyword line, with the lines indented under it
	kindPyTrace              // Python: Traceback … through the exception line
	kindPanic                // Go: panic: / fatal error: and the first goroutine
	kindGoFail               // go test: --- FAIL: and its indented explanation
	kindCompiler             // file:line:col: error: (gcc, clang, go vet), error[E…] (rustc), with excerpt and caret
	kindTAP                  // TAP: not ok N and its YAML diagnostic block
	kindJava                 // Java: Exception in thread / Caused by: and the "at" frames
	kindPytest               // pytest: the > source line and the E lines
	kindThread               // Rust: thread '…' panicked at, its message and backtrace
)

// Scores: which blocks get the budget first.
const (
	scoreWeak    = 1 // a go test log line that may be a t.Log
	scoreKeyword = 2 // a line containing a keyword
	scoreShape   = 3 // a line in the shape of a known tool's failure
)

// blockLimit is how many lines one block keeps: the first ones, except for
// a Python traceback, which keeps its header and its last lines (the frame
// that raised and the exception).
var blockLimit = [...]int{
	kindLine:     6,
	kindPyTrace:  40,
	kindPanic:    16,
	kindGoFail:   16,
	kindCompiler: 12,
	kindTAP:      24,
	kindJava:     12,
	kindPytest:   16,
	kindThread:   12,
}

// preLimit is how many lines before a trigger a block may take.
var preLimit = [...]int{kindGoFail: 8, kindCompiler: 1, kindPytest: 4, kindThread: 0}

// classify says what block a line that contains a keyword starts.
func classify(text []byte) (kind, int) {
	t := bytes.TrimLeft(text, " \t")
	switch {
	case bytes.HasPrefix(t, []byte("Traceback (most recent call last)")):
		return kindPyTrace, scoreShape
	case bytes.HasPrefix(text, []byte("panic: ")) || bytes.HasPrefix(text, []byte("fatal error: ")):
		return kindPanic, scoreShape
	case bytes.HasPrefix(t, []byte("--- FAIL")):
		return kindGoFail, scoreShape
	case bytes.HasPrefix(t, []byte("not ok ")):
		return kindTAP, scoreShape
	case bytes.HasPrefix(text, []byte("thread '")) && bytes.Contains(text, []byte("' panicked at")):
		return kindThread, scoreShape
	case bytes.HasPrefix(t, []byte("Exception in thread ")) || bytes.HasPrefix(t, []byte("Caused by: ")):
		return kindJava, scoreShape
	case bytes.HasPrefix(text, []byte("E   ")) || bytes.HasPrefix(text, []byte(">   ")):
		return kindPytest, scoreShape
	case len(t) == len(text) && isCompilerError(text):
		return kindCompiler, scoreShape
	case bytes.HasPrefix(t, []byte("FAIL")) || bytes.HasPrefix(t, []byte("ERROR:")) || bytes.HasPrefix(t, []byte("FAILED")) ||
		bytes.HasPrefix(t, []byte("make: ***")) || bytes.HasPrefix(t, []byte("npm ERR!")) || bytes.HasPrefix(t, []byte("error:")):
		return kindLine, scoreShape
	case isGoTestLog(text) && !defaultMatcher().line(text[bytes.Index(text, []byte("_test.go:"))+len("_test.go:"):]):
		// t.Log and t.Error look alike; a message that compares is
		// likely the failure.
		for _, w := range []string{"want", "got", "expected", "mismatch", "should"} {
			if bytes.Contains(text, []byte(w)) {
				return kindLine, scoreKeyword
			}
		}
		return kindLine, scoreWeak
	}
	return kindLine, scoreKeyword
}

// defaultMatcher is the matcher of DefaultKeywords.
var defaultMatcher = sync.OnceValue(func() *matcher { return matcherFor(DefaultKeywords()) })

// isGoTestLog matches a go test log line, "    x_test.go:12: message".
func isGoTestLog(text []byte) bool {
	t := bytes.TrimLeft(text, " \t")
	i := bytes.Index(t, []byte("_test.go:"))
	if i < 0 || bytes.IndexByte(t[:i], ' ') >= 0 {
		return false
	}
	return true
}

// isCompilerError matches "error[E0308]: …" and "path:line[:col]: [fatal ]error: …".
func isCompilerError(text []byte) bool {
	if bytes.HasPrefix(text, []byte("error[")) {
		return true
	}
	i := bytes.Index(text, []byte(": "))
	if i <= 0 || bytes.IndexByte(text[:i], ' ') >= 0 {
		return false
	}
	// path:line or path:line:col
	loc := text[:i]
	j := bytes.IndexByte(loc, ':')
	if j <= 0 {
		return false
	}
	nums := loc[j+1:]
	for k := 0; k < 2 && len(nums) > 0; k++ {
		n := 0
		for n < len(nums) && isDigit(nums[n]) {
			n++
		}
		if n == 0 || n < len(nums) && (k == 1 || nums[n] != ':') {
			return false
		}
		nums = nums[min(n+1, len(nums)):]
	}
	rest := text[i+2:]
	return hasPrefixFold(rest, "error") || hasPrefixFold(rest, "fatal error")
}

// hasPrefixFold reports whether b starts with the lower-case prefix,
// ignoring ASCII case.
func hasPrefixFold(b []byte, prefix string) bool {
	return len(b) >= len(prefix) && equalFold(b, []byte(prefix))
}

// indent counts the leading spaces and tabs of a line (a tab counts 4).
func indent(text []byte) int {
	n := 0
	for _, c := range text {
		switch c {
		case ' ':
			n++
		case '\t':
			n += 4
		default:
			return n
		}
	}
	return -1 // blank
}

// cont says whether a line continues the open block b, and whether the
// block ends with it (true, true) or before it (false, true).
func (b *block) cont(text []byte) (in, end bool) {
	ind := indent(text)
	blank := ind < 0
	switch b.kind {
	case kindPyTrace:
		if blank {
			return false, true
		}
		if ind > 0 {
			return true, false
		}
		return true, true // the exception line ends it
	case kindPanic:
		if blank {
			if b.phase == 1 {
				return false, true
			}
			return true, false
		}
		if bytes.HasPrefix(text, []byte("goroutine ")) {
			if b.phase == 1 {
				return false, true // the second goroutine
			}
			b.phase = 1
			return true, false
		}
		if bytes.HasPrefix(text, []byte("exit status")) || bytes.HasPrefix(text, []byte("FAIL")) {
			return false, true
		}
		return true, false
	case kindGoFail, kindLine:
		if !blank && ind > b.indent {
			return true, false
		}
		return false, true
	case kindCompiler:
		if blank {
			return false, true
		}
		if ind > 0 || isExcerpt(text) || bytes.Contains(text, []byte(": note: ")) || bytes.Contains(text, []byte(": note:")) {
			return true, false
		}
		return false, true
	case kindTAP:
		if blank || ind > b.indent {
			return true, false
		}
		return false, true
	case kindJava:
		if !blank && (ind > 0 || bytes.HasPrefix(text, []byte("Caused by: "))) {
			return true, false
		}
		return false, true
	case kindThread:
		if blank {
			return false, true
		}
		return true, false
	case kindPytest:
		if bytes.HasPrefix(text, []byte("E ")) || bytes.HasPrefix(text, []byte(">")) {
			return true, false
		}
		if !blank && ind == 0 && bytes.Contains(text, []byte(".py:")) {
			return true, true // the location line
		}
		return false, true
	}
	return false, true
}

// isExcerpt matches a compiler's source excerpt: "  12 | code", "   |   ^~~".
func isExcerpt(text []byte) bool {
	t := bytes.TrimLeft(text, " 0123456789")
	return len(t) > 0 && t[0] == '|'
}

// pre says whether a line before a trigger of kind k belongs to its block.
func pre(k kind, trigIndent int, text []byte) bool {
	ind := indent(text)
	switch k {
	case kindGoFail:
		return ind > trigIndent
	case kindCompiler:
		return ind == 0 && bytes.HasSuffix(text, []byte(":")) && (bytes.Contains(text, []byte("In ")) || bytes.Contains(text, []byte("in ")))
	case kindPytest:
		return ind >= 0 && !bytes.HasPrefix(text, []byte("____")) && !bytes.HasPrefix(text, []byte("E "))
	}
	return false
}

// DefaultKeywords are the case-insensitive substrings that make a line
// from the middle of an output a candidate for the budget: the words of
// failure and the tool shapes that carry no such word.
func DefaultKeywords() []string {
	return []string{
		"error", "fatal", "panic", "exception", "traceback", "fail", "not ok", "assert",
		"undefined reference", "segmentation fault", "killed", "permission denied",
		"no such file", "exit status", "caused by", "err!", "make: ***",
		"_test.go:", "✖", "✕",
	}
}
