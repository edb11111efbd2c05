package trim

import (
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/harnessd/harnessd/core/trim/internal/legacy"
)

// cpuTime returns the process's user+system CPU time. The benchmarks report
// throughput per CPU second too ("cpu-MB/s"), since wall time on a shared
// machine says more about the neighbours than about the code.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU adds the cpu-MB/s metric for a benchmark that processed
// bytesPerOp per iteration since start.
func reportCPU(b *testing.B, start time.Duration, bytesPerOp int64) {
	if d := cpuTime() - start; d > 0 {
		b.ReportMetric(float64(bytesPerOp)*float64(b.N)/d.Seconds()/1e6, "cpu-MB/s")
	}
}

// plainLines returns about size bytes of log-like lines of 10-80 bytes, with
// no keyword in them.
func plainLines(size int) []byte {
	r := rand.New(rand.NewPCG(7, 7))
	words := []string{"GET", "/api/v1/items", "200", "ok", "worker", "processed", "request", "in", "ms",
		"INFO", "DEBUG", "user=alice", "id=42", "cache", "hit", "miss", "upstream", "took"}
	var b []byte
	for len(b) < size {
		n := 10 + r.IntN(71)
		start := len(b)
		b = strconv.AppendInt(b, int64(r.IntN(1e6)), 10)
		for len(b)-start < n-1 {
			b = append(b, ' ')
			b = append(b, words[r.IntN(len(words))]...)
		}
		b = append(b[:start+n-1], '\n')
	}
	return b
}

// writeChunks writes data to w in chunks of the given size, as a PTY reader
// would.
func writeChunks(w io.Writer, data []byte, chunk int) {
	for len(data) > 0 {
		n := min(chunk, len(data))
		w.Write(data[:n])
		data = data[n:]
	}
}

// trimmers are the two trimmers measured side by side: this package's and
// the one it replaced (internal/legacy), each with its default config.
var trimmers = []struct {
	name string
	run  func(data []byte, chunk int)
}{
	{"new", func(data []byte, chunk int) {
		tr := New(DefaultConfig(), io.Discard)
		writeChunks(tr, data, chunk)
		tr.Result(testID)
	}},
	{"old", func(data []byte, chunk int) {
		tr := legacy.New(legacy.DefaultConfig(), io.Discard)
		writeChunks(tr, data, chunk)
		tr.Result(testID)
	}},
}

func benchBoth(b *testing.B, data []byte, chunk int) {
	for _, tm := range trimmers {
		b.Run(tm.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			start := cpuTime()
			for b.Loop() {
				tm.run(data, chunk)
			}
			reportCPU(b, start, int64(len(data)))
		})
	}
}

// BenchmarkTrimmer measures the trimmer alone on 8 MiB of plain 10-80 byte
// lines, in 4 KiB and 32 KiB writes, spill discarded.
func BenchmarkTrimmer(b *testing.B) {
	data := plainLines(8 << 20)
	for _, chunk := range []int{4 << 10, 32 << 10} {
		b.Run(strconv.Itoa(chunk>>10)+"KiB", func(b *testing.B) { benchBoth(b, data, chunk) })
	}
}

// BenchmarkTrimmer100k is the 100,001-line case end to end: trim it and
// render the Result.
func BenchmarkTrimmer100k(b *testing.B) {
	benchBoth(b, output100k(), 32<<10)
}

// BenchmarkTrimmerKeywordDense has a keyword on every tenth line, the case
// where the search stops at many lines.
func BenchmarkTrimmerKeywordDense(b *testing.B) {
	var data []byte
	for i := range 200000 {
		if i%10 == 0 {
			data = append(data, "Error: request failed with status 500 at "...)
		} else {
			data = append(data, "log line "...)
		}
		data = strconv.AppendInt(data, int64(i), 10)
		data = append(data, '\n')
	}
	benchBoth(b, data, 32<<10)
}

// BenchmarkCorpus trims every corpus output, 4 KiB writes (a PTY's).
func BenchmarkCorpus(b *testing.B) {
	var data []byte
	for _, f := range loadCorpus(b) {
		data = append(data, f.data...)
	}
	for _, tm := range trimmers {
		b.Run(tm.name, func(b *testing.B) {
			files := loadCorpus(b)
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			start := cpuTime()
			for b.Loop() {
				for _, f := range files {
					tm.run(f.data, 4<<10)
				}
			}
			reportCPU(b, start, int64(len(data)))
		})
	}
}

// BenchmarkStream1GiB streams 1 GiB of lines (a 1 MiB block, repeated) in
// 32 KiB writes through the trimmer and reports the heap growth.
func BenchmarkStream1GiB(b *testing.B) {
	for b.Loop() {
		block := lineBlock()
		tr := New(DefaultConfig(), io.Discard)
		var n int64
		for n < 1<<30 {
			writeChunks(tr, block, 32<<10)
			n += int64(len(block))
		}
		tr.Result(testID)
		b.SetBytes(n)
	}
}

// BenchmarkTrimmerFailureDense is all failures: tracebacks and go test
// failures back to back, so every line goes through the block machinery.
func BenchmarkTrimmerFailureDense(b *testing.B) {
	var data []byte
	for i := 0; len(data) < 4<<20; i++ {
		data = fmt.Appendf(data, "Traceback (most recent call last):\n  File \"x%d.py\", line %d\nValueError: bad %d\n--- FAIL: Test%d (0.00s)\n    x_test.go:%d: got %d\nok %d\n", i%977, i, i, i%313, i, i, i)
	}
	benchBoth(b, data, 32<<10)
}
