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
)
