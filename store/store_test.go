package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/harnessd/harnessd/core/event"
)

func TestAppendRead(t *testing.T) {
	s := openTest(t, nil)
	ctx := t.Context()
	mustCreate(t, s, "s1")
	var acked []event.Event
	for i := range 10 {
		out, err := s.Append(ctx, "s1", cmd(i))
		if err != nil {
			t.Fatal(err)
		}
		acked = append(acked, out...)
	}
	at := time.Date(2024, 5, 6, 7, 8, 9, 10, time.FixedZone("x", 3600))
	out, err := s.Append(ctx, "s1",
		event.Event{Source: event.SourceRuntime, Cause: 10, Time: at, Payload: event.CmdOutput{ExitCode: 1, Output: "boom\n"}},
		event.Event{Source: event.SourceAgent, Seq: 999, Session: "ignored", Payload: event.Finish{Message: "bye"}},
	)
	if err != nil {
		t.Fatal(err)
	}
	acked = append(acked, out...)
	for i, ev := range acked {
		if ev.Seq != uint64(i+1) || ev.Session != "s1" || ev.V != event.Version || ev.Time.IsZero() || ev.Time.Location() != time.UTC {
			t.Fatalf("acked[%d] = %+v", i, ev)
		}
	}
	if !acked[10].Time.Equal(at) {
		t.Errorf("given time %v became %v", at, acked[10].Time)
	}
	if got := readAll(t, s, "s1", 0); !reflect.DeepEqual(got, acked) {
		t.Fatalf("read back\n%+v\nwant\n%+v", got, acked)
	}
	if got := readAll(t, s, "s1", 7); len(got) != 5 || got[0].Seq != 8 {
		t.Fatalf("read after 7: %d events from %d", len(got), got[0].Seq)
	}
	if got := readAll(t, s, "s1", 12); len(got) != 0 {
		t.Fatalf("read after the end: %d events", len(got))
	}
	if n, err := s.LastSeq(ctx, "s1"); n != 12 || err != nil {
		t.Fatalf("LastSeq = %d, %v", n, err)
	}
	// The stored bytes are exactly the events' encoding.
	i := 0
	err = s.ReadRaw(ctx, "s1", 0, func(seq uint64, data []byte) error {
		want, _ := acked[i].AppendJSON(nil)
		if seq != acked[i].Seq || !bytes.Equal(data, want) {
			t.Errorf("raw %d = %s, want %s", seq, data, want)
		}
		i++
		return nil
	})
	if err != nil || i != 12 {
		t.Fatalf("ReadRaw: %v after %d", err, i)
	}
	// A stopped read returns fn's error.
	stop := errors.New("stop")
	if err := s.Read(ctx, "s1", 0, func(event.Event) error { return stop }); err != stop {
		t.Fatalf("Read = %v, want fn's error", err)
	}
}

