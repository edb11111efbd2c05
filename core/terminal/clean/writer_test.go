package clean

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

var cases = []struct {
	name, in, want string
}{
	{"empty", "", ""},
	{"plain", "hello\nworld\n", "hello\nworld\n"},
	{"no trailing newline", "hello", "hello"},
	{"tab kept", "a\tb\n", "a\tb\n"},

	// Colours and attributes.
	{"sgr", "\x1b[31mred\x1b[0m\n", "red\n"},
	{"sgr many params", "\x1b[1;38;5;208mX\x1b[m\n", "X\n"},
	{"sgr colon params", "\x1b[38:2:255:0:0mX\x1b[0m", "X"},
	{"ls colours", "\x1b[0m\x1b[01;34mdir\x1b[0m  file\n", "dir  file\n"},

	// Cursor and screen control.
	{"cursor hide show", "\x1b[?25lbusy\x1b[?25h\n", "busy\n"},
	{"cursor moves", "a\x1b[2Ab\x1b[10;20Hc\x1b[3Dd\x1b[1Ce\n", "abcde\n"},
	{"bracketed paste", "\x1b[?2004hprompt\x1b[?2004l\n", "prompt\n"},
	{"clear screen", "\x1b[H\x1b[2J\x1b[3Jafter\n", "after\n"},
	{"erase line 2K", "old\x1b[2Knew\n", "new\n"},
	{"erase line 2K then CR", "old\x1b[2K\rnew\n", "new\n"},
	{"CR then erase to end", "old\r\x1b[Knew\n", "new\n"},
	{"CR then erase to end, nothing after", "old\r\x1b[K\n", "\n"},
	{"erase to end at end of line", "keep\x1b[K\n", "keep\n"},
	{"erase to start", "gone\x1b[1Knew\n", "new\n"},
	{"erase to start after CR", "kept\r\x1b[1K\n", "kept\n"},
	{"column 1 is CR", "old\x1b[1Gnew\n", "new\n"},
	{"column default is CR", "old\x1b[Gnew\n", "new\n"},
	{"column 5 ignored", "old\x1b[5Gnew\n", "oldnew\n"},
	{"private K ignored", "keep\x1b[?2Kx\n", "keepx\n"},
	{"intermediate", "a\x1b[2 qb\n", "ab\n"},
	{"csi cut by newline", "a\x1b[12\nb\n", "a\nb\n"},
	{"csi cut by esc", "a\x1b[12\x1b[31mb\n", "ab\n"},
	{"csi cut by non-ascii", "a\x1b[1é\n", "aé\n"},

	// Two-byte and three-byte ESC sequences.
	{"keypad", "\x1b=a\x1b>b\n", "ab\n"},
	{"save restore cursor", "\x1b7a\x1b8b\n", "ab\n"},
	{"charset", "\x1b(Ba\x1b)0b\x1b(0c\x1b(B\n", "abc\n"},
	{"esc hash", "\x1b#8x\n", "x\n"},
	{"esc esc", "\x1b\x1b[31mx\n", "x\n"},
	{"esc control", "a\x1b\nb\n", "a\nb\n"},
	{"lone esc at end", "a\x1b", "a"},
	{"reset", "\x1bcx\n", "x\n"},

	// Strings.
	{"osc title bel", "\x1b]0;user@host: ~\x07$ ls\n", "$ ls\n"},
	{"osc title st", "\x1b]2;title\x1b\\text\n", "text\n"},
	{"osc hyperlink", "\x1b]8;;https://example.com\x1b\\link\x1b]8;;\x1b\\\n", "link\n"},
	{"osc 133 prompt marks", "\x1b]133;A\x07$ \x1b]133;B\x07", "$ "},
	{"osc utf8 title", "\x1b]0;中文 😀\x07ok\n", "ok\n"},
	{"osc newline ignored", "\x1b]0;a\nb\x07c\n", "c\n"},
	{"osc can", "\x1b]0;abc\x18def\n", "def\n"},
	{"osc then csi", "\x1b]0;abc\x1b[31mred\n", "red\n"},
	{"dcs", "\x1bPq#0;2;0;0;0#1!6~\x1b\\after\n", "after\n"},
	{"apc", "\x1b_Gf=100;AAAA\x1b\\img\n", "img\n"},
	{"pm sos", "\x1b^pm\x1b\\\x1bXsos\x1b\\x\n", "x\n"},
	{"unterminated osc at end", "text\x1b]0;title", "text"},

	// Carriage returns.
	{"crlf", "a\r\nb\r\n", "a\nb\n"},
	{"cr cr lf", "a\r\r\nb\r\r\r\n", "a\nb\n"},
	{"lone cr redraw", "abc\rxyz\n", "xyz\n"},
	{"shorter redraw", "abcdef\rXY\n", "XY\n"},
	{"cr at end", "abc\r", "abc"},
	{"cr then nothing", "\r\n", "\n"},
	{"cr at start", "\rabc\n", "abc\n"},
	{"cr then escape then lf", "abc\r\x1b[0m\n", "abc\n"},
	{"tqdm",
		"\r  0%|          | 0/100 [00:00<?, ?it/s]" +
			"\r 50%|#####     | 50/100 [00:01<00:01, 49.9it/s]" +
			"\r100%|##########| 100/100 [00:02<00:00, 49.9it/s]" +
			"\n",
		"100%|##########| 100/100 [00:02<00:00, 49.9it/s]\n"},
	{"tqdm unicode",
		"\r 10%|█         | 1/10\r 50%|█████     | 5/10\r100%|██████████| 10/10\n",
		"100%|██████████| 10/10\n"},
	{"pip rich",
		"\x1b[?25l\r\x1b[2K   \x1b[90m━━━━\x1b[0m 0.0/1.0 MB\r\x1b[2K   \x1b[32m━━━━\x1b[0m 1.0/1.0 MB\n\x1b[?25h",
		"   ━━━━ 1.0/1.0 MB\n"},
	{"apt",
		"\r0% [Working]\r            \rGet:1 http://deb.debian.org stable InRelease [151 kB]\n" +
			"\r43% [1 InRelease 15.0 kB/151 kB 10%]\rFetched 151 kB in 1s (120 kB/s)\n",
		"Get:1 http://deb.debian.org stable InRelease [151 kB]\nFetched 151 kB in 1s (120 kB/s)\n"},
	{"curl",
		"  % Total    % Received\r\n" +
			"\r  0     0    0     0\r 45 1000k   45  450k\r100 1000k  100 1000k\n",
		"  % Total    % Received\n100 1000k  100 1000k\n"},
	{"npm column 1", "\x1b[1G\x1b[0K⠙\x1b[1G\x1b[0K⠹\x1b[1G\x1b[0Kadded 1 package\n", "added 1 package\n"},
	{"crlf after redraw", "50%\r100%\r\n", "100%\n"},

	// Backspace.
	{"backspace", "abc\b\bX\n", "aX\n"},
	{"backspace rune", "a中\bb\n", "ab\n"},
	{"backspace emoji", "a😀\bb\n", "ab\n"},
	{"backspace at start", "\b\bab\n", "ab\n"},
	{"backspace after newline", "a\n\bb\n", "a\nb\n"},
	{"backspace after cr", "abc\r\b\n", "abc\n"},
	{"spinner", "|\b/\b-\b\\\bdone\n", "done\n"},
	{"overstrike", "_\bA_\bB C\bC\n", "AB C\n"},

	// Other controls.
	{"nul", "a\x00b\x00\n", "ab\n"},
	{"bel", "ding\x07\n", "ding\n"},
	{"del", "a\x7fb\n", "ab\n"},
	{"vt ff", "a\x0b\x0cb\n", "ab\n"},
	{"can sub ground", "a\x18\x1ab\n", "ab\n"},

	// UTF-8.
	{"utf8", "é中😀\n", "é中😀\n"},
	{"invalid byte", "a\xffb\n", "a\uFFFDb\n"},
	{"invalid bytes each", "\xff\xfe\n", "\uFFFD\uFFFD\n"},
	{"lone continuation", "\x80\xbf\n", "\uFFFD\uFFFD\n"},
	{"truncated 3-byte", "\xe4\xb8A\n", "\uFFFDA\n"},
	{"truncated 4-byte", "\xf0\x9f\x98A\n", "\uFFFDA\n"},
	{"truncated at end", "a\xe4\xb8", "a\uFFFD"},
	{"truncated then esc", "\xe4\x1b[31mx\n", "\uFFFDx\n"},
	{"overlong", "\xc0\xaf\xe0\x80\xaf\n", "\uFFFD\uFFFD\uFFFD\uFFFD\uFFFD\n"},
	{"surrogate", "\xed\xa0\x80\n", "\uFFFD\uFFFD\uFFFD\n"},
	{"above max", "\xf4\x90\x80\x80\n", "\uFFFD\uFFFD\uFFFD\uFFFD\n"},
	{"8-bit csi not interpreted", "a\x9b31mb\n", "a\uFFFD31mb\n"},
	{"9b inside rune", "\xe2\x9b\x84\n", "⛄\n"},
	{"c1 rune dropped", "a\u009b31mb\u0085\n", "a31mb\n"},
	{"nbsp kept", "a\u00a0b\n", "a\u00a0b\n"},
	{"bom kept", "\ufeffx\n", "\ufeffx\n"},

	// Multi-line redraws (window.go): the first frame, then the last.
	{"two bars redrawn", "outer  0%\ninner  0%\n\x1b[2A\router 50%\n\rinner 50%\n\x1b[2A\router100%\n\rinner100%\ndone\n",
		"outer  0%\ninner  0%\nouter100%\ninner100%\ndone\n"},
	{"docker pull", "a: Waiting\nb: Waiting\n\x1b[2A\x1b[2Ka: Downloading\n\x1b[2Kb: Waiting\n\x1b[2A\x1b[2Ka: Done\n\x1b[2Kb: Done\n",
		"a: Waiting\nb: Waiting\na: Done\nb: Done\n"},
	{"redraw unchanged", "x\ny\n\x1b[2Ax\ny\nz\n", "x\ny\nz\n"},
	{"one row of two changes", "x\ny\n\x1b[1A\rY\nz\n", "x\ny\nY\nz\n"},
	{"up past the top", "only\n\x1b[5Anew\n", "only\nnew\n"},
	{"up then down", "a\nb\nc\n\x1b[3AA\x1b[2Bc\n", "a\nb\nc\nA\n"},
	{"next line and previous line", "a\nb\n\x1b[2FA\x1b[1EB\n", "a\nb\nA\nB\n"},
	{"erase below", "a\nb\nc\n\x1b[3A\x1b[Jnew\n", "a\nb\nc\nnew\n"},
	{"reverse index", "a\nb\n\x1bM\x1bMz\n", "a\nb\nz\n"},
	{"up from a pending line", "a\nbc\x1b[1AX\n", "a\nX\nbc"},
	{"held rows leave at the program's height", "p1\n\x1b[1Ap2\nl1\nl2\nl3\n", "p1\np2\nl1\nl2\nl3\n"},
}

