// Package legacy is the trimmer harnessd shipped before the character
// budget (head + tail + first keyword lines, case-sensitive). It is kept
// only so that core/trim's benchmarks and corpus report can measure the
// new trimmer beside it in the same run; nothing in the daemon uses it.
package legacy

import "errors"

// ErrClosed is returned by a Write after Result.
var ErrClosed = errors.New("trim: write after end of stream")
