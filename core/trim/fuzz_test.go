package trim

import (
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
