package api_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/harnessd/harnessd/core/api"
	"github.com/harnessd/harnessd/core/event"
)

// oneShotServer answers each connection's first request as answer says,
// then closes the connection, as a daemon closing idle connections does.
// It counts the requests it read.
func oneShotServer(t *testing.T, answer func(c net.Conn)) (socket string, requests *atomic.Int64, closed chan struct{}) {
	t.Helper()
	socket = filepath.Join(t.TempDir(), "s.sock")
	ln, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	requests = new(atomic.Int64)
	closed = make(chan struct{}, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			req, err := http.ReadRequest(bufio.NewReader(c))
			if err == nil {
				io.Copy(io.Discard, req.Body)
				requests.Add(1)
				answer(c)
			}
			c.Close()
			closed <- struct{}{}
		}
	}()
	return socket, requests, closed
}

// A request on an idle connection the daemon has closed is sent again on
// a new one: it never left.
func TestClientRedialsClosedIdleConnection(t *testing.T) {
	socket, requests, closed := oneShotServer(t, func(c net.Conn) {
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 15\r\n\r\n{\"status\":\"ok\"}")
	})
	cl := api.NewClient(socket)
	defer cl.Close()
	for i := range 3 {
		if _, err := cl.Health(context.Background()); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		select {
		case <-closed:
		case <-time.After(5 * time.Second):
			t.Fatal("server did not close the connection")
		}
	}
	if n := requests.Load(); n != 3 {
		t.Fatalf("server read %d requests, want 3", n)
	}
}

// An action the daemon read but did not answer is never sent twice.
func TestClientNeverResendsAnAction(t *testing.T) {
	socket, requests, _ := oneShotServer(t, func(net.Conn) {})
	cl := api.NewClient(socket)
	defer cl.Close()
	_, err := cl.Act(context.Background(), "s", event.SourceUser, event.CmdRun{Command: "true"})
	if err == nil {
		t.Fatal("want an error for an unanswered action")
	}
	if errors.Is(err, api.ErrNotRunning) || !strings.Contains(err.Error(), "POST") {
		t.Fatalf("error %v: want the POST's failure", err)
	}
	time.Sleep(50 * time.Millisecond)
	if n := requests.Load(); n != 1 {
		t.Fatalf("server read %d requests, want 1", n)
	}
}

// A call whose context ends returns at once, with the context's error.
func TestClientCallEndsWithContext(t *testing.T) {
	socket := filepath.Join(t.TempDir(), "s.sock")
	ln, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			defer c.Close()
			io.Copy(io.Discard, c) // reads, never answers
		}
	}()
	cl := api.NewClient(socket)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = cl.Health(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v, want context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("returned after %v", d)
	}
}
