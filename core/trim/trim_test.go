package trim

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

const testID = "0123456789abcdef0123456789abcdef"

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
	if c.Head != 40 || c.Tail != 40 || c.MaxKeep != 20 || c.LineCap != 2000 {
		t.Fatalf("DefaultConfig() = %+v", c)
	}
	want := []string{"Error", "Traceback", "Exception", "panic:", "FAIL", "fatal"}
	if fmt.Sprint(c.Keywords) != fmt.Sprint(want) {
		t.Fatalf("keywords %q, want %q", c.Keywords, want)
	}
	c.Keywords[0] = "changed"
	if DefaultConfig().Keywords[0] != "Error" {
		t.Fatal("DefaultConfig shares its Keywords slice")
	}
}

func Test100k(t *testing.T) {
	data := output100k()
	for _, chunk := range []int{0, 1 << 20, 32 << 10, 4096, 7, 1} {
		var sizes []int // one Write
		if chunk > 0 {
			sizes = []int{chunk}
		}
		r := feed(t, DefaultConfig(), data, sizes, testID)
		checkResult(t, DefaultConfig(), data, r, fmt.Sprintf("chunk %d", chunk))
		if r.LinesTotal != 100001 || r.LinesOmitted != 99920 || r.KeptKeyword != 1 || !r.Trimmed {
			t.Fatalf("chunk %d: %+v", chunk, r)
		}
		if r.BytesTotal != int64(len(data)) {
			t.Fatalf("BytesTotal %d, want %d", r.BytesTotal, len(data))
		}
		// Omitted: lines 41-99961 except line 50001, i.e. "log line 41" ..
		// "log line 99960".
		var omitted int64
		for i := 41; i <= 99960; i++ {
			omitted += int64(len(fmt.Sprintf("log line %d\n", i)))
		}
		if r.BytesOmitted != omitted {
			t.Fatalf("BytesOmitted %d, want %d", r.BytesOmitted, omitted)
		}
		ph := `[... 99,920 of 100,001 lines (1,487,823 bytes) omitted: lines 41-99961 except 1 keyword line, kept below as "line N: text"; the last 40 lines follow it. Full output: output ` + testID + ` ...]`
		want := "log line 40\n" + ph + "\nline 50001: Traceback (most recent call last):\nlog line 99961\n"
		if !strings.Contains(r.Text, want) {
			t.Fatalf("text lacks %q:\n%s", want, r.Text)
		}
		if !strings.HasPrefix(r.Text, "log line 1\nlog line 2\n") || !strings.HasSuffix(r.Text, "log line 100000\n") {
			t.Fatalf("head or tail wrong:\n%s", r.Text)
		}
		if n := strings.Count(r.Text, "\n"); n != 40+1+1+40 {
			t.Fatalf("text has %d lines, want 82", n)
		}
	}
}

func TestUntouched(t *testing.T) {
	cfg := Config{Head: 2, Tail: 2, MaxKeep: 1, Keywords: []string{"Error"}, LineCap: 100}
	for _, in := range []string{
		"", "\n", "\n\n", "a", "a\n", "a\nb", "a\nb\nc\nd", "a\nb\nc\nd\n",
		"a\nb\nError x\nc\nd", // the only middle line is kept: nothing omitted
		"日本語\n🙂",
	} {
		r := feed(t, cfg, []byte(in), []int{1}, testID)
		if r.Text != in || r.Trimmed || r.LinesOmitted != 0 {
			t.Errorf("%q: got %+v", in, r)
		}
		checkResult(t, cfg, []byte(in), r, "untouched")
	}
}

func TestKeywordNotDuplicated(t *testing.T) {
	cfg := Config{Head: 2, Tail: 2, MaxKeep: 5, Keywords: []string{"Error"}, LineCap: 100}
	in := "Error head\nb\nc\nd\ne\nError tail\n"
	r := feed(t, cfg, []byte(in), nil, "")
	if strings.Count(r.Text, "Error") != 2 || r.KeptKeyword != 0 || r.LinesOmitted != 2 {
		t.Fatalf("got %+v", r)
	}
	want := "Error head\nb\n[... 2 of 6 lines (4 bytes) omitted: lines 3-4, none matching a keyword. The full output was not kept ...]\ne\nError tail\n"
	if r.Text != want {
		t.Fatalf("text\n%q\nwant\n%q", r.Text, want)
	}
}

func TestMaxKeepKeepsFirst(t *testing.T) {
	cfg := Config{Head: 1, Tail: 1, MaxKeep: 2, Keywords: []string{"FAIL", "panic:"}, LineCap: 100}
	in := "start\nFAIL 1\nok\npanic: 2 FAIL\nFAIL 3\nFAIL 4\nend\n"
	r := feed(t, cfg, []byte(in), nil, testID)
	want := "start\n" +
		`[... 3 of 7 lines (17 bytes) omitted: lines 2-6 except 2 keyword lines (the first 2 of 4 matching), kept below as "line N: text"; the last 1 line follows them. Full output: output ` + testID + " ...]\n" +
		"line 2: FAIL 1\nline 4: panic: 2 FAIL\nend\n"
	if r.Text != want {
		t.Fatalf("text\n%s\nwant\n%s", r.Text, want)
	}
	checkResult(t, cfg, []byte(in), r, "maxkeep")
}

