package store

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/harnessd/harnessd/core/event"
)

// openTest opens a store in t.TempDir(). When the test ends it verifies the
// store's layout, closes it, and runs bbolt's consistency check on the file,
// as bbolt's own test helper does: every test checks the file for free.
func openTest(t testing.TB, opts *Options) *Store {
	t.Helper()
	path := filepath.Join(t.TempDir(), "harnessd.db")
	s, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeAndCheck(t, s) })
	return s
}

// closeAndCheck verifies a store (if still open), closes it and checks the
// file with bbolt.
func closeAndCheck(t testing.TB, s *Store) {
	t.Helper()
	if err := s.Verify(context.Background()); err != nil && err != ErrClosed {
		t.Errorf("verify %s: %v", s.Path(), err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	checkFile(t, s.Path())
}

// checkFile runs bbolt's page check on a closed store file.
func checkFile(t testing.TB, path string) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Errorf("reopen %s for checking: %v", path, err)
		return
	}
	defer db.Close()
	err = db.View(func(tx *bolt.Tx) error {
		for err := range tx.Check() {
			t.Errorf("bbolt check %s: %v", path, err)
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
}

// reopen closes s and opens its file again, as after a restart.
func reopen(t testing.TB, s *Store, opts *Options) *Store {
	t.Helper()
	if err := s.Verify(context.Background()); err != nil {
		t.Fatalf("verify before reopening: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(s.Path(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeAndCheck(t, s2) })
	return s2
}

func mustCreate(t testing.TB, s *Store, id string) {
	t.Helper()
	if _, err := s.CreateSession(context.Background(), Session{ID: id, State: "ready"}); err != nil {
		t.Fatal(err)
	}
}

func cmd(i int) event.Event {
	return event.Event{Source: event.SourceAgent, Payload: event.CmdRun{Command: fmt.Sprintf("echo %d", i), TimeoutS: 30}}
}

// readAll replays a session.
func readAll(t testing.TB, s *Store, session string, after uint64) []event.Event {
	t.Helper()
	var out []event.Event
	if err := s.Read(context.Background(), session, after, func(ev event.Event) error {
		out = append(out, ev)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// small makes the lazy index's knobs small, so tests cross every boundary.
func small(t testing.TB, block, window, sweep int) {
	ib, iw, sb := indexBlock, indexWindow, sweepBudget
	indexBlock, indexWindow, sweepBudget = block, window, sweep
	t.Cleanup(func() { indexBlock, indexWindow, sweepBudget = ib, iw, sb })
}
