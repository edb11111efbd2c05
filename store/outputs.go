package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"

	bolt "go.etcd.io/bbolt"

	"github.com/harnessd/harnessd/core/trim"
)

// Spilled outputs: the full text of a command's output, of which the model
// saw a trimmed view, kept so it can be paged back by line range.
//
// An output is stored in chunks of ChunkSize bytes, each with its newline
// count in front, so ReadLines finds the chunk a line starts in from the
// counts alone and reads only the chunks the range covers.

// Limits of one output read: a page small enough for a model's context and
// for one HTTP reply.
const (
	ChunkSize    = 64 << 10 // bytes per stored chunk
	MaxReadLines = 2000     // lines one ReadLines returns at most
	MaxReadBytes = 1 << 20  // bytes one ReadLines returns at most
)

// How an OutputWriter hands its chunks to the writer goroutine: opChunks
// full chunks (512 KiB) in one op, and at most maxInflight ops waiting for
// their commit before Write waits; ops queued behind a slow commit share
// the next one. A commit in strict durability costs two
// fsyncs whatever it carries, so the bytes per commit decide a long
// output's speed: with one 64 KiB chunk per op and 4 in flight, commits
// carried about two chunks and a 1 GiB stream spilled at the disk's
// small-write rate (~23 MB/s on a disk that syncs 256 KiB writes at 100
// MB/s and streams at 337). Memory stays bounded: up to maxInflight+1
// arenas of opSize per writer, reused; an output's first arena grows with
// its first chunk, so a small output takes no more than it needs.
const (
	opChunks    = 8
	maxInflight = 3
	opSize      = opChunks * (binary.MaxVarintLen64 + ChunkSize)
)

// Outputs is the store's place for spilled outputs: a trim.OutputStore, so
// a session spills full outputs straight into bbolt. Writers are closed
// with Close, which stores what is buffered and waits for every chunk to
// be committed (idempotent). Lines come back exactly as written.
type Outputs struct{ s *Store }

var _ trim.OutputStore = (*Outputs)(nil)

// Outputs returns the store's output store.
func (s *Store) Outputs() *Outputs { return &Outputs{s} }

// Create starts a new output of session. Nothing is written until
// opChunks chunks are full or the writer is closed; an output closed with
// nothing written exists, empty.
func (o *Outputs) Create(ctx context.Context, session string) (trim.OutputWriter, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	o.s.mu.RLock()
	ok := o.s.sess[session] != nil
	o.s.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("create output of session %s: %w", session, ErrSessionNotFound)
	}
	// Numbers are handed out in memory; one is on disk once its first
	// chunk or its Close is committed, and IDs reach models only after
	// Close, so a number lost in a crash was never seen by anyone.
	n := o.s.nextOut.Add(1) - 1
	return &outputWriter{s: o.s, session: session, num: n}, nil
}

// outputID and parseOutputID convert an output number to the ID handed out.
func outputID(n uint64) string { return "o" + strconv.FormatUint(n, 10) }

func parseOutputID(id string) (uint64, bool) {
	if len(id) < 2 || id[0] != 'o' || id[1] == '0' || len(id) > 21 {
		return 0, false
	}
	for _, c := range id[1:] {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseUint(id[1:], 10, 64)
	return n, err == nil
}

type outputWriter struct {
	s       *Store
	session string
	num     uint64

	mu sync.Mutex
	// op gathers the next chunks in its arena: each chunk's bytes are
	// written after room for its header (the newline count, a uvarint),
	// which goes in front of them once the chunk is full, so the bytes are
	// copied once. cur is where the current chunk's header room starts.
	op       *chunkOp
	cur      int
	chunk    uint32 // the number of the next chunk to finish
	inflight []*chunkOp
	spare    [][]byte // arenas of committed ops, for reuse
	err      error    // first failure; every later call returns it
	closed   bool
}

func (w *outputWriter) ID() string { return outputID(w.num) }

func (w *outputWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return 0, fmt.Errorf("output %s: %w", w.ID(), ErrOutputClosed)
	}
	written := 0
	for len(p) > 0 {
		if w.err != nil {
			return written, w.err
		}
		if w.op == nil {
			w.start()
		}
		a := w.op.arena
		n := min(len(p), ChunkSize-(len(a)-w.cur-binary.MaxVarintLen64))
		w.op.arena = append(a, p[:n]...)
		p = p[n:]
		written += n
		if len(w.op.arena)-w.cur-binary.MaxVarintLen64 == ChunkSize {
			w.endChunk()
			if len(w.op.values) == opChunks {
				w.flush()
			} else {
				w.startChunk()
			}
		}
	}
	return written, w.err
}