func TestKeywordSplitAcrossWrites(t *testing.T) {
	cfg := Config{Head: 0, Tail: 0, MaxKeep: 5, Keywords: []string{"Traceback"}, LineCap: 4}
	// The keyword lies past LineCap, so only the streaming test can see it.
	in := []byte("xxxxxxxxTraceback yyy\nno\n")
	for cut := range len(in) {
		tr := New(cfg, nil)
		tr.Write(in[:cut])
		tr.Write(in[cut:])
		r := tr.Result("")
		if r.KeptKeyword != 1 {
			t.Fatalf("cut at %d: %+v", cut, r)
		}
		if !strings.Contains(r.Text, "line 1: xxxx… [line cut: 4 of 21 bytes shown]\n") {
			t.Fatalf("cut at %d: %q", cut, r.Text)
		}
	}
}

func TestLineCut(t *testing.T) {
	cfg := Config{Head: 5, Tail: 5, LineCap: 5}
	// "ab" + "日" (3 bytes) straddles the cap of 5 bytes: the rune is
	// dropped whole.
	in := "abc日本\nab日本\n"
	r := feed(t, cfg, []byte(in), []int{3}, testID)
	want := "abc… [line cut: 3 of 9 bytes shown; full line: output " + testID + " line 1]\n" +
		"ab日… [line cut: 5 of 8 bytes shown; full line: output " + testID + " line 2]\n"
	if r.Text != want || r.Trimmed || r.LinesCut != 2 {
		t.Fatalf("got %+v\nwant text %q", r, want)
	}
	r = feed(t, cfg, []byte(in), nil, "")
	if !strings.HasPrefix(r.Text, "abc… [line cut: 3 of 9 bytes shown]\n") {
		t.Fatalf("without id: %q", r.Text)
	}
}

func TestInvalidUTF8(t *testing.T) {
	r := feed(t, DefaultConfig(), []byte("a\xffb\n\xe6\x97\n"), nil, "")
	if !utf8.ValidString(r.Text) || r.Text != "a\uFFFDb\n\uFFFD\n" {
		t.Fatalf("%q", r.Text)
	}
}

func TestNoOutputID(t *testing.T) {
	cfg := Config{Head: 1, Tail: 1, LineCap: 100}
	r := feed(t, cfg, []byte("a\nb\nc\n"), nil, "")
	want := "a\n[... 1 of 3 lines (2 bytes) omitted: line 2. The full output was not kept ...]\nc\n"
	if r.Text != want || r.OutputID != "" {
		t.Fatalf("got %q", r.Text)
	}
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
	tr := New(Config{Head: 1, Tail: 1}, &failWriter{after: 1})
	for _, s := range []string{"a\n", "b\n", "c\n"} {
		if n, err := tr.Write([]byte(s)); n != len(s) || err != nil {
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
	if tr.head != 0 || tr.tail != MaxLines || tr.maxKeep != 0 || tr.lineCap != DefaultLineCap {
		t.Fatalf("clamped to %d %d %d %d", tr.head, tr.tail, tr.maxKeep, tr.lineCap)
	}
	if tr := New(Config{LineCap: 1 << 30}, nil); tr.lineCap != MaxLineCap {
		t.Fatalf("LineCap %d", tr.lineCap)
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
		{"one line without newline", func() func() []byte {
			chunk := bytes.Repeat([]byte("x日"), 16<<10)
			return func() []byte { return chunk }
		}},
		{"huge middle line", func() func() []byte {
			// 100 short lines, then one endless line: the line in progress
			// is past the head, so every chunk of it is searched.
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
			alloc := after.TotalAlloc - before.TotalAlloc
			t.Logf("%d MiB in %v (%.0f MB/s): HeapInuse grew %d KiB, %d KiB allocated; %d lines, %d kept",
				written>>20, elapsed, float64(written)/elapsed.Seconds()/1e6, grow>>10, alloc>>10, r.LinesTotal, r.KeptKeyword)
			if grow > 16<<20 {
				t.Fatalf("heap grew by %d MiB", grow>>20)
			}
			if alloc > 16<<20 {
				t.Fatalf("%d MiB allocated while streaming", alloc>>20)
			}
			if r.BytesTotal != written {
				t.Fatalf("BytesTotal %d, want %d", r.BytesTotal, written)
			}
			if len(r.Text) > 200<<10 {
				t.Fatalf("text of %d bytes", len(r.Text))
			}
			runtime.KeepAlive(tr)
		})
	}
}
