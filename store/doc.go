// Package store keeps harnessd's sessions, their events and spilled full
// outputs in one bbolt file.
//
// # Basics
//
// Open(path, nil) opens (or creates) a store; a file another process holds
// is an ErrLocked error after Options.Timeout, never a hang. A session is
// created with CreateSession, and its events appended with Append, which
// gives them seqs 1, 2, 3 … and returns only once they are committed. Store
// implements event.Log, so an event.Bus sits directly on it. Read (or
// ReadRaw, the exact stored JSON) replays a session from any seq. Outputs
// returns the store of spilled outputs, with the shape of trim.OutputStore.
// DeleteSession removes a session with its events and outputs; Compact and
// CompactFile give the freed space back.
//
// All writes go through one writer goroutine, which commits everything
// pending, from every session, in one transaction: many sessions appending
// at once share each commit's fsyncs (group commit). Events are keyed by a
// store-wide sequence, in append order, so that a commit touches few pages
// however many sessions it carries; each session's index is kept in memory
// for its newest events and written in blocks. See layout.go for the key
// layout and the measurements behind it.
//
// Nothing outside this package sees a bbolt transaction: reads run in
// closures inside the package and copy out what they return.
//
// # Caveats
//
// A crash loses nothing acknowledged: a commit is atomic, and Open rebuilds
// the in-memory index tails from the log. It can lose what was not yet
// acknowledged, including all of an Append that was waiting for its commit.
//
// Append's context bounds only the wait for a place in the writer's queue;
// once queued, Append waits for the commit, because an error after the
// event was recorded would leave the caller unable to tell.
//
// The file never shrinks by itself: deleting a session frees pages for reuse
// inside the file. CompactFile rewrites it, with no daemon running.
package store
