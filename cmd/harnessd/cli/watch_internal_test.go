package cli

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/core/live"
)

// TestWatcherLateEndIsNotAStoppedStream: when the end of the output does
// not come in time (this client fell behind), stop ends the stream, which
// then fails with the context's error; missed must not blame that.
func TestWatcherLateEndIsNotAStoppedStream(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	w := &watcher{c: &cmd{ctx: context.Background(), env: Env{Stdout: io.Discard}}, cancel: cancel,
		done: make(chan struct{}), next: map[uint64]int64{}, lost: map[uint64]int64{},
		ended: map[uint64]bool{}, endCh: make(chan struct{}, 1)}
	go func() {
		defer close(w.done)
		<-ctx.Done()
		w.finish(ctx.Err())
	}()
	if err := w.chunk(live.Chunk{Cause: 1, Output: "part\n"}); err != nil {
		t.Fatal(err)
	}
	// The end never comes: stop gives up after endWait.
	if w.stop(1, false) {
		t.Fatal("stop reported every byte printed without the end")
	}
	if m := w.missed(1); strings.Contains(m, "canceled") || !strings.Contains(m, "did not arrive in time") {
		t.Fatalf("missed: %q", m)
	}
}
