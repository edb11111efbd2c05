package netproxy

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"sync"
	"sync/atomic"
	"time"
)

// Headers httputil.ReverseProxy drops when Rewrite is set. A forward proxy
// passes the client's request on as it was, so they are put back.
var forwardingHeaders = []string{"Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto"}

// serveForward relays a plain-HTTP request in absolute form. The upstream
// URL's host is replaced by the address the policy checked, so the
// Transport dials exactly that; the Host header keeps the name asked for.
// httputil.ReverseProxy does the relaying: it strips hop-by-hop headers
// (Connection and those it names, Proxy-Authorization, Proxy-Connection,
// Keep-Alive, TE, Trailer, Transfer-Encoding, Upgrade), streams both bodies,
// passes on 1xx responses and trailers, and handles Upgrade.
func (p *Proxy) serveForward(w http.ResponseWriter, r *http.Request) {
	if r.URL.Scheme != "http" {
		p.badRequest(w, r, fmt.Sprintf("only http:// URLs are forwarded, not %s://; for TLS use CONNECT host:port (clients do when their proxy is http://)", r.URL.Scheme))
		return
	}
	t, err := parseAuthority(r.URL.Host, 80)
	if err != nil {
		p.badRequest(w, r, fmt.Sprintf("bad target %q: %v", r.URL.Host, err))
		return
	}
	v := p.s.decide(r.Context(), t)
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

	if v.err != nil {
		end.Status, end.Err = failStatus(v.err), v.err
		plainError(w, end.Status, v.err.Error())
		p.report(end)
		return
	}

	cw := &clientWriter{ResponseWriter: w, rc: http.NewResponseController(w), idle: p.s.idleTimeout}
	var up countingBody
	if r.Body != nil && r.Body != http.NoBody {
		up.ReadCloser = r.Body
		r.Body = &up
	}
	var down *countingBody // set by ModifyResponse
	var failed error       // set by ErrorHandler

	// ReverseProxy ends a response it cannot finish relaying by panicking
	// with http.ErrAbortHandler, so net/http drops the connection instead of
	// ending the response as if it were whole. The closing report is still
	// made; the panic goes on.
	defer func() {
		rec := recover()
		end.Status = cw.status
		end.BytesUp = up.n.Load()
		switch {
		case failed != nil:
			end.Err = failed
		case down != nil && down.err() != nil:
			end.Err = down.err()
		case cw.err != nil:
			end.Err = cw.err
		case rec != nil:
			end.Err = errAborted
		}
		if end.Err != nil && (p.ctx.Err() != nil || p.isClosing()) {
			end.Err = ErrClosed // the cause, rather than what it broke
		}
		if down != nil {
			end.BytesDown = down.n.Load()
		}
		if rec == nil {
			cw.finish()
		}
		p.report(end)
		if rec != nil {
			panic(rec)
		}
	}()

	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme = "http"
			pr.Out.URL.Host = d.Addr
			pr.Out.Host = pr.In.URL.Host
			pr.Out.URL.RawQuery = pr.In.URL.RawQuery // as sent, not "cleaned"
			for _, h := range forwardingHeaders {
				if v, ok := pr.In.Header[h]; ok {
					pr.Out.Header[h] = v
				}
			}
		},
		Transport:     p.transport,
		FlushInterval: -1, // write through: a streamed response reaches the client as it comes
		ErrorLog:      p.errLog,
		ModifyResponse: func(res *http.Response) error {
			if res.StatusCode == http.StatusSwitchingProtocols {
				return nil // ReverseProxy needs the body's ReadWriteCloser
			}
			down = &countingBody{ReadCloser: res.Body}
			res.Body = down
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			if r.Context().Err() != nil {
				// The client went away or the proxy is closing: nobody
				// to answer.
				failed = context.Cause(r.Context())
				return
			}
			failed = err
			status := failStatus(err)
			plainError(w, status, fmt.Sprintf("%s %s: %v", r.Method, joinHostPort(t.host, t.port), err))
		},
	}
	rp.ServeHTTP(cw, r)
}

// dialUpstream is the plain-HTTP Transport's dialer. It is only ever asked
// for an address decide returned, because serveForward puts that address in
// the URL. The connection gets idle deadlines, so an upstream that stops
// sending, or stops reading the body, fails the request after IdleTimeout
// instead of holding it forever.
func (p *Proxy) dialUpstream(ctx context.Context, network, addr string) (net.Conn, error) {
	d := net.Dialer{Timeout: p.s.dialTimeout}
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return &idleConn{Conn: c, idle: p.s.idleTimeout}, nil
}

// idleConn sets a deadline of one idle timeout before each read and write.
type idleConn struct {
	net.Conn
	idle time.Duration
}

func (c *idleConn) Read(b []byte) (int, error) {
	if err := c.Conn.SetReadDeadline(time.Now().Add(c.idle)); err != nil {
		return 0, err
	}
	return c.Conn.Read(b)
}

func (c *idleConn) Write(b []byte) (int, error) {
	if err := c.Conn.SetWriteDeadline(time.Now().Add(c.idle)); err != nil {
		return 0, err
	}
	return c.Conn.Write(b)
}

// clientWriter is the ResponseWriter ReverseProxy writes to. It records the
// status and the first write error, and sets a write deadline of one idle
// timeout before each write, so a client that stops reading cannot hold the
// request (and its upstream connection) forever.
type clientWriter struct {
	http.ResponseWriter
	rc     *http.ResponseController
	idle   time.Duration
	status int
	err    error
}

func (w *clientWriter) WriteHeader(code int) {
	if code >= 200 && w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *clientWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.idle))
	n, err := w.ResponseWriter.Write(b)
	if err != nil && w.err == nil {
		w.err = err
	}
	return n, err
}

// Unwrap lets http.ResponseController reach Flush and Hijack.
func (w *clientWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// finish flushes what is buffered while the deadline still holds, then
// clears the deadline: net/http does not reset it between the requests of a
// keep-alive connection, and a stale one would fail the next.
func (w *clientWriter) finish() {
	if w.status != 0 {
		_ = w.rc.SetWriteDeadline(time.Now().Add(w.idle))
		_ = w.rc.Flush()
	}
	_ = w.rc.SetWriteDeadline(time.Time{})
}

// countingBody counts the bytes read through it and keeps the first read
// error other than EOF. The Transport may read a request body from its own
// goroutine, so the count is atomic.
type countingBody struct {
	io.ReadCloser
	n atomic.Int64

	mu   sync.Mutex
	rerr error
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	if err != nil && err != io.EOF {
		b.mu.Lock()
		if b.rerr == nil {
			b.rerr = err
		}
		b.mu.Unlock()
	}
	return n, err
}

func (b *countingBody) err() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.rerr
}
