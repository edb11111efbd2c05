package heapfloor

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
)

func TestPercent(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		name              string
		floor, live, root uint64
		base, want        int
	}{
		{"live past the floor keeps the base", 32 * mib, 40 * mib, mib, 100, 100},
		{"live at half the floor: doubling already reaches it", 32 * mib, 16 * mib, 0, 100, 100},
		{"small live: the runtime's minimum binds", 32 * mib, 2 * mib, 0, 100, 800},
		{"the live goal binds", 64 * mib, 10 * mib, 2 * mib, 100, 450},
		{"never under the base", 32 * mib, 12 * mib, 0, 300, 300},
		{"nothing live yet", 32 * mib, 0, 0, 100, 800},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := Percent(c.floor, c.live, c.root, c.base); got != c.want {
				t.Fatalf("Percent(%d MiB, live %d MiB, roots %d MiB, base %d) = %d, want %d",
					c.floor/mib, c.live/mib, c.root/mib, c.base, got, c.want)
			}
		})
	}
}

// cycles counts collections while allocating n bytes of garbage in
// small objects.
func cycles(n int) uint64 {
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(s)
	before := s[0].Value.Uint64()
	var keep []byte
	for range n / 1024 {
		keep = make([]byte, 1024)
	}
	runtime.KeepAlive(keep)
	metrics.Read(s)
	return s[0].Value.Uint64() - before
}

func TestFloorCutsCollections(t *testing.T) {
	const garbage = 512 << 20
	base := debug.SetGCPercent(100)
	defer debug.SetGCPercent(base)
	runtime.GC()
	plain := cycles(garbage)
	stop := Set(64 << 20)
	floored := cycles(garbage)
	// A second floor at once, smaller: the larger still holds.
	stop2 := Set(8 << 20)
	both := cycles(garbage)
	stop()
	stop() // a second call does nothing
	small := cycles(garbage)
	stop2()
	after := cycles(garbage)
	t.Logf("collections over %d MiB of garbage: plain %d, floor 64 MiB %d, with a second floor of 8 MiB %d, 8 MiB alone %d, after both stopped %d",
		garbage>>20, plain, floored, both, small, after)
	// The test binary's live heap is well under 1 MiB: GOGC=100 collects
	// every 4 MiB (the runtime's minimum), a 64 MiB floor about every 64.
	if plain < 40 {
		t.Fatalf("without a floor, %d collections over %d MiB: the premise (a small live heap) does not hold", plain, garbage>>20)
	}
	if floored*4 > plain {
		t.Errorf("a 64 MiB floor left %d collections against %d without: want at most a quarter", floored, plain)
	}
	if both*4 > plain {
		t.Errorf("a second, smaller floor undid the larger: %d collections against %d without", both, plain)
	}
	if small >= plain || small*4 < floored {
		t.Errorf("the 8 MiB floor alone gave %d collections: want fewer than without (%d), more than at 64 MiB (%d)", small, plain, floored)
	}
	if after*2 < plain {
		t.Errorf("after the last stop %d collections against %d before any floor: the percent was not put back", after, plain)
	}
	if p := debug.SetGCPercent(100); p != 100 {
		t.Errorf("GOGC after the last stop = %d, want the 100 it found back", p)
	}
}

func TestOffIsLeftAlone(t *testing.T) {
	old := debug.SetGCPercent(-1)
	defer debug.SetGCPercent(old)
	stop := Set(64 << 20)
	if p := debug.SetGCPercent(-1); p != -1 {
		t.Fatalf("with GOGC=off, Set changed the percent to %d", p)
	}
	stop()
	if p := debug.SetGCPercent(-1); p != -1 {
		t.Fatalf("with GOGC=off, stop changed the percent to %d", p)
	}
}

func TestZeroFloorAsksNothing(t *testing.T) {
	Set(0)()
	if p := debug.SetGCPercent(100); p != 100 {
		t.Fatalf("a zero floor changed GOGC to %d", p)
	}
}

// gcPercent reads GOGC without changing it (SetGCPercent is the only
// reader), holding state.mu so that no re-tuning lands in between.
func gcPercent() int {
	state.mu.Lock()
	defer state.mu.Unlock()
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

// TestFollowsLiveHeap checks the re-evaluation after each collection: a
// live heap past the floor brings the percent back to the base, and
// freeing it raises the percent again.
func TestFollowsLiveHeap(t *testing.T) {
	base := debug.SetGCPercent(100)
	defer debug.SetGCPercent(base)
	stop := Set(32 << 20)
	defer stop()
	small := gcPercent()
	if small <= 100 {
		t.Fatalf("with a small live heap and a 32 MiB floor, GOGC = %d, want above 100", small)
	}
	live := make([][]byte, 48)
	for i := range live {
		live[i] = make([]byte, 1<<20)
	}
	waitPercent(t, func(p int) bool { return p == 100 }, "100 with 48 MiB live")
	runtime.KeepAlive(live)
	live = nil
	waitPercent(t, func(p int) bool { return p == small }, "back up once the live heap is freed")
}

// waitPercent collects until GOGC satisfies ok: the tuning runs from a
// cleanup on the runtime's goroutine after the collection, so it may lag
// a cycle.
func waitPercent(t *testing.T, ok func(int) bool, want string) {
	t.Helper()
	for range 200 {
		runtime.GC()
		if ok(gcPercent()) {
			return
		}
		runtime.Gosched()
	}
	t.Fatalf("GOGC = %d after 200 collections, want %s", gcPercent(), want)
}
