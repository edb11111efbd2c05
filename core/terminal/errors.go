package terminal

import "errors"

var (
	// ErrClosed is returned by Run after Close.
	ErrClosed = errors.New("terminal: closed")

	// ErrShellStart means bash could not be started or never printed its
	// first prompt.
	ErrShellStart = errors.New("terminal: shell did not start")

	// ErrNotRunning is returned by Interrupt and SendKeys when no command
	// is running: bash is at its prompt, where a signal or keys would
	// disturb the shell rather than a program.
	ErrNotRunning = errors.New("terminal: no command is running")
)
