package trim

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
)

// Limits of one ReadLines call on a FileStore. They keep a page small
// enough for a model's context and for one HTTP reply.
const (
	MaxReadLines = 2000
	MaxReadBytes = 1 << 20
)

const (
	// indexEvery is the spacing, in bytes, of the sparse line index: an
	// entry is written at the first line start at least this far past the
	// previous one. Spacing by bytes rather than by lines bounds what one
	// ReadLines reads before its first line (about 4 KiB plus one line),
	// whatever the line lengths; it costs 16 bytes of disk per 4 KiB of
	// output (0.4%) and no memory, since entries go straight to the file.
	indexEvery = 4096

	idLen       = 32 // hex digits of a 128-bit random ID
	entrySize   = 16 // line uint64, offset uint64, little-endian
	trailerSize = 32 // trailerMagic, total lines, total bytes, entries

	writeBuf   = 64 << 10
	idxBuf     = 4 << 10
	smallIndex = 64 << 10
)

var (
	headerMagic = []byte("HDOUTIX1")
	// trailerMagic read as a little-endian line number is about 4.9e18, a
	// line number no output reaches, so a trailer is never taken for an
	// entry.
	trailerMagic = []byte("HDOUTEND")
)

// FileStore is an OutputStore keeping each output in two files of one
// directory: ID.out, the bytes exactly as written, and ID.idx, a sparse
// index of line starts with the totals, completed on Close.
//
// An output can be read while it is still being written (as far as it has
// been written). If the daemon died before Close, the index lacks its
// totals; ReadLines then counts the lines after the last index entry, so
// nothing already on disk is lost. Files are not fsynced: full outputs are
// a convenience for paging, not a record that must survive power loss.
type FileStore struct {
	dir string

	mu   sync.Mutex
	open map[string]*fileWriter // outputs not yet closed, readable in progress

	bytesRead atomic.Int64 // bytes ReadLines read from .out files; for tests
}

var _ OutputStore = (*FileStore)(nil)

