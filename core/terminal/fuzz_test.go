package terminal

import (
	"bytes"
	"fmt"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/harnessd/harnessd/core/terminal/clean"
)

// FuzzParseInput: any input turns into bytes without panicking; text with
// no "<" that is not a bare key name passes through unchanged.
func FuzzParseInput(f *testing.F) {
	for _, s := range []string{"hello", "C-c", "<Up><Enter>", "ihello<Esc>", "a<lt>b", "<div>", "<M-<F1>>", "<C-", "<>", "^", "ctrl+", "<A-x><m-Up>"} {
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, s string, app bool) {
		p := parseInput(s, app)
		if !strings.Contains(s, "<") {
			if _, bare := bareKey(s, app); !bare && string(p.bytes) != s {
				t.Fatalf("parseInput(%q) = %q, want the text unchanged", s, p.bytes)
			}
		}
		if !p.hasKey && len(p.bytes) != len(s) {
			t.Fatalf("parseInput(%q) = %q changed text without a key", s, p.bytes)
		}
	})
}

// ansiQuote spells s the way ${var@Q} may: single quotes, or $'...' with
// every byte escaped in one of the forms bash reads.
func ansiQuote(s string, style int) string {
	if style%3 == 0 {
		return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
	}
	var b strings.Builder
	b.WriteString("$'")
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case style%3 == 1:
			fmt.Fprintf(&b, `\%03o`, c)
		case c == '\'' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c >= 0x7f:
			fmt.Fprintf(&b, `\x%02x`, c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteString("'")
	return b.String()
}

// FuzzUnquote: the cwd decoder reads back what the quoting spells, and
// never panics on anything else.
func FuzzUnquote(f *testing.F) {
	for _, s := range []string{"/tmp", "/a b", "/it's", "/ctl\x01dir\x1b[31m", "/a\n\"b'c\\", "/日本", "\xff"} {
		f.Add(s, 0)
		f.Add(s, 1)
		f.Add(s, 2)
	}
	f.Fuzz(func(t *testing.T, s string, style int) {
		if style < 0 {
			style = -style
		}
		q := ansiQuote(s, style)
		got, err := unquote(q)
		if err != nil || got != s {
			t.Fatalf("unquote(%q) = %q, %v; want %q", q, got, err, s)
		}
		_, _ = unquote(s) // arbitrary input: no panic
	})
}

// TestUnquoteBash: what bash's ${PWD@Q} really prints reads back right.
func TestUnquoteBash(t *testing.T) {
	for _, s := range []string{"/tmp", "/a b", "/it's", "/ctl\x01dir\x1b[31m", "/a\n\"b'c\\", "/日本語", "/x\xffy", "/tab\there", "/$HOME`x`"} {
		cmd := exec.Command("bash", "-c", `printf '%s' "${1@Q}"`, "bash", s)
		cmd.Env = []string{"LANG=C.UTF-8"}
		out, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		if got, err := unquote(string(out)); err != nil || got != s {
			t.Errorf("bash quoted %q as %s; unquote gives %q, %v", s, out, got, err)
		}
	}
}

// detectAll runs the detector over chunks and lists its events with the
// absolute offsets of their sequences' ends, and then the column it
// ends at.
func detectAll(chunks [][]byte) []string {
	var d detector
	var evs []string
	off := 0
	for _, c := range chunks {
		for p, base := c, off; len(p) > 0; {
			ev, _, end := d.scan(p)
			if ev == evNone {
				break
			}
			evs = append(evs, fmt.Sprintf("%d@%d", ev, base+end))
			base += end
			p = p[end:]
		}
		off += len(c)
	}
	return append(evs, fmt.Sprintf("col %d", d.col))
}

// FuzzDetector: the display's escape-sequence detector finds the same
// events wherever reads split the stream.
func FuzzDetector(f *testing.F) {
	f.Add([]byte("a\x1b[?1049hscreen\x1b[5;1Hx\x1b[?1049l"), 3)
	f.Add([]byte("\x1b[H\x1b[2J\x1b[?1h\x1b[?1l\x1b[12d"), 5)
	f.Add([]byte("\x1b\x1b[?47;1h\x1b[3J"), 1)
	f.Add([]byte("ab\tc\bd\r\xc3\xa9e\nfg\x1b[6nh\x7fi"), 4)
	f.Fuzz(func(t *testing.T, data []byte, cut int) {
		whole := detectAll([][]byte{data})
		if cut < 0 {
			cut = -cut
		}
		cut %= len(data) + 1
		chunks := [][]byte{data[:cut]}
		for rest := data[cut:]; len(rest) > 0; {
			n := min(5, len(rest))
			chunks = append(chunks, rest[:n])
			rest = rest[n:]
		}
		if split := detectAll(chunks); fmt.Sprint(split) != fmt.Sprint(whole) {
			t.Fatalf("split at %d: %v, whole: %v", cut, split, whole)
		}
		// A byte at a time, the column moves by the per-byte rules alone.
		var bytewise [][]byte
		for i := range data {
			bytewise = append(bytewise, data[i:i+1])
		}
		if one := detectAll(bytewise); fmt.Sprint(one) != fmt.Sprint(whole) {
			t.Fatalf("a byte at a time: %v, whole: %v", one, whole)
		}
	})
}

// FuzzDisplay: any bytes through the display (line output, screens and
// back) never panic, and line output never holds a raw escape.
func FuzzDisplay(f *testing.F) {
	f.Add([]byte("line\n\x1b[?1049h\x1b[2;3Hdrawn\x1b[6n\x1b[?1049l\nafter\n"), true)
	f.Add([]byte("\x1b[H\x1b[2J1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n"), false)
	f.Fuzz(func(t *testing.T, data []byte, running bool) {
		var out bytes.Buffer
		sink := &swapWriter{w: &out}
		cl := newCleanWriter(sink)
		d := &display{lines: cl, sink: sink, cols: 20, rows: 5, app: new(atomic.Bool)}
		d.Write(data)
		cl.Flush()
		d.settled(running)
		_ = d.screen()
		d.close()
		if bytes.IndexByte(out.Bytes(), 0x1b) >= 0 {
			t.Fatalf("escape in line output: %q", out.Bytes())
		}
	})
}

func newCleanWriter(w *swapWriter) *clean.Writer { return clean.NewWriter(w) }
