package store

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"time"

	"github.com/harnessd/harnessd/core/event"
	"github.com/harnessd/harnessd/core/session/record"
	bolt "go.etcd.io/bbolt"
)

// Session is a session's metadata as the store keeps it: the record that
// core declares, so the store implements record.Catalog.
type Session = record.Session

var _ record.Catalog = (*Store)(nil)

func encodeSession(s *Session) ([]byte, error) {
	c := *s
	c.LastSeq = 0
	return json.Marshal(c)
}

func decodeSession(id string, b []byte) (Session, error) {
	var sess Session
	if err := json.Unmarshal(b, &sess); err != nil {
		return Session{}, fmt.Errorf("%w: session %s record: %v", ErrCorrupt, id, err)
	}
	return sess, nil
}

// CreateSession records a new session. ID is required (see MaxSessionID);
// Created defaults to now. It fails with ErrSessionExists if the id is in
// use or still being swept after a delete.
func (s *Store) CreateSession(ctx context.Context, sess Session) (Session, error) {
	sess, _, err := s.CreateSessionWith(ctx, sess)
	return sess, err
}

// CreateSessionWith records a new session and its first events in one
// commit, as CreateSession and then Append would in two: a session whose
// start is already known (a warm sandbox's sandbox_started) costs one
// fsync, and is never seen without its first events. A bad event fails
// the whole create, recording nothing.
func (s *Store) CreateSessionWith(ctx context.Context, sess Session, evs ...event.Event) (Session, []event.Event, error) {
	if err := checkSessionID(sess.ID); err != nil {
		return Session{}, nil, err
	}
	if sess.Created.IsZero() {
		sess.Created = time.Now()
	}
	sess.Created = sess.Created.UTC()
	if !sess.Ended.IsZero() {
		sess.Ended = sess.Ended.UTC()
	}
	sess.Labels = maps.Clone(sess.Labels)
	sess.LastSeq = 0
	var first *appendOp
	if len(evs) > 0 {
		first = &appendOp{session: sess.ID, evs: evs, out: make([]event.Event, len(evs))}
	}
	o := &sessionOp{id: sess.ID, done: make(chan error, 1), fn: func(w *wtx) error {
		if w.session(sess.ID) != nil || w.sessions().Get([]byte(sess.ID)) != nil {
			return reject(fmt.Errorf("create session %s: %w", sess.ID, ErrSessionExists))
		}
		if w.trash().Get([]byte(sess.ID)) != nil {
			return reject(fmt.Errorf("create session %s: %w (its deletion is still being swept)", sess.ID, ErrSessionExists))
		}
		rec, err := encodeSession(&sess)
		if err != nil {
			return reject(fmt.Errorf("create session %s: %w: %v", sess.ID, ErrInvalidSession, err))
		}
		w.shadow[sess.ID] = &sessState{}
		if first != nil {
			// The events are encoded before anything is written; a bad
			// one is rejected with nothing of this op in the file.
			if err := first.apply(w); err != nil {
				delete(w.shadow, sess.ID)
				return err
			}
		}
		return w.sessions().Put([]byte(sess.ID), rec)
	}}
	if err := s.run(ctx, o); err != nil {
		return Session{}, nil, err
	}
	if first != nil {
		sess.LastSeq = first.out[len(first.out)-1].Seq
		return sess, first.out, nil
	}
	return sess, nil, nil
}

// Session returns a session's metadata.
func (s *Store) Session(ctx context.Context, id string) (Session, error) {
	if err := ctx.Err(); err != nil {
		return Session{}, err
	}
	var sess Session
	err := s.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketSessions).Get([]byte(id))
		if b == nil {
			return fmt.Errorf("session %s: %w", id, ErrSessionNotFound)
		}
		var err error
		sess, err = decodeSession(id, b)
		return err
	})
	if err != nil {
		return Session{}, err
	}
	sess.LastSeq = s.lastSeq(id)
	return sess, nil
}

// Sessions returns every session's metadata, ordered by id.
func (s *Store) Sessions(ctx context.Context) ([]Session, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []Session
	err := s.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketSessions).ForEach(func(k, v []byte) error {
			sess, err := decodeSession(string(k), v)
			out = append(out, sess)
			return err
		})
	})
	if err != nil {
		return nil, err
	}
	for i := range out {
		out[i].LastSeq = s.lastSeq(out[i].ID)
	}
	return out, nil
}