func TestString(t *testing.T) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := String(tc.in); got != tc.want {
				t.Errorf("String(%q)\n got %q\nwant %q", tc.in, got, tc.want)
			}
		})
	}
}

// TestSplitEverywhere is the test that matters: cutting the input into
// chunks anywhere, down to single bytes, must not change the output.
func TestSplitEverywhere(t *testing.T) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			checkSplits(t, []byte(tc.in))
		})
	}
}

// TestSplitRandom checks split invariance on generated terminal-like input.
func TestSplitRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	n := 2000
	if testing.Short() {
		n = 200
	}
	for range n {
		in := genInput(r, 1+r.IntN(40))
		want := String(string(in))
		checkClean(t, in, want)
		for range 5 {
			if got := writeChunks(in, randomCuts(r, len(in))); got != want {
				t.Fatalf("random chunks of %q\n got %q\nwant %q", in, got, want)
			}
		}
		if len(in) <= 200 {
			checkSplits(t, in)
		}
	}
}

// checkSplits compares one Write with every two-way split, every three-way
// split of short inputs, and one-byte chunks.
func checkSplits(t *testing.T, in []byte) {
	t.Helper()
	want := String(string(in))
	checkClean(t, in, want)
	for i := 0; i <= len(in); i++ {
		if got := writeChunks(in, []int{i}); got != want {
			t.Fatalf("split %q at %d\n got %q\nwant %q", in, i, got, want)
		}
		if len(in) > 40 {
			continue
		}
		for j := i; j <= len(in); j++ {
			if got := writeChunks(in, []int{i, j}); got != want {
				t.Fatalf("split %q at %d, %d\n got %q\nwant %q", in, i, j, got, want)
			}
		}
	}
	cuts := make([]int, len(in))
	for i := range cuts {
		cuts[i] = i
	}
	if got := writeChunks(in, cuts); got != want {
		t.Fatalf("%q in 1-byte chunks\n got %q\nwant %q", in, got, want)
	}
}

