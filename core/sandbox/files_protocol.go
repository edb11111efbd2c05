package sandbox

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/harnessd/harnessd/core/files"
)

// The file protocol runs on the init's socket to the daemon once the
// shell has started (the setup conversation of protocol.go is over by
// then): the daemon sends one files.Request, the init answers with one
// files.Response, one at a time. A frame is a 4-byte big-endian length
// and that much JSON (the message without its Data), then a 4-byte length
// and that many bytes of Data, raw: a file's bytes are neither base64'd
// nor scanned as JSON. Lengths bound what either side reads, so neither
// trusts the other's framing to end.
//
// The channel is named for files but is the init's control channel: a
// later request kind (start a second PTY process for Python cells, say)
// fits beside Op without changing the framing.

// maxFileFrame bounds the JSON of a frame; maxFileData its data.
const (
	maxFileFrame = 1 << 20
	maxFileData  = files.MaxFileBytes
)

// errFrameTooBig is a message over the bounds; nothing was written.
var errFrameTooBig = errors.New("file frame too big")

func writeFrame(w io.Writer, v any, data []byte) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode file frame: %w", err)
	}
	if len(b) > maxFileFrame || len(data) > maxFileData {
		return fmt.Errorf("%w: %d+%d bytes, over %d+%d", errFrameTooBig, len(b), len(data), maxFileFrame, maxFileData)
	}
	head := make([]byte, 0, 8+len(b))
	head = binary.BigEndian.AppendUint32(head, uint32(len(b)))
	head = append(head, b...)
	head = binary.BigEndian.AppendUint32(head, uint32(len(data)))
	// The data is written from where it is, not copied: the init's
	// memory counts against the sandbox's limit.
	bufs := net.Buffers{head}
	if len(data) > 0 {
		bufs = append(bufs, data)
	}
	_, err = bufs.WriteTo(w)
	return err
}

// readFrame reads one frame into v and returns its data (nil if none).
func readFrame(r io.Reader, v any) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > maxFileFrame {
		return nil, fmt.Errorf("file frame of %d bytes is over %d", n, maxFileFrame)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, fmt.Errorf("file frame: %w", io.ErrUnexpectedEOF)
	}
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, fmt.Errorf("file frame: %w", io.ErrUnexpectedEOF)
	}
	m := binary.BigEndian.Uint32(hdr[:])
	if m > maxFileData {
		return nil, fmt.Errorf("file frame data of %d bytes is over %d", m, maxFileData)
	}
	var data []byte
	if m > 0 {
		data = make([]byte, m)
		if _, err := io.ReadFull(r, data); err != nil {
			return nil, fmt.Errorf("file frame: %w", io.ErrUnexpectedEOF)
		}
	}
	if err := json.Unmarshal(b, v); err != nil {
		return nil, fmt.Errorf("decode file frame: %w", err)
	}
	return data, nil
}
