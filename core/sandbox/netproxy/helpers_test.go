package netproxy

import (
	"bufio"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// upstreams are the servers a test proxy relays to, all on 127.0.0.1 and
// reached by the names in their Hosts mappings.
type upstreams struct {
	plain *httptest.Server // http, "www.example.com"
	tls   *httptest.Server // https, "secure.example.com"
	echo  net.Listener     // raw TCP: echoes each connection, "echo.example.com"

	// release lets /stream finish: the test closes it once it has seen the
	// first part, which proves the proxy did not wait for the whole body.
	mu      sync.Mutex
	release chan struct{}
	// gotFirst is closed by /upload-stream once it has read the first KiB.
	gotFirst chan struct{}
	more     chan struct{} // closed by the test to let /upload-stream finish

	echoWG sync.WaitGroup
}

// payload returns n deterministic pseudo-random bytes, seeded by seed.
func payload(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	b := make([]byte, n)
	for i := 0; i+8 <= n; i += 8 {
		v := r.Uint64()
		for j := range 8 {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	for i := n &^ 7; i < n; i++ {
		b[i] = byte(r.Uint64())
	}
	return b
}

func sum(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

func newUpstreams(t *testing.T) *upstreams {
	t.Helper()
	u := &upstreams{release: make(chan struct{}), gotFirst: make(chan struct{}), more: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("/hello", func(w http.ResponseWriter, r *http.Request) {
		// Report what arrived, so tests can check what the proxy passed on.
		fmt.Fprintf(w, "hello host=%s uri=%s proxy-authorization=%q proxy-connection=%q x-hop=%q x-keep=%q xff=%q\n",
			r.Host, r.RequestURI, r.Header.Get("Proxy-Authorization"), r.Header.Get("Proxy-Connection"),
			r.Header.Get("X-Hop"), r.Header.Get("X-Keep"), r.Header.Get("X-Forwarded-For"))
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		b := payload(uint64(n), n)
		fl := http.NewResponseController(w)
		for len(b) > 0 { // chunked, flushed as it goes: a streamed body
			k := min(len(b), 64<<10)
			if _, err := w.Write(b[:k]); err != nil {
				return
			}
			_ = fl.Flush()
			b = b[k:]
		}
	})
	mux.HandleFunc("/upload", func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		fmt.Fprintf(w, "%d %s", len(b), sum(b))
	})
	mux.HandleFunc("/stream", func(w http.ResponseWriter, r *http.Request) {
		w.Write(payload(1, 1024))
		http.NewResponseController(w).Flush()
		u.mu.Lock()
		rel := u.release
		u.mu.Unlock()
		select {
		case <-rel:
		case <-r.Context().Done():
			return
		}
		w.Write(payload(2, 1024))
	})
	mux.HandleFunc("/hang", func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		rel := u.release
		u.mu.Unlock()
		select { // no headers until released
		case <-rel:
		case <-r.Context().Done():
		}
	})
	mux.HandleFunc("/upload-stream", func(w http.ResponseWriter, r *http.Request) {
		first := make([]byte, 1024)
		if _, err := io.ReadFull(r.Body, first); err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		close(u.gotFirst)
		rest, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		fmt.Fprintf(w, "%d", len(first)+len(rest))
	})
	u.plain = httptest.NewServer(mux)
	u.tls = httptest.NewTLSServer(mux)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u.echo = ln
	u.echoWG.Add(1)
	go func() { // owned: ends when the listener is closed in Cleanup
		defer u.echoWG.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u.echoWG.Add(1)
			go func() {
				defer u.echoWG.Done()
				u.serveEcho(c)
			}()
		}
	}()
	t.Cleanup(func() {
		u.plain.Close()
		u.tls.Close()
		ln.Close()
		u.echoWG.Wait()
	})
	return u
}

// serveEcho reads a first line naming what to do, then does it:
//
//	echo\n    copy every byte back until EOF, then half-close
//	drip N\n  send one byte every 50ms, N times, then close
//	wait\n    read until EOF or error, send nothing
func (u *upstreams) serveEcho(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	line, err := br.ReadString('\n')
	if err != nil {
		return
	}
	switch f := strings.Fields(line); {
	case len(f) == 1 && f[0] == "echo":
		io.Copy(c, br)
		c.(*net.TCPConn).CloseWrite()
		io.Copy(io.Discard, br)
	case len(f) == 2 && f[0] == "drip":
		n, _ := strconv.Atoi(f[1])
		for range n {
			time.Sleep(50 * time.Millisecond)
			if _, err := c.Write([]byte{'.'}); err != nil {
				return
			}
		}
	case len(f) == 1 && f[0] == "wait":
		io.Copy(io.Discard, br)
	}
}

func (u *upstreams) hosts() map[string]string {
	return map[string]string{
		"www.example.com":    u.plain.Listener.Addr().String(),
		"bad.example.com":    u.plain.Listener.Addr().String(),
		"secure.example.com": u.tls.Listener.Addr().String(),
		"echo.example.com":   u.echo.Addr().String(),
	}
}

func (u *upstreams) port(s *httptest.Server) int {
	return s.Listener.Addr().(*net.TCPAddr).Port
}

// recorder keeps every Decision a proxy reports.
type recorder struct {
	mu   sync.Mutex
	all  []Decision
	more chan struct{} // closed and replaced on every add
}

func newRecorder() *recorder { return &recorder{more: make(chan struct{})} }

func (r *recorder) add(d Decision) {
	r.mu.Lock()
	r.all = append(r.all, d)
	close(r.more)
	r.more = make(chan struct{})
	r.mu.Unlock()
}

func (r *recorder) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.all)
}