// start begins a new op, in a spare arena if there is one. An arena grows
// as chunks come, so a small output never takes a whole op's worth.
func (w *outputWriter) start() {
	w.op = &chunkOp{session: w.session, num: w.num, first: w.chunk, done: make(chan error, 1)}
	if n := len(w.spare); n > 0 {
		w.op.arena = w.spare[n-1][:0]
		w.spare = w.spare[:n-1]
	} else if w.chunk > 0 {
		w.op.arena = make([]byte, 0, opSize)
	}
	w.startChunk()
}

// startChunk leaves room for the next chunk's header.
func (w *outputWriter) startChunk() {
	w.cur = len(w.op.arena)
	w.op.arena = append(w.op.arena, make([]byte, binary.MaxVarintLen64)...)
}

// endChunk puts the current chunk's header in front of its bytes and adds
// it to the op's values.
func (w *outputWriter) endChunk() {
	a := w.op.arena
	body := a[w.cur+binary.MaxVarintLen64:]
	var hdr [binary.MaxVarintLen64]byte
	h := binary.PutUvarint(hdr[:], uint64(bytes.Count(body, []byte{'\n'})))
	from := w.cur + binary.MaxVarintLen64 - h
	copy(a[from:], hdr[:h])
	w.op.values = append(w.op.values, [2]int{from, len(a)})
	w.chunk++
	if cap(a) < opSize && len(w.op.values) < opChunks {
		// A long output: room for the whole op at once, rather than
		// growing by appends that leave copies behind.
		w.op.arena = append(make([]byte, 0, opSize), a...)
	}
}

// flush hands the gathered chunks to the writer goroutine without waiting
// for their commit, unless maxInflight ops are already waiting. An op with
// no chunks records the output alone (an empty output).
func (w *outputWriter) flush() {
	op := w.op
	w.op = nil
	if op == nil {
		op = &chunkOp{session: w.session, num: w.num, first: w.chunk, done: make(chan error, 1)}
	}
	if len(w.inflight) >= maxInflight {
		w.wait(1)
		if w.err != nil {
			return
		}
	}
	// Not the caller's context: an output spilled while a command is being
	// interrupted must still be kept.
	if err := w.s.enqueue(context.Background(), op); err != nil {
		w.err = fmt.Errorf("output %s: %w", w.ID(), err)
		return
	}
	w.inflight = append(w.inflight, op)
}

// wait waits for the oldest n ops in flight, and keeps their arenas for
// reuse (bbolt has copied the values into its pages by the commit).
func (w *outputWriter) wait(n int) {
	for _, op := range w.inflight[:n] {
		if err := <-op.done; err != nil && w.err == nil {
			w.err = fmt.Errorf("output %s: %w", w.ID(), err)
		}
		if op.arena != nil && len(w.spare) < maxInflight {
			w.spare = append(w.spare, op.arena)
		}
		op.arena, op.values = nil, nil
	}
	w.inflight = append(w.inflight[:0], w.inflight[n:]...)
}

func (w *outputWriter) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return w.err
	}
	w.closed = true
	if w.op != nil && len(w.op.arena)-w.cur > binary.MaxVarintLen64 {
		w.endChunk() // the last, partial chunk
	}
	if w.err == nil && (w.op != nil && len(w.op.values) > 0 || w.chunk == 0) {
		w.flush() // the rest, or the record of an empty output
	}
	w.wait(len(w.inflight))
	w.op, w.spare = nil, nil
	return w.err
}

// chunkOp stores consecutive chunks of an output, numbered from first (or,
// with none, just the output's record).
type chunkOp struct {
	session string
	num     uint64
	first   uint32
	arena   []byte
	values  [][2]int // each chunk's value in arena: uvarint newline count, then the bytes
	done    chan error
}

func (o *chunkOp) weight() int      { return 1 }
func (o *chunkOp) finish(err error) { o.done <- err }

func (o *chunkOp) apply(w *wtx) error {
	if w.session(o.session) == nil {
		return reject(fmt.Errorf("session %s: %w", o.session, ErrSessionNotFound))
	}
	key := u64key(o.num)
	if w.outMeta().Get(key) == nil {
		if err := w.outMeta().Put(key, []byte(o.session)); err != nil {
			return err
		}
		if err := w.sessOut().Put(sessOutKey(o.session, o.num), nil); err != nil {
			return err
		}
	}
	for i, v := range o.values {
		if err := w.outChunk().Put(chunkKey(o.num, o.first+uint32(i)), o.arena[v[0]:v[1]]); err != nil {
			return err
		}
	}
	return nil
}

