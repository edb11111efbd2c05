package store

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/core/trim"
)

// FuzzOutputs writes random content in random chunks and reads back one
// random range: it must be what the slow reference cuts out by hand, and
// past the end must be trim.ErrRange.
func FuzzOutputs(f *testing.F) {
	f.Add([]byte("a\nb\nc"), []byte{1, 2}, uint16(1), uint16(2))
	f.Add([]byte(""), []byte{0}, uint16(1), uint16(0))
	f.Add([]byte(strings.Repeat("x\n", 5000)), []byte{200, 7}, uint16(4000), uint16(3))
	f.Add([]byte(strings.Repeat("long line "+strings.Repeat("z", 900)+"\n", 20)), []byte{99}, uint16(3), uint16(9))
	// One store for all runs, in batch durability: opening one per run, or
	// an fsync per chunk, would make each run (and so minimizing) many
	// times slower.
	s := openTest(f, &Options{SyncEvery: time.Hour})
	if _, err := s.CreateSession(context.Background(), Session{ID: "fuzz"}); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data, cuts []byte, from, page uint16) {
		ctx := context.Background()
		w, err := s.Outputs().Create(ctx, "fuzz")
		if err != nil {
			t.Fatal(err)
		}
		rest := data
		for i := 0; len(rest) > 0; i++ {
			n := len(rest)
			if len(cuts) > 0 {
				n = min(max(int(cuts[i%len(cuts)])*37, 1), len(rest))
			}
			w.Write(rest[:n])
			rest = rest[n:]
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		total := bytes.Count(data, []byte{'\n'})
		if len(data) > 0 && data[len(data)-1] != '\n' {
			total++
		}
		lo := int(from)%(total+1) + 1
		hi := lo + int(page)%50
		l, err := s.Outputs().ReadLines(ctx, w.ID(), lo, hi)
		if lo > total && !(total == 0 && lo == 1) {
			if !errors.Is(err, trim.ErrRange) {
				t.Fatalf("ReadLines(%d, %d) of %d lines: %v", lo, hi, total, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("ReadLines(%d, %d): %v", lo, hi, err)
		}
		if want := refLines(data, lo, hi); l != want {
			t.Fatalf("ReadLines(%d, %d) = %d-%d of %d (%d bytes); want %d-%d of %d (%d bytes)",
				lo, hi, l.From, l.To, l.Total, len(l.Text), want.From, want.To, want.Total, len(want.Text))
		}
	})
}
