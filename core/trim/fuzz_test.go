package trim

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
)

// FuzzTrimmer feeds random content in random chunks under a random small
// Config. The Result must equal the naive reference (so it cannot depend on
// the chunking), the counts must add up and Text must be valid UTF-8.
func FuzzTrimmer(f *testing.F) {
	f.Add([]byte("a\nb\nError c\nd\ne\n"), []byte{1, 2, 3}, uint8(1), uint8(1), uint8(1), uint8(4), "Error")
	f.Add([]byte("xxxxTraceback\n\nno\n日本語日本語\n"), []byte{5, 0, 2}, uint8(0), uint8(0), uint8(3), uint8(5), "Traceback|日本")
	f.Add([]byte("\xff\xfe\n\xe6\x97\xa5\xe6\n"), []byte{1}, uint8(0), uint8(1), uint8(2), uint8(2), "\xe6")
	f.Add([]byte(strings.Repeat("log line\nFAIL x\n", 40)), []byte{17, 200, 3}, uint8(3), uint8(2), uint8(2), uint8(9), "FAIL|line|")
	f.Add([]byte("panic: boom\npanic: boom"), []byte{255}, uint8(0), uint8(0), uint8(9), uint8(0), "panic:|ic: b|a\nb")
	f.Fuzz(func(t *testing.T, data, cuts []byte, head, tail, keep, lineCap uint8, kw string) {
		cfg := Config{
			Head:     int(head % 8),
			Tail:     int(tail % 8),
			MaxKeep:  int(keep % 8),
			LineCap:  int(lineCap % 24), // 0 means the default
			Keywords: strings.Split(kw, "|"),
		}
		sizes := make([]int, 0, len(cuts)+1)
		for _, c := range cuts {
			sizes = append(sizes, int(c))
		}
		sizes = append(sizes, 1) // ensures progress when every cut is 0
		checkResult(t, cfg, data, feed(t, cfg, data, nil, testID), "one write")
		checkResult(t, cfg, data, feed(t, cfg, data, sizes, testID), "chunked")
		checkResult(t, cfg, data, feed(t, cfg, data, []int{1}, ""), "bytewise")
		// A small batch makes short inputs cross batch boundaries.
		batch := 1 + int(lineCap)%64
		checkResult(t, cfg, data, feedBatch(t, cfg, data, sizes, testID, batch), "small batch")
	})
}

// FuzzFileStore writes random content in random chunks and reads it back in
// pages of random length: the bytes must come back exactly, and ranges must
// be reported consistently.
func FuzzFileStore(f *testing.F) {
	f.Add([]byte("a\nb\nc"), []byte{1, 2}, uint16(1), uint16(2))
	f.Add([]byte(""), []byte{0}, uint16(1), uint16(0))
	f.Add([]byte(strings.Repeat("x\n", 5000)), []byte{200, 7}, uint16(4000), uint16(3))
	f.Add([]byte(strings.Repeat("long line "+strings.Repeat("z", 900)+"\n", 20)), []byte{99}, uint16(3), uint16(9))
	// One store for all runs: a fresh directory per run would make each one
	// (and so minimizing) several times slower.
	st, err := NewFileStore(f.TempDir())
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data, cuts []byte, from, page uint16) {
		w, err := st.Create(context.Background(), "fuzz")
		if err != nil {
			t.Fatal(err)
		}
		rest := data
		for i := 0; len(rest) > 0; i++ {
			n := len(rest)
			if len(cuts) > 0 {
				n = min(max(int(cuts[i%len(cuts)])*37, 1), len(rest))
			}
			w.Write(rest[:n])
			rest = rest[n:]
		}
		w.Close()
		checkStore(t, st) // holds only this output
		defer removeOutput(st, w.ID())
		total := countLinesOf(data)
		got, gotTotal := readAll(t, st, w.ID())
		if !bytes.Equal(got, data) || gotTotal != total {
			t.Fatalf("read back %d bytes, %d lines; wrote %d, %d", len(got), gotTotal, len(data), total)
		}
		// One random range against the lines cut out by hand.
		lo := int(from)%(total+1) + 1
		hi := lo + int(page)%50
		l, err := st.ReadLines(context.Background(), w.ID(), lo, hi)
		if lo > total && !(total == 0 && lo == 1) {
			if !errors.Is(err, ErrRange) {
				t.Fatalf("ReadLines(%d, %d) of %d lines: %v", lo, hi, total, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("ReadLines(%d, %d): %v", lo, hi, err)
		}
		lines := bytes.SplitAfter(data, []byte{'\n'})
		if len(lines) > 0 && len(lines[len(lines)-1]) == 0 {
			lines = lines[:len(lines)-1]
		}
		want := bytes.Join(lines[min(lo-1, len(lines)):min(l.To, len(lines))], nil)
		if l.Text != string(want) || l.From != lo || l.To > min(hi, total) || l.Total != total {
			t.Fatalf("ReadLines(%d, %d) = %d-%d of %d (%d bytes); want up to %d, %d bytes", lo, hi, l.From, l.To, l.Total, len(l.Text), min(hi, total), len(want))
		}
	})
}
