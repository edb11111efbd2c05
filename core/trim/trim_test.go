package trim

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

const testID = "0123456789abcdef0123456789abcdef"

// feed writes data to a new Trimmer in chunks whose sizes come from sizes
// (cycled; a size of 0 is an empty Write) and returns the Result.
func feed(t testing.TB, cfg Config, data []byte, sizes []int, outputID string) Result {
	t.Helper()
	return feedBatch(t, cfg, data, sizes, outputID, 0)
}

// feedBatch is feed with the Trimmer's batch size set to batch, if > 0, so
// that small inputs cross batch boundaries too.
func feedBatch(t testing.TB, cfg Config, data []byte, sizes []int, outputID string, batch int) Result {
	t.Helper()
	var spill bytes.Buffer
	tr := New(cfg, &spill)
	if batch > 0 {
		tr.batch = batch
	}
	rest := data
	for i := 0; len(rest) > 0; i++ {
		n := len(rest)
		if len(sizes) > 0 {
			n = min(sizes[i%len(sizes)], len(rest))
		}
		if w, err := tr.Write(rest[:n]); w != n || err != nil {
			t.Fatalf("Write(%d bytes) = %d, %v", n, w, err)
		}
		rest = rest[n:]
	}
	r := tr.Result(outputID)
	if !bytes.Equal(spill.Bytes(), data) {
		t.Fatalf("spill differs from input (%d vs %d bytes)", spill.Len(), len(data))
	}
	return r
}

// splitLines splits an output as the trimmer counts its lines.
func splitLines(data []byte) [][]byte {
	var out [][]byte
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			return append(out, data)
		}
		out = append(out, data[:i])
		data = data[i+1:]
	}
	return out
}

var (
	placeholderRe = regexp.MustCompile(`^\[\.\.\. ([0-9,]+) of ([0-9,]+) lines? \(([0-9,]+) bytes?\) omitted`)
	similarRe     = regexp.MustCompile(`^… ([0-9,]+) similar lines? \(([0-9]+)(?:-([0-9]+))?\) omitted$`)
	likeRe        = regexp.MustCompile(`^… [0-9,]+ more like it omitted, lines [0-9]+ to [0-9]+$`)
	numberedRe    = regexp.MustCompile(`^line ([0-9]+): `)
)

func num(s string) int {
	n, err := strconv.Atoi(strings.ReplaceAll(s, ",", ""))
	if err != nil {
		panic(err)
	}
	return n
}

