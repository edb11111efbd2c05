package trim

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
	"unicode/utf8"
)

// reference computes the Result a Trimmer must give for data, the naive
// way: split everything into lines, then pick. It shares only Config
// clamping and rendering with the Trimmer, so it checks all the streaming,
// ring and bulk-search logic.
func reference(cfg Config, data []byte, outputID string) Result {
	n := New(cfg, nil) // only for the clamped config values
	var kws [][]byte
	for _, k := range cfg.Keywords {
		if k != "" && !bytes.Contains([]byte(k), []byte{'\n'}) {
			kws = append(kws, []byte(k))
		}
	}
	matching := len(kws) > 0 && n.maxKeep > 0

	var all []line
	rest := data
	for len(rest) > 0 {
		i := bytes.IndexByte(rest, '\n')
		var text []byte
		nl := i >= 0
		if nl {
			text, rest = rest[:i], rest[i+1:]
		} else {
			text, rest = rest, nil
		}
		all = append(all, line{text: text, no: len(all) + 1, size: int64(len(text)), nl: nl})
	}
	capped := func(l line) line {
		l.text = l.text[:min(len(l.text), n.lineCap)]
		return l
	}
	h := min(n.head, len(all))
	tl := min(n.tail, len(all)-h)
	v := view{total: len(all), matching: matching}
	for _, l := range all[:h] {
		v.head = append(v.head, capped(l))
	}
	for _, l := range all[len(all)-tl:] {
		v.tail = append(v.tail, capped(l))
	}
	for _, l := range all[h : len(all)-tl] {
		match := false
		for _, k := range kws {
			if bytes.Contains(l.text, k) {
				match = true
			}
		}
		if matching && match {
			v.matched++
			if len(v.kept) < n.maxKeep {
				v.kept = append(v.kept, capped(l))
				continue
			}
		}
		v.omitted++
		v.bytesOmit += l.bytes()
	}
	text, cut := v.render(outputID, false)
	return Result{
		Text:         text,
		LinesTotal:   len(all),
		LinesOmitted: v.omitted,
		KeptKeyword:  len(v.kept),
		BytesTotal:   int64(len(data)),
		BytesOmitted: v.bytesOmit,
		OutputID:     outputID,
		Trimmed:      v.omitted > 0,
		LinesCut:     cut,
	}
}

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

// checkResult compares got with the reference and checks the invariants.
func checkResult(t testing.TB, cfg Config, data []byte, got Result, how string) {
	t.Helper()
	want := reference(cfg, data, got.OutputID)
	if got != want {
		t.Fatalf("%s: result differs from reference\ncfg: %+v\ninput: %q\ngot:  %+v\nwant: %+v", how, cfg, clip(data), got, want)
	}
	if !utf8.ValidString(got.Text) {
		t.Fatalf("%s: Text is not valid UTF-8: %q", how, got.Text)
	}
	n := New(cfg, nil)
	shownHead := min(n.head, got.LinesTotal)
	shownTail := min(n.tail, got.LinesTotal-shownHead)
	if sum := shownHead + shownTail + got.KeptKeyword + got.LinesOmitted; sum != got.LinesTotal {
		t.Fatalf("%s: counts do not add up: %d+%d+%d+%d != %d", how, shownHead, shownTail, got.KeptKeyword, got.LinesOmitted, got.LinesTotal)
	}
	if got.BytesOmitted > got.BytesTotal || got.BytesOmitted < 0 {
		t.Fatalf("%s: BytesOmitted %d of %d", how, got.BytesOmitted, got.BytesTotal)
	}
	if got.Trimmed != (got.LinesOmitted > 0) {
		t.Fatalf("%s: Trimmed %v with %d omitted", how, got.Trimmed, got.LinesOmitted)
	}
}

func clip(b []byte) []byte {
	if len(b) > 300 {
		return append(b[:300:300], "..."...)
	}
	return b
}

// randomOutput makes text that exercises the trimmer: short and long lines,
// keywords (also split by chunking), multi-byte runes, empty lines and
// sometimes no final '\n'.
func randomOutput(r *rand.Rand, lines int) []byte {
	words := []string{"log", "line", "ok", "Error", "Err", "or", "FAIL", "fatal", "panic:", "pan", "ic:",
		"é", "日本", "🙂", "Traceback", "x", "", "Exception"}
	var b []byte
	for i := range lines {
		switch r.IntN(20) {
		case 0:
			b = append(b, bytes.Repeat([]byte("日本語"), r.IntN(40))...)
		case 1:
			// empty line
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

func TestMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	cfgs := []Config{
		DefaultConfig(),
		{Head: 2, Tail: 3, MaxKeep: 2, Keywords: []string{"Error", "FAIL", "日本", "ic:"}, LineCap: 10},
		{Head: 0, Tail: 0, MaxKeep: 5, Keywords: []string{"or"}, LineCap: 7},
		{Head: 1, Tail: 0, MaxKeep: 0, Keywords: []string{"Error"}, LineCap: 3},
		{Head: 0, Tail: 1, MaxKeep: 100, Keywords: []string{"panic:", "", "a\nb"}, LineCap: 1},
		{Head: 5, Tail: 5, MaxKeep: 3},
	}
	for it := range 400 {
		cfg := cfgs[it%len(cfgs)]
		data := randomOutput(r, r.IntN(120))
		one := feed(t, cfg, data, nil, "")
		checkResult(t, cfg, data, one, "one write")
		sizes := make([]int, 1+r.IntN(5))
		for i := range sizes {
			sizes[i] = r.IntN(40)
		}
		sizes[0]++ // at least one non-empty chunk size, so feeding ends
		checkResult(t, cfg, data, feed(t, cfg, data, sizes, ""), fmt.Sprintf("chunks %v", sizes))
		checkResult(t, cfg, data, feed(t, cfg, data, []int{1}, "0123456789abcdef0123456789abcdef"), "bytewise")
		batch := 1 + r.IntN(200)
		checkResult(t, cfg, data, feedBatch(t, cfg, data, sizes, "", batch), fmt.Sprintf("chunks %v batch %d", sizes, batch))
	}
}

// TestMatchesReferenceLarge crosses the real batch size and the sampling
// interval with big writes and small ones.
func TestMatchesReferenceLarge(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	cfgs := []Config{
		DefaultConfig(),
		{Head: 3, Tail: 7, MaxKeep: 50, Keywords: []string{"Error", "日本", "ic:", "x 1"}, LineCap: 30},
		{Head: 0, Tail: 100, MaxKeep: 1000, Keywords: []string{"or", "FAIL"}, LineCap: 5},
	}
	n := 6
	if testing.Short() {
		n = 2
	}
	for it := range n {
		cfg := cfgs[it%len(cfgs)]
		data := randomOutput(r, 20000+r.IntN(40000))
		sizes := []int{1 + r.IntN(200<<10), 1 + r.IntN(4096), 1 + r.IntN(100)}
		checkResult(t, cfg, data, feed(t, cfg, data, nil, testID), "one write")
		checkResult(t, cfg, data, feed(t, cfg, data, sizes, testID), fmt.Sprintf("chunks %v", sizes))
	}
}
