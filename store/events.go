package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"runtime"
	"slices"
	"sync"

	bolt "go.etcd.io/bbolt"

	"github.com/harnessd/harnessd/core/event"
)

// appendOp appends one call's events to a session.
type appendOp struct {
	session string
	evs     []event.Event
	out     []event.Event
	done    chan error
}

func (o *appendOp) weight() int      { return len(o.evs) }
func (o *appendOp) finish(err error) { o.done <- err }

func (o *appendOp) apply(w *wtx) error {
	st := w.session(o.session)
	if st == nil {
		return reject(fmt.Errorf("append to session %s: %w", o.session, ErrSessionNotFound))
	}
	// Encode everything first: a bad event must fail before anything of
	// this op is written.
	mark := len(w.arena)
	recs := make([][]byte, len(o.evs))
	for i, ev := range o.evs {
		ev.V = event.Version
		ev.Session = o.session
		ev.Seq = st.lastSeq + 1 + uint64(i)
		if ev.Time.IsZero() {
			ev.Time = w.now
		} else {
			ev.Time = ev.Time.UTC()
		}
		if ev.Source == "" {
			w.arena = w.arena[:mark]
			return reject(fmt.Errorf("append to session %s: event %d (%s): %w: no source", o.session, i, ev.Kind(), ErrInvalidEvent))
		}
		start := len(w.arena)
		var err error
		w.arena = appendRecordHeader(w.arena, o.session, ev.Seq)
		if w.arena, err = ev.AppendJSON(w.arena); err != nil {
			w.arena = w.arena[:mark]
			return reject(fmt.Errorf("append to session %s: event %d: %w: %w", o.session, i, ErrInvalidEvent, err))
		}
		recs[i] = w.arena[start:len(w.arena):len(w.arena)]
		o.out[i] = ev
	}
	for _, rec := range recs {
		gid := w.nextGID
		if err := w.log().Put(w.gidKey(gid), rec); err != nil {
			return err
		}
		w.nextGID++
		st.pending = append(st.pending, gid)
		st.lastSeq++
	}
	return nil
}

// gidKey returns a log key from the arena.
func (w *wtx) gidKey(gid uint64) []byte {
	k := w.alloc(8)
	binary.BigEndian.PutUint64(k, gid)
	return k
}

