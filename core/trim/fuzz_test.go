package trim

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzTrimmer feeds random terminal bytes in random chunks under a random
// small Config. The Result must not depend on the chunking, must stay
// within the budget, be valid UTF-8, and, where the input cannot be
// mistaken for the trimmer's own markers, read back exactly (verify).
func FuzzTrimmer(f *testing.F) {
	f.Add([]byte("a\nb\nError c\nd\ne\n"), []byte{1, 2, 3}, uint8(1), uint8(1), uint8(1), uint8(4), uint16(0), "Error")
	f.Add(middleOf("Traceback (most recent call last):", `  File "x.py", line 1`, "ValueError: x"), []byte{5, 0, 200}, uint8(3), uint8(3), uint8(9), uint8(0), uint16(0), "")
	f.Add(middleOf("panic: boom", "", "goroutine 1 [running]:", "main.f()", "\t/x.go:1", ""), []byte{17}, uint8(40), uint8(40), uint8(200), uint8(0), uint16(600), "")
	f.Add(middleOf("--- FAIL: TestX (0.00s)", "    x_test.go:3: got 1, want 2", "not ok 1 - a", "  ---", "  ..."), []byte{255, 1}, uint8(2), uint8(5), uint8(3), uint8(30), uint16(900), "fail|ok")
	f.Add([]byte(strings.Repeat("warn 1\nwarn 2\n", 900)+"\xff\xfe\n\xe6\x97\xa5\xe6"), []byte{3}, uint8(0), uint8(0), uint8(2), uint8(2), uint16(500), "\xe6|warn")
	f.Fuzz(fuzzBody)
}

func fuzzBody(t *testing.T, data, cuts []byte, head, tail, keep, lineCap uint8, maxChars uint16, kw string) {
	{
		cfg := Config{
			MaxChars: int(maxChars),
			Head:     int(head),
			Tail:     int(tail),
			MaxKeep:  int(keep),
			LineCap:  int(lineCap),
			Keywords: DefaultKeywords(),
		}
		if kw != "" {
			cfg.Keywords = strings.Split(kw, "|")
		}
		// At most 64 cuts: a long run of zero-size writes would only make
		// an input slow to feed.
		sizes := make([]int, 0, 65)
		for _, c := range cuts[:min(len(cuts), 64)] {
			sizes = append(sizes, int(c))
		}
		sizes = append(sizes, 1) // progress when every cut is 0
		one := feed(t, cfg, data, nil, testID)
		for _, r := range []Result{
			feed(t, cfg, data, sizes, testID),
			feedBatch(t, cfg, data, sizes, testID, 1+int(lineCap)%200),
		} {
			if r != one {
				t.Fatalf("result depends on chunking\none: %+v\ngot: %+v", one, r)
			}
		}
		if !utf8.ValidString(one.Text) {
			t.Fatal("Text is not valid UTF-8")
		}
		if n := utf8.RuneCountInString(one.Text); one.Trimmed && n > New(cfg, nil).maxChars {
			t.Fatalf("%d characters over a budget of %d", n, New(cfg, nil).maxChars)
		}
		if one.Trimmed != (one.LinesOmitted > 0) || one.LinesOmitted > one.LinesTotal || one.BytesOmitted > one.BytesTotal || one.BytesOmitted < 0 {
			t.Fatalf("counts: %+v", one)
		}
		if !bytes.Contains(data, []byte("line ")) && !bytes.Contains(data, []byte("…")) && !bytes.Contains(data, []byte("[... ")) {
			verify(t, data, one)
		}
	}
}
