package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/harnessd/harnessd/core/api"
	"github.com/harnessd/harnessd/core/event"
	"github.com/harnessd/harnessd/core/live"
)

// watcher prints a session's live output while one call of exec runs.
type watcher struct {
	c      *cmd
	cancel context.CancelFunc
	done   chan struct{} // closed when the stream has ended

	mu    sync.Mutex
	after uint64           // chunks of actions up to this seq are not ours
	next  map[uint64]int64 // per action, the offset printed up to
	lost  map[uint64]int64 // per action, bytes not printed
	ended map[uint64]bool  // per action, its end was seen
	endCh chan struct{}    // signalled on each end
	err   error            // why the stream ended early
	quit  bool             // stop ended the stream: its error says nothing
}

// endWait is how long exec waits, after its call returned, for the stream
// to deliver the last of the output; a stream that is that late is a
// client that fell behind, and the model's view is printed instead.
const endWait = 3 * time.Second

// watch starts following session id's live output; nil when it cannot
// (the session is unknown, say: the call itself will then say why).
func (c *cmd) watch(cl *api.Client, id string) *watcher {
	info, err := cl.Session(c.ctx, id)
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithCancel(c.ctx)
	w := &watcher{c: c, cancel: cancel, done: make(chan struct{}), after: info.LastSeq,
		next: map[uint64]int64{}, lost: map[uint64]int64{}, ended: map[uint64]bool{}, endCh: make(chan struct{}, 1)}
	started := make(chan struct{})
	go func() {
		defer close(w.done)
		w.finish(cl.Watch(ctx, id, info.LastSeq, func() { close(started) },
			func(event.Event) error { return nil }, w.chunk))
	}()
	select {
	case <-started:
		return w
	case <-w.done:
		cancel()
		return nil // an older daemon, say: print the model's view
	}
}

// finish records why the stream ended, unless stop ended it (the stream
// then ends with the context's error, which is no reason: missed would
// say "the live output stopped: context canceled" where the end of the
// output was only late, because this client fell behind).
func (w *watcher) finish(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.quit {
		w.err = err
	}
}

func (w *watcher) chunk(ch live.Chunk) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if ch.Cause <= w.after {
		return nil
	}
	if gap := ch.Offset - w.next[ch.Cause]; gap > 0 {
		w.lost[ch.Cause] += gap
	}
	if ch.Output != "" {
		if _, err := w.c.env.Stdout.Write([]byte(ch.Output)); err != nil {
			return err
		}
		w.next[ch.Cause] = ch.Offset + int64(len(ch.Output))
	}
	if ch.End {
		w.ended[ch.Cause] = true
		select {
		case w.endCh <- struct{}{}:
		default:
		}
	}
	return nil
}

// stop waits (briefly) for the end of action cause's output and stops
// watching; it reports whether every byte of it was printed. empty says
// the observation has no output: nothing is then waited for (keys sent
// to a command another call waits on publish none). A nil watcher
// printed nothing.
func (w *watcher) stop(cause uint64, empty bool) bool {
	if w == nil {
		return false
	}
	defer func() {
		w.mu.Lock()
		w.quit = true
		w.mu.Unlock()
		w.cancel()
		<-w.done
	}()
	if cause == 0 {
		return false
	}
	if empty {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.lost[cause] == 0
	}
	deadline := time.NewTimer(endWait)
	defer deadline.Stop()
	for {
		w.mu.Lock()
		ended, lost := w.ended[cause], w.lost[cause]
		w.mu.Unlock()
		if ended {
			return lost == 0
		}
		select {
		case <-w.endCh:
		case <-w.done:
			w.mu.Lock()
			ended, lost = w.ended[cause], w.lost[cause]
			w.mu.Unlock()
			return ended && lost == 0
		case <-deadline.C:
			return false
		}
	}
}

// missed says why stop returned false, for the line before the model's
// view.
func (w *watcher) missed(cause uint64) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.lost[cause] > 0:
		return fmt.Sprintf("%d bytes of the output were not shown as they came (this client fell behind)", w.lost[cause])
	case w.err != nil && w.c.ctx.Err() == nil:
		return "the live output stopped: " + w.err.Error()
	case w.next[cause] > 0:
		return "the end of the output did not arrive in time (this client may have fallen behind)"
	}
	return "the output could not be shown as it came"
}

// progressLines prints a running command's output line by line, indented
// under the events, as `events -f` shows work in progress.
type progressLines struct {
	partial []byte // the line being printed, not yet ended
}

// progressPrefix marks output lines apart from events.
const progressPrefix = "      | "

func (p *progressLines) add(w io.Writer, ch live.Chunk) error {
	if ch.Lost > 0 {
		if err := p.flush(w); err != nil {
			return err
		}
		if _, err := fmt.Fprintf(w, "%s[%d bytes not shown: this client fell behind]\n", progressPrefix, ch.Lost); err != nil {
			return err
		}
	}
	b := []byte(ch.Output)
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			p.partial = append(p.partial, b...)
			break
		}
		p.partial = append(p.partial, b[:i]...)
		b = b[i+1:]
		if err := p.flush(w); err != nil {
			return err
		}
	}
	if ch.End {
		return p.flush(w)
	}
	return nil
}

// flush prints the unfinished line, if any.
func (p *progressLines) flush(w io.Writer) error {
	if len(p.partial) == 0 {
		return nil
	}
	_, err := fmt.Fprintf(w, "%s%s\n", progressPrefix, p.partial)
	p.partial = p.partial[:0]
	return err
}