// Append records evs as the session's next events and returns them as
// stored: V, Session and Seq set, and Time set to the commit batch's time
// if it was zero (kept, in UTC, otherwise). It returns only once they are
// committed: a nil error is the acknowledgement. The events of one call get
// consecutive seqs and are committed together or not at all. Every event
// needs a payload and a source.
//
// The context bounds the wait for the writer to take the events; once it
// has, Append waits for the commit, because giving up then would leave the
// caller unable to tell whether the events were recorded.
func (s *Store) Append(ctx context.Context, session string, evs ...event.Event) ([]event.Event, error) {
	if len(evs) == 0 {
		return nil, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	o := &appendOp{session: session, evs: evs, out: make([]event.Event, len(evs)), done: make(chan error, 1)}
	if err := s.submit(ctx, o); err != nil {
		return nil, err
	}
	if err := <-o.done; err != nil {
		return nil, err
	}
	return o.out, nil
}

// LastSeq returns the seq of the session's last committed event, 0 if it
// has none.
func (s *Store) LastSeq(ctx context.Context, session string) (uint64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s.mu.RLock()
	st := s.sess[session]
	s.mu.RUnlock()
	if st == nil {
		return 0, fmt.Errorf("session %s: %w", session, ErrSessionNotFound)
	}
	return st.lastSeq, nil
}

// Read calls fn with each of the session's events with seq > after, in seq
// order, up to the last one committed when Read reaches it. It reads in
// chunks, each in its own short read transaction, and calls fn outside of
// any: fn may be slow without holding up appends or bbolt's remaps. This is
// replay: a session's whole history is Read(ctx, id, 0, fn). A chunk's
// events are decoded in parallel, fn is called from one goroutine, Read's.
func (s *Store) Read(ctx context.Context, session string, after uint64, fn func(event.Event) error) error {
	var (
		c    rawChunk
		evs  []event.Event
		errs []error
	)
	parts := max(1, min(runtime.GOMAXPROCS(0), 8))
	next := after + 1
	for {
		done, err := s.readChunk(ctx, session, next, &c)
		if err != nil || done {
			return err
		}
		n := len(c.ends)
		evs = slices.Grow(evs[:0], n)[:n]
		errs = slices.Grow(errs[:0], parts)[:parts]
		decode := func(part int) {
			errs[part] = nil
			for i := part * n / parts; i < (part+1)*n/parts; i++ {
				ev, err := decodeEvent(c.event(i))
				if err != nil {
					errs[part] = fmt.Errorf("%w: session %s seq %d: %w", ErrCorrupt, session, next+uint64(i), err)
					return
				}
				evs[i] = ev
			}
		}
		if n < 256 || parts == 1 {
			for i := range n {
				if evs[i], err = decodeEvent(c.event(i)); err != nil {
					return fmt.Errorf("%w: session %s seq %d: %w", ErrCorrupt, session, next+uint64(i), err)
				}
			}
		} else {
			var wg sync.WaitGroup
			for p := 1; p < parts; p++ {
				wg.Go(func() { decode(p) })
			}
			decode(0)
			wg.Wait()
			for _, err := range errs {
				if err != nil {
					return err
				}
			}
		}
		for i := range evs {
			if err := fn(evs[i]); err != nil {
				return err
			}
			evs[i] = event.Event{} // let the payload go
		}
		next += uint64(n)
	}
}

// readChunk bounds what one read transaction copies out.
const (
	readChunkEvents = 1024
	readChunkBytes  = 4 << 20
)

// ReadRaw is Read without decoding: fn gets each event's exact stored JSON,
// valid only until fn returns. An API streaming NDJSON needs nothing more.
// It implements event.RawLog, so Bus.ReadRaw streams from the file.
func (s *Store) ReadRaw(ctx context.Context, session string, after uint64, fn func(seq uint64, data []byte) error) error {
	var c rawChunk
	next := after + 1
	for {
		done, err := s.readChunk(ctx, session, next, &c)
		if err != nil || done {
			return err
		}
		for i := range c.ends {
			if err := fn(next, c.event(i)); err != nil {
				return err
			}
			next++
		}
	}
}

// rawChunk is a run of a session's events copied out of the file.
type rawChunk struct {
	gids []uint64
	buf  []byte // the events' JSON, one after another
	ends []int  // where each ends in buf
}

func (c *rawChunk) event(i int) []byte {
	start := 0
	if i > 0 {
		start = c.ends[i-1]
	}
	return c.buf[start:c.ends[i]:c.ends[i]]
}

// readChunk reads the events from seq next on, as many as one chunk holds,
// into c; done is true if next is past the session's last event.
func (s *Store) readChunk(ctx context.Context, session string, next uint64, c *rawChunk) (done bool, err error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	// What is committed, and where: seqs up to indexed are in idx, the rest
	// in pending. A published state never changes, so this snapshot stays
	// true; gids never move.
	s.mu.RLock()
	st := s.sess[session]
	var last, indexed uint64
	c.gids = c.gids[:0]
	if st != nil {
		last, indexed = st.lastSeq, st.indexed
		if next > indexed && next <= last {
			from := next - indexed - 1
			c.gids = append(c.gids, st.pending[from:min(uint64(len(st.pending)), from+readChunkEvents)]...)
		}
	}
	s.mu.RUnlock()
	if st == nil {
		return false, fmt.Errorf("read session %s: %w", session, ErrSessionNotFound)
	}
	if next == 0 || next > last { // next 0: after was the largest seq there is
		return true, nil
	}
	c.buf, c.ends = c.buf[:0], c.ends[:0]
	err = s.view(func(tx *bolt.Tx) error {
		if next <= indexed {
			var err error
			if c.gids, err = indexedGIDs(tx.Bucket(bucketIdx), session, next, min(indexed, next+readChunkEvents-1), c.gids); err != nil {
				return err
			}
		}
		cur := tx.Bucket(bucketLog).Cursor()
		var prev uint64
		for i, gid := range c.gids {
			var k, v []byte
			if i > 0 && gid == prev+1 {
				k, v = cur.Next() // runs of consecutive gids: no seek
			} else {
				k, v = cur.Seek(u64key(gid))
			}
			prev = gid
			if k == nil || binary.BigEndian.Uint64(k) != gid {
				return errMissing{gid}
			}
			sess, seq, data, err := parseRecord(v)
			if err != nil {
				return err
			}
			if string(sess) != session || seq != next+uint64(i) {
				return fmt.Errorf("%w: gid %d holds %s/%d, want %s/%d", ErrCorrupt, gid, sess, seq, session, next+uint64(i))
			}
			c.buf = append(c.buf, data...)
			c.ends = append(c.ends, len(c.buf))
			if len(c.buf) >= readChunkBytes {
				break
			}
		}
		return nil
	})
	if err != nil {
		if m, ok := err.(errMissing); ok {
			// Deleted while we read, or worse.
			s.mu.RLock()
			gone := s.sess[session] == nil
			s.mu.RUnlock()
			if gone {
				return false, fmt.Errorf("read session %s: %w", session, ErrSessionNotFound)
			}
			return false, fmt.Errorf("%w: session %s: log record %d missing", ErrCorrupt, session, m.gid)
		}
		return false, fmt.Errorf("read session %s: %w", session, err)
	}
	return false, nil
}

type errMissing struct{ gid uint64 }

func (e errMissing) Error() string { return fmt.Sprintf("log record %d missing", e.gid) }

// indexedGIDs appends to gids the gids of seqs from..to (inclusive), which
// must all be in idx.
func indexedGIDs(idx *bolt.Bucket, session string, from, to uint64, gids []uint64) ([]uint64, error) {
	prefix := sessionPrefix(session)
	c := idx.Cursor()
	// The block holding from is the last one starting at or before it.
	k, v := c.Seek(idxKey(session, from))
	if k == nil || !bytes.HasPrefix(k, prefix) || binary.BigEndian.Uint64(k[len(prefix):]) > from {
		k, v = c.Prev()
	}
	seq := from
	for ; k != nil && bytes.HasPrefix(k, prefix) && seq <= to; k, v = c.Next() {
		first := binary.BigEndian.Uint64(k[len(prefix):])
		if first > seq {
			return gids, fmt.Errorf("%w: session %s: no index entry for seq %d", ErrCorrupt, session, seq)
		}
		at := first // seq of the run's first gid
		err := blockRuns(v, func(start, n uint64) error {
			if at+n > seq {
				for g := start + (seq - at); g < start+n && seq <= to; g++ {
					gids = append(gids, g)
					seq++
				}
			}
			at += n
			return nil
		})
		if err != nil {
			return gids, err
		}
	}
	if seq <= to {
		return gids, fmt.Errorf("%w: session %s: index ends before seq %d", ErrCorrupt, session, seq)
	}
	return gids, nil
}
