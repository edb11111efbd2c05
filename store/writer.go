package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// op is one write waiting for the writer goroutine.
type op interface {
	// apply does the op's part of the batch's transaction. An error made
	// by reject fails this op alone and must come before it has written
	// anything; any other error aborts the whole batch.
	apply(w *wtx) error
	// finish reports the outcome, after the commit (nil) or its failure.
	// It runs on the committing goroutine and must not block.
	finish(err error)
	// weight is the number of events the op appends, for MaxBatch.
	weight() int
}

// rejection marks an op's error as its own: nothing of it was written and
// the rest of the batch goes on.
type rejection struct{ err error }

func (r *rejection) Error() string { return r.err.Error() }

func reject(err error) error { return &rejection{err} }

// writerState belongs to whoever holds Store.commitMu: the writer
// goroutine, or a caller committing its own op (submit's fast path).
type writerState struct {
	pendingSet map[string]struct{} // sessions with pending gids
	watermark  uint64              // the stored "indexed" value
	trash      []string            // deleted sessions still being swept
	waiters    map[string][]chan error
	recentOps  [8]int // ops in the last commits, to decide whether to linger
	commitNo   int
	arena      []byte
	timer      *time.Timer
	results    []error
}

// shared reports whether one of the last commits carried more than one
// op: callers overlap, and the writer should batch them.
func (w *writerState) shared() bool {
	for _, n := range w.recentOps {
		if n > 1 {
			return true
		}
	}
	return false
}

// wtx is one batch's transaction and the state it changes; the changes to
// memory are published only if the commit succeeds.
type wtx struct {
	s   *Store
	tx  *bolt.Tx
	now time.Time

	buckets [numBuckets]*bolt.Bucket // opened when first used (bucket)

	nextGID    uint64
	shadow     map[string]*sessState // sessions changed by this batch; nil: deleted
	trashAdded []string
	trashDone  []string
	arena      []byte
}

// submit queues o for the writer, or commits it on the caller's
// goroutine (see below). The context bounds only the wait for a place in
// the queue: once queued, the op is committed or fails on its own, and
// the caller must wait for its outcome, or it could not tell an event that
// was recorded from one that was not.
func (s *Store) submit(ctx context.Context, o op) error { return s.submitOp(ctx, o, true) }

// enqueue queues o for the writer goroutine, never committing it on the
// caller's: for a caller that goes on working while its op commits (an
// output's chunks, several in flight), a commit on its own goroutine,
// fsyncs included, would stall the very work the queue lets overlap.
func (s *Store) enqueue(ctx context.Context, o op) error { return s.submitOp(ctx, o, false) }

