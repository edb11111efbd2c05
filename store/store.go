package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/harnessd/harnessd/core/event"
)

// Options configures a Store. The zero value (or a nil *Options) means the
// defaults.
type Options struct {
	// Timeout is how long Open waits for another process to let go of the
	// file before failing with ErrLocked. Default 1 second; never forever.
	Timeout time.Duration

	// MaxBatch caps the events one commit carries. Default 8192.
	MaxBatch int

	// Linger is how long the writer may wait for more appends to join a
	// commit, and only when recent commits had more callers than the
	// current one has yet (they are on their way back, woken by the last
	// commit): under load it fills commits, with one caller it adds no
	// latency. Default 300µs; negative disables it. Measured with 64
	// sessions: commits carried 51 events and 40k events/s without the
	// wait, 64 events and 64k events/s with it.
	Linger time.Duration

	// InitialMmapSize is passed to bbolt: while the file fits, a long read
	// (a replay, a compaction) never makes a commit wait for a remap.
	// Default 1 GiB of address space (not memory).
	InitialMmapSize int

	// SyncEvery, when positive, is batch durability: a commit returns
	// without waiting for the disk (bbolt's NoSync), and the file is
	// fsynced this often instead. A daemon crash loses nothing (every
	// commit is in the page cache, in order); a power failure or kernel
	// crash can lose the commits of the last SyncEvery, and, as bbolt
	// warns of NoSync, may leave the file failing Verify. Zero (the
	// default) syncs every commit: strict durability.
	SyncEvery time.Duration

	// OnCommit, if set, is told how long each commit took (including its
	// sync, in strict mode) and how many operations it carried. It is
	// called on the writer goroutine and must not block.
	OnCommit func(d time.Duration, ops int)
}

// Defaults for Options.
const (
	DefaultTimeout         = time.Second
	DefaultMaxBatch        = 8192
	DefaultLinger          = 300 * time.Microsecond
	DefaultInitialMmapSize = 1 << 30
)

func (o *Options) withDefaults() Options {
	var v Options
	if o != nil {
		v = *o
	}
	if v.Timeout <= 0 {
		v.Timeout = DefaultTimeout
	}
	if v.MaxBatch <= 0 {
		v.MaxBatch = DefaultMaxBatch
	}
	if v.Linger == 0 {
		v.Linger = DefaultLinger
	}
	if v.InitialMmapSize <= 0 {
		v.InitialMmapSize = DefaultInitialMmapSize
	}
	return v
}

// Store is harnessd's bbolt file: sessions, their events, and spilled
// outputs. It is safe for concurrent use. All writes go through one writer
// goroutine that commits whatever is pending, from every session, in one
// transaction (group commit); a write returns once its transaction is
// committed, and not before.
type Store struct {
	path string
	db   *bolt.DB
	opts Options

	ops      chan op
	kick     chan struct{} // wakes the writer to sweep after a caller's own commit
	quit     chan struct{} // closed by Close: the writer drains and stops
	stopped  chan struct{} // closed by the writer when it has stopped
	closeMu  sync.Mutex    // serialises Close
	submitMu sync.RWMutex  // guards closed against submitters
	closed   bool

	// mu guards sess and nextGID for readers; only the writer goroutine
	// changes them, under mu, after a commit.
	mu      sync.RWMutex
	sess    map[string]*sessState
	nextGID uint64

	nextOut atomic.Uint64 // next output number to hand out

	commits  atomic.Uint64         // successful commits, for benchmarks and tests
	writeErr atomic.Pointer[error] // the last commit's error; nil after a success
	synced   chan struct{}         // closed when the batch-mode syncer has stopped; nil in strict mode

	// commitMu is held by whoever commits: the writer goroutine, or a
	// caller whose op found the queue empty (submit). It guards w.
	commitMu sync.Mutex
	w        writerState
}

// sessState is what the store keeps in memory about a session: its last
// committed seq and the gids of its committed events not yet in idx. A
// published sessState is never modified; the writer replaces it.
type sessState struct {
	lastSeq uint64   // last committed seq
	indexed uint64   // last seq whose gid is in idx
	pending []uint64 // gids of seqs indexed+1 … lastSeq
}

var _ event.RawLog = (*Store)(nil)

