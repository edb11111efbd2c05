package netproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// serveConnect answers CONNECT host:port: it decides, connects, answers 200
// and splices the two connections until both sides are done.
func (p *Proxy) serveConnect(w http.ResponseWriter, r *http.Request) {
	// For CONNECT the request-target is the authority itself; RequestURI
	// is it exactly as sent, before net/http's URL parsing.
	t, err := parseAuthority(r.RequestURI, 0)
	if err != nil {
		p.badRequest(w, r, fmt.Sprintf("bad CONNECT target %q: %v (want CONNECT host:port)", r.RequestURI, err))
		return
	}
	// Resolve and dial under the proxy's context, not the request's:
	// net/http cancels the request's when the client half-closes, and a
	// client may send its first bytes and its EOF right behind the
	// CONNECT.
	ctx := p.ctx
	v := p.s.decide(ctx, t)
	if !v.allowed {
		p.refused(w, r, t, v)
		return
	}
	d := Decision{ID: p.ids.Add(1), Method: r.Method, Host: t.host, Port: t.port, Allowed: true, Reason: v.reason}
	if len(v.addrs) > 0 {
		d.Addr = v.addrs[0].String()
	}
	p.report(d)
	end := d
	end.Closed = true
	defer func() {
		if end.Err != nil && (p.ctx.Err() != nil || p.isClosing()) {
			end.Err = ErrClosed // the cause, rather than what it broke
		}
		p.report(end)
	}()

	if v.err != nil {
		end.Status, end.Err = failStatus(v.err), v.err
		plainError(w, end.Status, v.err.Error())
		return
	}
	up, addr, err := p.dialAny(ctx, v.addrs)
	if err != nil {
		end.Status, end.Err = failStatus(err), err
		plainError(w, end.Status, fmt.Sprintf("cannot connect to %s: %v", joinHostPort(t.host, t.port), err))
		return
	}
	end.Addr = addr
	c, brw, err := http.NewResponseController(w).Hijack()
	if err != nil { // not with net/http's HTTP/1 server, which is all Serve runs
		_ = up.Close()
		end.Status, end.Err = http.StatusInternalServerError, err
		plainError(w, end.Status, "cannot take over the connection: "+err.Error())
		return
	}
	// From here this handler owns c; net/http has forgotten it.
	_ = c.SetWriteDeadline(time.Now().Add(p.s.idleTimeout))
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		_ = c.Close()
		_ = up.Close()
		end.Err = err
		return
	}
	end.Status = http.StatusOK

	tn := newTunnel(c, up, p.s.idleTimeout)
	// A client may send its first bytes (a TLS ClientHello) without waiting
	// for the 200; net/http has read them into brw already.
	if n := brw.Reader.Buffered(); n > 0 {
		b, _ := brw.Reader.Peek(n)
		_ = up.SetWriteDeadline(time.Now().Add(p.s.idleTimeout))
		nw, err := up.Write(b)
		tn.bytesUp.Add(int64(nw))
		if err != nil {
			tn.fail(err)
		}
	}
	tn.run(p.ctx)
	end.BytesUp, end.BytesDown, end.Err = tn.bytesUp.Load(), tn.bytesDown.Load(), tn.err()
}

