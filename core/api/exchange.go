package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// A request that expects one answer (everything but the event streams) is
// exchanged on the caller's goroutine over a connection of the client's
// own pool: written, then the response read, with nothing in between.
// net/http's Transport hands each request to a writer goroutine and each
// response back from a reader goroutine, two wake-ups per call, which on a
// loaded machine were a large part of an action's round trip and of its
// tail. The streams, which last, still go through the Transport.

// maxIdleConns is how many idle connections the client keeps.
const maxIdleConns = 64

// clientConn is one connection to the daemon, used by one call at a time.
type clientConn struct {
	nc net.Conn
	br *bufio.Reader
	bw *bufio.Writer
}

// connPool holds the client's idle connections.
type connPool struct {
	mu   sync.Mutex
	idle []*clientConn
}

// get returns an idle connection (reused true) or dials a new one.
func (c *Client) getConn(ctx context.Context) (cc *clientConn, reused bool, err error) {
	p := &c.pool
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		cc = p.idle[n-1]
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
	}
	p.mu.Unlock()
	if cc != nil {
		return cc, true, nil
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, "unix", c.socket)
	if err != nil {
		var op *net.OpError
		if errors.As(err, &op) {
			return nil, false, &NotRunningError{Socket: c.socket, Err: op.Err}
		}
		return nil, false, &NotRunningError{Socket: c.socket, Err: err}
	}
	return &clientConn{nc: nc, br: bufio.NewReaderSize(nc, 8<<10), bw: bufio.NewWriterSize(nc, 8<<10)}, false, nil
}

// putConn keeps cc for the next call, or closes it if the pool is full.
func (c *Client) putConn(cc *clientConn) {
	p := &c.pool
	p.mu.Lock()
	if len(p.idle) < maxIdleConns {
		p.idle = append(p.idle, cc)
		cc = nil
	}
	p.mu.Unlock()
	if cc != nil {
		cc.nc.Close()
	}
}

// closeIdle closes the idle connections.
func (p *connPool) closeIdle() {
	p.mu.Lock()
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	for _, cc := range idle {
		cc.nc.Close()
	}
}

// errNotSent marks a request that never fully left: the daemon cannot
// have acted on it.
type errNotSent struct{ err error }

func (e *errNotSent) Error() string { return e.err.Error() }
func (e *errNotSent) Unwrap() error { return e.err }

// exchange sends one request and returns the response's status and body.
// A request that could not be written on a reused connection (the daemon
// closed it while idle) is sent again on a new one: it was never read. A
// GET is also sent again when a reused connection closed before its
// answer; any other request, once written, never is, as net/http's
// Transport does not resend a POST: an action must not run twice.
func (c *Client) exchange(ctx context.Context, method, path string, body []byte) (int, []byte, error) {
	if err := ctx.Err(); err != nil {
		return 0, nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	if !c.direct {
		// A client over another transport (the MCP endpoint's in-process
		// one) has no socket to dial: its Transport carries everything.
		resp, err := c.send(ctx, method, path, body)
		if err != nil {
			return 0, nil, err // an error status too, as statusError
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		if err != nil {
			return 0, nil, fmt.Errorf("%s %s: %w", method, path, err)
		}
		return resp.StatusCode, data, nil
	}
	for {
		cc, reused, err := c.getConn(ctx)
		if err != nil {
			return 0, nil, err
		}
		status, data, keep, err := cc.roundTrip(ctx, method, path, body)
		if err == nil {
			if keep {
				c.putConn(cc)
			} else {
				cc.nc.Close()
			}
			return status, data, nil
		}
		cc.nc.Close()
		var ns *errNotSent
		if reused && ctx.Err() == nil && (errors.As(err, &ns) || method == http.MethodGet && closedEarly(err)) {
			continue
		}
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return 0, nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
}

// roundTrip writes one request on cc and reads its response. keep says
// whether cc may carry another.
func (cc *clientConn) roundTrip(ctx context.Context, method, path string, body []byte) (status int, data []byte, keep bool, err error) {
	if ctx.Done() != nil {
		// Ending ctx ends the call: the connection's deadline passes, and
		// the connection is not kept (it may be mid-request, or carry the
		// passed deadline). An answer read in full is still returned.
		stop := context.AfterFunc(ctx, func() { cc.nc.SetDeadline(time.Unix(1, 0)) })
		defer func() {
			if !stop() {
				keep = false
			}
		}()
	}
	w := cc.bw
	w.WriteString(method)
	w.WriteByte(' ')
	w.WriteString(path)
	w.WriteString(" HTTP/1.1\r\nHost: harnessd\r\n")
	if body != nil {
		w.WriteString("Content-Type: application/json\r\nContent-Length: ")
		var n [20]byte
		w.Write(strconv.AppendInt(n[:0], int64(len(body)), 10))
		w.WriteString("\r\n\r\n")
		w.Write(body)
	} else {
		w.WriteString("\r\n")
	}
	if err := w.Flush(); err != nil {
		if errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) {
			return 0, nil, false, &errNotSent{err}
		}
		return 0, nil, false, err
	}
	resp, err := http.ReadResponse(cc.br, nil)
	if err != nil {
		return 0, nil, false, err
	}
	if resp.StatusCode >= 300 {
		data, _ = io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		return resp.StatusCode, data, false, nil
	}
	data, err = io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return 0, nil, false, err
	}
	return resp.StatusCode, data, !resp.Close, nil
}

// closedEarly reports whether err is the connection closing under a
// request, before any of its answer came.
func closedEarly(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)
}

// statusError is the Error for an answer with an error status.
func statusError(method, path string, status int, data []byte) error {
	var eb errorBody
	if json.Unmarshal(data, &eb) == nil && eb.Error.Code != "" {
		return &Error{Status: status, Code: eb.Error.Code, Message: eb.Error.Message}
	}
	return &Error{Status: status, Code: "http", Message: fmt.Sprintf("%s %s: %s", method, path, bytes.TrimSpace(data))}
}