// writeChunks writes in to a fresh Writer cut at the given ascending
// offsets and returns the flushed output.
func writeChunks(in []byte, cuts []int) string {
	var b strings.Builder
	w := NewWriter(&b)
	prev := 0
	for _, c := range append(cuts, len(in)) {
		if n, err := w.Write(in[prev:c]); n != c-prev || err != nil {
			panic("write to strings.Builder failed")
		}
		prev = c
	}
	w.Flush()
	return b.String()
}

func randomCuts(r *rand.Rand, n int) []int {
	var cuts []int
	for i := 0; i < n; i += 1 + r.IntN(8) {
		cuts = append(cuts, i)
	}
	return cuts
}

// checkClean checks the output invariants every input must satisfy.
func checkClean(t *testing.T, in []byte, out string) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Fatalf("output of %q is not valid UTF-8: %q", in, out)
	}
	for _, r := range out {
		if r < 0x20 && r != '\n' && r != '\t' || r == 0x7f || r >= 0x80 && r < 0xa0 {
			t.Fatalf("output of %q has control %U: %q", in, r, out)
		}
	}
}

// pieces are the building blocks of generated input: text, controls,
// escape sequences whole and in halves, runes whole and in halves, and
// invalid bytes.
var pieces = []string{
	"a", "bc", "hello world", " ", "\t", "0123456789",
	"\n", "\r", "\r\n", "\r\r\n", "\b", "\x00", "\x07", "\x7f", "\x18",
	"\x1b", "\x1b[", "\x1b]", "\x1bP", "\x1b\\", "\x1b(", "\x1b(B", "\x1b7",
	"\x1b[31m", "\x1b[0m", "\x1b[1;32m", "\x1b[?25l", "\x1b[2K", "\x1b[K",
	"\x1b[1K", "\x1b[G", "\x1b[1G", "\x1b[3A", "\x1b[10;5H", "\x1b[1",
	";", "m", "?",
	"\x1b]0;title\x07", "\x1b]2;t\x1b\\", "\x1b]8;;http://x\x1b\\", "\x1b]0;",
	"é", "中", "😀", "\u009b", "\xc3", "\xe4\xb8", "\xf0\x9f", "\x98\x80",
	"\x80", "\xff", "\xed\xa0", "\xe0\x80", "\xf4\x90", "\x9b",
}

