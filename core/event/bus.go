package event

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Log is the durable, ordered record of events the Bus sits on. It is
// declared here so that core does not depend on the store; store.Store
// implements it.
type Log interface {
	// Append gives each event the session's next seqs, its V, Session and
	// (if zero) Time, commits them, and only then returns them as stored.
	// The events of one call get consecutive seqs.
	Append(ctx context.Context, session string, evs ...Event) ([]Event, error)

	// Read calls fn, in seq order, for the session's committed events with
	// seq > after: after+1, after+2, … with no gaps, up to at least the last
	// event whose Append had returned when Read was called. A non-nil error
	// from fn stops Read and is returned. fn may block for long (a slow
	// consumer): Read must not hold anything that stalls Append meanwhile.
	Read(ctx context.Context, session string, after uint64, fn func(Event) error) error
}

// RawLog is a Log that can hand out events as they are stored, without
// decoding them: a replay that only forwards events (an NDJSON stream)
// needs nothing more. store.Store and MemLog implement it.
type RawLog interface {
	Log

	// ReadRaw is Read without decoding: fn gets each event's seq and its
	// flat JSON form as stored, valid only until fn returns.
	ReadRaw(ctx context.Context, session string, after uint64, fn func(seq uint64, raw []byte) error) error
}

// BusOptions configures a Bus. Zero fields take the defaults.
type BusOptions struct {
	// Buffer is how many live events a subscriber can have waiting before
	// it falls back to reading the log. Default 1024.
	Buffer int

	// StallTimeout is how long a consumer may take no event, while one is
	// waiting for it, before its subscription ends with ErrLagged. Default
	// 30 seconds.
	StallTimeout time.Duration
}

// Default bus settings.
const (
	DefaultBuffer       = 1024
	DefaultStallTimeout = 30 * time.Second
)

// Bus fans events out to subscribers. Appends go through it to the Log and,
// once committed, to the session's subscribers. A subscriber asks for
// everything after a seq and gets the stored past and then the live tail,
// with no gaps and no duplicates; see Subscribe.
type Bus struct {
	log    Log
	buffer int
	stall  time.Duration

	ctx    context.Context // cancelled by Close; every subscription ends with it
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	closed bool
	topics map[string]map[*subscriber]struct{}
}

// subscriber is one subscription's link to the publishers.
type subscriber struct {
	live chan Event    // bounded; the publisher never blocks on it
	kick chan struct{} // capacity 1: "live overflowed, read the log"
}

var _ RawLog = (*Bus)(nil)