// Open opens the store at path, creating it if it does not exist, and
// recovers from a crash if the last process died mid-write. opts may be nil.
// If another process holds the file, Open fails with ErrLocked after
// opts.Timeout.
func Open(path string, opts *Options) (*Store, error) {
	o := opts.withDefaults()
	db, err := bolt.Open(path, 0o600, &bolt.Options{
		Timeout:      o.Timeout,
		FreelistType: bolt.FreelistMapType,
		// The freelist is rebuilt by scanning at Open instead of written
		// on every commit: one page less per commit, which is most of a
		// small append (etcd runs bbolt the same way).
		NoFreelistSync:  true,
		InitialMmapSize: o.InitialMmapSize,
		NoSync:          o.SyncEvery > 0,
	})
	if err != nil {
		if errors.Is(err, berrors.ErrTimeout) {
			return nil, &LockedError{Path: path, Waited: o.Timeout}
		}
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	s := &Store{
		path:    path,
		db:      db,
		opts:    o,
		ops:     make(chan op, 1024),
		kick:    make(chan struct{}, 1),
		quit:    make(chan struct{}),
		stopped: make(chan struct{}),
		sess:    make(map[string]*sessState),
	}
	s.w.pendingSet = make(map[string]struct{})
	s.w.waiters = make(map[string][]chan error)
	if err := s.load(); err != nil {
		db.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	go s.writer()
	if o.SyncEvery > 0 {
		s.synced = make(chan struct{})
		go s.syncer(o.SyncEvery)
	}
	return s, nil
}

// load prepares the buckets and rebuilds the in-memory state: every
// session's last seq, and the pending index tails from the log after the
// watermark.
func (s *Store) load() error {
	err := s.db.Update(func(tx *bolt.Tx) error {
		for _, name := range allBuckets {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return err
			}
		}
		meta := tx.Bucket(bucketMeta)
		if v := meta.Get(keyFormat); v != nil {
			f, n := binary.Uvarint(v)
			if n <= 0 || f != formatVersion {
				return fmt.Errorf("%w: format %d (this build reads %d)", ErrFormat, f, formatVersion)
			}
			return nil
		}
		if tx.Bucket(bucketLog).Stats().KeyN > 0 {
			return fmt.Errorf("%w: events but no format version", ErrFormat)
		}
		return meta.Put(keyFormat, binary.AppendUvarint(nil, formatVersion))
	})
	if err != nil {
		return err
	}
	return s.db.View(func(tx *bolt.Tx) error {
		idx := tx.Bucket(bucketIdx)
		err := tx.Bucket(bucketSessions).ForEach(func(k, _ []byte) error {
			last, err := lastIndexed(idx, string(k))
			if err != nil {
				return err
			}
			s.sess[string(k)] = &sessState{lastSeq: last, indexed: last}
			return nil
		})
		if err != nil {
			return err
		}
		var watermark uint64
		if v := tx.Bucket(bucketMeta).Get(keyIndexed); len(v) == 8 {
			watermark = binary.BigEndian.Uint64(v)
		}
		trash := tx.Bucket(bucketTrash)
		trash.ForEach(func(k, _ []byte) error {
			s.w.trash = append(s.w.trash, string(k))
			return nil
		})
		c := tx.Bucket(bucketLog).Cursor()
		if k, _ := c.Last(); k != nil {
			s.nextGID = binary.BigEndian.Uint64(k) + 1
		} else {
			s.nextGID = 1
		}
		for k, v := c.Seek(u64key(watermark + 1)); k != nil; k, v = c.Next() {
			gid := binary.BigEndian.Uint64(k)
			sess, seq, _, err := parseRecord(v)
			if err != nil {
				return fmt.Errorf("gid %d: %w", gid, err)
			}
			st := s.sess[string(sess)]
			if st == nil {
				if trash.Get(sess) != nil {
					continue // deleted; the sweep will remove it
				}
				return fmt.Errorf("%w: gid %d belongs to unknown session %q", ErrCorrupt, gid, sess)
			}
			if seq <= st.indexed {
				continue // indexed after the watermark was written
			}
			if seq != st.lastSeq+1 {
				return fmt.Errorf("%w: session %q: gid %d has seq %d after %d", ErrCorrupt, sess, gid, seq, st.lastSeq)
			}
			st.pending = append(st.pending, gid)
			st.lastSeq = seq
		}
		for id, st := range s.sess {
			if len(st.pending) > 0 {
				s.w.pendingSet[id] = struct{}{}
			}
		}
		c = tx.Bucket(bucketOutMeta).Cursor()
		if k, _ := c.Last(); k != nil {
			s.nextOut.Store(binary.BigEndian.Uint64(k) + 1)
		} else {
			s.nextOut.Store(1)
		}
		return nil
	})
}

// lastIndexed returns the last seq of session in idx, 0 if none.
func lastIndexed(idx *bolt.Bucket, session string) (uint64, error) {
	prefix := sessionPrefix(session)
	c := idx.Cursor()
	// The last block is the one before the first key past the session's
	// largest possible key.
	end := idxKey(session, ^uint64(0))
	k, v := c.Seek(end)
	if k == nil {
		k, v = c.Last()
	} else if !bytes.Equal(k, end) {
		k, v = c.Prev()
	}
	if len(k) != len(prefix)+8 || !bytes.HasPrefix(k, prefix) {
		return 0, nil
	}
	n, err := blockLen(v)
	if err != nil {
		return 0, fmt.Errorf("session %q: %w", session, err)
	}
	return binary.BigEndian.Uint64(k[len(prefix):]) + n - 1, nil
}

// Path returns the file the store is in.
func (s *Store) Path() string { return s.path }

// Close waits for the writes in flight to commit, stops the writer and
// closes the file; reads in progress are waited for by bbolt. Writes after
// Close fail with ErrClosed. Close is safe to call more than once; every
// call returns once the store is closed.
func (s *Store) Close() error {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	s.submitMu.Lock()
	already := s.closed
	s.closed = true
	s.submitMu.Unlock()
	if already {
		return nil
	}
	close(s.quit)
	<-s.stopped
	if s.synced != nil {
		<-s.synced
		if err := s.db.Sync(); err != nil {
			s.db.Close()
			return fmt.Errorf("close store %s: sync: %w", s.path, err)
		}
	}
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("close store %s: %w", s.path, err)
	}
	return nil
}

