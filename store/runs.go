package store

import (
	"bytes"
	"context"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Runs: an agent run's record, kept beside its session's events so that
// a run is known after a restart (core/agent writes it at the run's start,
// after each step and at its end). The store does not interpret it: it is
// the controller's JSON, filed under the run's session, removed with the
// session.
//
//	runs    session 0x00 run id -> the run's record (JSON)
//	runids  run id -> session

// MaxRunID is the longest run id the store accepts, in bytes.
const MaxRunID = 64

// PutRun queues a run's record (any JSON the caller likes) to be written
// under its session, replacing what was there, and returns once it is
// queued: the outcome comes on the channel once committed. Writes are
// committed in the order they are queued, so whatever the caller gives
// the store after PutRun returns (the step's events) is committed in the
// same commit or a later one: a run's record costs no commit of its own.
// The session must exist; a run id belongs to one session for good.
func (s *Store) PutRun(ctx context.Context, session, id string, rec []byte) <-chan error {
	o := &sessionOp{store: s, id: session, done: make(chan error, 1)}
	if id == "" || len(id) > MaxRunID || bytes.IndexByte([]byte(id), 0) >= 0 {
		o.done <- fmt.Errorf("%w: run id %q", ErrInvalidRun, id)
		return o.done
	}
	rec = copyBytes(rec)
	o.fn = func(w *wtx) error {
		if w.sessions().Get([]byte(session)) == nil || w.session(session) == nil {
			return reject(fmt.Errorf("put run %s: session %s: %w", id, session, ErrSessionNotFound))
		}
		ids := w.tx.Bucket(bucketRunIDs)
		if had := ids.Get([]byte(id)); had != nil && string(had) != session {
			return reject(fmt.Errorf("put run %s: %w: it belongs to session %s", id, ErrInvalidRun, had))
		}
		if err := ids.Put([]byte(id), []byte(session)); err != nil {
			return err
		}
		return w.tx.Bucket(bucketRuns).Put(runKey(session, id), rec)
	}
	if err := ctx.Err(); err != nil {
		o.done <- err
	} else if err := s.submit(ctx, o); err != nil {
		o.done <- err
	}
	return o.done
}

// Run returns a run's record and its session, or ErrRunNotFound.
func (s *Store) Run(ctx context.Context, id string) (session string, rec []byte, err error) {
	if err := ctx.Err(); err != nil {
		return "", nil, err
	}
	err = s.view(func(tx *bolt.Tx) error {
		sess := tx.Bucket(bucketRunIDs).Get([]byte(id))
		if sess == nil {
			return fmt.Errorf("run %s: %w", id, ErrRunNotFound)
		}
		v := tx.Bucket(bucketRuns).Get(runKey(string(sess), id))
		if v == nil {
			return fmt.Errorf("%w: run %s: in runids, not in runs", ErrCorrupt, id)
		}
		session, rec = string(sess), copyBytes(v)
		return nil
	})
	return session, rec, err
}

// Runs calls fn with the records of a session's runs, or of every
// session's when session is "", in no particular order.
func (s *Store) Runs(ctx context.Context, session string, fn func(session, id string, rec []byte) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var prefix []byte
	if session != "" {
		prefix = sessionPrefix(session)
	}
	return s.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketRuns).Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			i := bytes.IndexByte(k, 0)
			if i < 0 {
				return fmt.Errorf("%w: runs key %q", ErrCorrupt, k)
			}
			if err := fn(string(k[:i]), string(k[i+1:]), copyBytes(v)); err != nil {
				return err
			}
		}
		return nil
	})
}

// deleteRuns removes a session's runs, in its deletion's commit: a
// session has few runs, unlike events, so no sweep is needed.
func (w *wtx) deleteRuns(session string) error {
	runs, ids := w.tx.Bucket(bucketRuns), w.tx.Bucket(bucketRunIDs)
	prefix := sessionPrefix(session)
	var keys [][]byte
	c := runs.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		keys = append(keys, copyBytes(k))
	}
	for _, k := range keys {
		if err := runs.Delete(k); err != nil {
			return err
		}
		if err := ids.Delete(k[len(prefix):]); err != nil {
			return err
		}
	}
	return nil
}

func runKey(session, id string) []byte {
	return append(sessionPrefix(session), id...)
}

// verifyRuns checks that runs and runids name each other and that every
// run's session exists.
func verifyRuns(tx *bolt.Tx, states map[string]sessState) error {
	runs, ids := tx.Bucket(bucketRuns), tx.Bucket(bucketRunIDs)
	if n, m := runs.Stats().KeyN, ids.Stats().KeyN; n != m {
		return fmt.Errorf("%w: %d runs, %d run ids", ErrCorrupt, n, m)
	}
	return runs.ForEach(func(k, _ []byte) error {
		i := bytes.IndexByte(k, 0)
		if i < 0 {
			return fmt.Errorf("%w: runs key %q", ErrCorrupt, k)
		}
		session, id := k[:i], k[i+1:]
		if _, ok := states[string(session)]; !ok {
			return fmt.Errorf("%w: run %s of a session not held (%s)", ErrCorrupt, id, session)
		}
		if got := ids.Get(id); string(got) != string(session) {
			return fmt.Errorf("%w: run %s: runids says session %q, runs %q", ErrCorrupt, id, got, session)
		}
		return nil
	})
}
