package trim_test

import (
	"fmt"
	"strings"

	"github.com/harnessd/harnessd/core/trim"
)

// The daemon's use: trim a stream for the model while the full output is
// spilled whole to the output store (store.Outputs in the daemon; a buffer
// here), whose ID the placeholder names so the model can page back what
// was cut.
func Example() {
	var full strings.Builder
	tr := trim.New(trim.Config{MaxChars: 700, Head: 2, Tail: 2, MaxKeep: 10, Keywords: trim.DefaultKeywords()}, &full)
	for i := 1; i <= 2000; i++ {
		switch i {
		case 1000:
			fmt.Fprintln(tr, "--- FAIL: TestDisk (0.01s)")
			fmt.Fprintln(tr, "    disk_test.go:42: free space 0 bytes, want > 0")
		default:
			fmt.Fprintf(tr, "step %d ok\n", i)
		}
	}
	res := tr.Result("o1")
	fmt.Print(res.Text)
	fmt.Println(res.LinesTotal, res.LinesOmitted, res.KeptKeyword, res.Trimmed)
	fmt.Println(strings.Count(full.String(), "\n"), "lines spilled")
	// Output:
	// step 1 ok
	// step 2 ok
	// [... 1,995 of 2,001 lines (24,834 bytes) omitted: lines 3-999, 1002-1999; 2 middle lines follow as "line N: text". Read them: harnessd output o1 --lines 3-1999 ...]
	// line 1000: --- FAIL: TestDisk (0.01s)
	// line 1001:     disk_test.go:42: free space 0 bytes, want > 0
	// step 1999 ok
	// step 2000 ok
	// 2001 1995 2 true
	// 2001 lines spilled
}
