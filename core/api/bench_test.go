package api_test

import (
	"context"
	"encoding/binary"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/harnessd/harnessd/cmd/harnessd/serve"
	"github.com/harnessd/harnessd/core/api"
	"github.com/harnessd/harnessd/core/config"
	"github.com/harnessd/harnessd/core/daemon"
	"github.com/harnessd/harnessd/core/event"
	"github.com/harnessd/harnessd/core/terminal"
)

// The benchmarks here put the API's round trip beside what it is built
// from, measured in the same run:
//
//	go test ./core/api -run '^$' -bench . -benchtime 2s
//
// BenchmarkAPIRoundTrip/strict should be close to two BenchmarkBoltCommit
// (the cmd_run and cmd_output commits, each with its fsync) plus one
// BenchmarkTerminalRoundTrip; /batch close to the terminal alone. `go run
// ./bench -only api` prints the same comparison as a table with targets.

// benchDaemon starts `harnessd serve` in-process (serve.Run) on a socket
// in a temp dir, over a store in the same dir, with the given durability
// and no sandbox. It is stopped when the benchmark ends.
func benchDaemon(b *testing.B, durability string, maxSessions int) *api.Client {
	b.Helper()
	dir := b.TempDir()
	cfg := config.Default()
	cfg.Daemon.DataDir = dir
	cfg.Daemon.Socket = filepath.Join(dir, "h.sock")
	cfg.Daemon.ShutdownGrace = config.Duration{Duration: 500 * time.Millisecond}
	if maxSessions > 0 {
		cfg.Daemon.MaxSessions = maxSessions
	}
	cfg.Sandbox.Driver = config.DriverNone
	cfg.Store.Durability = durability
	if err := cfg.Validate(); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	ready := make(chan string, 1)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	go func() {
		done <- serve.Run(ctx, serve.Options{Config: cfg, Logger: log, Ready: func(s string) { ready <- s }})
	}()
	var socket string
	select {
	case socket = <-ready:
	case err := <-done:
		cancel()
		b.Fatalf("serve: %v", err)
	case <-time.After(20 * time.Second):
		cancel()
		b.Fatal("daemon not ready in 20s")
	}
	cl := api.NewClient(socket)
	b.Cleanup(func() {
		cl.Close()
		cancel()
		select {
		case err := <-done:
			if err != nil {
				b.Errorf("serve: %v", err)
			}
		case <-time.After(30 * time.Second):
			b.Error("daemon did not stop in 30s")
		}
	})
	return cl
}

// actTrue runs `true` in session id through the API and checks the answer.
func actTrue(b *testing.B, cl *api.Client, id string) {
	obs, err := cl.Act(context.Background(), id, event.SourceUser, event.CmdRun{Command: "true"})
	if err != nil {
		b.Fatal(err)
	}
	if out, ok := obs.Payload.(event.CmdOutput); !ok || out.ExitCode != 0 {
		b.Fatalf("true: got %s %+v", obs.Kind(), obs.Payload)
	}
}

// BenchmarkAPIRoundTrip is `true` through the whole daemon: client ->
// socket -> session -> PTY -> store -> back, in both durability modes.
func BenchmarkAPIRoundTrip(b *testing.B) {
	for _, mode := range []string{config.DurabilityStrict, config.DurabilityBatch} {
		b.Run(mode, func(b *testing.B) {
			cl := benchDaemon(b, mode, 0)
			info, err := cl.CreateSession(context.Background(), daemon.CreateRequest{ID: "bench"})
			if err != nil {
				b.Fatal(err)
			}
			for range 20 { // warm the shell, the connection, the store
				actTrue(b, cl, info.ID)
			}
			var lat []time.Duration
			for b.Loop() {
				t0 := time.Now()
				actTrue(b, cl, info.ID)
				lat = append(lat, time.Since(t0))
			}
			reportPercentiles(b, lat)
		})
	}
}

