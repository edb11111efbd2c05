package sandbox

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
)

// The file protocol runs on the init's socket to the daemon once the
// shell has started (the setup conversation of protocol.go is over by
// then): the daemon sends one files.Request, the init answers with one
// files.Response, one at a time, each a frame of a 4-byte big-endian
// length and that many bytes of JSON. Lengths bound what either side
// reads, so neither trusts the other's framing to end.
//
// The channel is named for files but is the init's control channel: a
// later request kind (start a second PTY process for Python cells, say)
// fits beside Op without changing the framing.

// maxFileFrame bounds a frame: a request or answer carries at most
// files.MaxFileBytes of content, base64 in JSON (4/3), plus the rest.
const maxFileFrame = 8 << 20

func writeFrame(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode file frame: %w", err)
	}
	if len(b) > maxFileFrame {
		return fmt.Errorf("file frame of %d bytes is over %d", len(b), maxFileFrame)
	}
	buf := make([]byte, 4+len(b))
	binary.BigEndian.PutUint32(buf, uint32(len(b)))
	copy(buf[4:], b)
	_, err = w.Write(buf)
	return err
}

func readFrame(r io.Reader, v any) error {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > maxFileFrame {
		return fmt.Errorf("file frame of %d bytes is over %d", n, maxFileFrame)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return fmt.Errorf("file frame: %w", io.ErrUnexpectedEOF)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("decode file frame: %w", err)
	}
	return nil
}
