package agent

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/harnessd/harnessd/core/event"
	"github.com/harnessd/harnessd/core/session/record"
)

// RunStore keeps runs' records beside their sessions' events, so that a
// run is known after a restart and one a dead daemon was driving can be
// ended; store.Store is one. A record is a run's Info as JSON.
type RunStore interface {
	// PutRun queues a run's record to be written under its session,
	// replacing the last, and returns once it is queued; the outcome
	// comes on the channel. It is committed no later than what the
	// session records after PutRun returns, so a step's record needs no
	// commit of its own.
	PutRun(ctx context.Context, session, id string, rec []byte) <-chan error
	// Run returns a run's record and its session, or an error matching
	// record.ErrRunNotFound.
	Run(ctx context.Context, id string) (session string, rec []byte, err error)
	// Runs calls fn with the records of a session's runs, or of every
	// session's for "".
	Runs(ctx context.Context, session string, fn func(session, id string, rec []byte) error) error
}

// ReasonDaemonStopped ends a run the daemon was driving when it died (a
// crash, SIGKILL, a power loss): recorded by the next daemon, before its
// session's sandbox_stopped. (A daemon that stops on SIGTERM ends its runs
// itself, with ReasonShutdown.)
const ReasonDaemonStopped = "daemon_stopped"

// save writes the run's record as it is now; with wait, it returns once
// the record is committed, else once it is queued (see RunStore.PutRun),
// and the outcome is looked at by the next save. The record is a
// convenience for readers after a restart; the events are the truth, so a
// failed write is logged and the run goes on (a store that cannot write
// fails the run's next event anyway).
func (r *run) save(ctx context.Context, wait bool) {
	rs := r.c.opts.Runs
	if rs == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if r.saving != nil { // the last save's outcome, committed by now or soon
		select {
		case err := <-r.saving:
			if err != nil {
				r.log.Warn("run record not written", "err", err)
			}
		case <-ctx.Done():
		}
		r.saving = nil
	}
	b, err := json.Marshal(r.snapshot())
	if err != nil {
		r.log.Warn("run record not written", "err", err)
		return
	}
	done := rs.PutRun(ctx, r.session, r.id, b)
	if !wait {
		r.saving = done
		return
	}
	select {
	case err = <-done:
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		r.log.Warn("run record not written", "err", err)
	}
}

// stored reads one run's record.
func stored(ctx context.Context, rs RunStore, id string) (Info, error) {
	_, b, err := rs.Run(ctx, id)
	if errors.Is(err, record.ErrRunNotFound) {
		return Info{}, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	if err != nil {
		return Info{}, fmt.Errorf("agent: run %s: %w", id, err)
	}
	var info Info
	if err := json.Unmarshal(b, &info); err != nil {
		return Info{}, fmt.Errorf("agent: run %s: its record: %w", id, err)
	}
	return info, nil
}

// storedRuns reads the records of a session's runs (every session's for
// ""), oldest first. A record that does not parse is logged and left out:
// one damaged record must not stop the daemon's start (sweep), the end of
// a dead daemon's runs (Interrupted) or the listing of the session's
// other runs.
func storedRuns(ctx context.Context, rs RunStore, session string, log *slog.Logger) ([]Info, error) {
	var out []Info
	err := rs.Runs(ctx, session, func(sess, id string, b []byte) error {
		var info Info
		if err := json.Unmarshal(b, &info); err != nil {
			if log != nil {
				log.Warn("a run's record does not parse; left out", "session", sess, "run", id, "err", err)
			}
			return nil
		}
		out = append(out, info)
		return nil
	})
	slices.SortFunc(out, func(a, b Info) int {
		return cmp.Or(a.Started.Compare(b.Started), cmp.Compare(a.StartSeq, b.StartSeq))
	})
	return out, err
}

// Interrupted returns what daemon.Options.Interrupted calls for each
// session a dead daemon left live, before that session's sandbox_stopped:
// every run its records say was going there is ended, newest first (a
// sub-run before the run that delegated to it), with a run_ended of
// reason daemon_stopped recorded through rec and the record updated. The
// steps, tokens and cost are the record's, written after each step.
func Interrupted(rs RunStore, log *slog.Logger) func(ctx context.Context, session string, rec func(context.Context, event.Payload) (event.Event, error)) error {
	if log == nil {
		log = slog.Default()
	}
	return func(ctx context.Context, session string, rec func(context.Context, event.Payload) (event.Event, error)) error {
		runs, err := storedRuns(ctx, rs, session, log)
		if err != nil {
			return err
		}
		slices.Reverse(runs)
		for _, info := range runs {
			if info.State != StateRunning {
				continue
			}
			end := RunEnded{Run: info.ID, Parent: info.Parent, Reason: ReasonDaemonStopped,
				Error: "harnessd stopped (crashed or was killed) while the run was going; its plugin is gone",
				Steps: info.Steps, Tokens: info.Tokens, Cost: info.Cost}
			ev, err := rec(ctx, end)
			if err != nil {
				return fmt.Errorf("agent: end run %s: %w", info.ID, err)
			}
			info.State, info.Reason, info.Error = StateEnded, end.Reason, end.Error
			info.EndSeq, info.Ended = ev.Seq, ev.Time.UTC()
			if err := put(ctx, rs, info); err != nil {
				return err
			}
			log.Info("run ended by the last daemon's end", "session", session, "run", info.ID)
		}
		return nil
	}
}

// put writes a record and waits for its commit.
func put(ctx context.Context, rs RunStore, info Info) error {
	b, err := json.Marshal(info)
	if err != nil {
		return err
	}
	select {
	case err = <-rs.PutRun(ctx, info.Session, info.ID, b):
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		return fmt.Errorf("agent: run %s: write its record: %w", info.ID, err)
	}
	return nil
}

// sweep ends the records of runs still marked running when a controller
// starts, which no daemon drives any more: those in sessions that were no
// longer live when their daemon died (Interrupted handles the live ones,
// with an event). Their sessions have ended, so no run_ended can follow
// their sandbox_stopped; the record says so.
func (c *Controller) sweep(ctx context.Context) error {
	runs, err := storedRuns(ctx, c.opts.Runs, "", c.log)
	if err != nil {
		return err
	}
	for _, info := range runs {
		if info.State != StateRunning {
			continue
		}
		info.State, info.Reason = StateEnded, ReasonDaemonStopped
		info.Error = "harnessd stopped while the run was going, after its session had ended; no run_ended was recorded"
		info.Ended = time.Now().UTC()
		if err := put(ctx, c.opts.Runs, info); err != nil {
			return err
		}
	}
	return nil
}
