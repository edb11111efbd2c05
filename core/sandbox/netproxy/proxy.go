package netproxy

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Proxy is one sandbox's egress proxy. Create it with New, run it with
// Serve, stop it with Close or by ending Serve's context. A Proxy serves
// once.
type Proxy struct {
	s         *settings
	transport *http.Transport // upstream connections for plain HTTP
	ids       atomic.Uint64   // Decision.ID
	errLog    *log.Logger     // net/http's diagnostics, into Config.Logger

	// ctx is the parent of every request's context; cancel ends them all
	// (tunnels included) when Serve winds down.
	ctx    context.Context
	cancel context.CancelCauseFunc

	// wg counts the goroutines Serve must wait for: each connection while
	// net/http owns it, and each handler while it runs (a hijacked tunnel's
	// handler outlives net/http's view of its connection).
	wg sync.WaitGroup

	mu      sync.Mutex
	state   int           // stateNew, stateServing, stateClosed
	closing chan struct{} // closed by Close
	done    chan struct{} // closed when Serve has returned
}

const (
	stateNew = iota
	stateServing
	stateClosed
)

// New checks cfg and returns a Proxy. It opens nothing: a Proxy costs a
// few allocations until Serve.
func New(cfg Config) (*Proxy, error) {
	s, err := compile(cfg)
	if err != nil {
		return nil, err
	}
	p := &Proxy{
		s:       s,
		closing: make(chan struct{}),
		done:    make(chan struct{}),
	}
	p.ctx, p.cancel = context.WithCancelCause(context.Background())
	p.transport = &http.Transport{
		Proxy:       nil, // never chain to HTTP_PROXY from the daemon's environment
		DialContext: p.dialUpstream,
		// Pass the client's Accept-Encoding through and its body back
		// untouched, instead of the Transport asking for gzip and
		// decompressing it.
		DisableCompression:     true,
		MaxIdleConnsPerHost:    4,
		IdleConnTimeout:        min(90*time.Second, s.idleTimeout),
		MaxResponseHeaderBytes: int64(s.maxHeaderBytes),
	}
	p.errLog = slog.NewLogLogger(s.log.Handler(), slog.LevelDebug)
	return p, nil
}

// Serve accepts connections on ln and serves them until ctx ends, Close is
// called or ln fails. It then closes ln and every connection, tunnels
// included, waits for the goroutines serving them, and returns: nil after
// ctx or Close, the listener's error otherwise. Serve returns ErrClosed on a
// Proxy that was closed or has served, ErrServing while another Serve runs.
func (p *Proxy) Serve(ctx context.Context, ln net.Listener) error {
	p.mu.Lock()
	switch p.state {
	case stateServing:
		p.mu.Unlock()
		return ErrServing
	case stateClosed:
		p.mu.Unlock()
		return ErrClosed
	}
	p.state = stateServing
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.state = stateClosed
		p.mu.Unlock()
		close(p.done)
	}()

	srv := &http.Server{
		Handler:                      http.HandlerFunc(p.serveHTTP),
		ReadHeaderTimeout:            p.s.idleTimeout,
		IdleTimeout:                  p.s.idleTimeout,
		MaxHeaderBytes:               p.s.maxHeaderBytes,
		DisableGeneralOptionsHandler: true, // "OPTIONS *" is not a proxy request: 400, not net/http's 200
		ErrorLog:                     p.errLog,
		BaseContext:                  func(net.Listener) context.Context { return p.ctx },
		ConnState:                    p.track,
	}

	served := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		select {
		case <-ctx.Done():
		case <-p.closing:
		case <-served:
		}
		srv.Close() // closes ln and every connection net/http still owns
	}()

	err := srv.Serve(&limitListener{Listener: ln, p: p, slots: make(chan struct{}, p.s.maxConns)})
	close(served)
	<-watched
	// Again, now that Serve has returned: a connection accepted while the
	// first Close ran may have missed it, and every accepted one is
	// tracked by now.
	srv.Close()
	p.cancel(ErrClosed)                // end tunnels and forwarded requests
	p.transport.CloseIdleConnections() // upstream connections back in the pool
	p.wg.Wait()
	p.transport.CloseIdleConnections() // and those returned while winding down

	if errors.Is(err, http.ErrServerClosed) || ctx.Err() != nil || p.isClosing() {
		return nil
	}
	return fmt.Errorf("netproxy: serve: %w", err)
}

