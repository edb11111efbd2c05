package pipeline

import "errors"

// Errors Do returns, wrapped with detail.
var (
	// ErrInvalid: not an action, a source an action cannot have, or a
	// payload that fails its own validation. Nothing was recorded.
	ErrInvalid = errors.New("invalid action")

	// ErrNoExecutor: no executor is registered for the action's kind.
	// Nothing was recorded.
	ErrNoExecutor = errors.New("no executor for this action kind")

	// ErrUnrecorded: the action was recorded and ran, but its observation
	// could not be committed (a full disk) even after retries. The
	// pipeline keeps it and commits it before the session's next action.
	ErrUnrecorded = errors.New("the action ran, but its observation could not be recorded")
)