// verify reads r.Text back, independently of the trimmer: every line shown
// must be the input's line of that number (head lines from 1, "line N:"
// lines, tail lines counted back from the last), every "similar lines"
// marker must stand for exactly the lines it names, and the lines and bytes
// not shown must be what the Result and the placeholder say. Inputs must
// not themselves contain lines that look like the trimmer's markers.
func verify(t testing.TB, data []byte, r Result) {
	t.Helper()
	in := splitLines(data)
	if r.LinesTotal != len(in) || r.BytesTotal != int64(len(data)) {
		t.Fatalf("totals %d lines %d bytes, want %d, %d", r.LinesTotal, r.BytesTotal, len(in), len(data))
	}
	if !utf8.ValidString(r.Text) {
		t.Fatalf("Text is not valid UTF-8")
	}
	size := func(n int) int64 { // bytes of line n, '\n' included
		if n < len(in) || bytes.HasSuffix(data, []byte{'\n'}) {
			return int64(len(in[n-1]) + 1)
		}
		return int64(len(in[n-1]))
	}
	same := func(got string, n int) {
		t.Helper()
		want := strings.ToValidUTF8(string(in[n-1]), "\uFFFD")
		if got == want {
			return
		}
		if i := strings.Index(got, "… [line cut: "); i >= 0 && strings.HasPrefix(want, got[:i]) {
			return
		}
		t.Fatalf("shown line %d is %q, input has %q", n, got, want)
	}
	if !r.Trimmed {
		if r.LinesOmitted != 0 || r.BytesOmitted != 0 {
			t.Fatalf("not trimmed but %d lines %d bytes omitted", r.LinesOmitted, r.BytesOmitted)
		}
		if r.LinesCut == 0 && utf8.Valid(data) && r.Text != string(data) {
			t.Fatalf("untrimmed text differs from the input")
		}
		return
	}
	lines := strings.Split(r.Text, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	ph := -1
	for i, l := range lines {
		if strings.HasPrefix(l, "[... ") && strings.HasSuffix(l, " ...]") {
			ph = i
			break
		}
	}
	if ph < 0 {
		t.Fatalf("trimmed text without a placeholder:\n%s", r.Text)
	}
	m := placeholderRe.FindStringSubmatch(lines[ph])
	if m == nil || num(m[1]) != r.LinesOmitted || num(m[2]) != r.LinesTotal || int64(num(m[3])) != r.BytesOmitted {
		t.Fatalf("placeholder %q does not match %+v", lines[ph], r)
	}
	shown, shownBytes := 0, int64(0)
	show := func(got string, n int) {
		t.Helper()
		if n < 1 || n > len(in) {
			t.Fatalf("line %d shown of %d", n, len(in))
		}
		same(got, n)
		shown++
		shownBytes += size(n)
	}
	// The head, from line 1.
	next := 1
	for _, l := range lines[:ph] {
		if s := similarRe.FindStringSubmatch(l); s != nil {
			a, b := num(s[2]), num(s[2])
			if s[3] != "" {
				b = num(s[3])
			}
			if a != next || num(s[1]) != b-a+1 {
				t.Fatalf("head marker %q at line %d", l, next)
			}
			next = b + 1
			continue
		}
		show(l, next)
		next++
	}
	// The middle, numbered.
	i := ph + 1
	last := next - 1
	for ; i < len(lines); i++ {
		l := lines[i]
		if likeRe.MatchString(l) {
			continue
		}
		if s := similarRe.FindStringSubmatch(l); s != nil {
			if a := num(s[2]); a != last+1 {
				t.Fatalf("middle marker %q after line %d", l, last)
			}
			if s[3] != "" {
				last = num(s[3])
			} else {
				last = num(s[2])
			}
			continue
		}
		nm := numberedRe.FindStringSubmatch(l)
		if nm == nil {
			break
		}
		n := num(nm[1])
		if n <= last {
			t.Fatalf("middle line %d after %d", n, last)
		}
		show(l[len(nm[0]):], n)
		last = n
	}
	// The tail, back from the last line.
	no := len(in)
	for j := len(lines) - 1; j >= i; j-- {
		l := lines[j]
		if s := similarRe.FindStringSubmatch(l); s != nil {
			a, b := num(s[2]), num(s[2])
			if s[3] != "" {
				b = num(s[3])
			}
			if b != no || num(s[1]) != b-a+1 {
				t.Fatalf("tail marker %q at line %d", l, no)
			}
			no = a - 1
			continue
		}
		show(l, no)
		no--
	}
	if no < last {
		t.Fatalf("tail reaches back to line %d, before line %d shown above it", no+1, last)
	}
	if shown != r.LinesTotal-r.LinesOmitted || shownBytes != r.BytesTotal-r.BytesOmitted {
		t.Fatalf("shown %d lines %d bytes; result says %d-%d lines, %d-%d bytes", shown, shownBytes,
			r.LinesTotal, r.LinesOmitted, r.BytesTotal, r.BytesOmitted)
	}
}

// output100k is the case from the design: "log line 1".."log line 100000"
// with "Traceback (most recent call last):" inserted as line 50,001.
func output100k() []byte {
	var b bytes.Buffer
	for i := 1; i <= 100000; i++ {
		if i == 50001 {
			b.WriteString("Traceback (most recent call last):\n")
		}
		fmt.Fprintf(&b, "log line %d\n", i)
	}
	return b.Bytes()
}

func TestDefaultConfig(t *testing.T) {
	c := DefaultConfig()
	if c.MaxChars != 8000 || c.Head != 40 || c.Tail != 40 || c.MaxKeep != 200 || c.LineCap != 2000 {
		t.Fatalf("DefaultConfig() = %+v", c)
	}
	c.Keywords[0] = "changed"
	if DefaultConfig().Keywords[0] != "error" {
		t.Fatal("DefaultConfig shares its Keywords slice")
	}
}

func Test100k(t *testing.T) {
	data := output100k()
	var first Result
	for _, chunk := range []int{0, 1 << 20, 32 << 10, 4096, 7} {
		var sizes []int // one Write
		if chunk > 0 {
			sizes = []int{chunk}
		}
		r := feed(t, DefaultConfig(), data, sizes, testID)
		verify(t, data, r)
		if chunk == 0 {
			first = r
		} else if r != first {
			t.Fatalf("chunk %d: result differs from one write", chunk)
		}
		if r.LinesTotal != 100001 || !r.Trimmed || r.KeptKeyword < 1 {
			t.Fatalf("chunk %d: %+v", chunk, r)
		}
		for _, want := range []string{"line 50001: Traceback (most recent call last):\n", "log line 1\n", "log line 100000\n", "harnessd output " + testID + " --lines "} {
			if !strings.Contains(r.Text, want) {
				t.Fatalf("text lacks %q:\n%s", want, r.Text)
			}
		}
		if utf8.RuneCountInString(r.Text) > DefaultMaxChars {
			t.Fatalf("%d characters", len(r.Text))
		}
	}
}

func TestUntouched(t *testing.T) {
	for _, in := range []string{
		"", "\n", "\n\n", "a", "a\n", "a\nb", "a\nb\nc\nd", "a\nb\nc\nd\n",
		"a\nb\nError x\nc\nd", "日本語\n🙂",
		strings.Repeat("same line\n", 100), // fits: not even collapsed
	} {
		r := feed(t, DefaultConfig(), []byte(in), []int{1}, testID)
		if r.Text != in || r.Trimmed || r.LinesOmitted != 0 {
			t.Errorf("%q: got %+v", in, r)
		}
	}
}

// randomOutput makes text that exercises the trimmer: short and long lines,
// keywords in any case (also split by chunking), tool shapes, indented
// context, runs of similar lines, multi-byte runes, empty lines and
// sometimes no final '\n'.
func randomOutput(r *rand.Rand, lines int) []byte {
	words := []string{"log", "line", "ok", "Error", "ERROR:", "error:", "Err", "or", "FAIL", "fatal", "panic:", "pan", "ic:",
		"é", "日本", "🙂", "Traceback", "x", "", "Exception", "not ok", "assert"}
	starts := []string{"Traceback (most recent call last):", "panic: boom", "goroutine 1 [running]:", "--- FAIL: TestX (0.00s)",
		"a.c:3:5: error: bad", "not ok 3 - thing", "  ---", "  ...", "Exception in thread \"main\" x", "E   assert 1 == 2",
		"thread 'main' panicked at src/x.rs:1:1:", "    x_test.go:12: got 1, want 2"}
	var b []byte
	for i := range lines {
		switch r.IntN(24) {
		case 0:
			b = append(b, bytes.Repeat([]byte("日本語"), r.IntN(300))...)
		case 1:
			// empty line
		case 2, 3:
			b = append(b, starts[r.IntN(len(starts))]...)
		case 4, 5:
			b = append(b, strings.Repeat(" ", 1+r.IntN(6))...)
			b = fmt.Appendf(b, "context %d", r.IntN(3))
		case 6, 7, 8:
			b = fmt.Appendf(b, "WARN pool slow %d", i)
		default:
			for range r.IntN(8) {
				b = append(b, words[r.IntN(len(words))]...)
				if r.IntN(2) == 0 {
					b = append(b, ' ')
				}
			}
			b = fmt.Appendf(b, " %d", i)
		}
		if i < lines-1 || r.IntN(2) == 0 {
			b = append(b, '\n')
		}
	}
	return b
}

// TestChunking: the Result depends only on the bytes, not on how they were
// cut into writes or batches; and it is always exact and within budget.
func TestChunking(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	cfgs := []Config{
		DefaultConfig(),
		{MaxChars: 600, Head: 3, Tail: 4, MaxKeep: 10, Keywords: []string{"error", "FAIL", "日本", "ic:"}, LineCap: 40},
		{MaxChars: 1000, Head: 0, Tail: 0, MaxKeep: 50, Keywords: []string{"or"}},
		{MaxChars: 500, Head: 1, Tail: 0, MaxKeep: 0, Keywords: []string{"Error"}, LineCap: 3},
		{MaxChars: 700, Head: 0, Tail: 5, MaxKeep: 100, Keywords: []string{"panic", "", "a\nb", "x"}, LineCap: 1},
	}
	n := 300
	if testing.Short() {
		n = 60
	}
	for it := range n {
		cfg := cfgs[it%len(cfgs)]
		data := randomOutput(r, r.IntN(400))
		one := feed(t, cfg, data, nil, testID)
		verify(t, data, one)
		if one.Trimmed && utf8.RuneCountInString(one.Text) > New(cfg, nil).maxChars {
			t.Fatalf("over budget: %d characters", utf8.RuneCountInString(one.Text))
		}
		sizes := make([]int, 1+r.IntN(5))
		for i := range sizes {
			sizes[i] = r.IntN(60)
		}
		sizes[0]++
		for _, got := range []Result{
			feed(t, cfg, data, sizes, testID),
			feed(t, cfg, data, []int{1}, testID),
			feedBatch(t, cfg, data, sizes, testID, 1+r.IntN(300)),
		} {
			if got != one {
				t.Fatalf("cfg %+v sizes %v: result differs\none: %+v\ngot: %+v", cfg, sizes, one, got)
			}
		}
	}
}

// middleOf wraps lines in enough filler that they land in the middle.
func middleOf(lines ...string) []byte {
	var b bytes.Buffer
	for i := range 300 {
		fmt.Fprintf(&b, "filler before %d with some words to take room\n", i)
	}
	for _, l := range lines {
		b.WriteString(l + "\n")
	}
	for i := range 300 {
		fmt.Fprintf(&b, "filler after %d with some words to take room\n", i)
	}
	return b.Bytes()
}

func TestBlocks(t *testing.T) {
	var frames []string
	for i := range 40 {
		frames = append(frames, fmt.Sprintf(`  File "/app/mod%d.py", line %d, in f%d`, i, i+1, i), fmt.Sprintf("    call_%d()", i))
	}
	tests := []struct {
		name       string
		lines      []string
		want, lost []string
	}{
		{"python traceback keeps its last frames", append(append([]string{"Traceback (most recent call last):"}, frames...), "ValueError: bad input"),
			[]string{"Traceback (most recent call last):", `File "/app/mod39.py", line 40, in f39`, "call_39()", "ValueError: bad input"},
			[]string{"mod0.py"}},
		{"go panic keeps the first goroutine", []string{"panic: runtime error: index out of range [3] with length 2", "",
			"goroutine 1 [running]:", "main.parse(...)", "\t/src/main.go:12 +0x1d", "main.main()", "\t/src/main.go:5 +0x25", "",
			"goroutine 2 [chan receive]:", "main.worker()", "\t/src/other.go:99 +0x10", "", "unrelated"},
			[]string{"panic: runtime error: index out of range", "goroutine 1 [running]:", "main.parse(...)", "/src/main.go:12"},
			[]string{"goroutine 2", "other.go"}},
		{"go test failure with its explanation", []string{"--- FAIL: TestParse (0.00s)", "    parse_test.go:31: got 3 fields, want 4", "        input: a,b,c", "=== RUN   TestNext"},
			[]string{"--- FAIL: TestParse", "parse_test.go:31: got 3 fields, want 4", "input: a,b,c"}, nil},
		{"compiler error with excerpt and caret", []string{"src/x.c: In function ‘main’:", "src/x.c:7:12: error: ‘totl’ undeclared", "    7 |     return totl;", "      |            ^~~~", "next thing"},
			[]string{"In function ‘main’", "src/x.c:7:12: error: ‘totl’ undeclared", "    7 |     return totl;", "      |            ^~~~"}, []string{"next thing"}},
		{"TAP not ok with YAML", []string{"not ok 7 - adds", "  ---", "  duration_ms: 0.2", "  error: |-", "    Expected values to be strictly equal:", "    1 !== 2", "  ...", "ok 8 - next"},
			[]string{"not ok 7 - adds", "Expected values to be strictly equal:", "1 !== 2"}, []string{"ok 8 - next"}},
		{"lower case is found", []string{"gcc: error: unrecognized option '-Wfoo'", "npm ERR! code ELIFECYCLE"},
			[]string{"gcc: error: unrecognized option", "npm ERR! code ELIFECYCLE"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := middleOf(tt.lines...)
			r := feed(t, DefaultConfig(), data, []int{4096}, testID)
			verify(t, data, r)
			for _, w := range tt.want {
				if !strings.Contains(r.Text, w) {
					t.Errorf("lost %q:\n%s", w, r.Text)
				}
			}
			for _, w := range tt.lost {
				if strings.Contains(r.Text, w) {
					t.Errorf("kept %q:\n%s", w, r.Text)
				}
			}
		})
	}
}

// TestRepetition: a flood of one warning in the middle costs one line and
// a count; alike failures are kept once with a count.
func TestRepetition(t *testing.T) {
	var lines []string
	for i := range 4812 {
		lines = append(lines, fmt.Sprintf("warning: connection %d failed after %dms", i, i*3))
	}
	lines = append(lines, "fatal: giving up")
	data := middleOf(lines...)
	r := feed(t, DefaultConfig(), data, nil, testID)
	verify(t, data, r)
	if !strings.Contains(r.Text, "line 301: warning: connection 0 failed after 0ms\n… 4,811 similar lines (302-5112) omitted\n") {
		t.Errorf("flood not collapsed:\n%s", r.Text)
	}
	if !strings.Contains(r.Text, "fatal: giving up") {
		t.Errorf("lost the line after the flood:\n%s", r.Text)
	}
}

func TestLineCut(t *testing.T) {
	cfg := Config{MaxChars: 500, Head: 5, Tail: 5, LineCap: 5}
	// "ab" + "日" (3 bytes) straddles the cap of 5 bytes: the rune is
	// dropped whole.
	in := "abc日本\nab日本\n"
	r := feed(t, cfg, []byte(in), []int{3}, testID)
	want := "abc… [line cut: 3 of 9 bytes shown; full line: harnessd output " + testID + " --lines 1]\n" +
		"ab日… [line cut: 5 of 8 bytes shown; full line: harnessd output " + testID + " --lines 2]\n"
	if r.Text != want || r.Trimmed || r.LinesCut != 2 {
		t.Fatalf("got %+v\nwant text %q", r, want)
	}
}

func TestInvalidUTF8(t *testing.T) {
	r := feed(t, DefaultConfig(), []byte("a\xffb\n\xe6\x97\n"), nil, "")
	if !utf8.ValidString(r.Text) || r.Text != "a\uFFFDb\n\uFFFD\n" {
		t.Fatalf("%q", r.Text)
	}
}

func TestNoOutputID(t *testing.T) {
	data := middleOf()
	r := feed(t, DefaultConfig(), data, nil, "")
	if !strings.Contains(r.Text, ". The full output was not kept ...]") || strings.Contains(r.Text, "harnessd output") {
		t.Fatalf("got %q", r.Text)
	}
	verify(t, data, r)
}

type failWriter struct{ after int }

func (w *failWriter) Write(p []byte) (int, error) {
	if w.after <= 0 {
		return 0, errors.New("disk full")
	}
	w.after--
	return len(p), nil
}

func TestSpillError(t *testing.T) {
	tr := New(DefaultConfig(), &failWriter{after: 1})
	data := middleOf()
	for _, p := range [][]byte{data[:10], data[10:100], data[100:]} {
		if n, err := tr.Write(p); n != len(p) || err != nil {
			t.Fatalf("Write = %d, %v; a spill error must not fail the stream", n, err)
		}
	}
	if tr.Err() == nil {
		t.Fatal("Err() = nil after spill failure")
	}
	r := tr.Result(testID)
	if r.OutputID != "" || !strings.Contains(r.Text, "The full output was not kept (saving it failed)") {
		t.Fatalf("got %+v", r)
	}
}

func TestWriteAfterResult(t *testing.T) {
	tr := New(DefaultConfig(), nil)
	tr.Write([]byte("a\nb"))
	r1 := tr.Result("")
	if _, err := tr.Write([]byte("c")); !errors.Is(err, ErrClosed) {
		t.Fatalf("Write after Result: %v", err)
	}
	if r2 := tr.Result(""); r1 != r2 || r1.LinesTotal != 2 {
		t.Fatalf("second Result %+v, first %+v", r2, r1)
	}
}

func TestConfigClamp(t *testing.T) {
	tr := New(Config{Head: -1, Tail: 1 << 40, MaxKeep: -5, LineCap: 0}, nil)
	if tr.head != 0 || tr.tail != MaxLines || tr.maxKeep != 0 || tr.maxChars != DefaultMaxChars || tr.lineCap != DefaultMaxChars/5 {
		t.Fatalf("clamped to %d %d %d %d %d", tr.head, tr.tail, tr.maxKeep, tr.maxChars, tr.lineCap)
	}
	if tr := New(Config{MaxChars: 1, LineCap: 1 << 30}, nil); tr.maxChars != MinMaxChars || tr.lineCap != MinMaxChars/5 {
		t.Fatalf("MaxChars %d LineCap %d", tr.maxChars, tr.lineCap)
	}
	if tr := New(Config{MaxChars: 1 << 40, LineCap: 1 << 30}, nil); tr.maxChars != MaxMaxChars || tr.lineCap != MaxMaxChars/5 {
		t.Fatalf("MaxChars %d LineCap %d", tr.maxChars, tr.lineCap)
	}
}

func TestCommas(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 7: "7", 999: "999", 1000: "1,000", 1088895: "1,088,895", 100001: "100,001", 1 << 40: "1,099,511,627,776"} {
		if got := commas(n); got != want {
			t.Errorf("commas(%d) = %q, want %q", n, got, want)
		}
	}
}