// Close stops Serve and waits for it to return. It is safe to call more than
// once and from many goroutines; every call returns after Serve has.
func (p *Proxy) Close() error {
	p.mu.Lock()
	select {
	case <-p.closing:
	default:
		close(p.closing)
	}
	if p.state == stateNew { // never served: nothing to wait for
		p.state = stateClosed
		p.cancel(ErrClosed)
		close(p.done)
	}
	p.mu.Unlock()
	<-p.done
	return nil
}

func (p *Proxy) isClosing() bool {
	select {
	case <-p.closing:
		return true
	default:
		return false
	}
}

// track keeps p.wg in step with net/http's connections. StateNew is
// reported on the accepting goroutine, before Serve can return, so every Add
// happens before p.wg.Wait.
func (p *Proxy) track(_ net.Conn, st http.ConnState) {
	switch st {
	case http.StateNew:
		p.wg.Add(1)
	case http.StateHijacked, http.StateClosed:
		p.wg.Done()
	}
}

// serveHTTP dispatches one request. It is not exported as ServeHTTP on
// purpose: it counts on Serve's bookkeeping and is only correct under the
// server Serve runs.
func (p *Proxy) serveHTTP(w http.ResponseWriter, r *http.Request) {
	// The connection is counted until it is hijacked or closed, both of
	// which happen later than this Add, so the counter is not zero here.
	p.wg.Add(1)
	defer p.wg.Done()
	switch {
	case r.Method == http.MethodConnect:
		p.serveConnect(w, r)
	case r.URL.IsAbs() && r.URL.Host != "":
		p.serveForward(w, r)
	default:
		p.badRequest(w, r, fmt.Sprintf("%s %s is not a proxy request: send the absolute URL (GET http://host/path) or CONNECT host:port", r.Method, r.RequestURI))
	}
}

// report hands d to OnDecision, stamping the time.
func (p *Proxy) report(d Decision) {
	if d.Time.IsZero() {
		d.Time = time.Now()
	}
	if p.s.onDecision != nil {
		p.s.onDecision(d)
	}
}

// refused answers a refusal, reports it and logs it.
func (p *Proxy) refused(w http.ResponseWriter, r *http.Request, t target, v verdict) {
	p.report(Decision{
		ID: p.ids.Add(1), Method: r.Method, Host: t.host, Port: t.port,
		Reason: v.reason, Status: v.status,
	})
	p.s.log.Debug("netproxy: refused", "method", r.Method, "host", t.host, "port", t.port, "reason", v.reason)
	plainError(w, v.status, v.reason)
}

// badRequest answers 400 for a request the proxy cannot read a target from.
func (p *Proxy) badRequest(w http.ResponseWriter, r *http.Request, reason string) {
	p.refused(w, r, target{}, verdict{status: http.StatusBadRequest, reason: reason})
}

// plainError writes the short text an agent reads to learn why.
func plainError(w http.ResponseWriter, status int, reason string) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	body := "harnessd proxy: " + reason + "\n"
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write([]byte(body))
}

// limitListener holds connections to Config.MaxConns. One over the limit is
// accepted (so the client hears why, rather than waiting in the backlog),
// answered 503 and closed.
type limitListener struct {
	net.Listener
	p     *Proxy
	slots chan struct{}
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		select {
		case l.slots <- struct{}{}:
			return &slotConn{Conn: c, slots: l.slots}, nil
		default:
			l.p.busy(c)
		}
	}
}

// busy answers a connection over the limit. It runs on the accepting
// goroutine: the answer is one small write into a new socket's empty
// buffer, bounded by a short deadline anyway.
func (p *Proxy) busy(c net.Conn) {
	reason := fmt.Sprintf("too many connections at once from this sandbox (the proxy allows %d)", p.s.maxConns)
	p.report(Decision{ID: p.ids.Add(1), Reason: reason, Status: http.StatusServiceUnavailable})
	body := "harnessd proxy: " + reason + "\n"
	_ = c.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = fmt.Fprintf(c, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(body), body)
	_ = c.Close()
}

// slotConn gives its slot back when closed, once however often it is
// closed.
type slotConn struct {
	net.Conn
	slots chan struct{}
	once  sync.Once
}

func (c *slotConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { <-c.slots })
	return err
}

// CloseWrite half-closes the connection when the underlying one can (unix
// and TCP sockets can), so a tunnel can pass on the client's EOF.
func (c *slotConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
