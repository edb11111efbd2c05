package trim

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// newStore opens a FileStore in a temporary directory and, when the test
// ends, checks every output in it: totals, entries and trailer must agree
// with the bytes on disk.
func newStore(t *testing.T) *FileStore {
	t.Helper()
	st, err := NewFileStore(filepath.Join(t.TempDir(), "outputs"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { checkStore(t, st) })
	return st
}

func checkStore(t *testing.T, st *FileStore) {
	t.Helper()
	outs, _ := filepath.Glob(filepath.Join(st.dir, "*.out"))
	for _, out := range outs {
		id := strings.TrimSuffix(filepath.Base(out), ".out")
		st.mu.Lock()
		open := st.open[id] != nil
		st.mu.Unlock()
		if open {
			continue
		}
		data, err := os.ReadFile(out)
		if err != nil {
			t.Errorf("check %s: %v", id, err)
			continue
		}
		idx, err := os.ReadFile(st.path(id, ".idx"))
		hdr := readHeader(bytes.NewReader(idx))
		if err != nil || hdr == 0 || len(idx) < int(hdr)+trailerSize ||
			!bytes.Equal(idx[len(idx)-trailerSize:][:8], trailerMagic) {
			continue // deliberately broken by a test (TestReadWithoutTrailer)
		}
		tr := idx[len(idx)-trailerSize:]
		lines := int64(bytes.Count(data, []byte{'\n'}))
		if len(data) > 0 && data[len(data)-1] != '\n' {
			lines++
		}
		if got := int64(binary.LittleEndian.Uint64(tr[8:])); got != lines {
			t.Errorf("check %s: trailer says %d lines, file has %d", id, got, lines)
		}
		if got := int64(binary.LittleEndian.Uint64(tr[16:])); got != int64(len(data)) {
			t.Errorf("check %s: trailer says %d bytes, file has %d", id, got, len(data))
		}
		entries := idx[hdr : len(idx)-trailerSize]
		if n := int64(binary.LittleEndian.Uint64(tr[24:])); n*entrySize != int64(len(entries)) {
			t.Errorf("check %s: trailer says %d entries, index has %d bytes of them", id, n, len(entries))
		}
		prevOff := int64(0)
		for i := 0; i+entrySize <= len(entries); i += entrySize {
			line := int64(binary.LittleEndian.Uint64(entries[i:]))
			off := int64(binary.LittleEndian.Uint64(entries[i+8:]))
			if off < prevOff+indexEvery || off > int64(len(data)) || data[off-1] != '\n' {
				t.Errorf("check %s: entry %d at offset %d is not a line start %d+ bytes on", id, i/entrySize, off, indexEvery)
			}
			if want := int64(bytes.Count(data[:off], []byte{'\n'})) + 1; line != want {
				t.Errorf("check %s: entry %d says line %d, offset %d starts line %d", id, i/entrySize, line, off, want)
			}
			prevOff = off
		}
	}
}

// store writes data to a new output in chunks and closes it.
func store(t *testing.T, st *FileStore, data []byte, chunk int) string {
	t.Helper()
	w, err := st.Create(context.Background(), "sess-1")
	if err != nil {
		t.Fatal(err)
	}
	writeChunks(w, data, max(chunk, 1))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := w.Write([]byte("x")); !errors.Is(err, ErrClosed) {
		t.Fatalf("Write after Close: %v", err)
	}
	return w.ID()
}

// readAll pages through an output with ReadLines(from, 0).
func readAll(t *testing.T, st *FileStore, id string) ([]byte, int) {
	t.Helper()
	var all []byte
	from, total := 1, -1
	for {
		l, err := st.ReadLines(context.Background(), id, from, 0)
		if err != nil {
			t.Fatalf("ReadLines(%d, 0): %v", from, err)
		}
		if total >= 0 && l.Total != total {
			t.Fatalf("Total changed from %d to %d", total, l.Total)
		}
		total = l.Total
		if l.From != from || l.To < from-1 {
			t.Fatalf("ReadLines(%d, 0) returned %d-%d", from, l.From, l.To)
		}
		all = append(all, l.Text...)
		if l.To >= l.Total {
			return all, total
		}
		if l.To < from {
			t.Fatalf("no progress at line %d of %d", from, l.Total)
		}
		from = l.To + 1
	}
}

func countLinesOf(b []byte) int {
	n := bytes.Count(b, []byte{'\n'})
	if len(b) > 0 && b[len(b)-1] != '\n' {
		n++
	}
	return n
}

func TestStoreRoundTrip(t *testing.T) {
	st := newStore(t)
	r := rand.New(rand.NewPCG(3, 4))
	cases := [][]byte{
		nil,
		[]byte("\n"),
		[]byte("\n\n\n"),
		[]byte("no newline at all"),
		[]byte("a\nb\nlast without newline"),
		[]byte("日本語 🙂\nséparé\n"),
		bytes.Repeat([]byte("x"), 3*indexEvery+17), // one long line, no newline
		randomOutput(r, 5000),
		randomOutput(r, 20000),
	}
	for i, data := range cases {
		for _, chunk := range []int{1 << 20, 4096, 1 + r.IntN(100)} {
			if chunk == 1 && len(data) > 10000 {
				continue
			}
			id := store(t, st, data, chunk)
			got, total := readAll(t, st, id)
			if !bytes.Equal(got, data) {
				t.Fatalf("case %d chunk %d: read back %d bytes, wrote %d", i, chunk, len(got), len(data))
			}
			if total != countLinesOf(data) {
				t.Fatalf("case %d: Total %d, want %d", i, total, countLinesOf(data))
			}
		}
	}
}

func TestReadLinesRanges(t *testing.T) {
	st := newStore(t)
	ctx := context.Background()
	id := store(t, st, []byte("one\ntwo\nthree\nfour"), 3)
	for _, tc := range []struct {
		from, to int
		want     string
		wantTo   int
		err      error
	}{
		{1, 1, "one\n", 1, nil},
		{1, 0, "one\ntwo\nthree\nfour", 4, nil},
		{2, 3, "two\nthree\n", 3, nil},
		{4, 4, "four", 4, nil},
		{4, -1, "four", 4, nil},
		{3, 99, "three\nfour", 4, nil},
		{0, 2, "", 0, ErrRange},
		{-1, 0, "", 0, ErrRange},
		{5, 0, "", 0, ErrRange},
		{3, 2, "", 0, ErrRange},
	} {
		l, err := st.ReadLines(ctx, id, tc.from, tc.to)
		if !errors.Is(err, tc.err) {
			t.Fatalf("ReadLines(%d, %d) error %v, want %v", tc.from, tc.to, err, tc.err)
		}
		if err == nil && (l.Text != tc.want || l.From != tc.from || l.To != tc.wantTo || l.Total != 4) {
			t.Fatalf("ReadLines(%d, %d) = %+v", tc.from, tc.to, l)
		}
	}

	empty := store(t, st, nil, 1)
	if l, err := st.ReadLines(ctx, empty, 1, 0); err != nil || l != (Lines{From: 1, To: 0, Total: 0}) {
		t.Fatalf("empty output: %+v, %v", l, err)
	}
	if _, err := st.ReadLines(ctx, empty, 2, 0); !errors.Is(err, ErrRange) {
		t.Fatalf("empty output from 2: %v", err)
	}

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := st.ReadLines(cctx, id, 1, 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	if _, err := st.Create(cctx, "s"); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Create: %v", err)
	}
}

func TestReadLinesBadIDs(t *testing.T) {
	st := newStore(t)
	id := store(t, st, []byte("x\n"), 1)
	if !validID(id) {
		t.Fatalf("store made an invalid id %q", id)
	}
	// A file beside the store that a traversal would reach.
	os.WriteFile(filepath.Join(filepath.Dir(st.dir), "secret.out"), []byte("secret\n"), 0o600)
	for _, bad := range []string{
		"", "../secret", "../secret.out", strings.ToUpper(id), id[:31], id + "0",
		id[:30] + "/.", "0123456789abcdef0123456789abcdeg", id[:31] + "\x00", "%2e%2e%2fsecret",
	} {
		if _, err := st.ReadLines(context.Background(), bad, 1, 0); !errors.Is(err, ErrInvalidID) {
			t.Errorf("ReadLines(%q): %v, want ErrInvalidID", bad, err)
		}
	}
	if _, err := st.ReadLines(context.Background(), strings.Repeat("0", 32), 1, 0); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown id: %v, want ErrNotFound", err)
	}
	seen := map[string]bool{}
	for range 1000 {
		id := newID()
		if seen[id] || !validID(id) {
			t.Fatalf("newID gave %q", id)
		}
		seen[id] = true
	}
}

