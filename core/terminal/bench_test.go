package terminal

import (
	"context"
	"io"
	"os/exec"
	"sort"
	"testing"
	"time"

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
