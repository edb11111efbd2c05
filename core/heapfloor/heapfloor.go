// Package heapfloor lets the Go heap grow to a floor before the garbage
// collector runs, however little of it is live.
//
// # Why
//
// With GOGC=100 the collector runs each time the heap doubles over what
// the last cycle found live, and never below 4 MiB. An idle-ish daemon
// keeps a few MiB live, and each API action allocates tens of KiB (two
// bbolt commits, JSON, the hooks' Lua tables), so it collected every 50
// actions or so; a collection on a 2-core machine shared with the
// sessions' shells costs a millisecond or two of the actions it lands on,
// which was most of the API's p99. A floor of tens of MiB cuts those
// cycles several-fold while the heap is small, and changes nothing once
// the live heap passes half the floor: there GOGC's doubling is already
// above it. (runtime/debug has no minimum heap setting; Go's own
// heapMinimum is 4 MiB times GOGC/100.)
//
// # Basics
//
//	stop := heapfloor.Set(32 << 20)
//	defer stop()
//
// Set works out the GOGC percent that puts the next collection at the
// floor from the live heap the runtime reports (runtime/metrics), and
// does so again after each collection, never going under the percent it
// found (GOGC or 100). Floors set at once (two daemons in one test
// process) count as their largest. The last stop puts the percent it
// found back.
//
// # Caveats
//
// GOGC=off is left alone, and a GOMEMLIMIT still bounds the heap as
// usual. The re-evaluation after each collection runs from a cleanup
// (runtime.AddCleanup) on a small object made for it, on the runtime's
// cleanup goroutine; it costs a runtime/metrics read per cycle.
package heapfloor

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// heapMinimum is the Go runtime's own floor at GOGC=100
// (defaultHeapMinimum in runtime/mgcpacer.go), which it scales by
// GOGC/100: a percent set here raises that too, and must not raise it
// past the floor.
const heapMinimum = 4 << 20

// state is the process's one tuner: GOGC is process-wide.
var state struct {
	mu     sync.Mutex
	floors map[int]uint64 // by Set call, the floors in force
	next   int            // key of the next Set
	base   int            // the percent found when the first floor was set
	gen    int            // bumped when the last floor goes, so a pending cleanup stops re-arming
}

// sentinel is the object whose cleanup runs once per collection cycle:
// it holds a pointer so that it is not batched by the tiny allocator,
// whose blocks may outlive their objects.
type sentinel struct{ _ *int }

// Set asks for the heap to grow to floor bytes before a collection, and
// returns the function that withdraws the request. A floor of 0 asks
// nothing. stop may be called more than once.
func Set(floor uint64) (stop func()) {
	if floor == 0 {
		return func() {}
	}
	state.mu.Lock()
	if len(state.floors) == 0 {
		base := debug.SetGCPercent(100)
		debug.SetGCPercent(base)
		if base < 0 {
			// GOGC=off: whoever turned the collector off wants it off.
			state.mu.Unlock()
			return func() {}
		}
		state.base = base
		state.floors = make(map[int]uint64)
		state.gen++
		arm(state.gen)
	}
	key := state.next
	state.next++
	state.floors[key] = floor
	tuneLocked()
	state.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			state.mu.Lock()
			defer state.mu.Unlock()
			delete(state.floors, key)
			if len(state.floors) == 0 {
				state.gen++
				debug.SetGCPercent(state.base)
				return
			}
			tuneLocked()
		})
	}
}

// arm makes a sentinel whose cleanup, after the collection that finds it
// unreachable, tunes again and arms the next; gen ends the chain once the
// last floor is withdrawn.
func arm(gen int) {
	s := new(sentinel)
	runtime.AddCleanup(s, func(gen int) {
		state.mu.Lock()
		defer state.mu.Unlock()
		if gen != state.gen {
			return
		}
		tuneLocked()
		arm(gen)
	}, gen)
}

// samples are the runtime/metrics the percent is worked out from: what
// the last cycle marked live, and the stacks and globals GOGC also
// scales by (the pacer's goal is live + (live+stacks+globals)*GOGC/100).
var sampleNames = [...]string{"/gc/heap/live:bytes", "/gc/scan/stack:bytes", "/gc/scan/globals:bytes"}

// tuneLocked sets the percent for the largest floor; state.mu is held.
func tuneLocked() {
	var floor uint64
	for _, f := range state.floors {
		floor = max(floor, f)
	}
	var s [len(sampleNames)]metrics.Sample
	for i, n := range sampleNames {
		s[i].Name = n
	}
	metrics.Read(s[:])
	var v [len(sampleNames)]uint64
	for i := range s {
		if s[i].Value.Kind() == metrics.KindUint64 {
			v[i] = s[i].Value.Uint64()
		}
	}
	debug.SetGCPercent(Percent(floor, v[0], v[1]+v[2], state.base))
}

// Percent is the GOGC percent that puts the collector's next goal at
// floor, given the live heap and the stacks and globals scanned besides,
// and never under base. The goal is the larger of live +
// (live+roots)*p/100 and the runtime's minimum, 4 MiB*p/100: p is the
// smaller of the percents that put each at the floor.
func Percent(floor, live, roots uint64, base int) int {
	if floor <= live {
		return base
	}
	byLive := (floor - live) * 100 / max(live+roots, 1)
	byMinimum := floor * 100 / heapMinimum
	p := min(byLive, byMinimum)
	if p <= uint64(base) {
		return base
	}
	return int(p)
}
