package daemon

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/core/event"
	"github.com/harnessd/harnessd/core/pipeline"
	"github.com/harnessd/harnessd/core/session"
)

// waitListed waits until a has seq waiting.
func waitListed(t *testing.T, a *approvals, seq uint64) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
		for _, w := range a.list() {
			if w.Seq == seq {
				return
			}
		}
	}
	t.Fatalf("seq %d never waited for approval", seq)
}

type approveResult struct {
	ok  bool
	by  string
	err error
}

// TestApprovalDecidedOnce is what CI caught in the API's TestHooks (1 run
// in many): the waiter takes the decision out of its channel, and until
// it has left the list a second decision found room in the channel again
// and was accepted, then went unread. Every decision after the first must
// be refused, however close behind it comes.
func TestApprovalDecidedOnce(t *testing.T) {
	a := newApprovals(func() time.Duration { return time.Minute })
	s := &session.Session{}
	for seq := uint64(1); seq <= 200; seq++ {
		done := make(chan approveResult, 1)
		go func() {
			ok, by, err := a.Approve(context.Background(), s, event.Event{Seq: seq}, pipeline.Decision{Verdict: pipeline.Ask})
			done <- approveResult{ok, by, err}
		}()
		waitListed(t, a, seq)
		if err := a.decide("", seq, true, "uid 1"); err != nil {
			t.Fatalf("seq %d: first decision: %v", seq, err)
		}
		var res approveResult
	again:
		for {
			err := a.decide("", seq, false, "uid 2")
			if err == nil {
				t.Fatalf("seq %d: a second decision was taken", seq)
			}
			if !errors.Is(err, ErrExists) && !errors.Is(err, ErrNotFound) {
				t.Fatalf("seq %d: second decision: %v", seq, err)
			}
			select {
			case res = <-done:
				break again
			default:
			}
		}
		if res.err != nil || !res.ok || res.by != "uid 1" {
			t.Fatalf("seq %d: Approve = %+v, want the first decision", seq, res)
		}
	}
}

// TestApprovalAfterTimeout: once the timeout has answered an action, a
// decision on it is refused, not accepted and dropped.
func TestApprovalAfterTimeout(t *testing.T) {
	a := newApprovals(func() time.Duration { return 20 * time.Millisecond })
	done := make(chan approveResult, 1)
	go func() {
		ok, by, err := a.Approve(context.Background(), &session.Session{}, event.Event{Seq: 1}, pipeline.Decision{Verdict: pipeline.Ask})
		done <- approveResult{ok, by, err}
	}()
	waitListed(t, a, 1)
	res := <-done
	if res.err != nil || res.ok || !strings.Contains(res.by, "ask_timeout") {
		t.Fatalf("Approve = %+v, want the timeout's refusal", res)
	}
	if err := a.decide("", 1, true, "uid 1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("decision after the timeout: %v, want ErrNotFound", err)
	}
}

// TestApprovalEndSession: a session's end answers its waiting actions
// with a refusal, and a decision after that is refused.
func TestApprovalEndSession(t *testing.T) {
	a := newApprovals(func() time.Duration { return time.Minute })
	done := make(chan approveResult, 1)
	go func() {
		ok, by, err := a.Approve(context.Background(), &session.Session{}, event.Event{Seq: 7}, pipeline.Decision{Verdict: pipeline.Ask})
		done <- approveResult{ok, by, err}
	}()
	waitListed(t, a, 7)
	a.endSession("", "the session was deleted")
	if err := a.decide("", 7, true, "uid 1"); err == nil {
		t.Fatal("a decision after the session's end was taken")
	}
	res := <-done
	if res.err != nil || res.ok || !strings.Contains(res.by, "deleted") {
		t.Fatalf("Approve = %+v, want the end's refusal", res)
	}
}