// since waits for want reports after the first mark, returns them, and fails
// if more than want arrive in a short grace period after.
func (r *recorder) since(t *testing.T, mark, want int) []Decision {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		r.mu.Lock()
		n, more := len(r.all)-mark, r.more
		r.mu.Unlock()
		if n >= want {
			break
		}
		select {
		case <-more:
		case <-deadline:
			t.Fatalf("got %d decisions, want %d: %+v", n, want, r.snapshot()[mark:])
		}
	}
	time.Sleep(20 * time.Millisecond)
	got := r.snapshot()[mark:]
	if len(got) != want {
		t.Fatalf("got %d decisions, want %d: %+v", len(got), want, got)
	}
	return got
}

func (r *recorder) snapshot() []Decision {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Decision(nil), r.all...)
}

// check verifies what must hold of every proxy's reports: each ID is
// decided exactly once, in a report with Closed false; it is closed exactly
// once if it was allowed, never if it was refused; the closing report comes
// after the decision.
func (r *recorder) check(t *testing.T) {
	t.Helper()
	decided := map[uint64]Decision{}
	closed := map[uint64]int{}
	for _, d := range r.snapshot() {
		if d.ID == 0 {
			t.Errorf("decision without an ID: %+v", d)
		}
		if d.Time.IsZero() {
			t.Errorf("decision without a Time: %+v", d)
		}
		if !d.Closed {
			if _, dup := decided[d.ID]; dup {
				t.Errorf("ID %d decided twice", d.ID)
			}
			decided[d.ID] = d
			continue
		}
		first, ok := decided[d.ID]
		if !ok {
			t.Errorf("ID %d closed before it was decided: %+v", d.ID, d)
		}
		if !first.Allowed {
			t.Errorf("ID %d was refused but reported closed: %+v", d.ID, d)
		}
		closed[d.ID]++
	}
	for id, d := range decided {
		if d.Allowed && closed[id] != 1 {
			t.Errorf("ID %d allowed and closed %d times, want 1: %+v", id, closed[id], d)
		}
	}
}

// env is one proxy under test, serving on a unix socket.
type env struct {
	u    *upstreams
	p    *Proxy
	rec  *recorder
	sock string
	ca   *x509.CertPool
}

// shortDir is a temporary directory with a path short enough for a unix
// socket (108 bytes): t.TempDir's names grow with the test's name.
func shortDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "np")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// newEnv starts a proxy with cfg (its OnDecision replaced by a recorder)
// and registers a Cleanup that closes it, checks that Serve returned nil,
// that the reports are consistent and that no goroutine was left behind.
func newEnv(t *testing.T, u *upstreams, cfg Config) *env {
	t.Helper()
	e := &env{u: u, rec: newRecorder()}
	cfg.OnDecision = e.rec.add
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.p = p
	e.ca = x509.NewCertPool()
	e.ca.AddCert(u.tls.Certificate())
	e.sock = filepath.Join(shortDir(t), "proxy.sock")
	ln, err := ListenUnix(e.sock)
	if err != nil {
		t.Fatal(err)
	}
	before := runtime.NumGoroutine()
	served := make(chan error, 1)
	go func() { served <- p.Serve(context.Background(), ln) }()
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		select {
		case err := <-served:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Serve did not return after Close")
		}
		e.rec.check(t)
		checkGoroutines(t, before)
	})
	return e
}

// checkGoroutines waits for the goroutine count to fall back to before.
func checkGoroutines(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		now := runtime.NumGoroutine()
		if now <= before {
			return
		}
		if time.Now().After(deadline) {
			var b strings.Builder
			pprof.Lookup("goroutine").WriteTo(&b, 1)
			t.Fatalf("goroutines: %d before, %d after:\n%s", before, now, b.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// dial connects to the proxy's socket, as the sandbox init does.
func (e *env) dial(t *testing.T) net.Conn {
	t.Helper()
	c, err := net.Dial("unix", e.sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(20 * time.Second))
	return c
}

// client is an http.Client that uses the proxy, reached over its socket.
// Its idle connections are closed in Cleanup, before the goroutine check.
func (e *env) client(t *testing.T) *http.Client {
	t.Helper()
	proxyURL, _ := url.Parse("http://proxy.invalid:3128")
	tr := &http.Transport{
		Proxy: http.ProxyURL(proxyURL),
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", e.sock)
		},
		TLSClientConfig:    &tls.Config{RootCAs: e.ca},
		DisableCompression: true,
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

// raw sends req as written over a new connection and reads one response.
func (e *env) raw(t *testing.T, req string) (*http.Response, string) {
	t.Helper()
	c := e.dial(t)
	defer c.Close()
	if _, err := io.WriteString(c, req); err != nil && req != "" {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("%q: read response: %v", req, err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%q: read body: %v", req, err)
	}
	return resp, string(body)
}

// tryGet sends req on a new connection and returns the response's
// status, or 0 if the connection failed on the way.
func (e *env) tryGet(req string) int {
	c, err := net.Dial("unix", e.sock)
	if err != nil {
		return 0
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.WriteString(c, req); err != nil {
		return 0
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// connect opens a tunnel to target and returns the connection after the
// 200, with a reader holding anything read past it.
func (e *env) connect(t *testing.T, target string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c := e.dial(t)
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: "CONNECT"})
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("CONNECT %s: %s %s", target, resp.Status, b)
	}
	return c, br
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
