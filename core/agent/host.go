package agent

import (
	"context"
	"errors"
	"fmt"

	"github.com/harnessd/harnessd/core/event"
	pb "github.com/harnessd/harnessd/plugins/proto"
)

// The host services a run offers its agent process: its own session only.

var _ Host = (*run)(nil)

// Page sizes of ReadEvents.
const (
	defaultEventPage = 500
	maxEventPage     = 5000
)

// ReadOutput reads lines of one of the session's outputs: an output id
// that no observation of this session named is refused, so an agent
// cannot read another session's outputs by guessing ids.
func (r *run) ReadOutput(ctx context.Context, id string, from, to int64) (*pb.ReadOutputResponse, error) {
	r.mu.Lock()
	ok := r.outputs[id]
	r.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("output %q: not an output of session %s", id, r.session)
	}
	if from <= 0 {
		from = 1
	}
	if to < 0 || from > 1<<40 || to > 1<<40 {
		return nil, fmt.Errorf("lines %d to %d: out of range", from, to)
	}
	l, err := r.c.opts.Sessions.ReadLines(ctx, id, int(from), int(to))
	if err != nil {
		return nil, err
	}
	return &pb.ReadOutputResponse{Text: l.Text, FromLine: int64(l.From), ToLine: int64(l.To), TotalLines: int64(l.Total)}, nil
}

var errPageFull = errors.New("page full")

// ReadEvents reads the session's events after seq after, a page at a time.
func (r *run) ReadEvents(ctx context.Context, after uint64, limit uint32) (*pb.ReadEventsResponse, error) {
	n := int(limit)
	if n <= 0 {
		n = defaultEventPage
	}
	n = min(n, maxEventPage)
	resp := &pb.ReadEventsResponse{}
	err := r.c.opts.Sessions.Events(ctx, r.session, after, false, func(ev event.Event) error {
		if len(resp.Events) == n {
			resp.More = true
			return errPageFull
		}
		b, err := ev.AppendJSON(nil)
		if err != nil {
			return err
		}
		resp.Events = append(resp.Events, b)
		return nil
	})
	if err != nil && !errors.Is(err, errPageFull) {
		return nil, err
	}
	return resp, nil
}

// ReportUsage adds usage spent outside a step to the run's totals (and
// so to its budget).
func (r *run) ReportUsage(_ context.Context, u *pb.Usage) (*pb.ReportUsageResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.info.Tokens += u.GetPromptTokens() + u.GetCompletionTokens()
	r.info.Cost += u.GetCost()
	return &pb.ReportUsageResponse{RunTokens: r.info.Tokens, RunCost: r.info.Cost}, nil
}
