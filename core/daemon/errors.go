package daemon

import "errors"

// Errors the daemon's methods return, wrapped with detail. The API maps
// each to one HTTP status (core/api).
var (
	// ErrNotFound: no session (or output) has that id.
	ErrNotFound = errors.New("not found")

	// ErrExists: a session with that id exists already.
	ErrExists = errors.New("already exists")

	// ErrStopped: the session has ended (deleted, interrupted by a
	// shutdown or a crash); its history can be read, nothing more run.
	ErrStopped = errors.New("session is not live")

	// ErrBadRequest: the request itself is wrong (an observation sent as
	// an action, an invalid id, a bad line range).
	ErrBadRequest = errors.New("bad request")

	// ErrTooMany: daemon.max_sessions sessions are live already.
	ErrTooMany = errors.New("too many sessions")

	// ErrShuttingDown: the daemon is stopping and takes no new work.
	ErrShuttingDown = errors.New("harnessd is shutting down")

	// ErrStoreCannotWrite: the store's last commit failed and it still
	// cannot write (a full disk, most often).
	ErrStoreCannotWrite = errors.New("the store cannot write")
)
