package terminal

import "errors"

var (
	// ErrClosed is returned by Run after Close.
	ErrClosed = errors.New("terminal: closed")

	// ErrShellStart means bash could not be started or never printed its
	// first prompt.
	ErrShellStart = errors.New("terminal: shell did not start")
)
