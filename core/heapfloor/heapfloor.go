// Package heapfloor keeps the Go garbage collector's heap goal at a
// floor, however little of the heap is live.
//
// # Why
//
// With GOGC=100 the collector's goal is twice what the last cycle found
// live, and never below 4 MiB. An idle-ish daemon keeps a few MiB live,
// and each API action allocates tens of KiB (two bbolt commits, JSON, the
// hooks' Lua tables), so it collected every 50 actions or so; a
// collection on a 2-core machine shared with the sessions' shells costs a
// millisecond or two of the actions it lands on, which was most of the
// API's p99. A floor of tens of MiB cuts those cycles several-fold while
// the heap is small, and changes nothing once GOGC's own goal is above
// it (at GOGC=100, once a little under half the floor is live).
// runtime/debug has no minimum heap setting; Go's own minimum is 4 MiB
// times GOGC/100.
//
// # Basics
//
//	stop := heapfloor.Set(32 << 20)
//	defer stop()
//
// Set works out the GOGC percent that puts the collector's goal at the
// floor from the live heap the runtime reports (runtime/metrics), and
// does so again after collections, never going under the percent it
// found. Floors set at once (two daemons in one test process) count as
// their largest. The last stop puts back the percent, and the memory
// limit, it found.
//
// # Caveats
//
// GOGC=off is left alone, and so is anyone's later change of the
// percent (a percent the tuner did not set becomes its new base; off
// ends the tuning) or of the memory limit (theirs from then on). Both
// are noticed at the next re-evaluation: until then the tuner's memory
// limit, if it set one, still triggers collections after GOGC is turned
// off. The percent is worked out from the live heap of the
// last collection and applied to the next, so a live heap that jumps
// between two collections (a burst of sessions) would let the next goal
// grow by the same factor times the floor until the re-evaluation runs,
// which is after that collection, on the runtime's cleanup goroutine
// (runtime.AddCleanup on a small object made for it), and can lag on a
// starved machine. A memory limit (debug.SetMemoryLimit) bounds that:
// twice the goal the floor means plus what the runtime holds besides the
// heap, and never under what it has mapped now (a lower limit would make
// it collect back to back until the memory went back to the OS). It is
// re-evaluated with the percent, and left alone when GOMEMLIMIT (or
// anyone) has set one, which then bounds the heap as usual.
// The 4 MiB minimum is the runtime's default; a build with
// GOEXPERIMENT=heapminimum512kib gets an eighth of the floor.
package heapfloor

import (
	"math"
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

// state is the process's one tuner: GOGC and the memory limit are
// process-wide.
var state struct {
	mu     sync.Mutex
	floors map[int]uint64 // by Set call, the floors in force
	next   int            // key of the next Set
	base   int            // the percent found when the first floor was set, or set by someone since
	set    int            // the percent the tuner set last
	limit  bool           // whether the memory limit is ours to set (none was set before, nor by anyone since)
	limSet int64          // the memory limit the tuner set last
	gen    int            // bumped when tuning ends, so a pending cleanup stops re-arming
}

// sentinel is the object whose cleanup runs after a collection cycle:
// it holds a pointer so that it is not batched by the tiny allocator,
// whose blocks may outlive their objects.
type sentinel struct{ _ *int }

// Set asks for the collector's goal to be at least floor bytes, and
// returns the function that withdraws the request. A floor of 0 asks
// nothing, and so does any floor while GOGC is off. stop may be called
// more than once.
func Set(floor uint64) (stop func()) {
	if floor == 0 {
		return func() {}
	}
	state.mu.Lock()
	defer state.mu.Unlock()
	if len(state.floors) == 0 {
		base := gcPercent()
		if base < 0 {
			// GOGC=off: whoever turned the collector off wants it off.
			return func() {}
		}
		state.base, state.set = base, base
		state.limit = debug.SetMemoryLimit(-1) == math.MaxInt64
		state.limSet = math.MaxInt64
		state.floors = make(map[int]uint64)
		state.gen++
		arm(state.gen)
	}
	key := state.next
	state.next++
	state.floors[key] = floor
	tuneLocked()
	gen := state.gen
	var once sync.Once
	return func() {
		once.Do(func() {
			state.mu.Lock()
			defer state.mu.Unlock()
			if gen != state.gen {
				return // tuning ended meanwhile (GOGC turned off)
			}
			delete(state.floors, key)
			if len(state.floors) > 0 {
				tuneLocked()
				return
			}
			endLocked()
			if gcPercent() == state.set {
				debug.SetGCPercent(state.base)
			}
		})
	}
}

// endLocked ends the tuning: no more re-evaluations, and the memory
// limit, if it was ours, is none again.
func endLocked() {
	state.gen++
	state.floors = nil
	if ownLimitLocked() {
		debug.SetMemoryLimit(math.MaxInt64)
	}
}

// ownLimitLocked reports whether the memory limit is still the tuner's:
// a limit someone else has set since is theirs from then on.
func ownLimitLocked() bool {
	if state.limit && debug.SetMemoryLimit(-1) != state.limSet {
		state.limit = false
	}
	return state.limit
}

// arm makes a sentinel whose cleanup, after the collection that finds it
// unreachable, tunes again and arms the next; gen ends the chain once
// tuning ends.
func arm(gen int) {
	s := new(sentinel)
	runtime.AddCleanup(s, func(gen int) {
		state.mu.Lock()
		defer state.mu.Unlock()
		if gen != state.gen {
			return
		}
		tuneLocked()
		if gen == state.gen {
			arm(gen)
		}
	}, gen)
}

// gcPercent reads GOGC without setting it (-1 is off).
func gcPercent() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 100
	}
	return int(int64(s[0].Value.Uint64()))
}

