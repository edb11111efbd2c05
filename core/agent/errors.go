package agent

import "errors"

// Errors the controller returns; the API maps them to statuses.
var (
	// ErrBusy: the session has a run already (one at a time).
	ErrBusy = errors.New("a run is active in this session")
	// ErrNotFound: no run has that id.
	ErrNotFound = errors.New("no such run")
	// ErrUnknownAgent: harness.toml names no agent so called.
	ErrUnknownAgent = errors.New("unknown agent")
	// ErrBadRequest: a run request the controller cannot carry out
	// (limits out of range, an empty task).
	ErrBadRequest = errors.New("bad run request")
	// ErrShuttingDown: the controller is stopping; no new runs.
	ErrShuttingDown = errors.New("harnessd is shutting down")
)