// BenchmarkAPIMessage is a message action through the API: client ->
// socket -> one store append (one commit) -> back, with no shell. Beside
// BenchmarkAPIRoundTrip it splits the daemon's cost into the API and store
// part and the terminal part.
func BenchmarkAPIMessage(b *testing.B) {
	for _, mode := range []string{config.DurabilityStrict, config.DurabilityBatch} {
		b.Run(mode, func(b *testing.B) {
			cl := benchDaemon(b, mode, 0)
			ctx := context.Background()
			info, err := cl.CreateSession(ctx, daemon.CreateRequest{ID: "bench"})
			if err != nil {
				b.Fatal(err)
			}
			var lat []time.Duration
			for b.Loop() {
				t0 := time.Now()
				if _, err := cl.Act(ctx, info.ID, event.SourceAgent, event.Message{Text: "hi"}); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
			}
			reportPercentiles(b, lat)
		})
	}
}

// BenchmarkBoltCommit is the floor under strict durability: one bbolt
// Update putting one key, with bbolt's default fsync, on the disk the
// daemon benchmarks use (b.TempDir).
func BenchmarkBoltCommit(b *testing.B) {
	db, err := bolt.Open(filepath.Join(b.TempDir(), "bare.db"), 0o600, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	bucket := []byte("b")
	val := make([]byte, 64)
	var key [8]byte
	var i uint64
	var lat []time.Duration
	for b.Loop() {
		i++
		binary.BigEndian.PutUint64(key[:], i)
		t0 := time.Now()
		err := db.Update(func(tx *bolt.Tx) error {
			bk, err := tx.CreateBucketIfNotExists(bucket)
			if err != nil {
				return err
			}
			return bk.Put(key[:], val)
		})
		lat = append(lat, time.Since(t0))
		if err != nil {
			b.Fatal(err)
		}
	}
	reportPercentiles(b, lat)
}

// BenchmarkTerminalRoundTrip is `true` through a warm in-process terminal,
// with no API and no store: what the daemon adds to is this.
func BenchmarkTerminalRoundTrip(b *testing.B) {
	ctx := context.Background()
	term, err := terminal.New(ctx, terminal.Options{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer term.Close()
	run := func() {
		res, err := term.Run(ctx, event.CmdRun{Command: "true"}, io.Discard)
		if err != nil || res.ExitCode != 0 {
			b.Fatalf("%v %+v", err, res)
		}
	}
	for range 20 {
		run()
	}
	var lat []time.Duration
	for b.Loop() {
		t0 := time.Now()
		run()
		lat = append(lat, time.Since(t0))
	}
	reportPercentiles(b, lat)
}

// BenchmarkSessionCreate is one session created through the API (record,
// workspace, shell up to its first prompt, sandbox_started) and then
// deleted with its history purged. sessions/s counts the creates' time
// only; ns/op is the pair.
func BenchmarkSessionCreate(b *testing.B) {
	cl := benchDaemon(b, config.DurabilityStrict, 0)
	ctx := context.Background()
	var create []time.Duration
	i := 0
	for b.Loop() {
		i++
		id := "s" + strconv.Itoa(i)
		t0 := time.Now()
		if _, err := cl.CreateSession(ctx, daemon.CreateRequest{ID: id}); err != nil {
			b.Fatal(err)
		}
		create = append(create, time.Since(t0))
		if err := cl.DeleteSession(ctx, id, true); err != nil {
			b.Fatal(err)
		}
	}
	var sum time.Duration
	for _, d := range create {
		sum += d
	}
	if sum > 0 {
		b.ReportMetric(float64(len(create))/sum.Seconds(), "sessions/s")
	}
	reportPercentiles(b, create)
}

// reportPercentiles reports the p50 and p99 of lat (nearest rank), in µs.
func reportPercentiles(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	rank := func(p float64) time.Duration {
		i := int(float64(len(lat))*p+0.999999) - 1
		return lat[max(0, min(i, len(lat)-1))]
	}
	b.ReportMetric(float64(rank(0.50))/1e3, "p50-µs")
	b.ReportMetric(float64(rank(0.99))/1e3, "p99-µs")
}
