package event

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// MemLog is a Log in memory, for tests of code that sits on a Log; it keeps
// the Log contract (seqs, times, chunked reads that never block appends) but
// nothing survives the process. The daemon uses store.Store.
type MemLog struct {
	mu       sync.Mutex
	sessions map[string][]stored
}

// stored is an event as MemLog keeps it: decoded, and its JSON, as a store
// would write it.
type stored struct {
	ev  Event
	raw []byte
}

var _ RawLog = (*MemLog)(nil)

// NewMemLog returns an empty in-memory log.
func NewMemLog() *MemLog { return &MemLog{sessions: make(map[string][]stored)} }

// Append implements Log. Events are encoded, as a store would, so an event
// MemLog accepts is one the store accepts too, and ReadRaw has their bytes.
func (l *MemLog) Append(ctx context.Context, session string, evs ...Event) ([]Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	have := l.sessions[session]
	now := time.Now().UTC()
	out := make([]Event, len(evs))
	add := make([]stored, len(evs))
	for i, ev := range evs {
		ev.V = Version
		ev.Session = session
		ev.Seq = uint64(len(have) + i + 1)
		if ev.Time.IsZero() {
			ev.Time = now
		}
		ev.Time = ev.Time.UTC()
		raw, err := ev.AppendJSON(nil)
		if err != nil {
			return nil, fmt.Errorf("append to session %s: %w", session, err)
		}
		out[i] = ev
		add[i] = stored{ev, raw}
	}
	l.sessions[session] = append(have, add...)
	return out, nil
}

// Read implements Log. It copies events out in chunks and calls fn with no
// lock held.
func (l *MemLog) Read(ctx context.Context, session string, after uint64, fn func(Event) error) error {
	return l.read(ctx, session, after, func(s stored) error { return fn(s.ev) })
}

// ReadRaw implements RawLog.
func (l *MemLog) ReadRaw(ctx context.Context, session string, after uint64, fn func(seq uint64, raw []byte) error) error {
	return l.read(ctx, session, after, func(s stored) error { return fn(s.ev.Seq, s.raw) })
}

func (l *MemLog) read(ctx context.Context, session string, after uint64, fn func(stored) error) error {
	const chunk = 256
	var buf []stored
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		l.mu.Lock()
		have := l.sessions[session]
		if after >= uint64(len(have)) {
			l.mu.Unlock()
			return nil
		}
		buf = append(buf[:0], have[after:min(uint64(len(have)), after+chunk)]...)
		l.mu.Unlock()
		for _, s := range buf {
			if err := fn(s); err != nil {
				return err
			}
			after = s.ev.Seq
		}
	}
}
