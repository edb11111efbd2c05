package sandbox

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"net"
	"testing"

	"github.com/harnessd/harnessd/core/files"
)

// pipeConn is a fileConn over one end of a socket pair and the other end
// for the test to play the init.
func pipeConn(t *testing.T) (*fileConn, net.Conn) {
	t.Helper()
	a, b := net.Pipe()
	t.Cleanup(func() { a.Close(); b.Close() })
	return &fileConn{c: a, r: bufio.NewReader(a)}, b
}

// TestFileConn: the daemon's end of the file channel answers a request,
// gives up at once when its context ends or the channel is closed, then
// stays broken (a frame cut short cannot be resumed), and refuses
// oversized frames from the init.
func TestFileConn(t *testing.T) {
	fc, init := pipeConn(t)
	go func() {
		var req files.Request
		data, err := readFrame(init, &req)
		if err != nil {
			return
		}
		writeFrame(init, &files.Response{Path: req.Path, Size: int64(len(data))}, append(data, '!'))
	}()
	r, err := fc.do(context.Background(), &files.Request{Op: files.OpWrite, Path: "/x", Data: []byte("abc")})
	if err != nil || r.Path != "/x" || r.Size != 3 || string(r.Data) != "abc!" {
		t.Fatalf("%+v %v", r, err)
	}

	// The init never answers; the caller's context ends.
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan error, 1)
	go func() {
		_, err := fc.do(ctx, &files.Request{Op: files.OpRead, Path: "/y"})
		got <- err
	}()
	var req files.Request
	if _, err := readFrame(init, &req); err != nil || req.Path != "/y" {
		t.Fatalf("%+v %v", req, err)
	}
	cancel()
	if err := <-got; !errors.Is(err, files.ErrUnavailable) || !errors.Is(err, context.Canceled) {
		t.Fatalf("after cancel: %v", err)
	}
	if _, err := fc.do(context.Background(), &files.Request{Op: files.OpRead, Path: "/z"}); !errors.Is(err, files.ErrUnavailable) {
		t.Fatalf("a broken channel was reused: %v", err)
	}

	// close while a request waits.
	fc2, init2 := pipeConn(t)
	go func() {
		_, err := fc2.do(context.Background(), &files.Request{Op: files.OpRead, Path: "/w"})
		got <- err
	}()
	if _, err := readFrame(init2, &req); err != nil {
		t.Fatal(err)
	}
	fc2.close()
	if err := <-got; !errors.Is(err, files.ErrUnavailable) {
		t.Fatalf("after close: %v", err)
	}

	// A frame that claims more than the bounds is refused, not read.
	fc3, init3 := pipeConn(t)
	go func() {
		var req files.Request
		readFrame(init3, &req)
		var hdr [4]byte
		binary.BigEndian.PutUint32(hdr[:], maxFileFrame+1)
		init3.Write(hdr[:])
	}()
	if _, err := fc3.do(context.Background(), &files.Request{Op: files.OpRead, Path: "/v"}); !errors.Is(err, files.ErrUnavailable) {
		t.Fatalf("oversized frame: %v", err)
	}
}