// dialAny connects to the first of addrs that answers, all within
// DialTimeout. It returns the address connected to.
func (p *Proxy) dialAny(ctx context.Context, addrs []netip.AddrPort) (net.Conn, string, error) {
	ctx, cancel := context.WithTimeout(ctx, p.s.dialTimeout)
	defer cancel()
	var d net.Dialer
	var first error
	for _, a := range addrs {
		c, err := d.DialContext(ctx, "tcp", a.String())
		if err == nil {
			return c, a.String(), nil
		}
		if first == nil {
			first = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, "", first
}

// failStatus is the status for an upstream that cannot be reached or
// stopped answering: 504 when it was too slow, 502 otherwise.
func failStatus(err error) int {
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrIdleTimeout) || errors.As(err, &ne) && ne.Timeout() {
		return http.StatusGatewayTimeout
	}
	return http.StatusBadGateway
}

// tunnel splices two connections. Each direction is copied by its own
// goroutine; EOF on one side is passed on as a half-close of the other, so
// protocols that finish sending before they finish receiving still work.
// Any other error closes both.
type tunnel struct {
	client, up net.Conn
	idle       time.Duration
	lastActive atomic.Int64 // unix nanoseconds of the last byte moved either way

	bytesUp, bytesDown atomic.Int64 // client->up, up->client

	mu       sync.Mutex
	failed   bool
	firstErr error
}

func newTunnel(client, up net.Conn, idle time.Duration) *tunnel {
	t := &tunnel{client: client, up: up, idle: idle}
	t.touch()
	return t
}

// run copies until both directions are done, or ctx ends, then closes both
// connections.
func (t *tunnel) run(ctx context.Context) {
	// The AfterFunc's goroutine is waited for too, if it started, so
	// nothing of the tunnel outlives run.
	fired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(fired)
		t.fail(ErrClosed)
	})
	defer func() {
		if !stop() {
			<-fired
		}
	}()
	done := make(chan struct{})
	go func() { // owned by run, which waits for it below
		defer close(done)
		t.pipe(t.up, t.client, &t.bytesUp)
	}()
	t.pipe(t.client, t.up, &t.bytesDown)
	<-done
	_ = t.client.Close()
	_ = t.up.Close()
}

// fail records the first error (nil: an orderly end) and closes both
// connections, which ends both pipes.
func (t *tunnel) fail(err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.failed {
		return
	}
	t.failed, t.firstErr = true, err
	_ = t.client.Close()
	_ = t.up.Close()
}

// err is the error that ended the tunnel, nil when both sides finished.
// Call it after run.
func (t *tunnel) err() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.firstErr
}

func (t *tunnel) touch() { t.lastActive.Store(time.Now().UnixNano()) }

// quiet reports whether nothing has moved either way for the idle timeout.
func (t *tunnel) quiet() bool {
	return time.Since(time.Unix(0, t.lastActive.Load())) >= t.idle
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// pipe copies src to dst. A read deadline of one idle timeout is set before
// each read; when it passes, the tunnel is idle only if the other direction
// has been quiet too, so a one-way download is not cut off because the
// client sends nothing.
//
// A side that closes outright while the other is still sending to it
// makes the write to it fail (EPIPE, ECONNRESET), or the read from it
// (ECONNRESET, when it closed with what we sent still unread, as a TLS
// client does that leaves the server's last record in its buffer). That
// is how connections commonly end (a client reads what it wanted and
// hangs up), so it ends the tunnel without an error. The failed call alone
// proves the hang-up: waiting for the other pipe to have read that side's
// EOF first would race with it.
func (t *tunnel) pipe(dst, src net.Conn, n *atomic.Int64) {
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := *bp
	for {
		if err := src.SetReadDeadline(time.Now().Add(t.idle)); err != nil {
			t.fail(err)
			return
		}
		nr, rerr := src.Read(buf)
		if nr > 0 {
			t.touch()
			_ = dst.SetWriteDeadline(time.Now().Add(t.idle))
			nw, werr := dst.Write(buf[:nr])
			n.Add(int64(nw))
			if werr != nil {
				if errors.Is(werr, syscall.EPIPE) || errors.Is(werr, syscall.ECONNRESET) {
					t.fail(nil)
					return
				}
				if errors.Is(werr, os.ErrDeadlineExceeded) {
					werr = ErrIdleTimeout // the reader stopped reading
				}
				t.fail(werr)
				return
			}
			t.touch()
		}
		switch {
		case rerr == nil:
		case errors.Is(rerr, os.ErrDeadlineExceeded) && !t.quiet():
			// The other direction is moving: not idle.
		case rerr == io.EOF:
			closeWrite(dst)
			return
		case errors.Is(rerr, syscall.ECONNRESET):
			t.fail(nil) // src hung up with our data unread
			return
		case errors.Is(rerr, os.ErrDeadlineExceeded):
			t.fail(ErrIdleTimeout)
			return
		default:
			t.fail(rerr)
			return
		}
	}
}

// closeWrite half-closes c, or closes it when it cannot be half-closed.
func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		if cw.CloseWrite() == nil {
			return
		}
	}
	_ = c.Close()
}
