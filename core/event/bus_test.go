package event

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

func msg(i int) Event {
	return Event{Source: SourceAgent, Payload: Message{Text: fmt.Sprint(i)}}
}

// newBus returns a bus over a fresh MemLog, closed (and its goroutines
// waited for) when the test ends.
func newBus(t *testing.T, opts *BusOptions) (*Bus, *MemLog) {
	t.Helper()
	log := NewMemLog()
	b := NewBus(log, opts)
	t.Cleanup(func() { b.Close() })
	return b, log
}

// collect receives n events, failing on a gap, a duplicate or an early end.
func collect(t *testing.T, evs <-chan Event, errs <-chan error, first uint64, n int) {
	t.Helper()
	if err := receive(evs, errs, first, n); err != nil {
		t.Fatal(err)
	}
}

// receive is collect for goroutines other than the test's.
func receive(evs <-chan Event, errs <-chan error, first uint64, n int) error {
	want := first
	timeout := time.After(30 * time.Second)
	for range n {
		select {
		case ev, ok := <-evs:
			if !ok {
				return fmt.Errorf("stream ended at seq %d (want %d more): %v", want, first+uint64(n)-want, <-errs)
			}
			if ev.Seq != want {
				return fmt.Errorf("got seq %d, want %d", ev.Seq, want)
			}
			if ev.Session == "" || ev.Payload == nil {
				return fmt.Errorf("event %d is incomplete: %+v", ev.Seq, ev)
			}
			want++
		case err := <-errs:
			return fmt.Errorf("stream ended at seq %d: %v", want, err)
		case <-timeout:
			return fmt.Errorf("timed out waiting for seq %d", want)
		}
	}
	return nil
}

// The acceptance case of the issue: a subscriber from 0 while 10,000 events
// are appended sees exactly 1..10000 in order.
func TestSubscribeWhileAppending(t *testing.T) {
	for _, buffer := range []int{1, 16, DefaultBuffer} {
		t.Run(fmt.Sprintf("buffer=%d", buffer), func(t *testing.T) {
			b, _ := newBus(t, &BusOptions{Buffer: buffer})
			ctx := t.Context()
			const n = 10000
			evs, errs := b.Subscribe(ctx, "s", 0)
			done := make(chan error, 1)
			go func() {
				for i := 0; i < n; {
					batch := 1 + i%3 // single and multi-event appends
					batch = min(batch, n-i)
					var in []Event
					for j := range batch {
						in = append(in, msg(i+j))
					}
					if _, err := b.Append(ctx, "s", in...); err != nil {
						done <- err
						return
					}
					i += batch
				}
				done <- nil
			}()
			collect(t, evs, errs, 1, n)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			select {
			case ev := <-evs:
				t.Fatalf("extra event %d", ev.Seq)
			case <-time.After(20 * time.Millisecond):
			}
		})
	}
}