func (s *Store) lastSeq(id string) uint64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if st := s.sess[id]; st != nil {
		return st.lastSeq
	}
	return 0
}

// UpdateSession changes a session's metadata: fn gets the current record
// and changes it in place; its ID cannot change. fn runs on the store's
// writer, inside the commit of every session's appends: it must be quick
// and must not call the store. An error from fn is returned and nothing is
// written.
func (s *Store) UpdateSession(ctx context.Context, id string, fn func(*Session) error) (Session, error) {
	var sess Session
	o := &sessionOp{id: id, done: make(chan error, 1), fn: func(w *wtx) error {
		b := w.sessions().Get([]byte(id))
		if b == nil || w.session(id) == nil {
			return reject(fmt.Errorf("update session %s: %w", id, ErrSessionNotFound))
		}
		cur, err := decodeSession(id, b)
		if err != nil {
			return reject(err)
		}
		if err := fn(&cur); err != nil {
			return reject(err)
		}
		if cur.ID != id {
			return reject(fmt.Errorf("update session %s: %w: the id cannot change (to %q)", id, ErrInvalidSession, cur.ID))
		}
		cur.Created = cur.Created.UTC()
		if !cur.Ended.IsZero() {
			cur.Ended = cur.Ended.UTC()
		}
		rec, err := encodeSession(&cur)
		if err != nil {
			return reject(fmt.Errorf("update session %s: %w: %v", id, ErrInvalidSession, err))
		}
		sess = cur
		return w.sessions().Put([]byte(id), rec)
	}}
	if err := s.run(ctx, o); err != nil {
		return Session{}, err
	}
	sess.LastSeq = s.lastSeq(id)
	return sess, nil
}

// DeleteSession deletes a session with its events and outputs. The session
// is gone (reads fail with ErrSessionNotFound) once the first commit is
// done; its data is then swept a few thousand keys per commit, so that
// deleting a long session never holds up other sessions' appends for long,
// and DeleteSession returns when the sweep is done. If ctx ends first, it
// returns ctx.Err() and the sweep goes on; if the store is closed first,
// the next Open resumes it. The file does not shrink: see Compact.
func (s *Store) DeleteSession(ctx context.Context, id string) error {
	swept := make(chan error, 1)
	o := &sessionOp{id: id, done: make(chan error, 1), swept: swept, fn: func(w *wtx) error {
		st := w.session(id)
		if st == nil {
			return reject(fmt.Errorf("delete session %s: %w", id, ErrSessionNotFound))
		}
		// Index the pending tail, so the sweep (after a crash, too) finds
		// every event through idx.
		if len(st.pending) > 0 {
			if err := w.flush(id, st); err != nil {
				return err
			}
		}
		if err := w.sessions().Delete([]byte(id)); err != nil {
			return err
		}
		if err := w.deleteRuns(id); err != nil {
			return err
		}
		if err := w.trash().Put([]byte(id), nil); err != nil {
			return err
		}
		w.shadow[id] = nil
		w.trashAdded = append(w.trashAdded, id)
		return nil
	}}
	if err := s.run(ctx, o); err != nil {
		return err
	}
	select {
	case err := <-swept:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// sessionOp is a write of session metadata.
type sessionOp struct {
	store *Store
	id    string
	fn    func(w *wtx) error
	done  chan error
	swept chan error // DeleteSession: told when the sweep is done
	after func()     // run on the writer goroutine after a successful commit
}

func (o *sessionOp) apply(w *wtx) error { return o.fn(w) }
func (o *sessionOp) weight() int        { return 0 }
func (o *sessionOp) finish(err error) {
	if err == nil && o.swept != nil {
		// On the writer goroutine, before this batch's sweep results are
		// handed out, so a sweep done in the same commit is not missed.
		o.store.w.waiters[o.id] = append(o.store.w.waiters[o.id], o.swept)
	}
	if err == nil && o.after != nil {
		o.after()
	}
	o.done <- err
}

// run submits o and waits for its commit.
func (s *Store) run(ctx context.Context, o *sessionOp) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	o.store = s
	if err := s.submit(ctx, o); err != nil {
		return err
	}
	return <-o.done
}
