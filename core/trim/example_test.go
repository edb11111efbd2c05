package trim_test

import (
	"fmt"
	"strings"

	"github.com/harnessd/harnessd/core/trim"
)

// The daemon's use: trim a stream for the model while the full output is
// spilled whole to the output store (store.Outputs in the daemon; a buffer
// here), whose ID the placeholder names so the model can page back what was
// cut.
func Example() {
	var full strings.Builder
	cfg := trim.Config{Head: 2, Tail: 2, MaxKeep: 1, Keywords: []string{"Error"}}
	tr := trim.New(cfg, &full)
	for i := 1; i <= 10; i++ {
		if i == 5 {
			fmt.Fprintln(tr, "Error: disk full")
			continue
		}
		fmt.Fprintf(tr, "step %d\n", i)
	}
	res := tr.Result("o1")
	fmt.Print(res.Text)
	fmt.Println(res.LinesTotal, res.LinesOmitted, res.KeptKeyword, res.Trimmed)
	fmt.Println(strings.Count(full.String(), "\n"), "lines spilled")
	// Output:
	// step 1
	// step 2
	// [... 5 of 10 lines (35 bytes) omitted: lines 3-8 except 1 keyword line, kept below as "line N: text"; the last 2 lines follow it. Full output: output o1 ...]
	// line 5: Error: disk full
	// step 9
	// step 10
	// 10 5 1 true
	// 10 lines spilled
}
