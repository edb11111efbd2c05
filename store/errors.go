package store

import (
	"errors"
	"fmt"
	"time"

	"github.com/harnessd/harnessd/core/session/record"
	"github.com/harnessd/harnessd/core/trim"
)

// Errors opening and closing a store.
var (
	// ErrLocked is matched (errors.Is) by the *LockedError Open returns
	// when another process holds the store file and does not let go
	// within Options.Timeout.
	ErrLocked = errors.New("store: in use by another process")

	// ErrClosed is returned by every method of a closed Store, and by
	// calls still waiting when it was closed.
	ErrClosed = errors.New("store: closed")

	// ErrFormat is returned by Open for a bbolt file that is not a
	// harnessd store, or one written by a newer harnessd.
	ErrFormat = errors.New("store: unsupported file format")

	// ErrCorrupt is returned when the file breaks the store's own layout
	// (an index pointing at a missing event, a gap in seqs). bbolt's
	// checksums guard pages; this guards what we put in them.
	ErrCorrupt = errors.New("store: corrupt")
)

// Errors about sessions.
var (
	// ErrSessionNotFound is returned for a session the store does not hold
	// (never created, or deleted).
	ErrSessionNotFound = fmt.Errorf("store: %w", record.ErrNotFound)

	// ErrSessionExists is returned by CreateSession for an id in use, or
	// one whose deletion is still being swept.
	ErrSessionExists = fmt.Errorf("store: %w", record.ErrExists)

	// ErrInvalidSession is returned for a session id or record that cannot
	// be stored: empty, longer than MaxSessionID, or with control
	// characters, NUL or '/'.
	ErrInvalidSession = errors.New("store: invalid session")
)

// Errors about agent runs' records.
var (
	// ErrRunNotFound is returned by Run for a run id the store does not
	// hold (never recorded, or its session was deleted).
	ErrRunNotFound = fmt.Errorf("store: %w", record.ErrRunNotFound)

	// ErrInvalidRun is returned by PutRun for a run id that cannot be a
	// key (empty, longer than MaxRunID, with NUL) or that belongs to
	// another session.
	ErrInvalidRun = errors.New("store: invalid run")
)

// Errors about events.
var (
	// ErrInvalidEvent is returned by Append for an event that cannot be
	// recorded: no payload, no source, or one the codec refuses. Nothing
	// of that Append is written.
	ErrInvalidEvent = errors.New("store: invalid event")
)

// Errors about spilled outputs. Each wraps trim's sentinel for the same
// case, so a caller of trim.OutputStore can test errors.Is(err,
// trim.ErrNotFound) whichever store it has.
var (
	// ErrOutputNotFound is returned by ReadLines for a well-formed id the
	// store does not hold.
	ErrOutputNotFound error = &outputError{"store: output not found", trim.ErrNotFound}

	// ErrInvalidOutputID is returned by ReadLines for an id not of the form
	// the store hands out.
	ErrInvalidOutputID error = &outputError{"store: malformed output id", trim.ErrInvalidID}

	// ErrLineRange is returned by ReadLines for a range that does not fit
	// the output: from < 1, from past the last line, or to before from.
	ErrLineRange error = &outputError{"store: line range out of bounds", trim.ErrRange}

	// ErrOutputClosed is returned by a Write to a closed OutputWriter.
	ErrOutputClosed = errors.New("store: write to closed output")
)

// LockedError is Open's error for a store another process holds.
type LockedError struct {
	Path   string
	Waited time.Duration // how long Open waited for the lock
}

func (e *LockedError) Error() string {
	return fmt.Sprintf("store %s is in use by another process (waited %v for its lock)", e.Path, e.Waited)
}

// Is makes errors.Is(err, ErrLocked) true.
func (e *LockedError) Is(target error) bool { return target == ErrLocked }

// outputError is an output sentinel that also matches trim's sentinel for
// the same case.
type outputError struct {
	msg  string
	trim error
}

func (e *outputError) Error() string        { return e.msg }
func (e *outputError) Is(target error) bool { return target == e.trim }