func genInput(r *rand.Rand, n int) []byte {
	var b []byte
	for range n {
		b = append(b, pieces[r.IntN(len(pieces))]...)
	}
	return b
}

// countWriter counts what it is given and keeps only the tail, so tests
// can push megabytes through without holding them.
type countWriter struct {
	n      int
	writes int
	tail   []byte
}

func (c *countWriter) Write(p []byte) (int, error) {
	c.n += len(p)
	c.writes++
	c.tail = append(c.tail, p...)
	if len(c.tail) > 64 {
		c.tail = append(c.tail[:0], c.tail[len(c.tail)-64:]...)
	}
	return len(p), nil
}

// TestLongLine pushes a 10 MB line without a newline through in uneven
// chunks and checks that it is written through as it comes, with bounded
// buffers.
func TestLongLine(t *testing.T) {
	const size = 10 << 20
	chunk := bytes.Repeat([]byte("0123456789abcdef"), 4096)
	var cw countWriter
	w := NewWriter(&cw)
	r := rand.New(rand.NewPCG(3, 4))
	for sent := 0; sent < size; {
		n := min(1+r.IntN(len(chunk)), size-sent)
		if _, err := w.Write(chunk[:n]); err != nil {
			t.Fatal(err)
		}
		sent += n
		if held := sent - cw.n; held > maxLine+maxOut {
			t.Fatalf("after %d bytes, %d held back", sent, held)
		}
	}
	if c := cap(w.line); c > 2*maxLine {
		t.Errorf("line buffer grew to %d", c)
	}
	if c := cap(w.out); c > 2*maxOut+2*maxLine {
		t.Errorf("output buffer grew to %d", c)
	}
	w.Flush()
	if cw.n != size {
		t.Errorf("wrote %d bytes, want %d", cw.n, size)
	}
}

