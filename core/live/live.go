// Package live carries a running command's output to whoever is watching,
// as it is produced: `harnessd exec` printing as the command prints, an
// events follower showing work in progress.
//
// It is deliberately not the event stream. The full output is already kept
// in the store and the observation records what the model saw; recording
// every chunk as an event would store the output twice and make the audit
// log as large as the output. A chunk is therefore ephemeral: it reaches
// the subscribers present when it is published, and a subscriber that
// falls behind loses chunks rather than slowing the command (the producer
// never blocks). Offsets let a subscriber see exactly what it missed and
// read it back from the stored output.
package live

import (
	"encoding/json"
	"strconv"
	"sync"
	"sync/atomic"
)

// Chunk is a piece of one command's output, or the end of it.
type Chunk struct {
	// Cause is the seq of the action whose observation will hold this
	// output: the cmd_run, or the later call that waits on a command still
	// running.
	Cause uint64 `json:"cause"`
	// Offset is where Output starts in the output of Cause, in bytes.
	Offset int64 `json:"offset"`
	// Output is the output as the terminal cleaned it (escape sequences
	// gone), before trimming.
	Output string `json:"output,omitempty"`
	// End marks the last chunk of Cause: Offset is then the total number
	// of bytes, and Output is empty.
	End bool `json:"end,omitempty"`
	// Lost counts the bytes this subscriber missed just before this chunk
	// because it fell behind.
	Lost int64 `json:"lost,omitempty"`
}

// MaxQueued is how many bytes one subscriber may have waiting, each chunk
// counted as its output plus ChunkCost; past it, chunks are dropped for
// that subscriber (and counted in Lost).
const MaxQueued = 1 << 20

// ChunkCost is what one queued chunk costs besides its output (the Chunk
// in the queue, the string's allocation), counted against MaxQueued. A
// program writing short lines slowly makes a chunk per line, often of one
// byte: counting only the output let a subscriber that never reads hold a
// million chunks, some 100 MiB, where 1 MiB was meant.
const ChunkCost = 64

// Hub fans chunks out to the subscribers of each session. The zero value
// is not usable; use NewHub.
type Hub struct {
	n    atomic.Int64 // subscribers, for a publish that finds none to cost nothing
	mu   sync.RWMutex
	subs map[string]map[*sub]struct{}
}

// NewHub returns an empty hub.
func NewHub() *Hub { return &Hub{subs: map[string]map[*sub]struct{}{}} }

type sub struct {
	mu     sync.Mutex
	queue  []Chunk
	queued int   // bytes of Output in queue, plus ChunkCost a chunk
	lost   int64 // bytes dropped since the last delivered chunk
	wake   chan struct{}
}

// Watching reports whether anyone follows session: a producer may skip
// work (copying) when no one does.
func (h *Hub) Watching(session string) bool {
	if h == nil || h.n.Load() == 0 {
		return false
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	return len(h.subs[session]) > 0
}

// Publish hands c to session's subscribers. It never blocks and copies
// what it keeps, so b may be reused when it returns.
func (h *Hub) Publish(session string, cause uint64, offset int64, b []byte, end bool) {
	if h == nil || h.n.Load() == 0 {
		return
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	subs := h.subs[session]
	if len(subs) == 0 {
		return
	}
	c := Chunk{Cause: cause, Offset: offset, Output: string(b), End: end}
	for s := range subs {
		s.push(c)
	}
}

func (s *sub) push(c Chunk) {
	s.mu.Lock()
	cost := len(c.Output) + ChunkCost
	if !c.End && s.queued+cost > MaxQueued {
		s.lost += int64(len(c.Output))
		s.mu.Unlock()
		return
	}
	c.Lost, s.lost = s.lost, 0
	s.queue = append(s.queue, c)
	s.queued += cost
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Sub is one subscription to a session's chunks. Chunks published after
// Subscribe returned are delivered in order by Take; while the subscriber
// is slow they queue up to MaxQueued bytes and are then dropped (counted
// in the next chunk's Lost).
type Sub struct {
	hub     *Hub
	session string
	s       *sub
	batch   []Chunk
}

// Subscribe starts a subscription to session's chunks. Close ends it.
func (h *Hub) Subscribe(session string) *Sub {
	s := &sub{wake: make(chan struct{}, 1)}
	h.mu.Lock()
	if h.subs[session] == nil {
		h.subs[session] = map[*sub]struct{}{}
	}
	h.subs[session][s] = struct{}{}
	h.n.Add(1)
	h.mu.Unlock()
	return &Sub{hub: h, session: session, s: s}
}

// Ready is signalled when chunks may be waiting for Take.
func (u *Sub) Ready() <-chan struct{} { return u.s.wake }

// Take returns the chunks waiting, in order, and forgets them; the slice
// is valid until the next Take.
func (u *Sub) Take() []Chunk {
	clear(u.batch)
	u.s.mu.Lock()
	u.batch, u.s.queue = u.s.queue, u.batch[:0]
	u.s.queued = 0
	u.s.mu.Unlock()
	return u.batch
}

// Close ends the subscription. It is safe to call more than once.
func (u *Sub) Close() {
	h := u.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	subs := h.subs[u.session]
	if _, ok := subs[u.s]; !ok {
		return
	}
	delete(subs, u.s)
	if len(subs) == 0 {
		delete(h.subs, u.session)
	}
	h.n.Add(-1)
}

// Writer is an io.Writer that publishes what is written to it as the
// output of one action, counting offsets.
type Writer struct {
	hub     *Hub
	session string
	cause   uint64
	off     int64
}

// NewWriter returns a Writer for the output of action cause in session.
func (h *Hub) NewWriter(session string, cause uint64) *Writer {
	return &Writer{hub: h, session: session, cause: cause}
}

// Write publishes p and always succeeds: watching never fails a command.
func (w *Writer) Write(p []byte) (int, error) {
	w.hub.Publish(w.session, w.cause, w.off, p, false)
	w.off += int64(len(p))
	return len(p), nil
}

// Close publishes the end of the action's output.
func (w *Writer) Close() error {
	w.hub.Publish(w.session, w.cause, w.off, nil, true)
	return nil
}

// AppendJSON appends c as one line of an events stream: an object with
// kind "progress" and no seq, since it is not a stored event.
func (c Chunk) AppendJSON(b []byte) []byte {
	b = append(b, `{"kind":"progress","cause":`...)
	b = strconv.AppendUint(b, c.Cause, 10)
	b = append(b, `,"offset":`...)
	b = strconv.AppendInt(b, c.Offset, 10)
	if c.Output != "" {
		b = append(b, `,"output":`...)
		out, _ := json.Marshal(c.Output) // a string always marshals
		b = append(b, out...)
	}
	if c.End {
		b = append(b, `,"end":true`...)
	}
	if c.Lost != 0 {
		b = append(b, `,"lost":`...)
		b = strconv.AppendInt(b, c.Lost, 10)
	}
	return append(b, '}')
}
