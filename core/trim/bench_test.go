package trim

import (
	"io"
	"math/rand/v2"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"
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

// BenchmarkTrimmer measures the trimmer alone on plain 10-80 byte lines, in
// 32 KiB writes, spill discarded.
func BenchmarkTrimmer(b *testing.B) {
	data := plainLines(8 << 20)
	for _, chunk := range []int{4 << 10, 32 << 10} {
		b.Run(strconv.Itoa(chunk>>10)+"KiB", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			start := cpuTime()
			for b.Loop() {
				tr := New(DefaultConfig(), io.Discard)
				writeChunks(tr, data, chunk)
				tr.Result(testID)
			}
			reportCPU(b, start, int64(len(data)))
		})
	}
}

// BenchmarkTrimmer100k is the 100,001-line case end to end: trim it and
// render the Result.
func BenchmarkTrimmer100k(b *testing.B) {
	data := output100k()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	start := cpuTime()
	for b.Loop() {
		tr := New(DefaultConfig(), io.Discard)
		writeChunks(tr, data, 32<<10)
		if r := tr.Result(testID); r.LinesOmitted != 99920 {
			b.Fatal(r)
		}
	}
	reportCPU(b, start, int64(len(data)))
}

// BenchmarkTrimmerKeywordDense has a keyword on every tenth line, the case
// where the bulk search stops at many lines.
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
	b.SetBytes(int64(len(data)))
	start := cpuTime()
	for b.Loop() {
		tr := New(DefaultConfig(), io.Discard)
		writeChunks(tr, data, 32<<10)
		tr.Result(testID)
	}
	reportCPU(b, start, int64(len(data)))
}

// BenchmarkStream1GiB streams 1 GiB of lines (a 1 MiB block, repeated) in
// 32 KiB writes through the trimmer and reports the heap growth.
func BenchmarkStream1GiB(b *testing.B) {
	for b.Loop() {
		block := lineBlock()
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		tr := New(DefaultConfig(), io.Discard)
		var n int64
		for n < 1<<30 {
			writeChunks(tr, block, 32<<10)
			n += int64(len(block))
		}
		runtime.ReadMemStats(&after)
		tr.Result(testID)
		b.SetBytes(n)
		b.ReportMetric(float64(int64(after.HeapInuse)-int64(before.HeapInuse))/(1<<20), "heap-MiB")
	}
}
