package daemon

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/harnessd/harnessd/core/event"
	"github.com/harnessd/harnessd/core/pipeline"
	"github.com/harnessd/harnessd/core/session"
)

// Approval is an action waiting for a person, as GET /v1/approvals shows it.
type Approval struct {
	Session  string      `json:"session"`
	Seq      uint64      `json:"seq"`
	Action   event.Event `json:"action"`
	Hook     string      `json:"hook"`
	Reason   string      `json:"reason"`
	Asked    time.Time   `json:"asked"`
	Deadline time.Time   `json:"deadline"`
}

type approvalKey struct {
	session string
	seq     uint64
}

type decision struct {
	approved bool
	by       string
}

// approvals holds the actions a hook asked about until a person decides,
// or the timeout denies them. It is the pipeline's Approver; its waiters
// hold the session's turn but nothing a reader of the session needs.
type approvals struct {
	timeout func() time.Duration

	mu      sync.Mutex
	waiting map[approvalKey]*waiter
}

type waiter struct {
	Approval
	decided chan decision // buffered 1: the one decision, sent under approvals.mu
	// closed says no decision may be taken any more: one was, or the wait
	// ended. Under approvals.mu. The channel alone cannot say it: once the
	// waiter has taken the decision out, the buffer is empty again, and a
	// second decision would be accepted and then go unread.
	closed bool
}

var _ pipeline.Approver = (*approvals)(nil)

func newApprovals(timeout func() time.Duration) *approvals {
	return &approvals{timeout: timeout, waiting: map[approvalKey]*waiter{}}
}

// Approve waits for a decision on action.
func (a *approvals) Approve(ctx context.Context, s *session.Session, action event.Event, d pipeline.Decision) (bool, string, error) {
	now := time.Now().UTC()
	timeout := a.timeout()
	w := &waiter{
		Approval: Approval{Session: s.ID(), Seq: action.Seq, Action: action, Hook: d.Hook, Reason: d.Reason, Asked: now, Deadline: now.Add(timeout)},
		decided:  make(chan decision, 1),
	}
	k := approvalKey{s.ID(), action.Seq}
	a.mu.Lock()
	a.waiting[k] = w
	a.mu.Unlock()
	t := time.NewTimer(timeout)
	defer t.Stop()
	timedOut := false
	select {
	case dec := <-w.decided:
		a.forget(k)
		return dec.approved, dec.by, nil
	case <-t.C:
		timedOut = true
	case <-ctx.Done():
	}
	a.mu.Lock()
	taken := w.closed // a decision came in as the wait ended
	w.closed = true
	delete(a.waiting, k)
	a.mu.Unlock()
	if taken && timedOut {
		// Its sender was told it was taken: it stands.
		dec := <-w.decided
		return dec.approved, dec.by, nil
	}
	// The caller went away (the daemon stopping, the client gone): the
	// action is refused for that, whatever a person decided meanwhile.
	if timedOut {
		return false, fmt.Sprintf("no one (hooks.ask_timeout, %v, passed)", timeout), nil
	}
	return false, "", ctx.Err()
}

// forget removes a decided waiter.
func (a *approvals) forget(k approvalKey) {
	a.mu.Lock()
	delete(a.waiting, k)
	a.mu.Unlock()
}

// list returns the actions waiting, oldest first.
func (a *approvals) list() []Approval {
	a.mu.Lock()
	out := make([]Approval, 0, len(a.waiting))
	for _, w := range a.waiting {
		out = append(out, w.Approval)
	}
	a.mu.Unlock()
	slices.SortFunc(out, func(x, y Approval) int { return x.Asked.Compare(y.Asked) })
	return out
}

// decide gives the decision on one waiting action.
func (a *approvals) decide(session string, seq uint64, approved bool, by string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	w := a.waiting[approvalKey{session, seq}]
	if w == nil {
		return fmt.Errorf("%w: no action %s/%d is waiting for approval", ErrNotFound, session, seq)
	}
	if w.closed {
		return fmt.Errorf("%w: action %s/%d was decided already", ErrExists, session, seq)
	}
	w.closed = true
	w.decided <- decision{approved, by} // the only send: the buffer has room
	return nil
}

// endSession denies every action of a session that waits for a person:
// the session is ending (deleted, or the daemon is stopping), and the
// waiter holds the turn its end waits for.
func (a *approvals) endSession(session, why string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for k, w := range a.waiting {
		if k.session == session && !w.closed {
			w.closed = true
			w.decided <- decision{false, "no one (" + why + ")"}
		}
	}
}

// Approvals returns the actions waiting for a person, oldest first.
func (d *Daemon) Approvals() []Approval { return d.approvals.list() }

// Decide approves or denies an action waiting for a person; by names who
// decided (the API gives the client's uid), and is recorded.
func (d *Daemon) Decide(session string, seq uint64, approve bool, by string) error {
	return d.approvals.decide(session, seq, approve, by)
}