// Several goroutines appending to one session publish out of seq order; the
// subscriber still sees every seq once, in order.
func TestConcurrentAppendersOneSession(t *testing.T) {
	b, _ := newBus(t, &BusOptions{Buffer: 8})
	ctx := t.Context()
	evs, errs := b.Subscribe(ctx, "s", 0)
	const writers, each = 8, 500
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				if _, err := b.Append(ctx, "s", msg(w*each+i)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	collect(t, evs, errs, 1, writers*each)
	wg.Wait()
}

func TestReplayThenLive(t *testing.T) {
	b, _ := newBus(t, nil)
	ctx := t.Context()
	for i := range 100 {
		if _, err := b.Append(ctx, "s", msg(i)); err != nil {
			t.Fatal(err)
		}
	}
	b.Append(ctx, "other", msg(0))
	evs, errs := b.Subscribe(ctx, "s", 50)
	collect(t, evs, errs, 51, 50)
	for i := range 10 {
		b.Append(ctx, "s", msg(i))
	}
	collect(t, evs, errs, 101, 10)

	// After the end: nothing until something is appended.
	evs2, errs2 := b.Subscribe(ctx, "s", 110)
	select {
	case ev := <-evs2:
		t.Fatalf("got %d before any append", ev.Seq)
	case <-time.After(20 * time.Millisecond):
	}
	b.Append(ctx, "s", msg(0))
	collect(t, evs2, errs2, 111, 1)
}

// A consumer that takes nothing for a while does not slow the appender; when
// it comes back it gets everything, from the log.
func TestSlowSubscriberNeverBlocksAppends(t *testing.T) {
	b, _ := newBus(t, &BusOptions{Buffer: 4})
	ctx := t.Context()
	evs, errs := b.Subscribe(ctx, "s", 0)
	const n = 5000
	start := time.Now()
	for i := range n {
		if _, err := b.Append(ctx, "s", msg(i)); err != nil {
			t.Fatal(err)
		}
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("appends took %v with an idle subscriber", d)
	}
	// Now slowly: the buffer overflows again and again while we sleep.
	go func() {
		for i := range n {
			b.Append(ctx, "s", msg(i))
		}
	}()
	for i := range 2 * n {
		if i%1000 == 0 {
			time.Sleep(5 * time.Millisecond)
		}
		collect(t, evs, errs, uint64(i+1), 1)
	}
}

func TestStalledSubscriberIsToldItLagged(t *testing.T) {
	b, _ := newBus(t, &BusOptions{Buffer: 2, StallTimeout: 50 * time.Millisecond})
	ctx := t.Context()
	evs, errs := b.Subscribe(ctx, "s", 0)
	for i := range 20 {
		b.Append(ctx, "s", msg(i))
	}
	collect(t, evs, errs, 1, 3)
	time.Sleep(150 * time.Millisecond) // take nothing
	// Everything sent before the error has been received (evs is
	// unbuffered), so the error is the next thing in the stream.
	select {
	case err := <-errs:
		if !errors.Is(err, ErrLagged) {
			t.Fatalf("err = %v, want ErrLagged", err)
		}
		t.Log(err)
	case ev, ok := <-evs:
		if ok {
			t.Fatalf("got seq %d after stalling", ev.Seq)
		}
		if err := <-errs; !errors.Is(err, ErrLagged) {
			t.Fatalf("err = %v, want ErrLagged", err)
		}
	}
	if _, ok := <-evs; ok {
		t.Fatal("events channel still open")
	}
	// The appender was never held up, and a new subscription resumes.
	if _, err := b.Append(ctx, "s", msg(20)); err != nil {
		t.Fatal(err)
	}
	evs, errs = b.Subscribe(ctx, "s", 3)
	collect(t, evs, errs, 4, 18)
}

func TestSubscriptionEnds(t *testing.T) {
	t.Run("context", func(t *testing.T) {
		b, _ := newBus(t, nil)
		ctx, cancel := context.WithCancel(t.Context())
		evs, errs := b.Subscribe(ctx, "s", 0)
		b.Append(t.Context(), "s", msg(0))
		collect(t, evs, errs, 1, 1)
		cancel()
		if err := <-errs; !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v", err)
		}
		if _, ok := <-evs; ok {
			t.Fatal("events channel still open")
		}
	})
	t.Run("close", func(t *testing.T) {
		b, _ := newBus(t, nil)
		ctx := t.Context()
		evs, errs := b.Subscribe(ctx, "s", 0)
		// One blocked in a send, too: Close must not wait for its consumer.
		b.Append(ctx, "s", msg(0))
		b.Close()
		b.Close()
		if err := <-errs; !errors.Is(err, ErrClosed) {
			t.Fatalf("err = %v", err)
		}
		for range evs {
		}
		if _, err := b.Append(ctx, "s", msg(0)); !errors.Is(err, ErrClosed) {
			t.Fatalf("Append after Close: %v", err)
		}
		evs, errs = b.Subscribe(ctx, "s", 0)
		if err := <-errs; !errors.Is(err, ErrClosed) {
			t.Fatalf("Subscribe after Close: %v", err)
		}
		if _, ok := <-evs; ok {
			t.Fatal("events channel open after Close")
		}
	})
	t.Run("log error", func(t *testing.T) {
		boom := errors.New("disk on fire")
		b := NewBus(failingLog{NewMemLog(), boom}, nil)
		defer b.Close()
		_, errs := b.Subscribe(t.Context(), "s", 0)
		if err := <-errs; !errors.Is(err, boom) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("gap in log", func(t *testing.T) {
		log := NewMemLog()
		log.Append(t.Context(), "s", msg(0), msg(1), msg(2))
		b := NewBus(skippingLog{log}, nil)
		defer b.Close()
		evs, errs := b.Subscribe(t.Context(), "s", 0)
		collect(t, evs, errs, 1, 1)
		if err := <-errs; !errors.Is(err, ErrGap) {
			t.Fatalf("err = %v", err)
		}
	})
}

// Many subscribers on many sessions, under the race detector.
func TestManySubscribers(t *testing.T) {
	b, _ := newBus(t, &BusOptions{Buffer: 32})
	ctx := t.Context()
	const sessions, subs, n = 4, 5, 500
	var wg sync.WaitGroup
	for s := range sessions {
		id := fmt.Sprint("s", s)
		for k := range subs {
			evs, errs := b.Subscribe(ctx, id, uint64(k))
			wg.Go(func() {
				if err := receive(evs, errs, uint64(k+1), n-k); err != nil {
					t.Errorf("%s from %d: %v", id, k, err)
				}
			})
		}
		wg.Go(func() {
			for i := range n {
				if _, err := b.Append(ctx, id, msg(i)); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
}

type failingLog struct {
	Log
	err error
}

func (l failingLog) Read(context.Context, string, uint64, func(Event) error) error { return l.err }

// skippingLog loses seq 2.
type skippingLog struct{ Log }

func (l skippingLog) Read(ctx context.Context, s string, after uint64, fn func(Event) error) error {
	return l.Log.Read(ctx, s, after, func(ev Event) error {
		if ev.Seq == 2 {
			return nil
		}
		return fn(ev)
	})
}

func TestMemLog(t *testing.T) {
	l := NewMemLog()
	ctx := t.Context()
	out, err := l.Append(ctx, "s", msg(1), msg(2))
	if err != nil || len(out) != 2 || out[0].Seq != 1 || out[1].Seq != 2 || out[0].V != Version || out[0].Time.IsZero() {
		t.Fatalf("Append = %+v, %v", out, err)
	}
	if _, err := l.Append(ctx, "s", Event{}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Append of an empty event: %v", err)
	}
	var got []uint64
	l.Read(ctx, "s", 1, func(ev Event) error { got = append(got, ev.Seq); return nil })
	if len(got) != 1 || got[0] != 2 {
		t.Fatalf("Read after 1 = %v", got)
	}
}

func ExampleBus_Subscribe() {
	bus := NewBus(NewMemLog(), nil)
	defer bus.Close()
	ctx := context.Background()
	bus.Append(ctx, "s1", Event{Source: SourceAgent, Payload: CmdRun{Command: "ls"}})

	evs, errs := bus.Subscribe(ctx, "s1", 0) // everything after seq 0
	bus.Append(ctx, "s1", Event{Source: SourceRuntime, Cause: 1, Payload: CmdOutput{Output: "a.txt\n"}})
	for range 2 {
		select {
		case ev := <-evs:
			fmt.Println(ev.Seq, ev.Kind(), ev.IsAction())
		case err := <-errs:
			fmt.Println("ended:", err)
			return
		}
	}
	// Output:
	// 1 cmd_run true
	// 2 cmd_output false
}

// logOnly hides MemLog's ReadRaw: a Log that is not a RawLog.
type logOnly struct{ Log }

func TestBusReadRaw(t *testing.T) {
	for _, tt := range []struct {
		name string
		log  func(*MemLog) Log
	}{
		{"raw log", func(l *MemLog) Log { return l }},
		{"plain log", func(l *MemLog) Log { return logOnly{l} }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := NewBus(tt.log(NewMemLog()), nil)
			defer b.Close()
			stored, err := b.Append(t.Context(), "s", samples()...)
			if err != nil {
				t.Fatal(err)
			}
			var seqs []uint64
			var raws [][]byte
			err = b.ReadRaw(t.Context(), "s", 2, func(seq uint64, raw []byte) error {
				seqs = append(seqs, seq)
				raws = append(raws, bytes.Clone(raw))
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(raws) != len(stored)-2 {
				t.Fatalf("read %d events after seq 2, want %d", len(raws), len(stored)-2)
			}
			for i, ev := range stored[2:] {
				want, err := ev.AppendJSON(nil)
				if err != nil {
					t.Fatal(err)
				}
				if seqs[i] != ev.Seq || !bytes.Equal(raws[i], want) {
					t.Errorf("seq %d: got %d %s, want %s", ev.Seq, seqs[i], raws[i], want)
				}
			}
			stop := errors.New("stop")
			n := 0
			err = b.ReadRaw(t.Context(), "s", 0, func(uint64, []byte) error { n++; return stop })
			if err != stop || n != 1 {
				t.Errorf("ReadRaw with fn failing = %v after %d events", err, n)
			}
		})
	}
}
