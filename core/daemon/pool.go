package daemon

import (
	"context"
	"log/slog"
	"time"
)

// pool keeps up to size ready values (sandboxes with their shells at the
// first prompt) so that creating a session is a hit rather than a cold
// start. One goroutine, owned by the pool, refills it in the background;
// take never waits for it. A value leaves the pool once and is never put
// back: a sandbox a session has touched is never reused.
type pool[T any] struct {
	size    int
	create  func(ctx context.Context) (T, error)
	discard func(T)
	log     *slog.Logger

	// taken, if set, is told of every take: a hit or a miss (the
	// daemon's metrics count them).
	taken func(hit bool)

	ready  chan T
	wake   chan struct{}
	cancel context.CancelFunc
	done   chan struct{}
}

func newPool[T any](size int, create func(context.Context) (T, error), discard func(T), taken func(hit bool), log *slog.Logger) *pool[T] {
	if taken == nil {
		taken = func(bool) {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &pool[T]{
		size: size, create: create, discard: discard, taken: taken, log: log,
		ready:  make(chan T, size),
		wake:   make(chan struct{}, 1),
		cancel: cancel,
		done:   make(chan struct{}),
	}
	go p.fill(ctx)
	return p
}

// take returns a ready value, or false at once when there is none. After
// a hit the caller calls refill once it has done with its request: a
// refill started at once would compete for the two cores and the disk's
// journal with the very request the hit was meant to make fast.
func (p *pool[T]) take() (T, bool) {
	select {
	case v := <-p.ready:
		p.taken(true)
		return v, true
	default:
		p.taken(false)
		var zero T
		return zero, false
	}
}

// refill wakes the filler to replace what take handed out.
func (p *pool[T]) refill() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// fill keeps the pool full. A failure to create backs off (up to 30s) so a
// host that cannot make sandboxes is not hammered; requests then start
// cold and report the real error.
func (p *pool[T]) fill(ctx context.Context) {
	defer close(p.done)
	backoff := 100 * time.Millisecond
	for {
		for len(p.ready) < p.size {
			v, err := p.create(ctx)
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				p.log.Warn("warm pool: could not make a sandbox; retrying", "err", err, "in", backoff)
				select {
				case <-ctx.Done():
					return
				case <-time.After(backoff):
				}
				backoff = min(2*backoff, 30*time.Second)
				continue
			}
			backoff = 100 * time.Millisecond
			select {
			case p.ready <- v:
			default:
				p.discard(v) // cannot happen: only fill sends
			}
			if ctx.Err() != nil {
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-p.wake:
		}
	}
}

// close stops the filler and discards what is ready. It blocks until both
// are done.
func (p *pool[T]) close() {
	p.cancel()
	<-p.done
	for {
		select {
		case v := <-p.ready:
			p.discard(v)
		default:
			return
		}
	}
}