// NewBus returns a bus over log. opts may be nil.
func NewBus(log Log, opts *BusOptions) *Bus {
	var o BusOptions
	if opts != nil {
		o = *opts
	}
	if o.Buffer <= 0 {
		o.Buffer = DefaultBuffer
	}
	if o.StallTimeout <= 0 {
		o.StallTimeout = DefaultStallTimeout
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Bus{
		log:    log,
		buffer: o.Buffer,
		stall:  o.StallTimeout,
		ctx:    ctx,
		cancel: cancel,
		topics: make(map[string]map[*subscriber]struct{}),
	}
}

// Append appends evs to the log and, once they are committed, hands them to
// the session's subscribers. It returns the events as stored. Every append
// that subscribers should see must go through the bus; an event appended to
// the log behind the bus's back reaches a subscriber only when a later one
// shows it a gap.
func (b *Bus) Append(ctx context.Context, session string, evs ...Event) ([]Event, error) {
	b.mu.Lock()
	closed := b.closed
	b.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	out, err := b.log.Append(ctx, session, evs...)
	if err != nil {
		return out, err
	}
	b.publish(session, out)
	return out, nil
}

// Read reads the log, as Log.Read does; the bus adds nothing.
func (b *Bus) Read(ctx context.Context, session string, after uint64, fn func(Event) error) error {
	return b.log.Read(ctx, session, after, fn)
}

// ReadRaw reads the log without decoding, as RawLog.ReadRaw does, when the
// log is a RawLog; otherwise it reads events and encodes each again, which
// gives the same bytes.
func (b *Bus) ReadRaw(ctx context.Context, session string, after uint64, fn func(seq uint64, raw []byte) error) error {
	if r, ok := b.log.(RawLog); ok {
		return r.ReadRaw(ctx, session, after, fn)
	}
	var buf []byte
	return b.log.Read(ctx, session, after, func(ev Event) error {
		var err error
		if buf, err = ev.AppendJSON(buf[:0]); err != nil {
			return fmt.Errorf("session %s seq %d: %w", session, ev.Seq, err)
		}
		return fn(ev.Seq, buf)
	})
}

// publish offers committed events to the session's subscribers without ever
// blocking: a subscriber whose buffer is full misses the rest and is told to
// catch up from the log, which has them, being committed.
func (b *Bus) publish(session string, evs []Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for s := range b.topics[session] {
	offer:
		for _, ev := range evs {
			select {
			case s.live <- ev:
			default:
				select {
				case s.kick <- struct{}{}:
				default:
				}
				break offer
			}
		}
	}
}

// Subscribe streams the session's events with seq > after: first those in
// the log, then new ones as they are committed, each exactly once and in
// seq order, with no gaps.
//
// The stream ends when ctx ends, the bus is closed, the log fails, or the
// consumer falls hopelessly behind; then errs yields the reason (ctx.Err(),
// ErrClosed, the log's error, or an error wrapping ErrLagged) and both
// channels are closed. evs is unbuffered, so every event sent before the
// error has been received: a consumer may select on both channels and stop
// at the first error without losing any.
//
// A consumer slower than the appenders never blocks them: once its buffer
// (BusOptions.Buffer) is full it reads the log instead, at its own pace, and
// rejoins the live tail when it has caught up. Only a consumer that takes no
// event at all for BusOptions.StallTimeout while one is waiting is cut off,
// with ErrLagged; it can resubscribe after the last seq it got.
func (b *Bus) Subscribe(ctx context.Context, session string, after uint64) (<-chan Event, <-chan error) {
	evs := make(chan Event)
	errs := make(chan error, 1)
	s := &subscriber{
		live: make(chan Event, b.buffer),
		kick: make(chan struct{}, 1),
	}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		errs <- ErrClosed
		close(evs)
		close(errs)
		return evs, errs
	}
	// Registered before the log is read: anything committed after this
	// point is offered live, anything before it is in the log.
	subs := b.topics[session]
	if subs == nil {
		subs = make(map[*subscriber]struct{})
		b.topics[session] = subs
	}
	subs[s] = struct{}{}
	b.wg.Add(1)
	b.mu.Unlock()

	go func() {
		defer b.wg.Done()
		err := b.follow(ctx, session, after+1, s, evs)
		b.mu.Lock()
		if subs := b.topics[session]; subs != nil {
			delete(subs, s)
			if len(subs) == 0 {
				delete(b.topics, session)
			}
		}
		b.mu.Unlock()
		errs <- err
		close(evs)
		close(errs)
	}()
	return evs, errs
}

// follow runs one subscription until it ends, and returns why.
func (b *Bus) follow(parent context.Context, session string, next uint64, s *subscriber, out chan<- Event) error {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	stop := context.AfterFunc(b.ctx, cancel)
	defer stop()
	ended := func(err error) error {
		if b.ctx.Err() != nil {
			return ErrClosed
		}
		if parent.Err() != nil {
			return parent.Err()
		}
		return err
	}

	timer := time.NewTimer(b.stall)
	timer.Stop()
	send := func(ev Event) error {
		select {
		case out <- ev:
			return nil
		default:
		}
		timer.Reset(b.stall)
		defer timer.Stop()
		select {
		case out <- ev:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
			return fmt.Errorf("%w: session %s: no event taken for %s; the next is seq %d", ErrLagged, session, b.stall, ev.Seq)
		}
	}

	catchUp := true
	for {
		if catchUp {
			catchUp = false
			select { // this read covers whatever the kick was about
			case <-s.kick:
			default:
			}
			err := b.log.Read(ctx, session, next-1, func(ev Event) error {
				if ev.Seq != next {
					return fmt.Errorf("%w: session %s: read seq %d, want %d", ErrGap, session, ev.Seq, next)
				}
				if err := send(ev); err != nil {
					return err
				}
				next++
				return nil
			})
			if err != nil {
				return ended(err)
			}
		}
		select {
		case ev := <-s.live:
			switch {
			case ev.Seq < next: // already delivered from the log
				continue
			case ev.Seq > next: // missed some (published out of order): the log has them
				catchUp = true
				continue
			}
			if err := send(ev); err != nil {
				return ended(err)
			}
			next++
		case <-s.kick:
			catchUp = true
		case <-ctx.Done():
			return ended(ctx.Err())
		}
	}
}

// Close ends every subscription with ErrClosed and waits for their
// goroutines; later calls to Append and Subscribe fail with ErrClosed. The
// log is not closed: the bus does not own it. Close is safe to call twice.
func (b *Bus) Close() error {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	b.cancel()
	b.wg.Wait()
	return nil
}