func TestStore100kPages(t *testing.T) {
	st := newStore(t)
	data := output100k()
	id := store(t, st, data, 4096)
	got, total := readAll(t, st, id)
	if !bytes.Equal(got, data) || total != 100001 {
		t.Fatalf("read back %d bytes, %d lines", len(got), total)
	}

	// Pages are MaxReadLines long.
	l, err := st.ReadLines(context.Background(), id, 1, 0)
	if err != nil || l.To != MaxReadLines {
		t.Fatalf("first page: To %d, %v", l.To, err)
	}

	// A few lines deep inside read only a few KiB.
	before := st.bytesRead.Load()
	l, err = st.ReadLines(context.Background(), id, 99000, 99010)
	if err != nil {
		t.Fatal(err)
	}
	read := st.bytesRead.Load() - before
	var want strings.Builder
	for i := 99000; i <= 99010; i++ {
		fmt.Fprintf(&want, "log line %d\n", i-1) // the Traceback line shifts them by one
	}
	if l.Text != want.String() || l.From != 99000 || l.To != 99010 || l.Total != 100001 {
		t.Fatalf("got %+v", l)
	}
	t.Logf("lines 99000-99010 read %d bytes of the output file", read)
	if read > 12<<10 {
		t.Fatalf("read %d bytes of the output for 11 lines", read)
	}
}

