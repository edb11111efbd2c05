package clean

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzWriter checks, for any input split at any point, that the Writer
// never panics, that its output is valid UTF-8 with no ESC, no \r and no
// other controls but \n and \t, and that the split does not change it.
func FuzzWriter(f *testing.F) {
	for _, tc := range cases {
		f.Add([]byte(tc.in), uint16(len(tc.in)/2))
	}
	for _, p := range pieces {
		f.Add([]byte("x"+p+"y\n"), uint16(1))
	}
	f.Fuzz(func(t *testing.T, in []byte, at uint16) {
		cut := int(at) % (len(in) + 1)
		whole := String(string(in))
		if !utf8.ValidString(whole) {
			t.Fatalf("output is not valid UTF-8: %q", whole)
		}
		for _, r := range whole {
			if r < 0x20 && r != '\n' && r != '\t' || r == 0x7f || r >= 0x80 && r < 0xa0 {
				t.Fatalf("output has control %U: %q", r, whole)
			}
		}
		// A row redrawn after a move up is written again once it
		// changed: each line break of the input ends at most two output
		// lines, and a window left at the end adds its rows.
		if strings.Count(whole, "\n") > 2*strings.Count(string(in), "\n")+len(in)/maxLine+maxWindowRows {
			t.Fatalf("output has more lines than input: %q", whole)
		}
		if split := writeChunks(in, []int{cut}); split != whole {
			t.Fatalf("split at %d\n got %q\nwant %q", cut, split, whole)
		}
		// A second, uneven split: every 7th byte after the cut.
		var cuts []int
		for i := cut; i < len(in); i += 7 {
			cuts = append(cuts, i)
		}
		if split := writeChunks(in, cuts); split != whole {
			t.Fatalf("split at %v\n got %q\nwant %q", cuts, split, whole)
		}
	})
}
