package hooks

import (
	"context"
	"time"
)

// budget is the context a Lua state runs a hook call under: it ends when
// the call's time budget is spent or the caller's context ends.
//
// gopher-lua polls its context's Done once per VM instruction. A context
// from context.WithTimeout costs a timer, a channel and three allocations
// per call, more than a short hook's instructions, and a receive from its
// channel per instruction. budget costs neither: Done counts the
// instructions and looks at the clock and the caller's context only every
// budgetCheck of them, returning nil (a receive that never succeeds, which
// the VM's select passes at once) until the budget is spent and a closed
// channel from then on. So an endless loop is stopped within budgetCheck
// instructions (microseconds) of its deadline. This breaks the
// context.Context contract on purpose (Done's result changes, and it is
// nil before the end): a budget is only ever the context of a Lua state,
// polled by gopher-lua and by this package's Go functions through Err.
//
// A worker owns one budget and reuses it for every call: start, run, stop.
type budget struct {
	n          int64         // instructions run: calls of Done
	done       chan struct{} // what Done returns: nil, then closed once spent
	parent     context.Context
	parentDone <-chan struct{}
	deadline   time.Time
	err        error // set once the budget is spent or the parent ended
}

var _ context.Context = (*budget)(nil)

// budgetCheck is how many VM instructions run between looks at the clock:
// a power of two. At 20 to 50 instructions a microsecond that is a look
// every 5 to 13µs, against budgets of milliseconds.
const budgetCheck = 256

// closed is the Done of a spent budget.
var closed = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// start readies b for a call of at most d, under parent.
func (b *budget) start(parent context.Context, d time.Duration) {
	*b = budget{parent: parent, parentDone: parent.Done(), deadline: time.Now().Add(d)}
}

// stop ends the call: Err says from then on how it ended (nil if within
// its budget), and the instructions it ran are returned.
func (b *budget) stop() int64 {
	b.check()
	b.parentDone = nil
	return b.n
}

// clear drops the references b holds.
func (b *budget) clear() { *b = budget{} }

// check looks at the clock and the parent, and reports whether the
// budget is spent.
func (b *budget) check() bool {
	if b.err != nil {
		return true
	}
	if b.parentDone != nil {
		select {
		case <-b.parentDone:
			b.err = b.parent.Err()
		default:
		}
	}
	if b.err == nil && !time.Now().Before(b.deadline) {
		b.err = context.DeadlineExceeded
	}
	if b.err != nil {
		b.done = closed
		return true
	}
	return false
}

// Done is polled by the VM before each instruction: it is kept short.
func (b *budget) Done() <-chan struct{} {
	b.n++
	if b.n&(budgetCheck-1) == 0 {
		b.check()
	}
	return b.done
}

// Err is nil while the budget lasts, then context.DeadlineExceeded, or
// the parent's error if it ended first.
func (b *budget) Err() error {
	if b.parentDone != nil {
		b.check()
	}
	return b.err
}

// Deadline is when the budget ends, or the parent's deadline if earlier.
func (b *budget) Deadline() (time.Time, bool) {
	if b.parent != nil {
		if dl, ok := b.parent.Deadline(); ok && dl.Before(b.deadline) {
			return dl, true
		}
	}
	return b.deadline, true
}

// Value is the parent's.
func (b *budget) Value(key any) any {
	if b.parent == nil {
		return nil
	}
	return b.parent.Value(key)
}