func (s *Store) submitOp(ctx context.Context, o op, inline bool) error {
	// Close takes submitMu to set closed, so once it has, every op that
	// got in is in the queue, where the writer's drain finds it.
	s.submitMu.RLock()
	defer s.submitMu.RUnlock()
	if s.closed {
		return ErrClosed
	}
	// With nothing queued, no commit under way and none of the last
	// commits shared, the caller commits its op itself: handing it to the
	// writer goroutine and being woken by it cost two wake-ups (on an idle
	// machine, sleeping CPUs woken) per commit. Once callers overlap, the
	// writer takes them all, so that they share commits (and fsyncs).
	if inline && len(s.ops) == 0 && s.commitMu.TryLock() {
		if len(s.ops) == 0 && !s.w.shared() {
			s.w.recentOps[s.w.commitNo%len(s.w.recentOps)] = 1
			s.w.commitNo++
			s.commit([]op{o})
			if len(s.w.trash) > 0 {
				select { // the writer sweeps them in the background
				case s.kick <- struct{}{}:
				default:
				}
			}
			s.commitMu.Unlock()
			return nil
		}
		s.commitMu.Unlock()
	}
	select {
	case s.ops <- o:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *Store) writer() {
	defer close(s.stopped)
	s.w.timer = time.NewTimer(time.Hour)
	s.w.timer.Stop()
	var batch []op
	for {
		batch = batch[:0]
		s.commitMu.Lock()
		sweeping := len(s.w.trash) > 0
		s.commitMu.Unlock()
		if !sweeping {
			select {
			case o := <-s.ops:
				batch = append(batch, o)
			case <-s.kick: // a caller's commit left sessions to sweep
				continue
			case <-s.quit:
				s.drain()
				return
			}
		} else {
			select { // sweeping: commit even with nothing else to do
			case o := <-s.ops:
				batch = append(batch, o)
			case <-s.quit:
				s.drain()
				return
			default:
			}
		}
		s.commitMu.Lock()
		batch = s.gather(batch)
		s.commit(batch)
		s.commitMu.Unlock()
	}
}

// gather adds whatever else is queued to batch. If recent commits had more
// callers than batch has, they are probably on their way back (woken by the
// last commit and appending again), so it waits up to Linger for them:
// under load that fills each commit, and with one caller it never waits.
func (s *Store) gather(batch []op) []op {
	events := 0
	for _, o := range batch {
		events += o.weight()
	}
	target := 0 // callers to expect: the most of the recent commits
	for _, n := range s.w.recentOps {
		target = max(target, n)
	}
	lingering := false
	for events < s.opts.MaxBatch {
		select {
		case o := <-s.ops:
			batch = append(batch, o)
			events += o.weight()
			continue
		default:
		}
		if s.opts.Linger < 0 || len(batch) >= target || len(batch) == 0 {
			break
		}
		if !lingering {
			lingering = true
			s.w.timer.Reset(s.opts.Linger)
		}
		select {
		case o := <-s.ops:
			batch = append(batch, o)
			events += o.weight()
			continue
		case <-s.w.timer.C:
		case <-s.quit:
		}
		lingering = false
		break
	}
	if lingering {
		s.w.timer.Stop()
	}
	s.w.recentOps[s.w.commitNo%len(s.w.recentOps)] = len(batch)
	s.w.commitNo++
	return batch
}

// drain commits what is still queued after Close began; no more can come.
func (s *Store) drain() {
	s.commitMu.Lock()
	defer s.commitMu.Unlock()
	for {
		var batch []op
	more:
		for len(batch) < s.opts.MaxBatch {
			select {
			case o := <-s.ops:
				batch = append(batch, o)
			default:
				break more
			}
		}
		if len(batch) == 0 {
			break
		}
		s.commit(batch)
	}
	for id, ws := range s.w.waiters {
		for _, c := range ws {
			c <- ErrClosed
		}
		delete(s.w.waiters, id)
	}
}

// commit runs one batch in one transaction and reports to each op.
func (s *Store) commit(batch []op) {
	w := &wtx{
		s:       s,
		now:     time.Now().UTC(),
		nextGID: s.nextGID,
		shadow:  make(map[string]*sessState),
		arena:   s.w.arena[:0],
	}
	begin := time.Now()
	results := s.w.results[:0]
	for range batch {
		results = append(results, nil)
	}
	err := s.db.Update(func(tx *bolt.Tx) error {
		w.tx = tx
		for i, o := range batch {
			if err := o.apply(w); err != nil {
				var r *rejection
				if errors.As(err, &r) {
					results[i] = r.err
					continue
				}
				return err
			}
		}
		if err := w.maintainIndex(); err != nil {
			return err
		}
		return w.sweep()
	})
	if cap(w.arena) <= 16<<20 { // keep the buffer, unless a huge batch grew it
		s.w.arena = w.arena[:0]
	}
	if err != nil {
		if errors.Is(err, berrors.ErrDatabaseNotOpen) {
			err = ErrClosed
		} else {
			err = fmt.Errorf("store %s: commit: %w", s.path, err)
			s.writeErr.Store(&err)
		}
		for _, o := range batch {
			o.finish(err)
		}
		return
	}

	s.commits.Add(1)
	s.writeErr.Store(nil)
	if s.opts.OnCommit != nil {
		s.opts.OnCommit(time.Since(begin), len(batch))
	}
	// Publish before reporting, so a caller's next read sees its write.
	s.mu.Lock()
	for id, st := range w.shadow {
		if st == nil {
			delete(s.sess, id)
		} else {
			s.sess[id] = st
		}
	}
	s.nextGID = w.nextGID
	s.mu.Unlock()
	for id, st := range w.shadow {
		if st != nil && len(st.pending) > 0 {
			s.w.pendingSet[id] = struct{}{}
		} else {
			delete(s.w.pendingSet, id)
		}
	}
	for i, o := range batch {
		o.finish(results[i])
	}
	s.w.results = results[:0]
	s.w.trash = append(s.w.trash, w.trashAdded...)
	for _, id := range w.trashDone {
		for i, t := range s.w.trash {
			if t == id {
				s.w.trash = append(s.w.trash[:i], s.w.trash[i+1:]...)
				break
			}
		}
		for _, c := range s.w.waiters[id] {
			c <- nil
		}
		delete(s.w.waiters, id)
	}
}

// The buckets a batch may write, by their index in wtx.buckets.
const (
	bLog = iota
	bIdx
	bSessions
	bMeta
	bTrash
	bOutMeta
	bOutChunk
	bSessOut
	numBuckets
)

var bucketNames = [numBuckets][]byte{bLog: bucketLog, bIdx: bucketIdx, bSessions: bucketSessions, bMeta: bucketMeta,
	bTrash: bucketTrash, bOutMeta: bucketOutMeta, bOutChunk: bucketOutChunk, bSessOut: bucketSessOut}

// bucket opens bucket i of the batch's transaction the first time it is
// asked for: a commit opens only the buckets its ops touch (an append,
// the log alone), where opening all eight cost each commit eight lookups
// and as many bucket structures, most of them unused.
func (w *wtx) bucket(i int) *bolt.Bucket {
	if b := w.buckets[i]; b != nil {
		return b
	}
	b := w.tx.Bucket(bucketNames[i])
	if i == bLog || i == bOutChunk {
		// The log and the chunks are appended to in key order: split
		// full pages, not half-full ones (bbolt's default suits random
		// inserts), which halves the pages each commit writes.
		b.FillPercent = 1.0
	}
	w.buckets[i] = b
	return b
}

func (w *wtx) log() *bolt.Bucket      { return w.bucket(bLog) }
func (w *wtx) idx() *bolt.Bucket      { return w.bucket(bIdx) }
func (w *wtx) sessions() *bolt.Bucket { return w.bucket(bSessions) }
func (w *wtx) meta() *bolt.Bucket     { return w.bucket(bMeta) }
func (w *wtx) trash() *bolt.Bucket    { return w.bucket(bTrash) }
func (w *wtx) outMeta() *bolt.Bucket  { return w.bucket(bOutMeta) }
func (w *wtx) outChunk() *bolt.Bucket { return w.bucket(bOutChunk) }
func (w *wtx) sessOut() *bolt.Bucket  { return w.bucket(bSessOut) }

// session returns the batch's copy of a session's state, to change; nil if
// the session does not exist (or this batch deleted it).
func (w *wtx) session(id string) *sessState {
	if st, ok := w.shadow[id]; ok {
		return st
	}
	cur := w.s.sess[id] // only this goroutine writes the map
	if cur == nil {
		return nil
	}
	// pending is shared, not copied: the published state looks only at
	// its first len(pending) gids, and this copy only appends past them
	// (or replaces the slice when it flushes).
	st := *cur
	w.shadow[id] = &st
	return &st
}

// alloc returns n bytes of the batch's arena. bbolt wants keys and values to
// stay put until the commit; slices of an arena that grew still point into
// the old array, which stays alive.
func (w *wtx) alloc(n int) []byte {
	if cap(w.arena)-len(w.arena) < n {
		w.arena = make([]byte, 0, max(2*cap(w.arena), n, 64<<10))
	}
	b := w.arena[len(w.arena) : len(w.arena)+n]
	w.arena = w.arena[:len(w.arena)+n]
	return b
}

// maintainIndex writes the index blocks that are due and the watermark.
func (w *wtx) maintainIndex() error {
	for id, st := range w.shadow {
		if st != nil && len(st.pending) >= indexBlock {
			if err := w.flush(id, st); err != nil {
				return err
			}
		}
	}
	var limit uint64
	if w.nextGID > uint64(indexWindow) {
		limit = w.nextGID - uint64(indexWindow)
	}
	oldest := w.nextGID // smallest pending gid of any session
	consider := func(id string, st *sessState) error {
		if st == nil || len(st.pending) == 0 {
			return nil
		}
		if st.pending[0] < limit {
			return w.flush(id, w.session(id))
		}
		oldest = min(oldest, st.pending[0])
		return nil
	}
	for id := range w.s.w.pendingSet {
		if _, ok := w.shadow[id]; !ok {
			if err := consider(id, w.s.sess[id]); err != nil {
				return err
			}
		}
	}
	for id, st := range w.shadow {
		if err := consider(id, st); err != nil {
			return err
		}
	}
	if mark := oldest - 1; mark != w.s.w.watermark {
		if err := w.meta().Put(keyIndexed, u64key(mark)); err != nil {
			return err
		}
		w.s.w.watermark = mark // harmless if the commit fails: only a hint
	}
	return nil
}

// flush writes a session's pending gids as one index block.
func (w *wtx) flush(id string, st *sessState) error {
	key := idxKey(id, st.indexed+1)
	val := appendBlock(nil, st.pending)
	if err := w.idx().Put(key, val); err != nil {
		return err
	}
	st.indexed += uint64(len(st.pending))
	st.pending = nil
	return nil
}

// sweep removes up to sweepBudget keys of deleted sessions.
func (w *wtx) sweep() error {
	budget := sweepBudget
	for _, id := range append(w.s.w.trash[:len(w.s.w.trash):len(w.s.w.trash)], w.trashAdded...) {
		if budget <= 0 {
			return nil
		}
		done, err := w.sweepSession(id, &budget)
		if err != nil {
			return err
		}
		if !done {
			return nil
		}
		if err := w.trash().Delete([]byte(id)); err != nil {
			return err
		}
		w.trashDone = append(w.trashDone, id)
	}
	return nil
}

// sweepSession deletes a deleted session's events, index and outputs,
// within budget; done reports whether nothing is left.
func (w *wtx) sweepSession(id string, budget *int) (done bool, err error) {
	prefix := sessionPrefix(id)
	// Keys are collected before deleting: a bbolt cursor skips after a
	// delete.
	var blocks [][]byte
	c := w.idx().Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) && *budget > 0; k, v = c.Next() {
		blocks = append(blocks, copyBytes(k))
		err := blockRuns(v, func(start, n uint64) error {
			for g := start; g < start+n; g++ {
				if err := w.log().Delete(u64key(g)); err != nil {
					return err
				}
			}
			*budget -= int(n)
			return nil
		})
		if err != nil {
			return false, err
		}
	}
	for _, k := range blocks {
		if err := w.idx().Delete(k); err != nil {
			return false, err
		}
	}
	if *budget <= 0 {
		return false, nil
	}
	var outs [][]byte
	c = w.sessOut().Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		outs = append(outs, copyBytes(k))
	}
	for _, k := range outs {
		if *budget <= 0 {
			return false, nil
		}
		out := binary.BigEndian.Uint64(k[len(prefix):])
		gone, err := w.deleteOutput(out, budget)
		if err != nil || !gone {
			return false, err
		}
		if err := w.sessOut().Delete(k); err != nil {
			return false, err
		}
	}
	return true, nil
}

// deleteOutput deletes an output's chunks within budget, and its meta once
// they are all gone.
func (w *wtx) deleteOutput(out uint64, budget *int) (gone bool, err error) {
	prefix := u64key(out)
	var keys [][]byte
	c := w.outChunk().Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		if len(keys) >= *budget {
			break
		}
		keys = append(keys, copyBytes(k))
	}
	for _, k := range keys {
		if err := w.outChunk().Delete(k); err != nil {
			return false, err
		}
	}
	*budget -= len(keys) + 1
	if k, _ := w.outChunk().Cursor().Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) {
		return false, nil
	}
	return true, w.outMeta().Delete(prefix)
}
