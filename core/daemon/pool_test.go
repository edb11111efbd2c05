package daemon

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestPool(t *testing.T) {
	var made atomic.Int64
	var mu sync.Mutex
	discarded := map[int64]bool{}
	slow := make(chan struct{})
	var hits, misses atomic.Int64
	taken := func(hit bool) {
		if hit {
			hits.Add(1)
		} else {
			misses.Add(1)
		}
	}
	p := newPool(3, func(ctx context.Context) (int64, error) {
		n := made.Add(1)
		if n > 3 {
			select { // later refills wait, so the pool runs dry
			case <-slow:
			case <-ctx.Done():
				return 0, ctx.Err()
			}
		}
		return n, nil
	}, func(v int64) { mu.Lock(); discarded[v] = true; mu.Unlock() }, taken, slog.New(slog.DiscardHandler))
	deadline := time.Now().Add(5 * time.Second)
	for len(p.ready) < 3 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	seen := map[int64]bool{}
	for range 3 {
		v, ok := p.take()
		if !ok || seen[v] {
			t.Fatalf("take: %d %v (seen %v)", v, ok, seen)
		}
		seen[v] = true
	}
	if n := made.Load(); n != 3 {
		t.Fatalf("%d made before any refill: a hit must not start one before its request is done", n)
	}
	p.refill()
	if _, ok := p.take(); ok {
		t.Fatal("take from an empty pool must not wait or invent a value")
	}
	if h, m := hits.Load(), misses.Load(); h != 3 || m != 1 {
		t.Fatalf("hits %d misses %d", h, m)
	}
	close(slow)
	deadline = time.Now().Add(5 * time.Second)
	for len(p.ready) < 3 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	p.close()
	mu.Lock()
	defer mu.Unlock()
	if len(discarded) != 3 {
		t.Fatalf("close discarded %v, want the 3 ready values", discarded)
	}
	for v := range seen {
		if discarded[v] {
			t.Fatalf("value %d was taken and also discarded", v)
		}
	}
}

func TestPoolBacksOff(t *testing.T) {
	var calls atomic.Int64
	p := newPool(2, func(ctx context.Context) (int, error) {
		calls.Add(1)
		return 0, errors.New("no user namespaces")
	}, func(int) {}, nil, slog.New(slog.DiscardHandler))
	time.Sleep(500 * time.Millisecond)
	p.close()
	if n := calls.Load(); n > 5 {
		t.Fatalf("%d attempts in 500ms: the pool must back off", n)
	}
}
