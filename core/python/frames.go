package python

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
	"unicode"
)

// maxStatusFrame bounds a frame from the driver: its frames are a few
// words. maxCellFrame bounds one to it (a cell's code, JSON-quoted).
const (
	maxStatusFrame = 64 << 10
	maxCellFrame   = 8 * MaxCodeBytes
)

// status is one frame from the driver: ready once, then a cell's end.
type status struct {
	Ready   bool   `json:"ready,omitempty"`
	IPython bool   `json:"ipython,omitempty"`
	Version string `json:"version,omitempty"`
	ID      uint64 `json:"id,omitempty"`
	Token   string `json:"token,omitempty"`
	Error   string `json:"error,omitempty"`
}

// request is one frame to the driver.
type request struct {
	Op    string `json:"op"`
	ID    uint64 `json:"id,omitempty"`
	Code  string `json:"code,omitempty"`
	Nonce string `json:"nonce,omitempty"`
	// Token is the cell's secret, which the driver echoes in its end: a
	// cell that writes end frames to fd 3 itself does not know it (cell
	// ids count up; tokens are random).
	Token string `json:"token,omitempty"`
}

var errBadFrame = errors.New("bad frame from the Python driver")

// readStatus reads one frame from the driver. The driver runs the
// agent's code, so the frame is untrusted: its length is bounded, its
// JSON must be one object of known fields, and an exception name that is
// not a dotted identifier is replaced.
func readStatus(r io.Reader) (status, error) {
	var st status
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return st, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > maxStatusFrame {
		return st, fmt.Errorf("%w: %d bytes, over %d", errBadFrame, n, maxStatusFrame)
	}
	if d, ok := r.(interface{ SetReadDeadline(time.Time) error }); ok {
		// The rest of a frame whose length came is the driver's next
		// write, or a cell writing half a frame to fd 3 to stall the
		// channel: bounded.
		d.SetReadDeadline(time.Now().Add(frameBodyWait))
		defer d.SetReadDeadline(time.Time{})
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return st, fmt.Errorf("%w: %d-byte frame cut short: %w", errBadFrame, n, err)
	}
	return parseStatus(b)
}

// frameBodyWait bounds the wait for the rest of a frame once its length
// has come.
const frameBodyWait = 2 * time.Second

func parseStatus(b []byte) (status, error) {
	var st status
	if err := json.Unmarshal(b, &st); err != nil {
		return status{}, fmt.Errorf("%w: %w", errBadFrame, err)
	}
	if !st.Ready && st.ID == 0 {
		return status{}, fmt.Errorf("%w: neither ready nor a cell's end", errBadFrame)
	}
	if !exceptionName(st.Error) {
		st.Error = "Exception"
	}
	if len(st.Token) > 64 {
		st.Token = ""
	}
	if len(st.Version) > 40 {
		st.Version = st.Version[:40]
	}
	return st, nil
}

// exceptionName reports whether s is "" or a dotted Python identifier
// of at most 200 bytes (module.Class).
func exceptionName(s string) bool {
	if len(s) > 200 {
		return false
	}
	start := true
	for _, r := range s {
		switch {
		case r == '.' && !start:
			start = true
		case r == '_' || unicode.IsLetter(r) || (!start && unicode.IsDigit(r)):
			start = false
		default:
			return false
		}
	}
	return !start || s == ""
}

// writeRequest writes one frame to the driver.
func writeRequest(w io.Writer, req request) error {
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	if len(b) > maxCellFrame {
		return fmt.Errorf("cell frame of %d bytes is over %d", len(b), maxCellFrame)
	}
	_, err = w.Write(append(binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(b)), uint32(len(b))), b...))
	return err
}