// NewFileStore returns a store keeping outputs in dir, which it creates
// (mode 0700: outputs can hold secrets) if needed.
func NewFileStore(dir string) (*FileStore, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("output store %s: %w", dir, err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("output store %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("output store %s: not a directory", dir)
	}
	return &FileStore{dir: dir, open: make(map[string]*fileWriter)}, nil
}

func (s *FileStore) path(id, ext string) string { return filepath.Join(s.dir, id+ext) }

// validID reports whether id is of the form newID makes: 32 lowercase hex
// digits. Nothing else reaches a file name.
func validID(id string) bool {
	if len(id) != idLen {
		return false
	}
	for i := range len(id) {
		c := id[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// newID returns 128 random bits as hex: unguessable, URL-safe, and a valid
// file name.
func newID() string {
	var b [idLen / 2]byte
	rand.Read(b[:]) // never fails (crypto/rand, Go 1.24+)
	return hex.EncodeToString(b[:])
}

// Create starts a new output for session; session is recorded in the index
// header so an output can be attributed. Writes are buffered; Close the
// writer to complete the output.
func (s *FileStore) Create(ctx context.Context, session string) (OutputWriter, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(session) > 0xffff {
		return nil, fmt.Errorf("create output: session name of %d bytes is too long", len(session))
	}
	id := newID()
	idx, err := os.OpenFile(s.path(id, ".idx"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("create output: %w", err)
	}
	data, err := os.OpenFile(s.path(id, ".out"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		idx.Close()
		os.Remove(idx.Name())
		return nil, fmt.Errorf("create output: %w", err)
	}
	w := &fileWriter{
		store:  s,
		id:     id,
		data:   data,
		dbuf:   bufio.NewWriterSize(data, writeBuf),
		idx:    idx,
		ibuf:   bufio.NewWriterSize(idx, idxBuf),
		nextAt: indexEvery,
	}
	hdr := append([]byte(nil), headerMagic...)
	hdr = binary.LittleEndian.AppendUint16(hdr, uint16(len(session)))
	hdr = append(hdr, session...)
	w.ibuf.Write(hdr) // a bufio error is sticky and surfaces at Flush
	s.mu.Lock()
	s.open[id] = w
	s.mu.Unlock()
	return w, nil
}

// fileWriter is FileStore's OutputWriter. A mutex guards it because a
// ReadLines of the output in progress flushes it from another goroutine.
type fileWriter struct {
	store *FileStore
	id    string

	mu       sync.Mutex
	data     *os.File
	dbuf     *bufio.Writer
	idx      *os.File
	ibuf     *bufio.Writer
	off      int64 // bytes written
	lines    int64 // '\n' written
	partial  bool  // the last byte written is not '\n'
	nextAt   int64 // a line starting at or past this offset gets an entry
	entries  int64
	err      error // first write error; sticky
	closed   bool
	closeErr error
}

func (w *fileWriter) ID() string { return w.id }

// Write appends p to the output. An error is sticky: the output is then
// incomplete and later Writes fail the same way.
func (w *fileWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return 0, ErrClosed
	}
	if w.err != nil {
		return 0, w.err
	}
	n, err := w.dbuf.Write(p)
	w.account(p[:n])
	if err != nil {
		w.err = fmt.Errorf("write output %s: %w", w.id, err)
		return n, w.err
	}
	return n, nil
}

// account counts p's lines and writes index entries for the line starts in
// it that are due. Between entries it only counts newlines (vectorised), so
// the index costs next to nothing on the write path.
func (w *fileWriter) account(p []byte) {
	if len(p) == 0 {
		return
	}
	w.partial = p[len(p)-1] != '\n'
	for len(p) > 0 {
		// A '\n' at or after index target ends a line whose successor
		// starts at or past nextAt.
		target := max(w.nextAt-1-w.off, 0)
		if target >= int64(len(p)) {
			break
		}
		i := bytes.IndexByte(p[target:], '\n')
		if i < 0 {
			break
		}
		j := int(target) + i
		w.lines += int64(bytes.Count(p[:j+1], []byte{'\n'}))
		w.off += int64(j + 1)
		var e [entrySize]byte
		binary.LittleEndian.PutUint64(e[:8], uint64(w.lines+1))
		binary.LittleEndian.PutUint64(e[8:], uint64(w.off))
		w.ibuf.Write(e[:])
		w.entries++
		w.nextAt = w.off + indexEvery
		p = p[j+1:]
	}
	w.lines += int64(bytes.Count(p, []byte{'\n'}))
	w.off += int64(len(p))
}

func (w *fileWriter) totalLines() int64 {
	if w.partial {
		return w.lines + 1
	}
	return w.lines
}

// Close flushes the output and writes the index trailer. It is idempotent
// and returns the same error each time. After a write error no trailer is
// written, so readers count what actually reached the file.
func (w *fileWriter) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return w.closeErr
	}
	w.closed = true
	errs := []error{w.err}
	if w.err == nil {
		errs = append(errs, w.dbuf.Flush())
	}
	if w.err == nil && errs[1] == nil {
		t := append([]byte(nil), trailerMagic...)
		t = binary.LittleEndian.AppendUint64(t, uint64(w.totalLines()))
		t = binary.LittleEndian.AppendUint64(t, uint64(w.off))
		t = binary.LittleEndian.AppendUint64(t, uint64(w.entries))
		w.ibuf.Write(t)
	}
	errs = append(errs, w.ibuf.Flush(), w.data.Close(), w.idx.Close())
	if err := errors.Join(errs...); err != nil {
		w.closeErr = fmt.Errorf("close output %s: %w", w.id, err)
	}
	w.store.mu.Lock()
	delete(w.store.open, w.id)
	w.store.mu.Unlock()
	return w.closeErr
}

// snapshot flushes an output in progress so a reader sees all of it so far.
// ok is false once the writer is closed: the files are then complete.
func (w *fileWriter) snapshot() (m outMeta, ok bool, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return outMeta{}, false, nil
	}
	if err := w.dbuf.Flush(); err != nil {
		return outMeta{}, true, fmt.Errorf("flush output %s: %w", w.id, err)
	}
	if err := w.ibuf.Flush(); err != nil {
		return outMeta{}, true, fmt.Errorf("flush output index %s: %w", w.id, err)
	}
	return outMeta{lines: w.totalLines(), size: w.off, entries: w.entries}, true, nil
}

// outMeta describes an output for reading.
type outMeta struct {
	lines   int64 // total lines
	size    int64 // total bytes
	entries int64 // index entries usable (their offsets are <= size)
	hdr     int64 // index header length: entry i is at hdr + i*entrySize
	idx     io.ReaderAt
}

func (m *outMeta) entry(i int64) (line, off int64, err error) {
	var e [entrySize]byte
	if _, err := m.idx.ReadAt(e[:], m.hdr+i*entrySize); err != nil {
		return 0, 0, err
	}
	return int64(binary.LittleEndian.Uint64(e[:8])), int64(binary.LittleEndian.Uint64(e[8:])), nil
}

// ReadLines returns lines from..to (1-based, inclusive; to <= 0 means the
// end; a to past the end is taken as the end) of output id. It returns at
// most MaxReadLines lines and MaxReadBytes bytes; Lines.To says where it
// stopped. The text is byte-identical to what was written, with one
// exception: a single line longer than MaxReadBytes is returned cut to
// MaxReadBytes (at a rune boundary) followed by a marker and '\n'.
//
// It reads only the index entries it needs and the bytes from the nearest
// index entry before from (at most about 4 KiB early) up to the last line
// returned. An empty output has no lines: from 1 returns empty Lines with
// Total 0, any other from is ErrRange.
func (s *FileStore) ReadLines(ctx context.Context, id string, from, to int) (Lines, error) {
	if err := ctx.Err(); err != nil {
		return Lines{}, err
	}
	if !validID(id) {
		return Lines{}, fmt.Errorf("read output %.40q: %w", id, ErrInvalidID)
	}
	data, err := os.Open(s.path(id, ".out"))
	if errors.Is(err, fs.ErrNotExist) {
		return Lines{}, fmt.Errorf("read output %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return Lines{}, fmt.Errorf("read output %s: %w", id, err)
	}
	defer data.Close()
	idx, err := os.Open(s.path(id, ".idx"))
	if err == nil {
		defer idx.Close()
	}
	m, err := s.meta(ctx, id, data, idx)
	if err != nil {
		return Lines{}, err
	}

	total := int(m.lines)
	if from < 1 || to > 0 && to < from || from > total && !(total == 0 && from == 1) {
		return Lines{}, fmt.Errorf("read output %s lines %d-%d of %d: %w", id, from, to, total, ErrRange)
	}
	if to <= 0 || to > total {
		to = total
	}
	if total == 0 {
		return Lines{From: 1, To: 0, Total: 0}, nil
	}

	// Start at the last index entry at or before from.
	var searchErr error
	i := sort.Search(int(m.entries), func(i int) bool {
		line, _, err := m.entry(int64(i))
		if err != nil {
			searchErr = err
			return true
		}
		return line > int64(from)
	})
	if searchErr != nil {
		return Lines{}, fmt.Errorf("read output index %s: %w", id, searchErr)
	}
	startLine, startOff := int64(1), int64(0)
	if i > 0 {
		if startLine, startOff, err = m.entry(int64(i - 1)); err != nil {
			return Lines{}, fmt.Errorf("read output index %s: %w", id, err)
		}
	}

	sc := &lineScanner{ctx: ctx, r: data, pos: startOff, end: m.size, read: &s.bytesRead}
	pr := NewPageReader(sc.next)
	for line := startLine; line < int64(from); line++ {
		if err := pr.SkipLine(); err != nil {
			return Lines{}, fmt.Errorf("read output %s: %w", id, err)
		}
	}
	text, got, err := pr.Collect(to-from+1, MaxReadLines, MaxReadBytes)
	if err != nil {
		return Lines{}, fmt.Errorf("read output %s: %w", id, err)
	}
	return Lines{Text: text, From: from, To: from + got - 1, Total: total}, nil
}

// meta finds an output's totals: from its writer if it is still open, from
// the index trailer if it was closed, else (the writer died) by counting
// the lines after the last usable index entry.
func (s *FileStore) meta(ctx context.Context, id string, data *os.File, idx *os.File) (outMeta, error) {
	s.mu.Lock()
	w := s.open[id]
	s.mu.Unlock()
	var live outMeta
	open := false
	if w != nil {
		var err error
		// Flush first, so the header and entries below are on disk. If the
		// writer closed meanwhile, the trailer is there now.
		if live, open, err = w.snapshot(); err != nil {
			return outMeta{}, err
		}
	}
	var hdr, idxSize int64
	var ir io.ReaderAt = bytes.NewReader(nil)
	if idx != nil {
		if fi, err := idx.Stat(); err == nil {
			idxSize = fi.Size()
		}
		ir = idx
		// An index up to 64 KiB (outputs up to about 16 MiB) is read in one
		// call; a binary search of preads would cost a syscall per step.
		if idxSize <= smallIndex {
			buf := make([]byte, idxSize)
			n, _ := idx.ReadAt(buf, 0)
			idxSize = int64(n)
			ir = bytes.NewReader(buf[:n])
		}
		hdr = readHeader(ir)
	}
	if open {
		if hdr == 0 {
			return outMeta{}, fmt.Errorf("read output %s: index missing", id)
		}
		live.hdr, live.idx = hdr, ir
		return live, nil
	}
	fi, err := data.Stat()
	if err != nil {
		return outMeta{}, fmt.Errorf("read output %s: %w", id, err)
	}
	size := fi.Size()
	if hdr == 0 {
		// No usable index: count everything.
		m := outMeta{size: size, idx: bytes.NewReader(nil)}
		n, err := countLines(ctx, data, 0, size, &s.bytesRead)
		m.lines = n
		return m, err
	}
	m := outMeta{size: size, hdr: hdr, idx: ir}
	if tr := idxSize - trailerSize; tr >= hdr && (tr-hdr)%entrySize == 0 {
		var t [trailerSize]byte
		if _, err := ir.ReadAt(t[:], tr); err == nil && bytes.Equal(t[:8], trailerMagic) {
			m.lines = int64(binary.LittleEndian.Uint64(t[8:16]))
			m.entries = int64(binary.LittleEndian.Uint64(t[24:32]))
			if int64(binary.LittleEndian.Uint64(t[16:24])) == size && m.entries == (tr-hdr)/entrySize {
				return m, nil
			}
		}
	}
	// No trailer: the writer never closed. Use the entries that point into
	// the data actually on disk (index and data are flushed independently)
	// and count the lines after the last of them.
	n := (idxSize - hdr) / entrySize
	var searchErr error
	m.entries = int64(sort.Search(int(n), func(i int) bool {
		_, off, err := m.entry(int64(i))
		if err != nil {
			searchErr = err
			return true
		}
		return off > size
	}))
	if searchErr != nil {
		return outMeta{}, fmt.Errorf("read output index %s: %w", id, searchErr)
	}
	line, off := int64(1), int64(0)
	if m.entries > 0 {
		if line, off, err = m.entry(m.entries - 1); err != nil {
			return outMeta{}, fmt.Errorf("read output index %s: %w", id, err)
		}
	}
	rest, err := countLines(ctx, data, off, size, &s.bytesRead)
	m.lines = line - 1 + rest
	return m, err
}

// readHeader returns the length of idx's header, or 0 if it has none.
func readHeader(idx io.ReaderAt) int64 {
	var h [10]byte
	if _, err := idx.ReadAt(h[:], 0); err != nil || !bytes.Equal(h[:8], headerMagic) {
		return 0
	}
	return 10 + int64(binary.LittleEndian.Uint16(h[8:]))
}

// countLines counts the lines in r[off:end], a last line without '\n'
// included.
func countLines(ctx context.Context, r io.ReaderAt, off, end int64, read *atomic.Int64) (int64, error) {
	sc := &lineScanner{ctx: ctx, r: r, pos: off, end: end, read: read}
	var n int64
	last := byte('\n')
	for {
		p, err := sc.next()
		if err == io.EOF {
			break
		} else if err != nil {
			return 0, err
		}
		n += int64(bytes.Count(p, []byte{'\n'}))
		last = p[len(p)-1]
	}
	if last != '\n' {
		n++
	}
	return n, nil
}

// lineScanner reads r[pos:end] in chunks that start small (a ReadLines of a
// few lines reads a few KiB) and grow for long reads.
type lineScanner struct {
	ctx  context.Context
	r    io.ReaderAt
	pos  int64 // file offset after data
	end  int64
	buf  []byte
	read *atomic.Int64
}

const (
	scanFirst = 4 << 10
	scanMax   = 64 << 10
)

// next reads the next chunk; io.EOF at end. It is a PageReader's source.
func (sc *lineScanner) next() ([]byte, error) {
	if err := sc.ctx.Err(); err != nil {
		return nil, err
	}
	if sc.pos >= sc.end {
		return nil, io.EOF
	}
	switch {
	case sc.buf == nil:
		sc.buf = make([]byte, scanFirst)
	case len(sc.buf) < scanMax:
		sc.buf = make([]byte, 2*len(sc.buf))
	}
	n := int(min(int64(len(sc.buf)), sc.end-sc.pos))
	n, err := sc.r.ReadAt(sc.buf[:n], sc.pos)
	sc.read.Add(int64(n))
	if n == 0 {
		if err == nil || err == io.EOF {
			return nil, io.ErrUnexpectedEOF // the file is shorter than its index says
		}
		return nil, err
	}
	sc.pos += int64(n)
	return sc.buf[:n], nil
}
