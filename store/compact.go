package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	bolt "go.etcd.io/bbolt"
)

// compactTxBytes bounds one transaction of a compaction's writes.
const compactTxBytes = 64 << 20

// Compact writes a compacted copy of the store to dst, a file that must not
// exist: every key and value, pages packed full, none of the free space
// deleted sessions left. The copy is one consistent snapshot, and the store
// stays usable meanwhile (the snapshot is one long read transaction; see
// Options.InitialMmapSize). It is also a backup. To shrink a store in
// place, use CompactFile while no daemon has it open.
func (s *Store) Compact(ctx context.Context, dst string) error {
	err := s.view(func(tx *bolt.Tx) error { return compactTx(ctx, tx, dst) })
	if err != nil {
		return fmt.Errorf("compact store %s to %s: %w", s.path, dst, err)
	}
	return nil
}

func compactTx(ctx context.Context, src *bolt.Tx, dst string) (err error) {
	if _, err := os.Stat(dst); err == nil {
		return fs.ErrExist
	}
	db, err := bolt.Open(dst, 0o600, &bolt.Options{Timeout: DefaultTimeout, FreelistType: bolt.FreelistMapType})
	if err != nil {
		return err
	}
	defer func() {
		if cerr := db.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(dst)
		}
	}()
	return src.ForEach(func(name []byte, b *bolt.Bucket) error {
		c := b.Cursor()
		k, v := c.First()
		for {
			if err := ctx.Err(); err != nil {
				return err
			}
			var size int
			err := db.Update(func(tx *bolt.Tx) error {
				out, err := tx.CreateBucketIfNotExists(name)
				if err != nil {
					return err
				}
				// Keys go in in order: full pages make the smallest file.
				out.FillPercent = 1.0
				for ; k != nil && size < compactTxBytes; k, v = c.Next() {
					if v == nil && b.Bucket(k) != nil {
						return fmt.Errorf("%w: nested bucket %q in %s", ErrFormat, k, name)
					}
					if err := out.Put(k, v); err != nil {
						return err
					}
					size += len(k) + len(v)
				}
				return nil
			})
			if err != nil || k == nil {
				return err
			}
		}
	})
}

