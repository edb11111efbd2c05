package live_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/harnessd/harnessd/core/live"
)

// drain takes every chunk waiting, blocking until at least one came.
func drain(u *live.Sub) []live.Chunk {
	<-u.Ready()
	return append([]live.Chunk(nil), u.Take()...)
}

func TestPublishOrderAndEnd(t *testing.T) {
	h := live.NewHub()
	if h.Watching("s") {
		t.Fatal("watching with no subscriber")
	}
	u := h.Subscribe("s")
	defer u.Close()
	other := h.Subscribe("t")
	defer other.Close()
	if !h.Watching("s") {
		t.Fatal("not watching after Subscribe")
	}
	w := h.NewWriter("s", 7)
	buf := []byte("one\n")
	w.Write(buf)
	copy(buf, "XXXX") // Publish copied it
	w.Write([]byte("two\n"))
	w.Close()
	got := drain(u)
	want := []live.Chunk{{Cause: 7, Offset: 0, Output: "one\n"}, {Cause: 7, Offset: 4, Output: "two\n"}, {Cause: 7, Offset: 8, End: true}}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("chunk %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	select {
	case <-other.Ready():
		t.Fatalf("another session's subscriber got %+v", other.Take())
	default:
	}
}

// TestSlowSubscriberLoses: a subscriber that does not read loses chunks
// past MaxQueued, never blocks the producer, and is told how much it lost
// with the next chunk it gets; the end always arrives.
func TestSlowSubscriberLoses(t *testing.T) {
	h := live.NewHub()
	u := h.Subscribe("s")
	defer u.Close()
	w := h.NewWriter("s", 1)
	block := []byte(strings.Repeat("x", 64<<10))
	const n = 64 // 4 MiB, four times what may queue
	for range n {
		w.Write(block)
	}
	w.Close()
	got := drain(u)
	var kept, lost int64
	next := int64(0)
	for _, c := range got {
		if c.Offset-next != c.Lost {
			t.Fatalf("chunk at %d: lost %d, but %d bytes are missing before it", c.Offset, c.Lost, c.Offset-next)
		}
		kept += int64(len(c.Output))
		lost += c.Lost
		next = c.Offset + int64(len(c.Output))
	}
	end := got[len(got)-1]
	if !end.End || end.Offset != n*int64(len(block)) {
		t.Fatalf("last chunk %+v, want the end at %d", end, n*len(block))
	}
	if kept > live.MaxQueued || kept+lost != n*int64(len(block)) {
		t.Fatalf("kept %d, lost %d of %d (at most %d may queue)", kept, lost, n*len(block), live.MaxQueued)
	}
}

// TestTinyChunksBounded: a program writing one short line at a time makes
// a chunk per line; a subscriber that never reads must not hold more than
// MaxQueued's worth of them, counting what each chunk costs.
func TestTinyChunksBounded(t *testing.T) {
	h := live.NewHub()
	u := h.Subscribe("s")
	defer u.Close()
	w := h.NewWriter("s", 1)
	const n = 1 << 20
	for range n {
		w.Write([]byte("\n"))
	}
	w.Close()
	got := u.Take()
	if max := live.MaxQueued/live.ChunkCost + 1; len(got) > max {
		t.Fatalf("%d chunks queued for a subscriber that never read, want at most %d", len(got), max)
	}
	end := got[len(got)-1]
	if !end.End || end.Offset != n {
		t.Fatalf("last chunk %+v, want the end at %d", end, n)
	}
}

func TestCloseStopsDelivery(t *testing.T) {
	h := live.NewHub()
	u := h.Subscribe("s")
	u.Close()
	u.Close() // twice is fine
	if h.Watching("s") {
		t.Fatal("watching after Close")
	}
	h.Publish("s", 1, 0, []byte("x"), false)
	select {
	case <-u.Ready():
		t.Fatal("a closed subscription got a chunk")
	default:
	}
	var nilHub *live.Hub
	nilHub.Publish("s", 1, 0, []byte("x"), false) // a session without a hub
}

// TestConcurrent runs producers and subscribers that come and go at once,
// for the race detector.
func TestConcurrent(t *testing.T) {
	h := live.NewHub()
	var wg sync.WaitGroup
	for p := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := h.NewWriter("s", uint64(p+1))
			for range 2000 {
				w.Write([]byte("line\n"))
			}
			w.Close()
		}()
	}
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				u := h.Subscribe("s")
				select {
				case <-u.Ready():
					u.Take()
				default:
				}
				u.Close()
			}
		}()
	}
	wg.Wait()
}

func TestChunkJSON(t *testing.T) {
	c := live.Chunk{Cause: 3, Offset: 10, Output: "a\"b\n\x00", Lost: 2}
	if got, want := string(c.AppendJSON(nil)), `{"kind":"progress","cause":3,"offset":10,"output":"a\"b\n\u0000","lost":2}`; got != want {
		t.Fatalf("%s\nwant %s", got, want)
	}
	if got, want := string(live.Chunk{Cause: 3, Offset: 12, End: true}.AppendJSON(nil)), `{"kind":"progress","cause":3,"offset":12,"end":true}`; got != want {
		t.Fatalf("%s\nwant %s", got, want)
	}
}