// TestLongLineUTF8 checks that writing a long line through never splits a
// rune, so a later redraw cannot leave half a rune behind.
func TestLongLineUTF8(t *testing.T) {
	in := strings.Repeat("x中😀", maxLine/3) + "\rredraw\n"
	got := String(in)
	checkClean(t, []byte(in), got)
	if !strings.HasSuffix(got, "\nredraw\n") {
		t.Errorf("got ...%q, want the redraw on a line of its own", got[len(got)-40:])
	}
}

// TestLongLineRedraw pins down the documented behaviour of a redraw after
// a line outgrew the buffer: the written part stays, the redraw starts a
// new line, and the unwritten rest is replaced.
func TestLongLineRedraw(t *testing.T) {
	long := strings.Repeat("a", maxLine) + "tail"
	tests := []struct{ in, want string }{
		{long + "\rnew\n", strings.Repeat("a", maxLine) + "\nnew\n"},
		{long + "\r\n", long + "\n"},
		{long + "\r\x1b[2K\n", strings.Repeat("a", maxLine) + "\n"},
		{long + "\x1b[2Knew\n", strings.Repeat("a", maxLine) + "\nnew\n"},
		{long + "\b\b\b\b\bX\n", strings.Repeat("a", maxLine) + "X\n"},
		{long + "\rnew", strings.Repeat("a", maxLine) + "\nnew"},
		{long + "\n" + long + "\n", long + "\n" + long + "\n"},
		{strings.Repeat("a", maxLine) + "\rb\n", "b\n"},
	}
	for i, tc := range tests {
		got := String(tc.in)
		if got != tc.want {
			t.Errorf("%d: got %d bytes ending %q, want %d ending %q",
				i, len(got), got[max(0, len(got)-20):], len(tc.want), tc.want[max(0, len(tc.want)-20):])
		}
		r := rand.New(rand.NewPCG(uint64(i), 5))
		for range 3 {
			cuts := []int{r.IntN(len(tc.in)), len(tc.in) - 1 - r.IntN(20)}
			if cuts[0] > cuts[1] {
				cuts[0], cuts[1] = cuts[1], cuts[0]
			}
			if got := writeChunks([]byte(tc.in), cuts); got != tc.want {
				t.Errorf("%d: split at %v differs", i, cuts)
			}
		}
	}
}

// TestRunawaySequence checks that an unterminated sequence costs at most
// maxSeq bytes of output.
func TestRunawaySequence(t *testing.T) {
	text := strings.Repeat("x", 2*maxSeq) + "\n"
	for _, start := range []string{"\x1b]0;", "\x1bP", "\x1b_", "\x1b[", "\x1b("} {
		filler := strings.Repeat("1", 2*maxSeq)
		if start != "\x1b[" {
			filler = strings.Repeat(" ", 2*maxSeq) // keeps ESC ( going
		}
		in := start + filler + text
		got := String(in)
		if !strings.HasSuffix(got, text) || len(got) < len(filler)+len(text)-maxSeq {
			t.Errorf("%q + %d bytes: got %d bytes", start, len(filler), len(got))
		}
		checkSplits(t, []byte(in[len(in)-maxSeq-200:]))
	}
}

