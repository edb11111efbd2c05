package heapfloor

import (
	"math"
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

// mappedNow is what the runtime has mapped and not released: what a
// memory limit is held against.
func mappedNow() uint64 {
	m := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(m)
	return m[0].Value.Uint64() - m[1].Value.Uint64()
}

// goal is the heap size at which the collector will next run.
func goal() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// clean starts a test from GOGC=100 and no memory limit, whatever the
// environment (GOGC, GOMEMLIMIT) set, and puts them back after.
func clean(t *testing.T) {
	gogc := debug.SetGCPercent(100)
	limit := debug.SetMemoryLimit(math.MaxInt64)
	t.Cleanup(func() {
		debug.SetGCPercent(gogc)
		debug.SetMemoryLimit(limit)
	})
}

// retune runs the re-evaluation now, as the cleanup after a collection
// does, so that a test need not wait for one.
func retune() {
	state.mu.Lock()
	defer state.mu.Unlock()
	if len(state.floors) > 0 {
		tuneLocked()
	}
}

// settle collects twice, so that the live heap the runtime reports is
// this test's own and not garbage that floated through a cycle.
func settle() {
	runtime.GC()
	runtime.GC()
}

// TestFloorSetsThePercent follows GOGC and the memory limit as floors
// come and go, from a settled live heap well under 4 MiB (where the
// runtime's own minimum, 4 MiB*GOGC/100, is what binds).
func TestFloorSetsThePercent(t *testing.T) {
	const mib = 1 << 20
	clean(t)
	settle()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if live := s[0].Value.Uint64(); live > 2*mib {
		t.Fatalf("the test's live heap is %d KiB after two collections: the premise (well under 4 MiB) does not hold", live>>10)
	}
	stop := Set(64 * mib)
	if p := gcPercent(); p != 1600 {
		t.Errorf("with a 64 MiB floor GOGC = %d, want 1600 (the runtime's 4 MiB minimum scaled to 64)", p)
	}
	if g := goal(); g < 60*mib {
		t.Errorf("with a 64 MiB floor the heap goal is %d MiB, want about 64", g/mib)
	}
	if l := debug.SetMemoryLimit(-1); l < 128*mib || l == math.MaxInt64 {
		t.Errorf("with a 64 MiB floor the memory limit is %d MiB, want twice the goal and more", l/mib)
	}
	stop2 := Set(8 * mib) // a second, smaller floor at once: the larger holds
	if p := gcPercent(); p != 1600 {
		t.Errorf("a second, 8 MiB floor set GOGC to %d, want the larger floor's 1600", p)
	}
	// Fill the 64 MiB floor's heap, so that what the runtime has mapped
	// is well over what the 8 MiB floor alone asks.
	cycles(56 * mib)
	settle()
	mapped := mappedNow()
	stop()
	stop() // a second call does nothing
	if p := gcPercent(); p != 200 {
		t.Errorf("with the 8 MiB floor alone GOGC = %d, want 200", p)
	}
	// The limit must not fall under what the runtime had mapped (the 64
	// MiB floor's heap): the runtime would give it back to the OS at
	// once, and collect back to back meanwhile, the goal pulled down to
	// the live heap.
	if l := debug.SetMemoryLimit(-1); uint64(l) < mapped {
		t.Errorf("with the 8 MiB floor alone the memory limit is %d MiB, under the %d MiB mapped", l/mib, mapped/mib)
	}
	settle()
	if g := goal(); g < 7*mib {
		t.Errorf("with the 8 MiB floor alone, after two collections, the heap goal is %d KiB, want about 8 MiB", g>>10)
	}
	stop2()
	if p := gcPercent(); p != 100 {
		t.Errorf("GOGC after the last stop = %d, want the 100 it found back", p)
	}
	if l := debug.SetMemoryLimit(-1); l != math.MaxInt64 {
		t.Errorf("the memory limit after the last stop is %d, want none, as found", l)
	}
}

// TestFloorCutsCollections counts collections over real garbage. The
// counts depend on the machine's load (a slow mark lets the heap
// overshoot its goal), so they are held to a wide margin.
func TestFloorCutsCollections(t *testing.T) {
	clean(t)
	settle()
	const garbage = 256 << 20
	plain := cycles(garbage)
	stop := Set(64 << 20)
	floored := cycles(garbage)
	stop()
	t.Logf("collections over %d MiB of garbage: %d without a floor, %d with 64 MiB", garbage>>20, plain, floored)
	if floored*2 > plain {
		t.Errorf("a 64 MiB floor left %d collections against %d without: want well under half", floored, plain)
	}
}

// TestUserMemoryLimitIsLeftAlone: a limit set before (GOMEMLIMIT) stays.
func TestUserMemoryLimitIsLeftAlone(t *testing.T) {
	clean(t)
	debug.SetMemoryLimit(512 << 20)
	stop := Set(64 << 20)
	if l := debug.SetMemoryLimit(-1); l != 512<<20 {
		t.Errorf("Set changed a memory limit set before it to %d", l)
	}
	stop()
	if l := debug.SetMemoryLimit(-1); l != 512<<20 {
		t.Errorf("stop changed a memory limit set before it to %d", l)
	}
}

// TestLaterMemoryLimitIsKept: a limit someone sets after Set is theirs:
// neither re-evaluated nor cleared by stop.
func TestLaterMemoryLimitIsKept(t *testing.T) {
	clean(t)
	stop := Set(64 << 20)
	if l := debug.SetMemoryLimit(-1); l == math.MaxInt64 {
		t.Fatal("Set made no memory limit")
	}
	debug.SetMemoryLimit(1 << 30)
	retune()
	if l := debug.SetMemoryLimit(-1); l != 1<<30 {
		t.Errorf("a re-evaluation changed the 1 GiB limit set after Set to %d MiB", l>>20)
	}
	stop()
	if l := debug.SetMemoryLimit(-1); l != 1<<30 {
		t.Errorf("stop changed the 1 GiB limit set after Set to %d", l)
	}
}

func TestGoal(t *testing.T) {
	const mib = 1 << 20
	if g := Goal(100, 10*mib, 2*mib); g != 22*mib {
		t.Errorf("Goal(100, live 10 MiB, roots 2 MiB) = %d MiB, want 22", g/mib)
	}
	if g := Goal(800, 1*mib, 0); g != 32*mib {
		t.Errorf("Goal(800, live 1 MiB) = %d MiB, want the minimum 32", g/mib)
	}
}

// TestLaterChangesAreKept: a percent someone sets after Set becomes the
// tuner's base, and turning the collector off ends the tuning, limit
// included.
func TestLaterChangesAreKept(t *testing.T) {
	clean(t)
	settle()
	stop := Set(64 << 20)
	defer stop()
	debug.SetGCPercent(2000) // above what the floor asks
	retune()
	if p := gcPercent(); p != 2000 {
		t.Fatalf("GOGC = %d after a re-evaluation, want the 2000 set after Set, kept as the base", p)
	}
	debug.SetGCPercent(-1)
	settle()
	if p := gcPercent(); p != -1 {
		t.Fatalf("GOGC = %d after it was turned off, want off kept", p)
	}
	for i := 0; debug.SetMemoryLimit(-1) != math.MaxInt64; i++ {
		if i == 200 {
			t.Fatalf("with GOGC turned off the tuner's memory limit %d stayed through 200 collections", debug.SetMemoryLimit(-1))
		}
		runtime.GC()
		runtime.Gosched()
	}
	stop()
	if p := gcPercent(); p != -1 {
		t.Errorf("stop changed an off GOGC to %d", p)
	}
}

func TestOffIsLeftAlone(t *testing.T) {
	clean(t)
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
	clean(t)
	Set(0)()
	if p := debug.SetGCPercent(100); p != 100 {
		t.Fatalf("a zero floor changed GOGC to %d", p)
	}
}

// TestFollowsLiveHeap checks the re-evaluation after each collection: a
// live heap past the floor brings the percent back to the base, and
// freeing it raises the percent again.
func TestFollowsLiveHeap(t *testing.T) {
	clean(t)
	settle()
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
	waitPercent(t, func(p int) bool { return p > 100 }, "above 100 again once the live heap is freed")
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
