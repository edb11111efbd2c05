package trim

import (
	"context"
	"io"
)

// OutputStore is where full outputs go, so that what the trimmer leaves out
// can be paged back. The bbolt store (store.Outputs) implements it.
type OutputStore interface {
	// Create starts a new output for session. Write the stream to the
	// returned OutputWriter (typically as a Trimmer's spill) and Close it.
	Create(ctx context.Context, session string) (OutputWriter, error)

	// ReadLines returns lines from..to of output id, 1-based and inclusive;
	// to <= 0 means to the end. A store may return fewer lines than asked
	// for (a page of bounded size); Lines.To says where it stopped.
	ReadLines(ctx context.Context, id string, from, to int) (Lines, error)
}

// OutputWriter receives one full output.
type OutputWriter interface {
	io.Writer
	// ID names the output for ReadLines and for the model's placeholder.
	ID() string
	// Close flushes the output and makes it complete; it is idempotent.
	Close() error
}

// Lines is a range of an output's lines, exactly as written, each with its
// '\n' (the output's last line may have none).
type Lines struct {
	Text  string
	From  int // first line in Text, 1-based
	To    int // last line in Text; From-1 when Text is empty
	Total int // lines in the whole output; a last line without '\n' counts
}