func TestAppendRejects(t *testing.T) {
	s := openTest(t, nil)
	ctx := t.Context()
	mustCreate(t, s, "s1")
	if _, err := s.Append(ctx, "nope", cmd(0)); !errors.Is(err, ErrSessionNotFound) {
		t.Fatalf("append to unknown session: %v", err)
	}
	if err := s.Read(ctx, "nope", 0, nil); !errors.Is(err, ErrSessionNotFound) {
		t.Fatalf("read of unknown session: %v", err)
	}
	bad := []event.Event{
		{Payload: event.Message{Text: "no source"}},
		{Source: event.SourceAgent},
		{Source: "robot", Payload: event.Finish{}},
		{Source: event.SourceAgent, Payload: event.CmdRun{TimeoutS: inf()}},
	}
	// A bad event in a batch fails the whole call, and only that call,
	// even when it shares a commit with good ones.
	var wg sync.WaitGroup
	for _, b := range bad {
		wg.Go(func() {
			if _, err := s.Append(ctx, "s1", cmd(0), b); !errors.Is(err, ErrInvalidEvent) {
				t.Errorf("Append(%+v) = %v, want ErrInvalidEvent", b, err)
			}
		})
		wg.Go(func() {
			if _, err := s.Append(ctx, "s1", cmd(1)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	got := readAll(t, s, "s1", 0)
	if len(got) != len(bad) {
		t.Fatalf("%d events stored, want %d", len(got), len(bad))
	}
	for _, ev := range got {
		if ev.Payload.(event.CmdRun).Command != "echo 1" {
			t.Fatalf("stored %+v", ev)
		}
	}
	if out, err := s.Append(ctx, "s1"); out != nil || err != nil {
		t.Fatalf("empty Append = %v, %v", out, err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Append(cctx, "s1", cmd(0)); !errors.Is(err, context.Canceled) {
		t.Fatalf("Append with a cancelled context: %v", err)
	}
}

func inf() float64 { var z float64; return 1 / z }

// The lazy index, across many block flushes, window flushes and reopens,
// with sessions interleaved in every commit.
func TestLazyIndexAcrossReopen(t *testing.T) {
	small(t, 4, 24, 5)
	s := openTest(t, nil)
	ctx := t.Context()
	const sessions = 6
	want := map[string][]event.Event{}
	for i := range sessions {
		mustCreate(t, s, fmt.Sprint("s", i))
	}
	for round := range 5 {
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i := range sessions {
			id := fmt.Sprint("s", i)
			wg.Go(func() {
				// Session i appends i+1 times per round: some fill blocks,
				// some only ever flush by the window.
				for k := range i + 1 {
					n := 1 + k%3
					var evs []event.Event
					for j := range n {
						evs = append(evs, cmd(round*100+k*10+j))
					}
					out, err := s.Append(ctx, id, evs...)
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					want[id] = append(want[id], out...)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		for id, evs := range want {
			if got := readAll(t, s, id, 0); !reflect.DeepEqual(got, evs) {
				t.Fatalf("round %d: %s: read %d events, want %d", round, id, len(got), len(evs))
			}
			for _, after := range []uint64{1, 3, 4, 5, uint64(len(evs)) - 1} {
				if after >= uint64(len(evs)) {
					continue
				}
				if got := readAll(t, s, id, after); !reflect.DeepEqual(got, evs[after:]) {
					t.Fatalf("round %d: %s after %d: %d events", round, id, after, len(got))
				}
			}
		}
		if err := s.Verify(ctx); err != nil {
			t.Fatal(err)
		}
		s = reopen(t, s, nil)
	}
}

func TestConcurrentSessions(t *testing.T) {
	s := openTest(t, nil)
	ctx := t.Context()
	const sessions, each = 16, 150
	var wg sync.WaitGroup
	for i := range sessions {
		id := fmt.Sprint("sess-", i)
		mustCreate(t, s, id)
		wg.Go(func() {
			for k := range each {
				out, err := s.Append(ctx, id, cmd(k))
				if err != nil {
					t.Error(err)
					return
				}
				if out[0].Seq != uint64(k+1) {
					t.Errorf("%s: seq %d, want %d", id, out[0].Seq, k+1)
				}
			}
		})
	}
	wg.Wait()
	for i := range sessions {
		got := readAll(t, s, fmt.Sprint("sess-", i), 0)
		if len(got) != each {
			t.Fatalf("%d events", len(got))
		}
		for k, ev := range got {
			if ev.Seq != uint64(k+1) || ev.Payload.(event.CmdRun).Command != fmt.Sprintf("echo %d", k) {
				t.Fatalf("event %d = %+v", k, ev)
			}
		}
	}
}

func TestSessions(t *testing.T) {
	s := openTest(t, nil)
	ctx := t.Context()
	created := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	got, err := s.CreateSession(ctx, Session{ID: "b", State: "starting", Created: created, Labels: map[string]string{"task": "x"}})
	if err != nil || got.ID != "b" || !got.Created.Equal(created) {
		t.Fatalf("CreateSession = %+v, %v", got, err)
	}
	if _, err := s.CreateSession(ctx, Session{ID: "b"}); !errors.Is(err, ErrSessionExists) {
		t.Fatalf("create twice: %v", err)
	}
	for _, id := range []string{"", "a/b", "a\x00b", "tab\t", string(make([]byte, MaxSessionID+1)), "\xff"} {
		if _, err := s.CreateSession(ctx, Session{ID: id}); !errors.Is(err, ErrInvalidSession) {
			t.Errorf("create %q: %v", id, err)
		}
	}
	mustCreate(t, s, "a")
	s.Append(ctx, "a", cmd(1), cmd(2))
	list, err := s.Sessions(ctx)
	if err != nil || len(list) != 2 || list[0].ID != "a" || list[0].LastSeq != 2 || list[1].Labels["task"] != "x" {
		t.Fatalf("Sessions = %+v, %v", list, err)
	}
	ended := time.Now()
	up, err := s.UpdateSession(ctx, "b", func(sess *Session) error {
		sess.State, sess.Ended = "stopped", ended
		return nil
	})
	if err != nil || up.State != "stopped" || !up.Ended.Equal(ended) {
		t.Fatalf("UpdateSession = %+v, %v", up, err)
	}
	if _, err := s.UpdateSession(ctx, "b", func(sess *Session) error { sess.ID = "c"; return nil }); !errors.Is(err, ErrInvalidSession) {
		t.Fatalf("changing the id: %v", err)
	}
	boom := errors.New("no")
	if _, err := s.UpdateSession(ctx, "b", func(*Session) error { return boom }); err != boom {
		t.Fatalf("fn's error: %v", err)
	}
	if _, err := s.UpdateSession(ctx, "zz", func(*Session) error { return nil }); !errors.Is(err, ErrSessionNotFound) {
		t.Fatalf("update unknown: %v", err)
	}
	s = reopen(t, s, nil)
	b, err := s.Session(ctx, "b")
	if err != nil || b.State != "stopped" || !b.Ended.Equal(ended) || !b.Created.Equal(created) || b.Labels["task"] != "x" {
		t.Fatalf("after reopen: %+v, %v", b, err)
	}
	if a, _ := s.Session(ctx, "a"); a.LastSeq != 2 {
		t.Fatalf("LastSeq after reopen = %d", a.LastSeq)
	}
	if _, err := s.Session(ctx, "zz"); !errors.Is(err, ErrSessionNotFound) {
		t.Fatalf("Session(unknown) = %v", err)
	}
}

func TestDeleteSession(t *testing.T) {
	small(t, 8, 64, 50) // the sweep takes many commits
	s := openTest(t, nil)
	ctx := t.Context()
	mustCreate(t, s, "doomed")
	mustCreate(t, s, "kept")
	for i := range 300 {
		s.Append(ctx, "doomed", cmd(i))
		if i%3 == 0 {
			s.Append(ctx, "kept", cmd(i))
		}
	}
	ow, _ := s.Outputs().Create(ctx, "doomed")
	ow.Write(bytes.Repeat([]byte("line\n"), 3*ChunkSize/5)) // 3 chunks
	ow.Close()
	kw, _ := s.Outputs().Create(ctx, "kept")
	kw.Write([]byte("kept\n"))
	kw.Close()
	sizeBefore := fileSize(t, s.Path())

	if err := s.DeleteSession(ctx, "doomed"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Session(ctx, "doomed"); !errors.Is(err, ErrSessionNotFound) {
		t.Fatalf("Session after delete: %v", err)
	}
	if err := s.Read(ctx, "doomed", 0, func(event.Event) error { return nil }); !errors.Is(err, ErrSessionNotFound) {
		t.Fatalf("Read after delete: %v", err)
	}
	if _, err := s.Outputs().ReadLines(ctx, ow.ID(), 1, 1); !errors.Is(err, ErrOutputNotFound) {
		t.Fatalf("ReadLines after delete: %v", err)
	}
	if err := s.DeleteSession(ctx, "doomed"); !errors.Is(err, ErrSessionNotFound) {
		t.Fatalf("delete twice: %v", err)
	}
	// Nothing of it is left in any bucket.
	err := s.view(func(tx *bolt.Tx) error {
		if n := tx.Bucket(bucketLog).Stats().KeyN; n != 100 {
			t.Errorf("%d log records left, want kept's 100", n)
		}
		for _, b := range [][]byte{bucketIdx, bucketOutChunk, bucketOutMeta, bucketSessOut} {
			tx.Bucket(b).ForEach(func(k, v []byte) error {
				if bytes.HasPrefix(k, []byte("doomed")) || string(v) == "doomed" {
					t.Errorf("%s still has %q", b, k)
				}
				return nil
			})
		}
		if n := tx.Bucket(bucketOutChunk).Stats().KeyN; n != 1 {
			t.Errorf("%d output chunks left, want 1", n)
		}
		if n := tx.Bucket(bucketTrash).Stats().KeyN; n != 0 {
			t.Errorf("trash has %d entries", n)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, s, "kept", 0); len(got) != 100 {
		t.Fatalf("kept has %d events", len(got))
	}
	if l, err := s.Outputs().ReadLines(ctx, kw.ID(), 1, 0); err != nil || l.Text != "kept\n" {
		t.Fatalf("kept output: %+v, %v", l, err)
	}
	// The id is free again.
	mustCreate(t, s, "doomed")
	if out, err := s.Append(ctx, "doomed", cmd(0)); err != nil || out[0].Seq != 1 {
		t.Fatalf("append to re-created session: %+v, %v", out, err)
	}

	// Compact gives the space back.
	s.Close()
	if err := CompactFile(ctx, s.Path(), nil); err != nil {
		t.Fatal(err)
	}
	if after := fileSize(t, s.Path()); after >= sizeBefore {
		t.Errorf("compacted file is %d bytes, was %d", after, sizeBefore)
	}
	s2, err := Open(s.Path(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeAndCheck(t, s2) })
	if got := readAll(t, s2, "kept", 0); len(got) != 100 {
		t.Fatalf("kept has %d events after compaction", len(got))
	}
	if got := readAll(t, s2, "doomed", 0); len(got) != 1 {
		t.Fatalf("re-created session has %d events after compaction", len(got))
	}
}

func fileSize(t *testing.T, path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

func TestCompactOnline(t *testing.T) {
	s := openTest(t, nil)
	ctx := t.Context()
	mustCreate(t, s, "s")
	var want []event.Event
	for i := range 50 {
		out, _ := s.Append(ctx, "s", cmd(i))
		want = append(want, out...)
	}
	dst := filepath.Join(t.TempDir(), "copy.db")
	// Appends go on during the compaction.
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 50 {
			s.Append(ctx, "s", cmd(i))
		}
	}()
	if err := s.Compact(ctx, dst); err != nil {
		t.Fatal(err)
	}
	<-done
	if err := s.Compact(ctx, dst); err == nil {
		t.Fatal("compacting onto an existing file succeeded")
	}
	c, err := Open(dst, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeAndCheck(t, c) })
	got := readAll(t, c, "s", 0)
	if len(got) < 50 || !reflect.DeepEqual(got[:50], want) {
		t.Fatalf("copy has %d events", len(got))
	}
}

// Replay: a session's whole history, and the exact observations the model
// saw, from the store alone after a restart.
func TestReplay(t *testing.T) {
	s := openTest(t, nil)
	ctx := t.Context()
	mustCreate(t, s, "s")
	full := bytes.Repeat([]byte("building...\n"), 20000)
	full = append(full, "FAIL: TestX\n"...)
	w, err := s.Outputs().Create(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	for p := full; len(p) > 0; p = p[min(len(p), 1000):] {
		w.Write(p[:min(len(p), 1000)])
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var acked []event.Event
	for _, ev := range []event.Event{
		{Source: event.SourceRuntime, Payload: event.SandboxStarted{Driver: "native"}},
		{Source: event.SourceAgent, Payload: event.CmdRun{Command: "make test", TimeoutS: 120}},
		{Source: event.SourceRuntime, Cause: 2, Payload: event.CmdOutput{
			ExitCode: 2, Cwd: "/work", Output: "building...\n[20000 lines omitted]\nFAIL: TestX\n",
			Trimmed:    &event.Trimmed{LinesTotal: 20001, LinesOmitted: 19999, BytesOmitted: 239988, OutputID: w.ID()},
			DurationMS: 5123,
		}},
		{Source: event.SourceHook, Cause: 4, Payload: event.HookVeto{Hook: "no-rm", Reason: "rm -rf /"}},
		{Source: event.SourceAgent, Payload: event.Finish{Message: "tests fail"}},
	} {
		out, err := s.Append(ctx, "s", ev)
		if err != nil {
			t.Fatal(err)
		}
		acked = append(acked, out...)
	}
	s = reopen(t, s, nil)
	history := readAll(t, s, "s", 0)
	if !reflect.DeepEqual(history, acked) {
		t.Fatalf("history after restart:\n%+v\nwant\n%+v", history, acked)
	}
	obs := history[2].Payload.(event.CmdOutput)
	l, err := s.Outputs().ReadLines(ctx, obs.Trimmed.OutputID, obs.Trimmed.LinesTotal, 0)
	if err != nil || l.Text != "FAIL: TestX\n" || l.Total != 20001 {
		t.Fatalf("last line of the full output: %+v, %v", l, err)
	}
}

func TestClose(t *testing.T) {
	s := openTest(t, nil)
	ctx := t.Context()
	mustCreate(t, s, "s")
	// Appends racing Close either commit (and survive) or fail with
	// ErrClosed; none hangs.
	var wg sync.WaitGroup
	var mu sync.Mutex
	var acked []uint64
	for range 8 {
		wg.Go(func() {
			for {
				out, err := s.Append(ctx, "s", cmd(0))
				if err != nil {
					if !errors.Is(err, ErrClosed) {
						t.Error(err)
					}
					return
				}
				mu.Lock()
				acked = append(acked, out[0].Seq)
				mu.Unlock()
			}
		})
	}
	time.Sleep(30 * time.Millisecond)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if _, err := s.Append(ctx, "s", cmd(0)); !errors.Is(err, ErrClosed) {
		t.Fatalf("Append after Close: %v", err)
	}
	if _, err := s.CreateSession(ctx, Session{ID: "x"}); !errors.Is(err, ErrClosed) {
		t.Fatalf("CreateSession after Close: %v", err)
	}
	if _, err := s.Sessions(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("Sessions after Close: %v", err)
	}
	s2, err := Open(s.Path(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeAndCheck(t, s2) })
	n, _ := s2.LastSeq(ctx, "s")
	if int(n) < len(acked) {
		t.Fatalf("%d acked, %d stored", len(acked), n)
	}
	t.Logf("%d appends acked before Close", len(acked))
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.db")
	os.WriteFile(garbage, bytes.Repeat([]byte("not a database "), 1000), 0o600)
	if _, err := Open(garbage, nil); err == nil {
		t.Fatal("opened garbage")
	}

	// A bbolt file of some other program's.
	other := filepath.Join(dir, "other.db")
	db, _ := bolt.Open(other, 0o600, nil)
	db.Update(func(tx *bolt.Tx) error {
		b, _ := tx.CreateBucket(bucketLog)
		return b.Put([]byte("k"), []byte("v"))
	})
	db.Close()
	if _, err := Open(other, nil); !errors.Is(err, ErrFormat) {
		t.Fatalf("foreign bbolt file: %v", err)
	}

	// A store from a newer harnessd.
	newer := filepath.Join(dir, "newer.db")
	s, _ := Open(newer, nil)
	s.Close()
	db, _ = bolt.Open(newer, 0o600, nil)
	db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketMeta).Put(keyFormat, binary.AppendUvarint(nil, formatVersion+1))
	})
	db.Close()
	if _, err := Open(newer, nil); !errors.Is(err, ErrFormat) {
		t.Fatalf("newer format: %v", err)
	}

	if _, err := Open(filepath.Join(dir, "no", "such", "dir.db"), nil); err == nil {
		t.Fatal("opened a file in a missing directory")
	}
}

// A store held by this process is locked to a second opener too (flock is
// per open file); the subprocess case is in TestLockedByAnotherProcess.
func TestLockedInProcess(t *testing.T) {
	s := openTest(t, nil)
	start := time.Now()
	_, err := Open(s.Path(), &Options{Timeout: 100 * time.Millisecond})
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open = %v, want ErrLocked", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("took %v", d)
	}
	t.Log(err)
}

func ExampleStore() {
	dir, _ := os.MkdirTemp("", "store-example-")
	defer os.RemoveAll(dir)
	s, err := Open(filepath.Join(dir, "harnessd.db"), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	ctx := context.Background()
	s.CreateSession(ctx, Session{ID: "s1", State: "ready"})
	s.Append(ctx, "s1", event.Event{Source: event.SourceAgent, Payload: event.CmdRun{Command: "ls"}})
	s.Append(ctx, "s1", event.Event{Source: event.SourceRuntime, Cause: 1, Payload: event.CmdOutput{Output: "a.txt\n"}})
	s.ReadRaw(ctx, "s1", 0, func(seq uint64, data []byte) error {
		fmt.Println(seq, len(data) > 0)
		return nil
	})
	// Output:
	// 1 true
	// 2 true
}

// TestBatchDurability: with SyncEvery, appends are acknowledged without
// their own fsync and everything is on disk after Close.
func TestBatchDurability(t *testing.T) {
	path := filepath.Join(t.TempDir(), "batch.db")
	s, err := Open(path, &Options{SyncEvery: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := s.CreateSession(ctx, Session{ID: "b"}); err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		if _, err := s.Append(ctx, "b", event.Event{Session: "b", Source: event.SourceUser, Time: time.Now(), Payload: event.Message{Text: fmt.Sprint(i)}}); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(20 * time.Millisecond) // a sync or two happen meanwhile
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n, _ := s.LastSeq(ctx, "b"); n != 200 {
		t.Fatalf("last seq %d after reopen, want 200", n)
	}
	if err := s.Verify(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestCreateSessionWith records a session and its first events in one
// commit; a bad event or a taken id records nothing, and concurrent
// appends to other sessions share the commit without mixing.
func TestCreateSessionWith(t *testing.T) {
	s := openTest(t, nil)
	ctx := context.Background()
	started := event.Event{Source: event.SourceRuntime, Payload: event.SandboxStarted{Driver: "native", SandboxID: "w1", Workdir: "/workspace"}}
	sess, out, err := s.CreateSessionWith(ctx, Session{ID: "a"}, started, cmd(1))
	if err != nil {
		t.Fatal(err)
	}
	if sess.LastSeq != 2 || len(out) != 2 || out[0].Seq != 1 || out[1].Seq != 2 || out[0].Session != "a" {
		t.Fatalf("created %+v with %+v", sess, out)
	}
	if evs := readAll(t, s, "a", 0); len(evs) != 2 || evs[0].Kind() != event.KindSandboxStarted {
		t.Fatalf("read back %+v", evs)
	}
	if got, err := s.Append(ctx, "a", cmd(2)); err != nil || got[0].Seq != 3 {
		t.Fatalf("append after: %+v %v", got, err)
	}
	// A taken id: nothing of the new events lands in the old session.
	if _, _, err := s.CreateSessionWith(ctx, Session{ID: "a"}, started); !errors.Is(err, ErrSessionExists) {
		t.Fatalf("taken id: %v", err)
	}
	// A bad event: no session, no record.
	if _, _, err := s.CreateSessionWith(ctx, Session{ID: "b"}, started, event.Event{Payload: event.CmdRun{Command: "x"}}); !errors.Is(err, ErrInvalidEvent) {
		t.Fatalf("an event without a source: %v", err)
	}
	if _, err := s.Session(ctx, "b"); !errors.Is(err, ErrSessionNotFound) {
		t.Fatalf("session b after a rejected create: %v", err)
	}
	if n, err := s.LastSeq(ctx, "a"); err != nil || n != 3 {
		t.Fatalf("a's last seq %d %v", n, err)
	}
	// Many at once, beside appends: each session its own seqs from 1.
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			id := fmt.Sprint("c", i)
			if _, out, err := s.CreateSessionWith(ctx, Session{ID: id}, started); err != nil || out[0].Seq != 1 {
				t.Errorf("%s: %+v %v", id, out, err)
			}
		}()
		go func() {
			defer wg.Done()
			if _, err := s.Append(ctx, "a", cmd(i)); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if n, _ := s.LastSeq(ctx, "a"); n != 23 {
		t.Errorf("a's last seq %d, want 23", n)
	}
}
