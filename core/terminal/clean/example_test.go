package clean_test

import (
	"fmt"
	"os"

	"github.com/harnessd/harnessd/core/terminal/clean"
)

func ExampleString() {
	raw := "\x1b]0;build\x07\x1b[1;32mok\x1b[0m\r\n" +
		"\r 10%|#         |\r100%|##########|\n"
	fmt.Printf("%q\n", clean.String(raw))
	// Output:
	// "ok\n100%|##########|\n"
}

func ExampleWriter() {
	w := clean.NewWriter(os.Stdout)
	// A PTY hands over output in arbitrary pieces, here splitting an
	// escape sequence, a CRLF and a two-byte rune.
	for _, chunk := range []string{"caf\xc3", "\xa9 \x1b[3", "1mred\x1b[0m\r", "\n$ "} {
		w.Write([]byte(chunk))
	}
	w.Flush() // end of the command: write the held-back prompt
	// Output:
	// café red
	// $
}
