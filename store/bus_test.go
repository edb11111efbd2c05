package store

import (
	"bytes"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/harnessd/harnessd/core/event"
)

// The bus on the real store: a subscriber from 0 while 10,000 events are
// appended sees exactly 1..10000, in order, even with a buffer so small that
// it keeps falling back to reading the store.
func TestBusOnStore(t *testing.T) {
	small(t, 16, 256, sweepBudget)
	for _, buffer := range []int{4, event.DefaultBuffer} {
		t.Run(fmt.Sprintf("buffer=%d", buffer), func(t *testing.T) {
			s := openTest(t, nil)
			ctx := t.Context()
			mustCreate(t, s, "s")
			mustCreate(t, s, "noise")
			bus := event.NewBus(s, &event.BusOptions{Buffer: buffer})
			defer bus.Close()

			const n, writers, history = 10000, 8, 96
			const each = (n - history) / writers // 1238
			// Some history first, so the subscription starts with a replay.
			for i := range history {
				if _, err := bus.Append(ctx, "s", cmd(i)); err != nil {
					t.Fatal(err)
				}
			}
			evs, errs := bus.Subscribe(ctx, "s", 0)
			var wg sync.WaitGroup
			for w := range writers {
				wg.Go(func() {
					for i := 0; i < each; {
						k := min(1+i%4, each-i)
						batch := make([]event.Event, k)
						for j := range batch {
							batch[j] = cmd(w*n + i + j)
						}
						if _, err := bus.Append(ctx, "s", batch...); err != nil {
							t.Error(err)
							return
						}
						if i%10 == 0 {
							bus.Append(ctx, "noise", cmd(i))
						}
						i += k
					}
				})
			}
			next := uint64(1)
			timeout := time.After(60 * time.Second)
			for next <= n {
				select {
				case ev := <-evs:
					if ev.Seq != next || ev.Session != "s" {
						t.Fatalf("got %s/%d, want s/%d", ev.Session, ev.Seq, next)
					}
					next++
					if buffer == 4 && next%1000 == 0 {
						time.Sleep(10 * time.Millisecond) // fall behind on purpose
					}
				case err := <-errs:
					t.Fatalf("stream ended at %d: %v", next, err)
				case <-timeout:
					t.Fatalf("timed out at %d", next)
				}
			}
			wg.Wait()
			select {
			case ev := <-evs:
				t.Fatalf("extra event %d", ev.Seq)
			case <-time.After(20 * time.Millisecond):
			}
		})
	}
}

// Bus.ReadRaw on the store streams the stored bytes: the same as reading
// the events and encoding them again, from any seq.
func TestBusReadRawOnStore(t *testing.T) {
	small(t, 16, 256, sweepBudget)
	s := openTest(t, nil)
	ctx := t.Context()
	mustCreate(t, s, "s")
	bus := event.NewBus(s, nil)
	defer bus.Close()
	for i := range 100 {
		if _, err := bus.Append(ctx, "s", cmd(i)); err != nil {
			t.Fatal(err)
		}
	}
	for _, after := range []uint64{0, 15, 99, 100} {
		var want [][]byte
		err := bus.Read(ctx, "s", after, func(ev event.Event) error {
			b, err := ev.AppendJSON(nil)
			want = append(want, b)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		next := after + 1
		err = bus.ReadRaw(ctx, "s", after, func(seq uint64, raw []byte) error {
			if seq != next || seq-after > uint64(len(want)) || !bytes.Equal(raw, want[seq-after-1]) {
				return fmt.Errorf("seq %d (want %d): %s", seq, next, raw)
			}
			next++
			return nil
		})
		if err != nil || next-after-1 != uint64(len(want)) {
			t.Errorf("ReadRaw after %d: %v, %d events, want %d", after, err, next-after-1, len(want))
		}
	}
}