// lineBlock returns about 1 MiB of "log line N" lines with one "Error" line
// in it. Streams repeat it: generating fresh lines would cost more than
// trimming them, and repetition changes nothing about memory.
func lineBlock() []byte {
	var b []byte
	for n := 1; len(b) < 1<<20; n++ {
		if n == 30000 {
			b = append(b, "Error: something failed at step "...)
		} else {
			b = append(b, "log line "...)
		}
		b = strconv.AppendInt(b, int64(n), 10)
		b = append(b, '\n')
	}
	return b
}

// streamSize is the size of TestConstantMemory's stream: 1 GiB, unless the
// run is -short or under the race detector (which makes it far slower).
func streamSize() int64 {
	if testing.Short() || raceEnabled {
		return 64 << 20
	}
	return 1 << 30
}

func TestConstantMemory(t *testing.T) {
	size := streamSize()
	for _, tc := range []struct {
		name string
		gen  func() func() []byte
	}{
		{"lines", func() func() []byte {
			block := lineBlock()
			off := 0
			return func() []byte { // 32 KiB reads across the repeated block
				p := block[off:min(off+32<<10, len(block))]
				off = (off + len(p)) % len(block)
				return p
			}
		}},
		{"failures everywhere", func() func() []byte {
			var block []byte
			for i := 0; len(block) < 1<<20; i++ {
				block = fmt.Appendf(block, "Traceback (most recent call last):\n  File \"x%d.py\", line %d\nValueError: bad %d\n--- FAIL: Test%d (0.00s)\n    x_test.go:%d: got %d\nok %d\n", i%977, i, i, i%313, i, i, i)
			}
			return func() []byte { return block }
		}},
		{"long distinct failures", func() func() []byte {
			// Blocks of the most lines kept, each line about LineCap long
			// and none alike: the candidates' bound in bytes holds.
			var block []byte
			pad := strings.Repeat("v", 1500)
			for i := 0; len(block) < 1<<20; i++ {
				block = fmt.Appendf(block, "Traceback (most recent call last): %d %s\n", i, pad)
				for j := range 45 {
					block = fmt.Appendf(block, "  File \"m%d_%d.py\", line %d %s\n", i, j, j, pad)
				}
				block = fmt.Appendf(block, "Err%dor: e%d %s\n", i, i, pad)
			}
			return func() []byte { return block }
		}},
		{"one line without newline", func() func() []byte {
			chunk := bytes.Repeat([]byte("x日"), 16<<10)
			return func() []byte { return chunk }
		}},
		{"huge middle line", func() func() []byte {
			first := bytes.Repeat([]byte("short\n"), 100)
			chunk := bytes.Repeat([]byte("yé"), 16<<10)
			return func() []byte {
				if first != nil {
					p := first
					first = nil
					return p
				}
				return chunk
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next := tc.gen()
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			start := time.Now()
			tr := New(DefaultConfig(), io.Discard)
			var written int64
			for written < size {
				p := next()
				tr.Write(p)
				written += int64(len(p))
			}
			runtime.ReadMemStats(&after)
			elapsed := time.Since(start)
			r := tr.Result(testID)
			grow := int64(after.HeapInuse) - int64(before.HeapInuse)
			t.Logf("%d MiB in %v (%.0f MB/s): HeapInuse grew %d KiB; %d lines, %d middle lines kept",
				written>>20, elapsed, float64(written)/elapsed.Seconds()/1e6, grow>>10, r.LinesTotal, r.KeptKeyword)
			if grow > 16<<20 {
				t.Fatalf("heap grew by %d MiB", grow>>20)
			}
			if r.BytesTotal != written {
				t.Fatalf("BytesTotal %d, want %d", r.BytesTotal, written)
			}
			if utf8.RuneCountInString(r.Text) > DefaultMaxChars {
				t.Fatalf("text of %d characters", utf8.RuneCountInString(r.Text))
			}
			runtime.KeepAlive(tr)
		})
	}
}