// The runtime/metrics the percent and the limit are worked out from, by
// their index in sampleNames: GOGC as it is; what the last cycle marked
// live, and the stacks and globals GOGC also scales by (the pacer's goal
// is live + (live+stacks+globals)*GOGC/100); then what the runtime has
// mapped, and of it the heap's own as the memory limit counts it (object
// slots, free spans, and what it has released to the OS), the rest being
// what it holds besides the heap.
const (
	sGOGC = iota
	sLive
	sStack
	sGlobals
	sTotal
	sObjects
	sFree
	sReleased
	nSamples
)

var sampleNames = [nSamples]string{
	sGOGC:     "/gc/gogc:percent",
	sLive:     "/gc/heap/live:bytes",
	sStack:    "/gc/scan/stack:bytes",
	sGlobals:  "/gc/scan/globals:bytes",
	sTotal:    "/memory/classes/total:bytes",
	sObjects:  "/memory/classes/heap/objects:bytes",
	sFree:     "/memory/classes/heap/free:bytes",
	sReleased: "/memory/classes/heap/released:bytes",
}

// tuneLocked sets the percent, and the memory limit if it is ours, for
// the largest floor; state.mu is held. A percent someone else has set
// since the tuner's last becomes the base; off ends the tuning.
func tuneLocked() {
	var s [nSamples]metrics.Sample
	for i, n := range sampleNames {
		s[i].Name = n
	}
	metrics.Read(s[:])
	var v [nSamples]uint64
	for i := range s {
		if s[i].Value.Kind() == metrics.KindUint64 {
			v[i] = s[i].Value.Uint64()
		}
	}
	now := int(int64(v[sGOGC]))
	if now != state.set {
		if now < 0 {
			endLocked()
			return
		}
		state.base = now
	}
	var floor uint64
	for _, f := range state.floors {
		floor = max(floor, f)
	}
	live, roots := v[sLive], v[sStack]+v[sGlobals]
	p := Percent(floor, live, roots, state.base)
	if prev := debug.SetGCPercent(p); prev != now {
		// Changed by someone between the read and the set: theirs stands.
		debug.SetGCPercent(prev)
		state.base, state.set = prev, prev
		if prev < 0 {
			endLocked()
		}
		return
	}
	state.set = p
	if ownLimitLocked() {
		// The runtime counts against the limit what it has mapped and not
		// released, and as non-heap all but object slots and free spans
		// (memoryLimitHeapGoal): unused parts of spans count as non-heap.
		total, released := v[sTotal], v[sReleased]
		heap := v[sObjects] + v[sFree] + released
		besides := total - min(heap, total)
		mapped := total - min(released, total)
		limit := max(2*Goal(p, live, roots)+besides, mapped+mapped/8)
		state.limSet = int64(min(limit, math.MaxInt64/2))
		debug.SetMemoryLimit(state.limSet)
	}
}

// Goal is the heap size the runtime aims to collect at for a GOGC
// percent p, given the live heap and the stacks and globals scanned
// besides: the pacer's formula, and its minimum of 4 MiB*p/100.
func Goal(p int, live, roots uint64) uint64 {
	return max(live+(live+roots)*uint64(p)/100, heapMinimum*uint64(p)/100)
}

// Percent is the GOGC percent that puts the collector's goal at floor,
// given the live heap and the stacks and globals scanned besides, and
// never under base. The goal is the larger of live + (live+roots)*p/100
// and the runtime's minimum, 4 MiB*p/100: p is the smaller of the
// percents that put each at the floor.
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
