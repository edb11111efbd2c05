package store

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/harnessd/harnessd/core/event"
)

// Benchmarks run on the real disk: b.TempDir() is under /tmp, which here is
// the root filesystem, not tmpfs. Figures are reported beside a baseline
// measured in the same run (a bare one-key bbolt commit, a bare bbolt
// scan), because the absolute numbers depend on the machine.

var benchDir string // shared fixtures, removed by TestMain

func TestMain(m *testing.M) {
	if mode := os.Getenv(envChild); mode != "" {
		storeChild(mode)
	}
	code := m.Run()
	if replayFixture.s != nil {
		replayFixture.s.Close()
	}
	if benchDir != "" {
		os.RemoveAll(benchDir)
	}
	os.Exit(code)
}

func sharedDir(b *testing.B) string {
	if benchDir == "" {
		d, err := os.MkdirTemp("", "harnessd-store-bench-")
		if err != nil {
			b.Fatal(err)
		}
		benchDir = d
	}
	return benchDir
}

// benchEvent is an observation of about 300 bytes, as DESIGN.md measured.
func benchEvent(i int) event.Event {
	return event.Event{Source: event.SourceRuntime, Cause: uint64(i), Payload: event.CmdOutput{
		ExitCode: 0, Cwd: "/work/project", DurationMS: 12,
		Output: strings.Repeat("ok  \tgithub.com/x/y\t0.012s\n", 7),
	}}
}

var bareCommit struct {
	once sync.Once
	rate float64 // one-key commits per second
}

