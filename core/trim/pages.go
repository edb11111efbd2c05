package trim

import (
	"bytes"
	"io"
)

// PageReader cuts whole lines out of an output that is stored in pieces
// (file reads, bbolt chunks). Both output stores read pages with it, so a
// page, and the marker on a line too long for one page, read the same
// wherever the output is kept.
type PageReader struct {
	next func() ([]byte, error)
	data []byte // unconsumed bytes of the current piece
}

// NewPageReader reads pieces from next, which returns io.EOF after the last
// piece. A piece may be empty; it is skipped.
func NewPageReader(next func() ([]byte, error)) *PageReader {
	return &PageReader{next: next}
}

// fill makes data non-empty, or returns io.EOF at the end of the output.
func (r *PageReader) fill() error {
	for len(r.data) == 0 {
		p, err := r.next()
		if err != nil {
			return err
		}
		r.data = p
	}
	return nil
}

// SkipLine consumes one line. It returns io.ErrUnexpectedEOF if the output
// ends before the line's '\n': the caller's line count was wrong.
func (r *PageReader) SkipLine() error {
	for {
		if err := r.fill(); err == io.EOF {
			return io.ErrUnexpectedEOF
		} else if err != nil {
			return err
		}
		if i := bytes.IndexByte(r.data, '\n'); i >= 0 {
			r.data = r.data[i+1:]
			return nil
		}
		r.data = nil
	}
}

// Collect returns up to want lines, at most maxLines of them and maxBytes
// bytes, and how many it returned. Lines come back exactly as stored, each
// with its '\n' (the output's last line may have none). A first line longer
// than maxBytes is cut at a rune boundary with a marker and counts as one.
func (r *PageReader) Collect(want, maxLines, maxBytes int) (string, int, error) {
	var out []byte
	got := 0
	for got < want && got < maxLines {
		start := len(out)
		for {
			if err := r.fill(); err == io.EOF {
				if len(out) > start {
					got++ // a last line without '\n'
				}
				return string(out), got, nil
			} else if err != nil {
				return "", 0, err
			}
			piece := r.data
			i := bytes.IndexByte(piece, '\n')
			if i >= 0 {
				piece = piece[:i+1]
			}
			if len(out)+len(piece) > maxBytes {
				if got > 0 {
					return string(out[:start]), got, nil
				}
				out = append(out, piece[:maxBytes-len(out)]...)
				out = dropPartialRune(out)
				out = append(out, "… [line cut: first "+commas(int64(len(out)))+" bytes shown; the line is longer than one read returns]\n"...)
				return string(out), 1, nil
			}
			out = append(out, piece...)
			r.data = r.data[len(piece):]
			if i >= 0 {
				break
			}
		}
		got++
	}
	return string(out), got, nil
}