// syncer is batch durability's clock: it fsyncs the file every interval
// while commits happen, and stops when the store closes (Close syncs once
// more after it).
func (s *Store) syncer(every time.Duration) {
	defer close(s.synced)
	t := time.NewTicker(every)
	defer t.Stop()
	last := s.commits.Load()
	for {
		select {
		case <-s.quit:
			return
		case <-t.C:
		}
		if n := s.commits.Load(); n != last {
			last = n
			if err := s.db.Sync(); err != nil {
				err = fmt.Errorf("store %s: sync: %w", s.path, err)
				s.writeErr.Store(&err)
				slog.Warn("store sync failed", "path", s.path, "err", err)
			}
		}
	}
}

// WriteErr is the error of the store's last commit (or batch-mode sync)
// if it failed, nil if it succeeded: whether the store can write now, as
// far as it knows. A full disk shows here until a commit succeeds again.
func (s *Store) WriteErr() error {
	if p := s.writeErr.Load(); p != nil {
		return *p
	}
	return nil
}

// MinFreeBytes is the free space CheckWrite wants on the store's
// filesystem: an append that needs the file to grow takes new blocks, and
// an empty commit (which rewrites a meta page in place) cannot tell.
const MinFreeBytes = 4 << 20

// CheckWrite tells whether the store can write again after a failed
// commit: the filesystem has MinFreeBytes free and an empty transaction
// commits (which clears WriteErr).
func (s *Store) CheckWrite(ctx context.Context) error {
	var fs syscall.Statfs_t
	if err := syscall.Statfs(filepath.Dir(s.path), &fs); err == nil {
		if free := int64(fs.Bavail) * int64(fs.Bsize); free < MinFreeBytes {
			return fmt.Errorf("store %s: %d bytes free on its filesystem, want %d: %w", s.path, free, MinFreeBytes, syscall.ENOSPC)
		}
	}
	return s.run(ctx, &sessionOp{done: make(chan error, 1), fn: func(*wtx) error { return nil }})
}

// Verify checks the file: bbolt's own consistency check of every page, and
// the store's layout (every session's seqs contiguous from 1, every index
// entry naming a log record of that session and seq, every event decoding
// strictly, no log record, output or index entry without a session). The
// layout check runs on the writer, against the exact in-memory state, so
// appends wait while it reads the whole file: it is for tests and for
// checking a store by hand, not for a busy daemon.
func (s *Store) Verify(ctx context.Context) error {
	// bbolt's check reads the freelist, which a commit changes without a
	// lock readers take: check in a write transaction (rolled back), which
	// excludes commits.
	errRollback := errors.New("rollback")
	err := s.db.Update(func(tx *bolt.Tx) error {
		for err := range tx.Check() {
			return fmt.Errorf("%w: bbolt: %v", ErrCorrupt, err)
		}
		return errRollback
	})
	switch {
	case errors.Is(err, berrors.ErrDatabaseNotOpen):
		return ErrClosed
	case err != errRollback:
		return err
	}
	o := &sessionOp{store: s, done: make(chan error, 1)}
	o.fn = func(w *wtx) error {
		states := make(map[string]sessState, len(s.sess))
		for id, st := range s.sess {
			states[id] = *st
		}
		for id, st := range w.shadow {
			if st == nil {
				delete(states, id)
			} else {
				states[id] = *st
			}
		}
		if err := verifyLayout(ctx, w.tx, states); err != nil {
			return reject(err)
		}
		return nil
	}
	return s.run(ctx, o)
}

// view runs fn in a read transaction, mapping a closed database to
// ErrClosed.
func (s *Store) view(fn func(tx *bolt.Tx) error) error {
	err := s.db.View(fn)
	if errors.Is(err, berrors.ErrDatabaseNotOpen) {
		return ErrClosed
	}
	return err
}

// copyBytes returns b copied out of bbolt's memory map.
func copyBytes(b []byte) []byte { return append([]byte(nil), b...) }