// bareCommitRate measures one-key bbolt commits per second on this disk.
func bareCommitRate(b *testing.B) float64 {
	bareCommit.once.Do(func() {
		path := filepath.Join(sharedDir(b), "bare.db")
		db, err := bolt.Open(path, 0o600, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		val := make([]byte, 300)
		const n = 500
		start := time.Now()
		for i := range n {
			err := db.Update(func(tx *bolt.Tx) error {
				bk, err := tx.CreateBucketIfNotExists([]byte("b"))
				if err != nil {
					return err
				}
				return bk.Put(u64key(uint64(i)), val)
			})
			if err != nil {
				b.Fatal(err)
			}
		}
		bareCommit.rate = n / time.Since(start).Seconds()
	})
	return bareCommit.rate
}

func openBench(b *testing.B) *Store {
	s, err := Open(filepath.Join(b.TempDir(), "bench.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

// BenchmarkAppend: sessions appending one event at a time, each waiting for
// its acknowledgement (fsync on), as sessions do.
func BenchmarkAppend(b *testing.B) {
	for _, n := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("sessions=%d", n), func(b *testing.B) {
			bare := bareCommitRate(b)
			s := openBench(b)
			ctx := context.Background()
			ids := make([]string, n)
			for i := range ids {
				ids[i] = fmt.Sprintf("session-%04d", i)
				if _, err := s.CreateSession(ctx, Session{ID: ids[i]}); err != nil {
					b.Fatal(err)
				}
			}
			ev := benchEvent(1)
			var left atomic.Int64
			left.Store(int64(b.N))
			var wg sync.WaitGroup
			stats0, commits0 := s.db.Stats(), s.commits.Load()
			b.ResetTimer()
			start := time.Now()
			for _, id := range ids {
				wg.Go(func() {
					for left.Add(-1) >= 0 {
						if _, err := s.Append(ctx, id, ev); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			rate := float64(b.N) / elapsed.Seconds()
			stats := s.db.Stats()
			d := stats.Sub(&stats0)
			commits := float64(s.commits.Load() - commits0)
			b.ReportMetric(rate, "events/s")
			b.ReportMetric(float64(b.N)/commits, "events/commit")
			b.ReportMetric(float64(d.TxStats.GetWrite())/commits, "pages/commit")
			b.ReportMetric(bare, "bare-commits/s")
			b.ReportMetric(rate/bare, "x-bare")
		})
	}
}

var replayFixture struct {
	once sync.Once
	s    *Store
	err  error
}

const replayEvents = 1_000_000

// replayStore returns a store holding one session of a million events,
// built once per benchmark run.
func replayStore(b *testing.B) *Store {
	replayFixture.once.Do(func() {
		s, err := Open(filepath.Join(sharedDir(b), "replay.db"), nil)
		if err != nil {
			replayFixture.err = err
			return
		}
		ctx := context.Background()
		if _, err := s.CreateSession(ctx, Session{ID: "replay"}); err != nil {
			replayFixture.err = err
			return
		}
		start := time.Now()
		batch := make([]event.Event, 1000)
		for i := 0; i < replayEvents; i += len(batch) {
			for j := range batch {
				batch[j] = benchEvent(i + j)
			}
			if _, err := s.Append(ctx, "replay", batch...); err != nil {
				replayFixture.err = err
				return
			}
		}
		b.Logf("built %d events in %v", replayEvents, time.Since(start).Round(time.Millisecond))
		replayFixture.s = s
	})
	if replayFixture.err != nil {
		b.Fatal(replayFixture.err)
	}
	return replayFixture.s
}

// BenchmarkReplay reads one session of a million events from the start:
// decoded into events, raw (the stored JSON, as an NDJSON stream needs), and
// the baseline, bbolt alone scanning the same values.
func BenchmarkReplay(b *testing.B) {
	report := func(b *testing.B, n int, elapsed time.Duration) {
		b.ReportMetric(float64(n)/elapsed.Seconds(), "events/s")
	}
	b.Run("decoded", func(b *testing.B) {
		s := replayStore(b)
		b.ResetTimer()
		start := time.Now()
		total := 0
		for b.Loop() {
			n := 0
			if err := s.Read(context.Background(), "replay", 0, func(event.Event) error { n++; return nil }); err != nil {
				b.Fatal(err)
			}
			if n != replayEvents {
				b.Fatalf("replayed %d", n)
			}
			total += n
		}
		report(b, total, time.Since(start))
	})
	b.Run("raw", func(b *testing.B) {
		s := replayStore(b)
		b.ResetTimer()
		start := time.Now()
		total := 0
		for b.Loop() {
			n := 0
			if err := s.ReadRaw(context.Background(), "replay", 0, func(uint64, []byte) error { n++; return nil }); err != nil {
				b.Fatal(err)
			}
			total += n
		}
		report(b, total, time.Since(start))
	})
	b.Run("bare-bbolt-scan", func(b *testing.B) {
		s := replayStore(b)
		b.ResetTimer()
		start := time.Now()
		total := 0
		for b.Loop() {
			s.db.View(func(tx *bolt.Tx) error {
				return tx.Bucket(bucketLog).ForEach(func(k, v []byte) error { total++; return nil })
			})
		}
		report(b, total, time.Since(start))
	})
}

// BenchmarkAppendToSubscriber measures the time from calling Append (so
// including the commit) to a bus subscriber receiving the event, alone and
// with 63 other sessions appending at full speed.
func BenchmarkAppendToSubscriber(b *testing.B) {
	for _, load := range []int{0, 63} {
		b.Run(fmt.Sprintf("other-sessions=%d", load), func(b *testing.B) {
			s := openBench(b)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			bus := event.NewBus(s, nil)
			defer bus.Close()
			if _, err := s.CreateSession(ctx, Session{ID: "lat"}); err != nil {
				b.Fatal(err)
			}
			var bg sync.WaitGroup
			for i := range load {
				id := fmt.Sprint("load-", i)
				s.CreateSession(ctx, Session{ID: id})
				bg.Go(func() {
					for ctx.Err() == nil {
						bus.Append(ctx, id, benchEvent(i))
					}
				})
			}
			evs, errs := bus.Subscribe(ctx, "lat", 0)
			sent := make([]time.Time, b.N+1)
			seen := make([]time.Duration, 0, b.N)
			commit := make([]time.Duration, 0, b.N)
			done := make(chan struct{})
			go func() {
				defer close(done)
				for range b.N {
					select {
					case ev := <-evs:
						seen = append(seen, time.Since(sent[ev.Seq]))
					case err := <-errs:
						b.Error(err)
						return
					}
				}
			}()
			b.ResetTimer()
			for i := 1; i <= b.N; i++ {
				sent[i] = time.Now() // written before the append that makes the subscriber read it
				if _, err := bus.Append(ctx, "lat", benchEvent(i)); err != nil {
					b.Fatal(err)
				}
				commit = append(commit, time.Since(sent[i]))
			}
			<-done
			b.StopTimer()
			cancel()
			bg.Wait()
			slices.Sort(seen)
			slices.Sort(commit)
			pct := func(d []time.Duration, p float64) float64 {
				if len(d) == 0 {
					return 0
				}
				return float64(d[min(len(d)-1, int(float64(len(d))*p))].Microseconds())
			}
			b.ReportMetric(pct(seen, 0.50), "p50-µs")
			b.ReportMetric(pct(seen, 0.99), "p99-µs")
			b.ReportMetric(pct(commit, 0.99), "append-p99-µs")
		})
	}
}

// BenchmarkOutputSpill: one output of 64 MiB of 60-byte lines written in
// 4 KiB writes (a PTY's reads) and closed, in strict durability, as a
// session spills a long command's output. It reports the commits each MiB
// took: each costs two fsyncs, which on a small-write-bound disk set the
// speed.
func BenchmarkOutputSpill(b *testing.B) {
	const size = 64 << 20
	line := []byte("harnessd bench: one log line of sixty bytes, over and over.\n")
	chunk := bytes.Repeat(line, 4096/len(line)+1)[:4096]
	s := openTest(b, nil)
	mustCreate(b, s, "spill")
	ctx := context.Background()
	commits0 := s.commits.Load()
	b.SetBytes(size)
	for b.Loop() {
		w, err := s.Outputs().Create(ctx, "spill")
		if err != nil {
			b.Fatal(err)
		}
		for n := 0; n < size; n += len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				b.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(s.commits.Load()-commits0)/float64(b.N)/(size>>20), "commits/MiB")
}
