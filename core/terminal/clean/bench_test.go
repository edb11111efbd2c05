package clean

import (
	"fmt"
	"io"
	"strings"
	"testing"
)

// benchInput builds about size bytes by repeating lines.
func benchInput(size int, line func(i int) string) []byte {
	var b strings.Builder
	for i := 0; b.Len() < size; i++ {
		b.WriteString(line(i))
	}
	return []byte(b.String())
}

// benchWrite feeds in to a Writer in 64 KiB chunks, as the PTY reader does
// under load.
func benchWrite(b *testing.B, in []byte) {
	const chunk = 64 << 10
	w := NewWriter(io.Discard)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		for i := 0; i < len(in); i += chunk {
			w.Write(in[i:min(i+chunk, len(in))])
		}
		w.Flush()
	}
}

// BenchmarkWriterPlain is the common case: plain ASCII lines, such as a
// build log or cat of a source file.
func BenchmarkWriterPlain(b *testing.B) {
	benchWrite(b, benchInput(4<<20, func(i int) string {
		return fmt.Sprintf("%06d ok   github.com/harnessd/harnessd/core/pkg%d\t0.%03ds\n", i, i%97, i%1000)
	}))
}

// BenchmarkWriterUTF8 is plain lines with some non-ASCII text.
func BenchmarkWriterUTF8(b *testing.B) {
	benchWrite(b, benchInput(4<<20, func(i int) string {
		return fmt.Sprintf("%06d résumé naïve — 中文字符 ✓ line %d\n", i, i%97)
	}))
}

// BenchmarkWriterANSI is colourful output: coloured compiler and test
// output, ls --color, and a progress bar redrawn with \r.
func BenchmarkWriterANSI(b *testing.B) {
	benchWrite(b, benchInput(4<<20, func(i int) string {
		switch i % 4 {
		case 0:
			return fmt.Sprintf("\x1b[1m./main.go:%d:5:\x1b[0m \x1b[1;31merror:\x1b[0m undefined: \x1b[1mfoo%d\x1b[0m\r\n", i, i)
		case 1:
			return "\x1b[0m\x1b[01;34mcore\x1b[0m  \x1b[01;32mrun.sh\x1b[0m  go.mod  \x1b[01;36mlink\x1b[0m\n"
		case 2:
			return fmt.Sprintf("\x1b]0;user@host: ~/src\x07\x1b[?2004h\x1b[32m--- PASS\x1b[0m: TestX%d (0.00s)\n", i)
		default:
			var s strings.Builder
			for p := 0; p <= 100; p += 10 {
				fmt.Fprintf(&s, "\r\x1b[2K%3d%%|%-10s| %d/100", p, strings.Repeat("█", p/10), p)
			}
			s.WriteString("\n")
			return s.String()
		}
	}))
}

// BenchmarkWriterSmallChunks is plain lines arriving a few bytes at a
// time, as from an interactive program.
func BenchmarkWriterSmallChunks(b *testing.B) {
	in := benchInput(1<<20, func(i int) string { return fmt.Sprintf("line %d of the output\n", i) })
	w := NewWriter(io.Discard)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		for i := 0; i < len(in); i += 16 {
			w.Write(in[i:min(i+16, len(in))])
		}
		w.Flush()
	}
}