// SessionOf returns the session output id belongs to, or an error
// matching ErrOutputNotFound (or ErrInvalidOutputID).
func (o *Outputs) SessionOf(ctx context.Context, id string) (string, error) {
	num, ok := parseOutputID(id)
	if !ok {
		return "", fmt.Errorf("output %.40q: %w", id, ErrInvalidOutputID)
	}
	var session string
	err := o.s.view(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketOutMeta).Get(u64key(num))
		if v == nil {
			return fmt.Errorf("output %s: %w", id, ErrOutputNotFound)
		}
		session = string(v)
		return nil
	})
	return session, err
}

// ReadLines returns lines from..to of output id, 1-based and inclusive; to
// <= 0 or past the end means the end. It returns at most MaxReadLines lines
// and MaxReadBytes bytes, and Lines.To says where it stopped; the text is
// byte-identical to what was written, except that a single line longer than
// MaxReadBytes is cut there (at a rune boundary) and followed by a marker
// and '\n'. An empty output has no lines: from 1 returns empty Lines with
// Total 0, any other from is ErrLineRange.
//
// Only committed chunks are read: an output still being written shows what
// its writer has flushed so far.
func (o *Outputs) ReadLines(ctx context.Context, id string, from, to int) (trim.Lines, error) {
	if err := ctx.Err(); err != nil {
		return trim.Lines{}, err
	}
	num, ok := parseOutputID(id)
	if !ok {
		return trim.Lines{}, fmt.Errorf("read output %.40q: %w", id, ErrInvalidOutputID)
	}
	var lines trim.Lines
	err := o.s.view(func(tx *bolt.Tx) error {
		session := tx.Bucket(bucketOutMeta).Get(u64key(num))
		o.s.mu.RLock()
		live := session != nil && o.s.sess[string(session)] != nil
		o.s.mu.RUnlock()
		if !live {
			return fmt.Errorf("read output %s: %w", id, ErrOutputNotFound)
		}
		// The counts of every chunk: which one a line starts in, and the
		// total.
		prefix := u64key(num)
		c := tx.Bucket(bucketOutChunk).Cursor()
		var counts []uint64 // newlines in chunk i
		var lastByte byte
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			nl, w := binary.Uvarint(v)
			if w <= 0 || binary.BigEndian.Uint32(k[8:]) != uint32(len(counts)) {
				return fmt.Errorf("%w: output %s chunk %d", ErrCorrupt, id, len(counts))
			}
			counts = append(counts, nl)
			if len(v) > w {
				lastByte = v[len(v)-1]
			}
		}
		var newlines uint64
		for _, n := range counts {
			newlines += n
		}
		total := int(newlines)
		if len(counts) > 0 && lastByte != '\n' {
			total++ // a last line without '\n'
		}
		if from < 1 || to > 0 && to < from || from > total && !(total == 0 && from == 1) {
			return fmt.Errorf("read output %s lines %d-%d of %d: %w", id, from, to, total, ErrLineRange)
		}
		if to <= 0 || to > total {
			to = total
		}
		lines = trim.Lines{From: 1, To: 0, Total: total}
		if total == 0 {
			return nil
		}
		// Line from starts after the (from-1)th newline.
		skip := uint64(from - 1)
		chunk := 0
		for chunk < len(counts) && counts[chunk] < skip {
			skip -= counts[chunk]
			chunk++
		}
		pr := trim.NewPageReader((&chunkReader{c: c, prefix: prefix, chunk: uint32(chunk)}).next)
		for ; skip > 0; skip-- {
			if err := pr.SkipLine(); errors.Is(err, io.ErrUnexpectedEOF) {
				return fmt.Errorf("%w: output %s: line %d not where its counts say", ErrCorrupt, id, from)
			} else if err != nil {
				return err
			}
		}
		text, got, err := pr.Collect(to-from+1, MaxReadLines, MaxReadBytes)
		if err != nil {
			return err
		}
		lines = trim.Lines{Text: text, From: from, To: from + got - 1, Total: total}
		return nil
	})
	return lines, err
}

// chunkReader reads an output's chunks in order from one on, within a read
// transaction; it is a trim.PageReader's source.
type chunkReader struct {
	c      *bolt.Cursor
	prefix []byte
	chunk  uint32
	loaded bool
}

// next returns the next chunk's bytes (mmapped), or io.EOF after the last.
func (r *chunkReader) next() ([]byte, error) {
	if r.loaded {
		r.chunk++
	}
	r.loaded = true
	k, v := r.c.Seek(chunkKey(binary.BigEndian.Uint64(r.prefix), r.chunk))
	if k == nil || !bytes.HasPrefix(k, r.prefix) {
		return nil, io.EOF
	}
	_, w := binary.Uvarint(v)
	if w <= 0 {
		return nil, fmt.Errorf("%w: output chunk header", ErrCorrupt)
	}
	return v[w:], nil
}