func TestFlush(t *testing.T) {
	var b strings.Builder
	w := NewWriter(&b)
	w.Write([]byte("prompt$ \x1b]0;ti"))
	if b.Len() != 0 {
		t.Errorf("partial line written before Flush: %q", b.String())
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	// The dropped OSC must not swallow the next command's output.
	w.Write([]byte("tle\x07next\n\xe4"))
	w.Flush()
	if got, want := b.String(), "prompt$ tlenext\n\uFFFD"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestReset(t *testing.T) {
	var a, b strings.Builder
	w := NewWriter(&a)
	w.Write([]byte("held\r\x1b[3"))
	w.Reset(&b)
	w.Write([]byte("1mnew\n"))
	w.Flush()
	if a.String() != "" || b.String() != "1mnew\n" {
		t.Errorf("a = %q, b = %q", a.String(), b.String())
	}
}

func TestNilDst(t *testing.T) {
	w := NewWriter(nil)
	if _, err := w.Write([]byte("x\n")); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
}

type failWriter struct{ n int }

var errBroken = errors.New("broken")

func (f *failWriter) Write(p []byte) (int, error) {
	if f.n == 0 {
		return 0, errBroken
	}
	f.n--
	return len(p), nil
}

type shortWriter struct{}

func (shortWriter) Write(p []byte) (int, error) { return len(p) / 2, nil }

func TestWriteError(t *testing.T) {
	w := NewWriter(&failWriter{n: 1})
	if _, err := w.Write([]byte("one\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("two\n")); !errors.Is(err, errBroken) {
		t.Fatalf("Write: %v, want %v", err, errBroken)
	}
	if n, err := w.Write([]byte("three\n")); n != 0 || !errors.Is(err, errBroken) {
		t.Errorf("Write after failure: %d, %v", n, err)
	}
	if err := w.Flush(); !errors.Is(err, errBroken) {
		t.Errorf("Flush after failure: %v", err)
	}
	w.Reset(io.Discard)
	if _, err := w.Write([]byte("four\n")); err != nil {
		t.Errorf("Write after Reset: %v", err)
	}

	w = NewWriter(shortWriter{})
	if _, err := w.Write([]byte("x\n")); !errors.Is(err, io.ErrShortWrite) {
		t.Errorf("short write: %v", err)
	}

	// A failure in the middle of a big Write stops it.
	w = NewWriter(&failWriter{})
	big := bytes.Repeat([]byte("\x1b[1mline\n"), 3*maxOut)
	if n, err := w.Write(big); !errors.Is(err, errBroken) || n >= len(big) {
		t.Errorf("big Write: %d, %v", n, err)
	}
}

func TestWriteAllocs(t *testing.T) {
	w := NewWriter(io.Discard)
	in := []byte("\x1b[32mok\x1b[0m line\r\nprogress 1\rprogress 2\n中文\n")
	w.Write(in) // grow the buffers
	if n := testing.AllocsPerRun(100, func() { w.Write(in) }); n != 0 {
		t.Errorf("%v allocations per Write", n)
	}
}

func TestScanRune(t *testing.T) {
	// scanRune must agree with the standard library on what is valid.
	for _, s := range []string{"é", "中", "😀", "\U0010FFFF", "\u0080", "\uFFFD"} {
		if n, st := scanRune([]byte(s)); st != runeOK || n != len(s) {
			t.Errorf("scanRune(%q) = %d, %d", s, n, st)
		}
	}
	var b [4]byte
	r := rand.New(rand.NewPCG(7, 8))
	for range 200000 {
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		b[0] |= 0x80
		n, st := scanRune(b[:])
		_, size := utf8.DecodeRune(b[:])
		valid := utf8.FullRune(b[:]) && size > 1
		if (st == runeOK) != valid || st == runeOK && n != size || st == runeShort {
			t.Fatalf("scanRune(% x) = %d, %d; DecodeRune size %d", b, n, st, size)
		}
	}
}

func TestPlain8(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	edge := []byte{0x00, 0x09, 0x0a, 0x1f, 0x20, 0x21, 0x7e, 0x7f, 0x80, 0x9b, 0xa0, 0xff}
	var b [8]byte
	for range 500000 {
		for i := range b {
			if r.IntN(2) == 0 {
				b[i] = edge[r.IntN(len(edge))]
			} else {
				b[i] = byte(0x20 + r.IntN(0x5f))
			}
		}
		want := true
		for _, c := range b {
			want = want && c >= 0x20 && c < 0x7f
		}
		if got := plain8(b[:]); got != want {
			t.Fatalf("plain8(% x) = %v", b, got)
		}
	}
}

// TestStatusLineElsewhere: apt's progress bar is drawn at the bottom row
// between a cursor save and restore; it is not part of the line output.
func TestStatusLineElsewhere(t *testing.T) {
	for in, want := range map[string]string{
		"\n\x1b7\x1b[0;49r\x1b8\x1b[1ASetting up a ...\n\x1b7\x1b[50;0f\x1b[42m\x1b[30mProgress: [ 10%]\x1b[49m\x1b[39m [#   ]\x1b8Setting up b ...\n\x1b7\x1b[0;50r\x1b[50;0f\x1b[J\x1b8done\n": "\nSetting up a ...\nSetting up b ...\ndone\n",
		"half\x1b[s\x1b[10;1Hstatus\x1b[u line\n": "half line\n",
		"a\x1b7b\x1b8c\n":                         "abc\n", // no move away: kept as before
		"x\x1b[5;1Hy\n":                           "xy\n",  // no save: as before
		"p\x1b7\x1b[1;1Hq\nr\x1b8s\n":             "q\nps\n",
	} {
		if got := String(in); got != want {
			t.Errorf("String(%q) = %q, want %q", in, got, want)
		}
	}
}
