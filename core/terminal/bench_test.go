package terminal

import (
	"bytes"
	"context"
	"io"
	"os/exec"
	"sort"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/harnessd/harnessd/core/event"
)

// BenchmarkRoundTrip is one `true` through a warm terminal: type, eval,
// prompt, parse. Reported beside BenchmarkBashC, a fresh `bash -c` per
// command, in the same run.
func BenchmarkRoundTrip(b *testing.B) {
	term, err := New(context.Background(), Options{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer term.Close()
	ctx := context.Background()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		res, err := term.Run(ctx, event.CmdRun{Command: "true"}, io.Discard)
		if err != nil || res.ExitCode != 0 {
			b.Fatalf("%v %+v", err, res)
		}
		lat = append(lat, time.Since(t0))
	}
	reportPercentiles(b, lat)
}

// BenchmarkBashC is the baseline without a persistent shell: one process
// per command, as a `bash -c` harness does.
func BenchmarkBashC(b *testing.B) {
	lat := make([]time.Duration, 0, b.N)
	for range b.N {
		t0 := time.Now()
		if err := exec.Command("bash", "-c", "true").Run(); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	reportPercentiles(b, lat)
}

func reportPercentiles(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkDisplayLines is the display's cost on plain line output (the
// stream a long-running command prints): 60-byte lines in reads of 4 KiB,
// the PTY master's usual read size.
func BenchmarkDisplayLines(b *testing.B) {
	line := []byte("harnessd bench: one log line of sixty bytes, over and over.\n")
	chunk := bytes.Repeat(line, 4096/len(line)+1)[:4096]
	sink := &swapWriter{w: io.Discard}
	d := &display{lines: newCleanWriter(sink), sink: sink, cols: 80, rows: 24, app: new(atomic.Bool)}
	defer d.close()
	b.SetBytes(int64(len(chunk)))
	for b.Loop() {
		if _, err := d.Write(chunk); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDetectorLines is the escape-sequence detector alone on the same
// output.
func BenchmarkDetectorLines(b *testing.B) {
	line := []byte("harnessd bench: one log line of sixty bytes, over and over.\n")
	chunk := bytes.Repeat(line, 4096/len(line)+1)[:4096]
	var d detector
	b.SetBytes(int64(len(chunk)))
	for b.Loop() {
		if ev, _, _ := d.scan(chunk); ev != evNone {
			b.Fatal(ev)
		}
	}
}

// streamScript prints streamBytes of 60-byte lines, block-written.
const (
	streamBytes  = 64 << 20
	streamScript = "yes 'harnessd bench: one log line of sixty bytes, over and over.' | head -c 67108864"
)

// BenchmarkStream is 64 MiB of line output through a warm terminal (read,
// markers, display, clean; the output itself discarded) beside the same
// command read off a bare PTY by a plain read loop, in the same run.
// cpu-ns/B is this process's CPU (user and system, every thread) per byte:
// on a machine with few cores, what the reader spends is taken from the
// program writing the output and from the kernel's tty work, so it is the
// figure that decides throughput, and it holds better than MB/s on a
// loaded machine.
func BenchmarkStream(b *testing.B) {
	b.Run("terminal", func(b *testing.B) {
		term, err := New(context.Background(), Options{Dir: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		defer term.Close()
		ctx := context.Background()
		b.SetBytes(streamBytes)
		cpu0 := processCPU(b)
		for b.Loop() {
			res, err := term.Run(ctx, event.CmdRun{Command: streamScript, TimeoutS: 120}, io.Discard)
			if err != nil || res.ExitCode != 0 {
				b.Fatalf("%v %+v", err, res)
			}
		}
		b.ReportMetric(float64(processCPU(b)-cpu0)/float64(b.N)/streamBytes, "cpu-ns/B")
	})
	b.Run("rawpty", func(b *testing.B) {
		b.SetBytes(streamBytes)
		cpu0 := processCPU(b)
		buf := make([]byte, 32<<10)
		for b.Loop() {
			master, slave, err := pty.Open()
			if err != nil {
				b.Fatal(err)
			}
			cmd := exec.Command("bash", "-c", streamScript)
			cmd.Stdout, cmd.Stderr = slave, slave
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 1}
			err = cmd.Start()
			slave.Close()
			if err != nil {
				b.Fatal(err)
			}
			n := 0
			for {
				m, err := master.Read(buf)
				n += m
				if err != nil {
					break // EIO: the slave's last holder is gone
				}
			}
			cmd.Wait()
			master.Close()
			if n != streamBytes+streamBytes/60 { // ONLCR: each \n became \r\n
				b.Fatalf("read %d bytes", n)
			}
		}
		b.ReportMetric(float64(processCPU(b)-cpu0)/float64(b.N)/streamBytes, "cpu-ns/B")
	})
}

// processCPU is this process's user and system time so far, in ns.
func processCPU(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
