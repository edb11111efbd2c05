package trim_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"strings"

	"github.com/harnessd/harnessd/core/trim"
)

// The daemon's use: trim a stream for the model while the full output is
// spilled to a store, then page back what was cut.
func Example() {
	dir, err := os.MkdirTemp("", "outputs")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	store, err := trim.NewFileStore(dir)
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()

	w, err := store.Create(ctx, "session-1")
	if err != nil {
		log.Fatal(err)
	}
	cfg := trim.Config{Head: 2, Tail: 2, MaxKeep: 1, Keywords: []string{"Error"}}
	tr := trim.New(cfg, w)
	for i := 1; i <= 10; i++ {
		if i == 5 {
			fmt.Fprintln(tr, "Error: disk full")
			continue
		}
		fmt.Fprintf(tr, "step %d\n", i)
	}
	res := tr.Result(w.ID())
	if err := w.Close(); err != nil {
		log.Fatal(err)
	}
	fmt.Print(strings.ReplaceAll(res.Text, w.ID(), "ID"))
	fmt.Println(res.LinesTotal, res.LinesOmitted, res.KeptKeyword, res.Trimmed)

	lines, err := store.ReadLines(ctx, w.ID(), 3, 4)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%q %d-%d of %d\n", lines.Text, lines.From, lines.To, lines.Total)
	// Output:
	// step 1
	// step 2
	// [... 5 of 10 lines (35 bytes) omitted: lines 3-8 except 1 keyword line, kept below as "line N: text"; the last 2 lines follow it. Full output: output ID ...]
	// line 5: Error: disk full
	// step 9
	// step 10
	// 10 5 1 true
	// "step 3\nstep 4\n" 3-4 of 10
}
