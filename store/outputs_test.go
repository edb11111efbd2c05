package store

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/harnessd/harnessd/core/trim"
)

// refLines is what ReadLines should return, computed the slow way.
func refLines(content []byte, from, to int) trim.Lines {
	var lines []string
	for rest := string(content); rest != ""; {
		i := strings.IndexByte(rest, '\n')
		if i < 0 {
			lines = append(lines, rest)
			break
		}
		lines = append(lines, rest[:i+1])
		rest = rest[i+1:]
	}
	total := len(lines)
	if to <= 0 || to > total {
		to = total
	}
	if total == 0 {
		return trim.Lines{From: 1, To: 0, Total: 0}
	}
	var b strings.Builder
	got := 0
	for _, l := range lines[from-1 : to] {
		if got == MaxReadLines || b.Len()+len(l) > MaxReadBytes {
			break
		}
		b.WriteString(l)
		got++
	}
	return trim.Lines{Text: b.String(), From: from, To: from + got - 1, Total: total}
}

func writeOutput(t *testing.T, s *Store, session string, content []byte, rng *rand.Rand) string {
	t.Helper()
	w, err := s.Outputs().Create(t.Context(), session)
	if err != nil {
		t.Fatal(err)
	}
	for p := content; len(p) > 0; {
		n := min(len(p), 1+rng.IntN(3*ChunkSize/2))
		if m, err := w.Write(p[:n]); err != nil || m != n {
			t.Fatalf("Write = %d, %v", m, err)
		}
		p = p[n:]
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := w.Write([]byte("x")); !errors.Is(err, ErrOutputClosed) {
		t.Fatalf("Write after Close: %v", err)
	}
	return w.ID()
}

func TestOutputsReadLines(t *testing.T) {
	s := openTest(t, nil)
	mustCreate(t, s, "s")
	rng := rand.New(rand.NewPCG(1, 2))

	// Lines of every length around the chunk size, so line starts fall at,
	// before and after chunk boundaries.
	var varied []byte
	for i := 0; len(varied) < 5*ChunkSize; i++ {
		n := []int{0, 1, 79, ChunkSize - 1, ChunkSize, ChunkSize + 1, rng.IntN(300)}[i%7]
		varied = append(varied, bytes.Repeat([]byte{'a' + byte(i%26)}, n)...)
		varied = append(varied, '\n')
	}
	exact := bytes.Repeat([]byte(strings.Repeat("x", 63)+"\n"), 2*ChunkSize/64) // ends on a chunk boundary
	contents := map[string][]byte{
		"empty":      nil,
		"one char":   []byte("a"),
		"one line":   []byte("a\n"),
		"no final":   []byte("a\nb"),
		"blank":      []byte("\n\n\n"),
		"varied":     varied,
		"varied+":    append(append([]byte(nil), varied...), "tail without newline"...),
		"exact":      exact,
		"many lines": bytes.Repeat([]byte("0123456789\n"), 3*MaxReadLines),
	}
	for name, content := range contents {
		t.Run(name, func(t *testing.T) {
			id := writeOutput(t, s, "s", content, rng)
			total := refLines(content, 1, 0).Total
			froms := []int{1, 2, total / 2, total - 1, total}
			tos := []int{0, 1, 2, total / 2, total - 1, total, total + 5}
			for range 20 {
				froms = append(froms, 1+rng.IntN(max(total, 1)))
			}
			for _, from := range froms {
				for _, to := range tos {
					if from < 1 || from > max(total, 1) || to > 0 && to < from {
						continue
					}
					got, err := s.Outputs().ReadLines(t.Context(), id, from, to)
					if err != nil {
						t.Fatalf("ReadLines(%d, %d) of %d: %v", from, to, total, err)
					}
					if want := refLines(content, from, to); got != want {
						t.Fatalf("ReadLines(%d, %d): got %d bytes %d-%d of %d, want %d bytes %d-%d of %d",
							from, to, len(got.Text), got.From, got.To, got.Total, len(want.Text), want.From, want.To, want.Total)
					}
				}
			}
			for _, r := range [][2]int{{0, 0}, {-1, 3}, {total + 1, 0}, {2, 1}} {
				if total == 0 && (r == [2]int{2, 1} || r[0] == 1) {
					continue
				}
				if _, err := s.Outputs().ReadLines(t.Context(), id, r[0], r[1]); !errors.Is(err, ErrLineRange) {
					t.Errorf("ReadLines(%d, %d) of %d = %v, want ErrLineRange", r[0], r[1], total, err)
				}
			}
		})
	}
}

func TestOutputsLongLine(t *testing.T) {
	s := openTest(t, nil)
	mustCreate(t, s, "s")
	long := append(bytes.Repeat([]byte("é"), MaxReadBytes), '\n') // 2 MiB, two-byte runes
	content := append([]byte("first\n"), long...)
	content = append(content, "last\n"...)
	id := writeOutput(t, s, "s", content, rand.New(rand.NewPCG(3, 4)))
	got, err := s.Outputs().ReadLines(t.Context(), id, 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	if got.To != 2 || got.Total != 3 || !strings.HasPrefix(got.Text, "éé") || !strings.Contains(got.Text, "[line cut: first 1,048,576 bytes shown") {
		t.Fatalf("long line: To %d Total %d, text ends %q", got.To, got.Total, got.Text[len(got.Text)-100:])
	}
	// From 1, the long line does not fit after the first: one line back.
	if got, _ := s.Outputs().ReadLines(t.Context(), id, 1, 0); got.Text != "first\n" || got.To != 1 {
		t.Fatalf("ReadLines(1, 0) = %q, To %d", got.Text, got.To)
	}
}

func TestOutputsErrors(t *testing.T) {
	s := openTest(t, nil)
	ctx := t.Context()
	if _, err := s.Outputs().Create(ctx, "nope"); !errors.Is(err, ErrSessionNotFound) {
		t.Fatalf("Create for unknown session: %v", err)
	}
	for _, id := range []string{"", "o", "o0", "o01", "x1", "o1a", "o-1", "O1", "o99999999999999999999999", "../../etc/passwd"} {
		if _, err := s.Outputs().ReadLines(ctx, id, 1, 0); !errors.Is(err, ErrInvalidOutputID) {
			t.Errorf("ReadLines(%q) = %v, want ErrInvalidOutputID", id, err)
		}
	}
	if _, err := s.Outputs().ReadLines(ctx, "o12345", 1, 0); !errors.Is(err, ErrOutputNotFound) {
		t.Fatalf("ReadLines of a missing output: %v", err)
	}
	// An output closed empty exists; one never closed and never flushed
	// does not.
	mustCreate(t, s, "s")
	w, _ := s.Outputs().Create(ctx, "s")
	w.Close()
	if got, err := s.Outputs().ReadLines(ctx, w.ID(), 1, 0); err != nil || got != (trim.Lines{From: 1, To: 0, Total: 0}) {
		t.Fatalf("empty output: %+v, %v", got, err)
	}
	w2, _ := s.Outputs().Create(ctx, "s")
	w2.Write([]byte("unflushed\n"))
	if _, err := s.Outputs().ReadLines(ctx, w2.ID(), 1, 0); !errors.Is(err, ErrOutputNotFound) {
		t.Fatalf("unflushed output: %v", err)
	}
	w2.Close()
	if got, _ := s.Outputs().ReadLines(ctx, w2.ID(), 1, 0); got.Text != "unflushed\n" {
		t.Fatalf("after Close: %+v", got)
	}
	if w.ID() == w2.ID() {
		t.Fatal("two outputs with one id")
	}
	// IDs survive a restart and are not reused.
	s = reopen(t, s, nil)
	w3, _ := s.Outputs().Create(ctx, "s")
	defer w3.Close()
	if w3.ID() == w.ID() || w3.ID() == w2.ID() {
		t.Fatalf("id %s reused after restart", w3.ID())
	}
}

// Outputs and events written at once share commits.
func TestOutputsWithAppends(t *testing.T) {
	s := openTest(t, nil)
	ctx := t.Context()
	var wg sync.WaitGroup
	for i := range 4 {
		id := fmt.Sprint("s", i)
		mustCreate(t, s, id)
		wg.Go(func() {
			for k := range 50 {
				if _, err := s.Append(ctx, id, cmd(k)); err != nil {
					t.Error(err)
				}
			}
		})
		wg.Go(func() {
			content := bytes.Repeat([]byte(fmt.Sprintf("%s line\n", id)), 40000)
			w, _ := s.Outputs().Create(ctx, id)
			w.Write(content)
			if err := w.Close(); err != nil {
				t.Error(err)
				return
			}
			got, err := s.Outputs().ReadLines(ctx, w.ID(), 39999, 0)
			if err != nil || got.Total != 40000 || got.Text != strings.Repeat(id+" line\n", 2) {
				t.Errorf("%s: %+v, %v", id, got, err)
			}
		})
	}
	wg.Wait()
}