func TestReadLinesByteCap(t *testing.T) {
	st := newStore(t)
	lineText := strings.Repeat("y", 999) + "\n"
	data := []byte(strings.Repeat(lineText, 3000))
	id := store(t, st, data, 1<<16)
	l, err := st.ReadLines(context.Background(), id, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if want := MaxReadBytes / len(lineText); l.To != want || len(l.Text) != want*len(lineText) {
		t.Fatalf("To %d (%d bytes), want %d lines", l.To, len(l.Text), want)
	}
}

func TestReadLinesHugeLine(t *testing.T) {
	st := newStore(t)
	huge := strings.Repeat("日", MaxReadBytes) // 3 MiB, one line
	id := store(t, st, []byte("first\n"+huge+"\nnext\n"), 1<<16)
	l, err := st.ReadLines(context.Background(), id, 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	shown := MaxReadBytes / 3 * 3 // cut at a rune boundary
	want := huge[:shown] + "… [line cut: first " + commas(int64(shown)) + " bytes shown; the line is longer than one read returns]\n"
	if l.To != 2 || l.Text != want {
		t.Fatalf("To %d, text %d bytes ending %q", l.To, len(l.Text), l.Text[max(0, len(l.Text)-80):])
	}
	before := st.bytesRead.Load()
	l, err = st.ReadLines(context.Background(), id, 3, 3)
	if err != nil || l.Text != "next\n" {
		t.Fatalf("line after the huge one: %+v, %v", l, err)
	}
	if read := st.bytesRead.Load() - before; read > 8<<10 {
		t.Fatalf("read %d bytes to reach the line after a huge one", read)
	}
	// A page that starts before a huge line stops before it.
	l, err = st.ReadLines(context.Background(), id, 1, 0)
	if err != nil || l.Text != "first\n" || l.To != 1 {
		t.Fatalf("page before the huge line: %+v, %v", l, err)
	}
}

func TestReadInProgress(t *testing.T) {
	st := newStore(t)
	ctx := context.Background()
	w, err := st.Create(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("a\nb\npart"))
	l, err := st.ReadLines(ctx, w.ID(), 2, 0)
	if err != nil || l.Text != "b\npart" || l.Total != 3 {
		t.Fatalf("in progress: %+v, %v", l, err)
	}
	data := []byte("ial\n" + string(output100k()))
	w.Write(data)
	l, err = st.ReadLines(ctx, w.ID(), 3, 3)
	if err != nil || l.Text != "partial\n" || l.Total != 100004 {
		t.Fatalf("in progress: %+v, %v", l, err)
	}
	w.Close()
	got, _ := readAll(t, st, w.ID())
	if want := "a\nb\npart" + string(data); string(got) != want {
		t.Fatalf("after close: %d bytes, want %d", len(got), len(want))
	}
}

func TestConcurrentWriters(t *testing.T) {
	st := newStore(t)
	ctx := context.Background()
	const writers = 16
	var wg sync.WaitGroup
	ids := make([]string, writers)
	datas := make([][]byte, writers)
	errs := make(chan error, writers)
	for i := range writers {
		datas[i] = randomOutput(rand.New(rand.NewPCG(uint64(i), 9)), 3000)
		wg.Go(func() {
			w, err := st.Create(ctx, fmt.Sprintf("sess-%d", i))
			if err != nil {
				errs <- err
				return
			}
			ids[i] = w.ID()
			data := datas[i]
			for k := 0; len(data) > 0; k++ {
				n := min(len(data), 1+i*37)
				if _, err := w.Write(data[:n]); err != nil {
					errs <- err
					return
				}
				data = data[n:]
				// Read our own output while it grows.
				if k%50 != 0 {
					continue
				}
				if _, err := st.ReadLines(ctx, w.ID(), 1, 5); err != nil {
					errs <- err
					return
				}
			}
			errs <- w.Close()
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for i, id := range ids {
		if got, _ := readAll(t, st, id); !bytes.Equal(got, datas[i]) {
			t.Fatalf("writer %d: output differs", i)
		}
	}
}

// A daemon that dies before Close leaves an index without trailer, maybe
// with a torn last entry; the output must still read back whole.
func TestReadWithoutTrailer(t *testing.T) {
	st := newStore(t)
	data := output100k()
	for _, tear := range []int{0, 7, trailerSize + 5} {
		w, err := st.Create(context.Background(), "s")
		if err != nil {
			t.Fatal(err)
		}
		fw := w.(*fileWriter)
		fw.Write(data)
		fw.dbuf.Flush()
		fw.ibuf.Flush()
		// Crash: no Close, the writer is gone.
		st.mu.Lock()
		delete(st.open, fw.id)
		st.mu.Unlock()
		fw.data.Close()
		fw.idx.Close()
		p := st.path(fw.id, ".idx")
		fi, _ := os.Stat(p)
		os.Truncate(p, fi.Size()-int64(tear))
		got, total := readAll(t, st, fw.id)
		if !bytes.Equal(got, data) || total != 100001 {
			t.Fatalf("tear %d: read %d bytes, %d lines", tear, len(got), total)
		}
	}
	// No index at all.
	w, _ := st.Create(context.Background(), "s")
	w.Write([]byte("a\nb"))
	w.Close()
	os.Remove(st.path(w.ID(), ".idx"))
	if l, err := st.ReadLines(context.Background(), w.ID(), 2, 0); err != nil || l.Text != "b" || l.Total != 2 {
		t.Fatalf("without index: %+v, %v", l, err)
	}
}

func TestNewFileStoreNotDir(t *testing.T) {
	f := filepath.Join(t.TempDir(), "file")
	os.WriteFile(f, nil, 0o600)
	if _, err := NewFileStore(f); err == nil {
		t.Fatal("NewFileStore on a file succeeded")
	}
}

func TestSessionHeader(t *testing.T) {
	st := newStore(t)
	w, _ := st.Create(context.Background(), "my-session")
	w.Close()
	idx, _ := os.ReadFile(st.path(w.ID(), ".idx"))
	if !bytes.Contains(idx[:readHeader(bytes.NewReader(idx))], []byte("my-session")) {
		t.Fatalf("session not in header: %q", idx)
	}
	if _, err := st.Create(context.Background(), strings.Repeat("s", 70000)); err == nil {
		t.Fatal("huge session name accepted")
	}
}
