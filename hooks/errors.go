package hooks

import (
	"errors"
	"fmt"
)

// Sentinel errors. Errors naming a hook file are *FileError and wrap one of
// these.
var (
	// ErrLoad marks a hook file that could not be loaded: a syntax error,
	// an error in its top-level code, a bad harness.on pattern, or an
	// example that does not give the verdict it declares.
	ErrLoad = errors.New("hook file rejected")

	// ErrHook marks a hook function that raised an error, returned
	// something it may not, or overran its time budget.
	ErrHook = errors.New("hook failed")

	// ErrBadEvent marks an event name or payload the engine cannot hand to
	// hooks (an unknown session event, a nil action).
	ErrBadEvent = errors.New("bad hook event")
)

// FileError is an error in one hook file, at a line when it is known.
type FileError struct {
	File string // the file as named in decisions: the Dir's Name (or Path) and the file name
	Line int    // 1-based; 0 when unknown
	Msg  string // what went wrong, without the file:line prefix
	Err  error  // ErrLoad or ErrHook
}

// Error returns "file:line: msg".
func (e *FileError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

// Unwrap returns ErrLoad or ErrHook.
func (e *FileError) Unwrap() error { return e.Err }

// Where returns "file:line", or the file alone when the line is unknown.
func (e *FileError) Where() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d", e.File, e.Line)
	}
	return e.File
}
