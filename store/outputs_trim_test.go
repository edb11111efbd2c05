package store

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/harnessd/harnessd/core/trim"
)

func TestOutputErrorsMatchTrims(t *testing.T) {
	s := openTest(t, nil)
	mustCreate(t, s, "s1")
	outs := s.Outputs()
	ctx := context.Background()
	w, err := outs.Create(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(w, "a\nb\nc\n")
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	l, err := outs.ReadLines(ctx, w.ID(), 2, 3)
	if err != nil || l.Text != "b\nc\n" || l.Total != 3 {
		t.Fatalf("ReadLines: %+v %v", l, err)
	}
	if _, err := outs.ReadLines(ctx, "o999999", 1, 0); !errors.Is(err, trim.ErrNotFound) {
		t.Errorf("unknown id: %v", err)
	}
	if _, err := outs.ReadLines(ctx, "../etc/passwd", 1, 0); !errors.Is(err, trim.ErrInvalidID) {
		t.Errorf("bad id: %v", err)
	}
	if _, err := outs.ReadLines(ctx, w.ID(), 0, 2); !errors.Is(err, trim.ErrRange) {
		t.Errorf("bad range: %v", err)
	}
}
