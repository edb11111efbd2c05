package store

import (
	"context"
	"errors"
	"testing"

	"github.com/harnessd/harnessd/core/event"
)

// TestRuns: a run's record is kept under its session, found by id and by
// session, replaced by a later PutRun, kept across a reopen, refused for a
// missing session or another session's run id, and removed with its
// session.
func TestRuns(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, nil)
	for _, id := range []string{"a", "b"} {
		if _, err := s.CreateSession(ctx, Session{ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	put := func(session, id, rec string) error { return <-s.PutRun(ctx, session, id, []byte(rec)) }
	for _, c := range [][3]string{{"a", "r1", `{"n":1}`}, {"a", "r2", `{"n":2}`}, {"b", "r3", `{"n":3}`}, {"a", "r1", `{"n":11}`}} {
		if err := put(c[0], c[1], c[2]); err != nil {
			t.Fatal(err)
		}
	}
	if err := put("nope", "r4", `{}`); !errors.Is(err, ErrSessionNotFound) {
		t.Errorf("a run of a missing session: %v", err)
	}
	if err := put("b", "r1", `{}`); !errors.Is(err, ErrInvalidRun) {
		t.Errorf("another session's run id: %v", err)
	}
	if sess, rec, err := s.Run(ctx, "r1"); err != nil || sess != "a" || string(rec) != `{"n":11}` {
		t.Errorf("Run r1: %q %s %v", sess, rec, err)
	}
	list := func(session string) map[string]string {
		got := map[string]string{}
		if err := s.Runs(ctx, session, func(sess, id string, rec []byte) error {
			got[sess+"/"+id] = string(rec)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := list("a"); len(got) != 2 || got["a/r2"] != `{"n":2}` {
		t.Errorf("runs of a: %v", got)
	}
	if got := list(""); len(got) != 3 {
		t.Errorf("all runs: %v", got)
	}

	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(s.Path(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeAndCheck(t, s2) })
	if _, rec, err := s2.Run(ctx, "r3"); err != nil || string(rec) != `{"n":3}` {
		t.Errorf("after reopen: %s %v", rec, err)
	}
	// A record queued before an append is committed with it or before it.
	done := s2.PutRun(ctx, "b", "r3", []byte(`{"n":33}`))
	if _, err := s2.Append(ctx, "b", event.Event{Source: event.SourceRuntime, Payload: event.Message{Text: "x"}}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	default:
		t.Error("an append returned before the run record queued ahead of it was committed")
	}
	if err := s2.DeleteSession(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s2.Run(ctx, "r1"); !errors.Is(err, ErrRunNotFound) {
		t.Errorf("a deleted session's run: %v", err)
	}
	if err := s2.Verify(ctx); err != nil {
		t.Error(err)
	}
}
