package trim

import "errors"

// Errors returned by the trimmer and the output store. They are sentinels so
// the API layer can map them to HTTP statuses with errors.Is in one place.
var (
	// ErrClosed is returned by a Write after the stream was ended: a
	// Trimmer after Result, an OutputWriter after Close.
	ErrClosed = errors.New("trim: write after end of stream")

	// ErrNotFound is returned by ReadLines for a well-formed output ID that
	// the store does not hold.
	ErrNotFound = errors.New("trim: output not found")

	// ErrInvalidID is returned by ReadLines for an ID that is not of the form
	// the store hands out. It is checked before any file is touched, so an ID
	// can never name a path outside the store.
	ErrInvalidID = errors.New("trim: malformed output id")

	// ErrRange is returned by ReadLines for a line range that does not fit
	// the output: from < 1, from past the last line, or to before from.
	ErrRange = errors.New("trim: line range out of bounds")
)
