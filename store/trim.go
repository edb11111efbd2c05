package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/harnessd/harnessd/core/trim"
)

// TrimOutputs returns the store's outputs as a trim.OutputStore, so a
// session spills full outputs into bbolt. Outputs keeps its own types so
// that the store's core does not depend on the trimmer; this adapter maps
// the store's errors to trim's, so callers test one set of sentinels.
func TrimOutputs(s *Store) trim.OutputStore { return trimOutputs{s.Outputs()} }

type trimOutputs struct{ o *Outputs }

var _ trim.OutputStore = trimOutputs{}

func (t trimOutputs) Create(ctx context.Context, session string) (trim.OutputWriter, error) {
	return t.o.Create(ctx, session)
}

func (t trimOutputs) ReadLines(ctx context.Context, id string, from, to int) (trim.Lines, error) {
	l, err := t.o.ReadLines(ctx, id, from, to)
	switch {
	case errors.Is(err, ErrOutputNotFound):
		err = fmt.Errorf("%w: %w", trim.ErrNotFound, err)
	case errors.Is(err, ErrInvalidOutputID):
		err = fmt.Errorf("%w: %w", trim.ErrInvalidID, err)
	case errors.Is(err, ErrLineRange):
		err = fmt.Errorf("%w: %w", trim.ErrRange, err)
	}
	return trim.Lines(l), err
}