// CompactFile compacts the store at path in place: it opens it (finishing
// any interrupted deletes), writes a compacted copy beside it, and renames
// the copy over the original. Run it while no daemon has the store open:
// the rename replaces the file under anyone who opens it meanwhile.
func CompactFile(ctx context.Context, path string, opts *Options) error {
	s, err := Open(path, opts)
	if err != nil {
		return err
	}
	tmp := path + ".compact"
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		s.Close()
		return fmt.Errorf("compact store %s: %w", path, err)
	}
	err = s.waitSwept(ctx)
	if err == nil {
		err = s.Compact(ctx, tmp)
	}
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("compact store %s: %w", path, err)
	}
	// The rename is durable once the directory is synced.
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// waitSwept waits until the sweep of deleted sessions is done.
func (s *Store) waitSwept(ctx context.Context) error {
	var waits []chan error
	o := &sessionOp{store: s, done: make(chan error, 1), fn: func(w *wtx) error { return nil }}
	o.after = func() {
		for _, id := range s.w.trash {
			c := make(chan error, 1)
			s.w.waiters[id] = append(s.w.waiters[id], c)
			waits = append(waits, c)
		}
	}
	if err := s.run(ctx, o); err != nil {
		return err
	}
	for _, c := range waits {
		select {
		case err := <-c:
			if err != nil {
				return err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// verifyLayout checks the store's own invariants in tx; states is the
// in-memory state, which must agree with the file.
func verifyLayout(ctx context.Context, tx *bolt.Tx, states map[string]sessState) error {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrCorrupt, fmt.Sprintf(format, args...))
	}
	sessions := tx.Bucket(bucketSessions)
	trash := tx.Bucket(bucketTrash)
	log := tx.Bucket(bucketLog)
	if n := sessions.Stats().KeyN; n != len(states) {
		return fail("%d sessions in the file, %d in memory", n, len(states))
	}
	for id, st := range states {
		v := sessions.Get([]byte(id))
		if v == nil {
			return fail("session %s in memory, not in the file", id)
		}
		if _, err := decodeSession(id, v); err != nil {
			return err
		}
		if trash.Get([]byte(id)) != nil {
			return fail("session %s is both live and in the trash", id)
		}
		if st.lastSeq != st.indexed+uint64(len(st.pending)) {
			return fail("session %s: last seq %d, indexed %d, %d pending", id, st.lastSeq, st.indexed, len(st.pending))
		}
	}

	if err := verifyRuns(tx, states); err != nil {
		return err
	}

	// Every seq of every session maps to a log record holding that session
	// and seq, and an event that decodes strictly.
	checkRecord := func(id string, seq, gid uint64) error {
		rec := log.Get(u64key(gid))
		if rec == nil {
			return fail("session %s seq %d: log record %d missing", id, seq, gid)
		}
		sess, rseq, data, err := parseRecord(rec)
		if err != nil {
			return err
		}
		if string(sess) != id || rseq != seq {
			return fail("log record %d holds %s/%d, want %s/%d", gid, sess, rseq, id, seq)
		}
		ev, err := decodeEvent(data)
		if err != nil {
			return fail("session %s seq %d: %v", id, seq, err)
		}
		if ev.Session != id || ev.Seq != seq {
			return fail("log record %d: event says %s/%d, want %s/%d", gid, ev.Session, ev.Seq, id, seq)
		}
		return nil
	}
	idx := tx.Bucket(bucketIdx)
	for id, st := range states {
		if err := ctx.Err(); err != nil {
			return err
		}
		prefix := sessionPrefix(id)
		seq := uint64(1)
		c := idx.Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			if first := bytesToU64(k[len(prefix):]); first != seq {
				return fail("session %s: index block starts at %d, want %d", id, first, seq)
			}
			err := blockRuns(v, func(start, n uint64) error {
				for g := start; g < start+n; g++ {
					if err := checkRecord(id, seq, g); err != nil {
						return err
					}
					seq++
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
		if seq-1 != st.indexed {
			return fail("session %s: index ends at %d, memory says %d", id, seq-1, st.indexed)
		}
		for _, g := range st.pending {
			if err := checkRecord(id, seq, g); err != nil {
				return err
			}
			seq++
		}
	}

	// No other log records, except those of sessions being swept; and
	// none below the watermark unindexed.
	var watermark uint64
	if v := tx.Bucket(bucketMeta).Get(keyIndexed); len(v) == 8 {
		watermark = bytesToU64(v)
	}
	count := make(map[string]uint64, len(states))
	err := log.ForEach(func(k, v []byte) error {
		sess, seq, _, err := parseRecord(v)
		if err != nil {
			return err
		}
		st, ok := states[string(sess)]
		if !ok {
			if trash.Get(sess) == nil {
				return fail("log record %d of unknown session %q", bytesToU64(k), sess)
			}
			return nil
		}
		count[string(sess)]++
		if gid := bytesToU64(k); gid <= watermark && seq > st.indexed {
			return fail("log record %d (%s/%d) is below the watermark %d but not indexed", gid, sess, seq, watermark)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for id, st := range states {
		if count[id] != st.lastSeq {
			return fail("session %s: %d log records for %d events", id, count[id], st.lastSeq)
		}
	}
	// Outputs belong to sessions, and their chunks are numbered from 0.
	outMeta := tx.Bucket(bucketOutMeta)
	sessOut := tx.Bucket(bucketSessOut)
	err = outMeta.ForEach(func(k, v []byte) error {
		if _, ok := states[string(v)]; !ok && trash.Get(v) == nil {
			return fail("output %d of unknown session %q", bytesToU64(k), v)
		}
		if sessOut.Get(sessOutKey(string(v), bytesToU64(k))) == nil {
			return fail("output %d missing from its session's list", bytesToU64(k))
		}
		return nil
	})
	if err != nil {
		return err
	}
	var prevOut uint64
	var nextChunk uint32
	return tx.Bucket(bucketOutChunk).ForEach(func(k, v []byte) error {
		out, chunk := bytesToU64(k[:8]), bytesToU32(k[8:])
		if out != prevOut {
			prevOut, nextChunk = out, 0
			if outMeta.Get(k[:8]) == nil {
				return fail("chunks of output %d, which has no record", out)
			}
		}
		if chunk != nextChunk {
			return fail("output %d: chunk %d, want %d", out, chunk, nextChunk)
		}
		nextChunk++
		if nl, w := uvarint(v); w <= 0 || nl != uint64(bytes.Count(v[w:], []byte{'\n'})) {
			return fail("output %d chunk %d: bad newline count", out, chunk)
		}
		return nil
	})
}
