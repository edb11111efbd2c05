package netproxy

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// baseConfig allows the example.com names the upstreams are mapped to,
// except bad.example.com.
func baseConfig(u *upstreams) Config {
	return Config{
		Allow: []string{"example.com", "*.example.com"},
		Deny:  []string{"bad.example.com"},
		Hosts: u.hosts(),
	}
}

func TestPolicyOverHTTP(t *testing.T) {
	u := newUpstreams(t)
	e := newEnv(t, u, baseConfig(u))
	c := e.client(t)
	plainAddr := u.plain.Listener.Addr().String()

	tests := []struct {
		name       string
		url        string
		wantStatus int
		wantBody   string // prefix
		wantReason string // substring of Decision.Reason
		allowed    bool
	}{
		{"allowed http", "http://www.example.com/hello", 200, "hello host=www.example.com uri=/hello", `sandbox.proxy.allow "*.example.com", mapped by sandbox.proxy.hosts to ` + plainAddr, true},
		{"allowed https", "https://secure.example.com/hello", 200, "hello host=secure.example.com uri=/hello", `sandbox.proxy.allow "*.example.com"`, true},
		{"case and trailing dot", "http://WWW.Example.COM./hello", 200, "hello host=WWW.Example.COM.", `"*.example.com"`, true},
		{"denylist", "http://bad.example.com/hello", 403, "harnessd proxy: bad.example.com is in the denylist (sandbox.proxy.deny \"bad.example.com\")\n", "denylist", false},
		{"not in allowlist", "http://example.org/", 403, "harnessd proxy: example.org is not in the allowlist (sandbox.proxy.allow)\n", "not in the allowlist", false},
		{"ip literal", "http://" + plainAddr + "/hello", 403, "harnessd proxy: 127.0.0.1 is an IP address", "IP address", false},
		{"ipv6 literal", "http://[::1]:80/", 403, "harnessd proxy: ::1 is an IP address", "IP address", false},
		{"port", "http://www.example.com:8080/hello", 403, "harnessd proxy: port 8080 is not allowed (sandbox.proxy.ports: 80, 443)\n", "sandbox.proxy.ports", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mark := e.rec.len()
			resp, err := c.Get(tt.url)
			if strings.HasPrefix(tt.url, "https") && tt.wantStatus != 200 {
				// Go's client does not show a refused CONNECT's body;
				// TestConnectRefusals covers that.
				if err == nil {
					t.Fatalf("want an error")
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				// A tunnel is reported closed when it ends, and the
				// client would keep it for the next request.
				c.CloseIdleConnections()
				if resp.StatusCode != tt.wantStatus || !strings.HasPrefix(string(body), tt.wantBody) {
					t.Fatalf("got %s %q, want %d %q", resp.Status, body, tt.wantStatus, tt.wantBody)
				}
				if tt.wantStatus == 403 && resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" {
					t.Errorf("Content-Type %q", resp.Header.Get("Content-Type"))
				}
			}
			want := 1
			if tt.allowed {
				want = 2
			}
			ds := e.rec.since(t, mark, want)
			d := ds[0]
			if d.Allowed != tt.allowed || d.Closed || !strings.Contains(d.Reason, tt.wantReason) {
				t.Fatalf("decision %+v: want allowed=%v reason ~ %q", d, tt.allowed, tt.wantReason)
			}
			wantMethod := "GET"
			if strings.HasPrefix(tt.url, "https") {
				wantMethod = "CONNECT"
			}
			if d.Method != wantMethod {
				t.Errorf("Method %q, want %q", d.Method, wantMethod)
			}
			if !tt.allowed {
				if d.Status != tt.wantStatus || d.Addr != "" {
					t.Errorf("refusal %+v: want Status %d, no Addr", d, tt.wantStatus)
				}
				return
			}
			end := ds[1]
			if !end.Closed || end.ID != d.ID || end.Status != 200 || end.Err != nil || end.BytesDown == 0 {
				t.Errorf("closing report %+v", end)
			}
			if d.Addr == "" || end.Addr != d.Addr {
				t.Errorf("Addr %q then %q", d.Addr, end.Addr)
			}
		})
	}
}

func TestDecisionFields(t *testing.T) {
	u := newUpstreams(t)
	e := newEnv(t, u, baseConfig(u))
	c := e.client(t)
	mark := e.rec.len()
	before := time.Now()
	resp, err := c.Post("http://www.example.com/upload", "application/octet-stream", bytes.NewReader(payload(7, 100000)))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	ds := e.rec.since(t, mark, 2)
	d, end := ds[0], ds[1]
	want := Decision{
		ID: d.ID, Time: d.Time, Method: "POST", Host: "www.example.com", Port: 80,
		Addr: u.plain.Listener.Addr().String(), Allowed: true, Reason: d.Reason,
	}
	if d != want {
		t.Errorf("decision\n got %+v\nwant %+v", d, want)
	}
	if d.Time.Before(before) || end.Time.Before(d.Time) {
		t.Errorf("times: decided %v, closed %v, request sent %v", d.Time, end.Time, before)
	}
	want.Time, want.Closed, want.Status = end.Time, true, 200
	want.BytesUp, want.BytesDown = 100000, int64(len(body))
	if end != want {
		t.Errorf("closing report\n got %+v\nwant %+v", end, want)
	}
}

// TestConnectRefusals checks what a refused or malformed CONNECT is told.
func TestConnectRefusals(t *testing.T) {
	u := newUpstreams(t)
	e := newEnv(t, u, baseConfig(u))
	tests := []struct {
		target     string
		wantStatus int
		wantBody   string
		wantHost   string
	}{
		{"bad.example.com:443", 403, "harnessd proxy: bad.example.com is in the denylist (sandbox.proxy.deny \"bad.example.com\")\n", "bad.example.com"},
		{"example.org:443", 403, "harnessd proxy: example.org is not in the allowlist (sandbox.proxy.allow)\n", "example.org"},
		{"127.0.0.1:443", 403, "harnessd proxy: 127.0.0.1 is an IP address; only host names in the allowlist may be reached (sandbox.proxy.allow)\n", "127.0.0.1"},
		{"[::ffff:127.0.0.1]:443", 403, "harnessd proxy: ::ffff:127.0.0.1 is an IP address", "::ffff:127.0.0.1"},
		{"secure.example.com:22", 403, "harnessd proxy: port 22 is not allowed (sandbox.proxy.ports: 80, 443)\n", "secure.example.com"},
		{"secure.example.com", 400, "harnessd proxy: bad CONNECT target \"secure.example.com\": missing port", ""},
		{"secure.example.com:0", 400, "harnessd proxy: bad CONNECT target", ""},
		{"secure.example.com:99999", 400, "harnessd proxy: bad CONNECT target", ""},
		{"2130706433:443", 400, "harnessd proxy: bad CONNECT target \"2130706433:443\": last label is all digits", ""},
		{"xn--bcher-kva.example.com.:443", 200, "", "xn--bcher-kva.example.com"}, // resolves to nothing: 502 after the decision
	}
	for _, tt := range tests {
		t.Run(tt.target, func(t *testing.T) {
			mark := e.rec.len()
			resp, body := e.raw(t, fmt.Sprintf("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", tt.target, tt.target))
			if tt.wantStatus == 200 {
				// Allowed by policy, but the name does not resolve.
				if resp.StatusCode != 502 && resp.StatusCode != 504 {
					t.Fatalf("got %s %q, want 502 or 504", resp.Status, body)
				}
				ds := e.rec.since(t, mark, 2)
				if !ds[0].Allowed || ds[0].Host != tt.wantHost || ds[1].Err == nil || ds[1].Status != resp.StatusCode {
					t.Fatalf("decisions %+v", ds)
				}
				return
			}
			if resp.StatusCode != tt.wantStatus || !strings.HasPrefix(body, tt.wantBody) {
				t.Fatalf("got %s %q, want %d %q", resp.Status, body, tt.wantStatus, tt.wantBody)
			}
			ds := e.rec.since(t, mark, 1)
			d := ds[0]
			if d.Allowed || d.Method != "CONNECT" || d.Host != tt.wantHost || d.Status != tt.wantStatus ||
				"harnessd proxy: "+d.Reason+"\n" != body {
				t.Fatalf("decision %+v for body %q", d, body)
			}
		})
	}
}

// TestMalformed sends requests that are not proxy requests.
func TestMalformed(t *testing.T) {
	u := newUpstreams(t)
	cfg := baseConfig(u)
	cfg.MaxHeaderBytes = 1024
	e := newEnv(t, u, cfg)
	tests := []struct {
		name         string
		req          string
		wantStatus   int
		wantBody     string // prefix
		wantDecision bool   // false: net/http refused it before the proxy saw it
	}{
		{"origin form", "GET /hello HTTP/1.1\r\nHost: www.example.com\r\n\r\n", 400,
			"harnessd proxy: GET /hello is not a proxy request", true},
		{"https absolute form", "GET https://secure.example.com/ HTTP/1.1\r\nHost: secure.example.com\r\n\r\n", 400,
			"harnessd proxy: only http:// URLs are forwarded, not https://", true},
		{"ftp", "GET ftp://www.example.com/ HTTP/1.1\r\nHost: www.example.com\r\n\r\n", 400,
			"harnessd proxy: only http:// URLs are forwarded, not ftp://", true},
		{"options star", "OPTIONS * HTTP/1.1\r\nHost: www.example.com\r\n\r\n", 400,
			"harnessd proxy: OPTIONS * is not a proxy request", true},
		{"shorthand ip", "GET http://127.1/ HTTP/1.1\r\nHost: 127.1\r\n\r\n", 400,
			"harnessd proxy: bad target \"127.1\": last label is all digits", true},
		{"empty port", "GET http://www.example.com:/ HTTP/1.1\r\nHost: www.example.com\r\n\r\n", 400,
			"harnessd proxy: bad target \"www.example.com:\": empty port", true},
		{"garbage", "HELLO\r\n\r\n", 400, "400 Bad Request", false},
		{"bare ipv6 connect", "CONNECT ::1:443 HTTP/1.1\r\nHost: x\r\n\r\n", 400, "400 Bad Request", false},
		{"header too large", "GET http://www.example.com/hello HTTP/1.1\r\nHost: www.example.com\r\nX-Big: " +
			strings.Repeat("a", 8000) + "\r\n\r\n", 431, "431 Request Header Fields Too Large", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mark := e.rec.len()
			resp, body := e.raw(t, tt.req)
			if resp.StatusCode != tt.wantStatus || !strings.HasPrefix(body, tt.wantBody) {
				t.Fatalf("got %s %q, want %d %q", resp.Status, body, tt.wantStatus, tt.wantBody)
			}
			want := 0
			if tt.wantDecision {
				want = 1
			}
			ds := e.rec.since(t, mark, want)
			if want == 1 && (ds[0].Allowed || ds[0].Status != tt.wantStatus) {
				t.Fatalf("decision %+v", ds[0])
			}
		})
	}
}

func TestLargeBodies(t *testing.T) {
	u := newUpstreams(t)
	e := newEnv(t, u, baseConfig(u))
	c := e.client(t)
	const down, up = 8 << 20, 4 << 20
	for _, base := range []string{"http://www.example.com", "https://secure.example.com"} {
		t.Run(base, func(t *testing.T) {
			mark := e.rec.len()
			resp, err := c.Get(fmt.Sprintf("%s/big?n=%d", base, down))
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			c.CloseIdleConnections()
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != down || sum(got) != sum(payload(down, down)) {
				t.Fatalf("download: %d bytes, sum %s", len(got), sum(got))
			}
			if resp.ContentLength != -1 {
				t.Errorf("ContentLength %d: want a chunked (streamed) response", resp.ContentLength)
			}
			ds := e.rec.since(t, mark, 2)
			if base[:5] == "http:" && ds[1].BytesDown != down {
				t.Errorf("BytesDown %d, want %d", ds[1].BytesDown, down)
			}

			mark = e.rec.len()
			body := payload(3, up)
			resp, err = c.Post(base+"/upload", "application/octet-stream", bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			ack, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			c.CloseIdleConnections()
			if want := fmt.Sprintf("%d %s", up, sum(body)); string(ack) != want {
				t.Fatalf("upload: server saw %q, want %q", ack, want)
			}
			ds = e.rec.since(t, mark, 2)
			if base[:5] == "http:" && ds[1].BytesUp != up {
				t.Errorf("BytesUp %d, want %d", ds[1].BytesUp, up)
			}
		})
	}
}

// TestStreaming checks that neither body is held whole: each side gets the
// first part before the other has sent the rest.
func TestStreaming(t *testing.T) {
	u := newUpstreams(t)
	e := newEnv(t, u, baseConfig(u))
	c := e.client(t)

	resp, err := c.Get("http://www.example.com/stream")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	first := make([]byte, 1024)
	if _, err := io.ReadFull(resp.Body, first); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first, payload(1, 1024)) {
		t.Fatal("first part differs")
	}
	close(u.release)
	rest, err := io.ReadAll(resp.Body)
	if err != nil || !bytes.Equal(rest, payload(2, 1024)) {
		t.Fatalf("rest: %d bytes, %v", len(rest), err)
	}

	pr, pw := io.Pipe()
	done := make(chan string, 1)
	go func() {
		resp, err := c.Post("http://www.example.com/upload-stream", "application/octet-stream", pr)
		if err != nil {
			done <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		done <- string(b)
	}()
	pw.Write(payload(4, 1024))
	select {
	case <-u.gotFirst:
	case <-time.After(10 * time.Second):
		t.Fatal("the upstream never saw the first KiB of the request body")
	}
	pw.Write(payload(5, 4096))
	pw.Close()
	if got := <-done; got != "5120" {
		t.Fatalf("upload-stream: %q", got)
	}
}

func TestHopByHopHeaders(t *testing.T) {
	u := newUpstreams(t)
	e := newEnv(t, u, baseConfig(u))
	resp, body := e.raw(t, "GET http://www.example.com/hello?a=1;b=2 HTTP/1.1\r\n"+
		"Host: www.example.com\r\n"+
		"Proxy-Authorization: Basic c2VjcmV0OnNlY3JldA==\r\n"+
		"Proxy-Connection: keep-alive\r\n"+
		"Connection: close, X-Hop\r\n"+
		"X-Hop: gone\r\n"+
		"X-Keep: kept\r\n"+
		"X-Forwarded-For: 192.0.2.1\r\n\r\n")
	want := `hello host=www.example.com uri=/hello?a=1;b=2 proxy-authorization="" proxy-connection="" x-hop="" x-keep="kept" xff="192.0.2.1"` + "\n"
	if resp.StatusCode != 200 || body != want {
		t.Fatalf("got %s\n%q\nwant\n%q", resp.Status, body, want)
	}
}

// TestKeepAlive sends several requests, allowed and refused, on one client
// connection; each is decided on its own.
func TestKeepAlive(t *testing.T) {
	u := newUpstreams(t)
	e := newEnv(t, u, baseConfig(u))
	c := e.dial(t)
	br := bufio.NewReader(c)
	mark := e.rec.len()
	for i, target := range []string{"www.example.com", "example.org", "www.example.com", "bad.example.com", "www.example.com"} {
		fmt.Fprintf(c, "GET http://%s/hello HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		want := 200
		if target != "www.example.com" {
			want = 403
		}
		if resp.StatusCode != want {
			t.Fatalf("request %d to %s: %s", i, target, resp.Status)
		}
	}
	ds := e.rec.since(t, mark, 3*2+2)
	ids := map[uint64]bool{}
	for _, d := range ds {
		ids[d.ID] = true
	}
	if len(ids) != 5 {
		t.Fatalf("%d IDs for 5 requests: %+v", len(ids), ds)
	}
}

func TestLocalhostNeedsAllowPrivate(t *testing.T) {
	u := newUpstreams(t)
	port := u.port(u.plain)
	url := fmt.Sprintf("http://localhost:%d/hello", port)
	for _, allowPrivate := range []bool{false, true} {
		t.Run("AllowPrivate="+strconv.FormatBool(allowPrivate), func(t *testing.T) {
			e := newEnv(t, u, Config{Allow: []string{"localhost"}, Ports: []int{port}, AllowPrivate: allowPrivate})
			mark := e.rec.len()
			resp, err := e.client(t).Get(url)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if !allowPrivate {
				want := "harnessd proxy: localhost resolves to 127.0.0.1, a loopback address, which is refused (sandbox.proxy.allow_private is off)\n"
				if resp.StatusCode != 403 || string(body) != want {
					t.Fatalf("got %s %q, want 403 %q", resp.Status, body, want)
				}
				if ds := e.rec.since(t, mark, 1); ds[0].Allowed || ds[0].Host != "localhost" {
					t.Fatalf("decision %+v", ds[0])
				}
				return
			}
			if resp.StatusCode != 200 || !strings.HasPrefix(string(body), "hello host=localhost:") {
				t.Fatalf("got %s %q", resp.Status, body)
			}
			ds := e.rec.since(t, mark, 2)
			if !ds[0].Allowed || ds[0].Addr != fmt.Sprintf("127.0.0.1:%d", port) {
				t.Fatalf("decision %+v", ds[0])
			}
		})
	}
}

func TestExplicitIPAllowed(t *testing.T) {
	u := newUpstreams(t)
	port := u.port(u.plain)
	e := newEnv(t, u, Config{Allow: []string{"127.0.0.0/8"}, Deny: []string{"127.0.0.2"}, Ports: []int{port}})
	c := e.client(t)
	resp, err := c.Get(fmt.Sprintf("http://127.0.0.1:%d/hello", port))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("allowed IP: %s", resp.Status)
	}
	resp, err = c.Get(fmt.Sprintf("http://127.0.0.2:%d/hello", port))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 403 || !strings.Contains(string(body), "denylist") {
		t.Fatalf("denied IP: %s %q", resp.Status, body)
	}
}

// TestTunnelHalfClose sends through a tunnel, half-closes, and reads the
// echo that the upstream sends only after it has seen EOF.
func TestTunnelHalfClose(t *testing.T) {
	u := newUpstreams(t)
	e := newEnv(t, u, baseConfig(u))
	mark := e.rec.len()
	c, br := e.connect(t, "echo.example.com:443")
	msg := append([]byte("echo\n"), payload(9, 1<<20)...)
	go func() { // ends when the write does; the echo keeps reading meanwhile
		c.Write(msg)
		c.(*net.UnixConn).CloseWrite()
	}()
	got, err := io.ReadAll(br)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, msg[5:]) {
		t.Fatalf("echo: %d bytes, want %d", len(got), len(msg)-5)
	}
	ds := e.rec.since(t, mark, 2)
	end := ds[1]
	if end.Err != nil || end.Status != 200 || end.BytesUp != int64(len(msg)) || end.BytesDown != int64(len(msg)-5) {
		t.Fatalf("closing report %+v", end)
	}
}

// TestTunnelPipelined sends the first bytes right behind the CONNECT, as
// some clients do with their TLS ClientHello.
func TestTunnelPipelined(t *testing.T) {
	u := newUpstreams(t)
	e := newEnv(t, u, baseConfig(u))
	c := e.dial(t)
	io.WriteString(c, "CONNECT echo.example.com:443 HTTP/1.1\r\nHost: echo.example.com:443\r\n\r\necho\nearly bytes")
	c.(*net.UnixConn).CloseWrite()
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: "CONNECT"})
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %v %v", resp, err)
	}
	got, _ := io.ReadAll(br)
	if string(got) != "early bytes" {
		t.Fatalf("got %q", got)
	}
}

func TestTunnelIdleTimeout(t *testing.T) {
	u := newUpstreams(t)
	cfg := baseConfig(u)
	cfg.IdleTimeout = 300 * time.Millisecond
	e := newEnv(t, u, cfg)

	// Bytes flow one way only, every 50ms for 1s: not idle.
	mark := e.rec.len()
	c, br := e.connect(t, "echo.example.com:443")
	io.WriteString(c, "drip 20\n")
	got, err := io.ReadAll(br)
	if err != nil || string(got) != strings.Repeat(".", 20) {
		t.Fatalf("drip: %q %v", got, err)
	}
	c.Close()
	if ds := e.rec.since(t, mark, 2); ds[1].Err != nil {
		t.Fatalf("drip tunnel ended with %v", ds[1].Err)
	}

	// Nothing flows: closed after about the idle timeout.
	mark = e.rec.len()
	c, br = e.connect(t, "echo.example.com:443")
	io.WriteString(c, "wait\n")
	start := time.Now()
	if _, err := io.ReadAll(br); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 250*time.Millisecond || d > 5*time.Second {
		t.Errorf("idle tunnel closed after %v, want about 300ms", d)
	}
	if ds := e.rec.since(t, mark, 2); !errors.Is(ds[1].Err, ErrIdleTimeout) {
		t.Fatalf("idle tunnel ended with %v, want ErrIdleTimeout", ds[1].Err)
	}
}

// TestCloseEndsTunnels closes the proxy under an open tunnel and an idle
// keep-alive connection.
func TestCloseEndsTunnels(t *testing.T) {
	u := newUpstreams(t)
	e := newEnv(t, u, baseConfig(u))
	mark := e.rec.len()
	c, br := e.connect(t, "echo.example.com:443")
	io.WriteString(c, "echo\nping")
	buf := make([]byte, 4)
	if _, err := io.ReadFull(br, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("echo: %q %v", buf, err)
	}
	idle := e.dial(t)
	e.raw(t, "GET http://www.example.com/hello HTTP/1.1\r\nHost: www.example.com\r\n\r\n")

	done := make(chan error, 1)
	go func() { done <- e.p.Close() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return")
	}
	if n, err := br.Read(buf); err != io.EOF {
		t.Fatalf("tunnel after Close: %d, %v; want EOF", n, err)
	}
	if _, err := idle.Read(buf); err != io.EOF {
		t.Fatalf("idle connection after Close: %v; want EOF", err)
	}
	if err := e.p.Close(); err != nil { // idempotent
		t.Fatal(err)
	}
	if _, err := net.Dial("unix", e.sock); err == nil {
		t.Fatal("socket still accepts after Close")
	}
	ds := e.rec.since(t, mark, 4)
	tunnel := ds[0]
	for _, d := range ds[1:] {
		if d.ID == tunnel.ID && d.Closed {
			if !errors.Is(d.Err, ErrClosed) {
				t.Fatalf("tunnel ended with %v, want ErrClosed", d.Err)
			}
			return
		}
	}
	t.Fatalf("no closing report for the tunnel: %+v", ds)
}

// TestCloseEndsForward closes the proxy while a plain-HTTP response is
// half sent.
func TestCloseEndsForward(t *testing.T) {
	u := newUpstreams(t)
	e := newEnv(t, u, baseConfig(u))
	mark := e.rec.len()
	resp, err := e.client(t).Get("http://www.example.com/stream")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	first := make([]byte, 1024)
	if _, err := io.ReadFull(resp.Body, first); err != nil {
		t.Fatal(err)
	}
	e.p.Close()
	if _, err := io.ReadAll(resp.Body); err == nil {
		t.Fatal("the body ended cleanly although the proxy closed mid-response")
	}
	ds := e.rec.since(t, mark, 2)
	if !errors.Is(ds[1].Err, ErrClosed) || ds[1].Status != 200 || ds[1].BytesDown != 1024 {
		t.Fatalf("closing report %+v, want Err ErrClosed", ds[1])
	}
}

// TestForwardIdleTimeout: an upstream that stops answering fails the
// request after IdleTimeout, with 504 before the headers and a cut body
// after them.
func TestForwardIdleTimeout(t *testing.T) {
	u := newUpstreams(t)
	cfg := baseConfig(u)
	cfg.IdleTimeout = 300 * time.Millisecond
	e := newEnv(t, u, cfg)
	c := e.client(t)

	mark := e.rec.len()
	start := time.Now()
	resp, err := c.Get("http://www.example.com/hang")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 504 || !strings.HasPrefix(string(body), "harnessd proxy: GET www.example.com:80: ") {
		t.Fatalf("hang: %s %q", resp.Status, body)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("504 after %v, want about 300ms", d)
	}
	if ds := e.rec.since(t, mark, 2); ds[1].Status != 504 || ds[1].Err == nil {
		t.Fatalf("closing report %+v", ds[1])
	}

	mark = e.rec.len()
	resp, err = c.Get("http://www.example.com/stream")
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err == nil || len(got) != 1024 {
		t.Fatalf("stream: %d bytes, %v; want 1024 and an error", len(got), err)
	}
	if ds := e.rec.since(t, mark, 2); ds[1].Status != 200 || !isTimeout(ds[1].Err) {
		t.Fatalf("closing report %+v, want a timeout", ds[1])
	}
}

func TestServeEndsWithContext(t *testing.T) {
	p, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	before := runtime.NumGoroutine()
	ln, err := ListenUnix(shortDir(t) + "/p.sock")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- p.Serve(ctx, ln) }()
	c, err := net.Dial("unix", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cancel()
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if err := p.Serve(context.Background(), ln); !errors.Is(err, ErrClosed) {
		t.Fatalf("second Serve: %v, want ErrClosed", err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	checkGoroutines(t, before)
}

func TestServeListenerError(t *testing.T) {
	p, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := ListenUnix(shortDir(t) + "/p.sock")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- p.Serve(context.Background(), ln) }()
	time.Sleep(20 * time.Millisecond)
	ln.Close()
	if err := <-served; err == nil || !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Serve after its listener closed: %v, want net.ErrClosed", err)
	}
	p.Close()
}

func TestCloseBeforeServe(t *testing.T) {
	p, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
	p.Close()
	ln, err := ListenUnix(shortDir(t) + "/p.sock")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := p.Serve(context.Background(), ln); !errors.Is(err, ErrClosed) {
		t.Fatalf("Serve after Close: %v", err)
	}
}

func TestMaxConns(t *testing.T) {
	u := newUpstreams(t)
	cfg := baseConfig(u)
	cfg.MaxConns = 2
	e := newEnv(t, u, cfg)
	held := []net.Conn{e.dial(t), e.dial(t)}
	// Make sure both were accepted (and hold their slots) before the third.
	mark := e.rec.len()
	for _, c := range held {
		fmt.Fprint(c, "GET http://www.example.com/hello HTTP/1.1\r\nHost: www.example.com\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("held connection: %v %v", resp, err)
		}
	}
	e.rec.since(t, mark, 4)
	mark = e.rec.len()
	// Read without writing: the proxy may close before a request arrives.
	resp, body := e.raw(t, "")
	if want := "harnessd proxy: too many connections at once from this sandbox (the proxy allows 2)\n"; resp.StatusCode != 503 || body != want {
		t.Fatalf("third connection: %s %q, want 503 %q", resp.Status, body, want)
	}
	if ds := e.rec.since(t, mark, 1); ds[0].Status != 503 || ds[0].Allowed {
		t.Fatalf("decision %+v", ds[0])
	}
	held[0].Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		// Until the slot is back the proxy answers 503 and closes, maybe
		// before the request is written (EPIPE): try again then too.
		if e.tryGet("GET http://www.example.com/hello HTTP/1.1\r\nHost: www.example.com\r\n\r\n") == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the slot of a closed connection was not given back")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestUpstreamFailures(t *testing.T) {
	u := newUpstreams(t)
	// A port nothing listens on: bind one, note it, close it.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	cfg := baseConfig(u)
	cfg.Hosts["dead.example.com"] = dead
	e := newEnv(t, u, cfg)

	mark := e.rec.len()
	resp, body := e.raw(t, "GET http://dead.example.com/ HTTP/1.1\r\nHost: dead.example.com\r\n\r\n")
	if resp.StatusCode != 502 || !strings.Contains(body, "connection refused") {
		t.Fatalf("plain: %s %q", resp.Status, body)
	}
	ds := e.rec.since(t, mark, 2)
	if !ds[0].Allowed || ds[1].Status != 502 || ds[1].Err == nil {
		t.Fatalf("plain decisions %+v", ds)
	}

	mark = e.rec.len()
	resp, body = e.raw(t, "CONNECT dead.example.com:443 HTTP/1.1\r\nHost: dead.example.com\r\n\r\n")
	if resp.StatusCode != 502 || !strings.HasPrefix(body, "harnessd proxy: cannot connect to dead.example.com:443: ") {
		t.Fatalf("CONNECT: %s %q", resp.Status, body)
	}
	ds = e.rec.since(t, mark, 2)
	if ds[1].Status != 502 || ds[1].Err == nil {
		t.Fatalf("CONNECT decisions %+v", ds)
	}
}

func TestListenUnix(t *testing.T) {
	dir := shortDir(t)
	path := dir + "/p.sock"
	ln, err := ListenUnix(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	if _, err := ListenUnix(path); err == nil || !strings.Contains(err.Error(), "live socket") {
		t.Errorf("second listener on a live socket: %v", err)
	}
	// A stale socket: its listener is gone but the file stayed.
	ln.SetUnlinkOnClose(false)
	ln.Close()
	ln, err = ListenUnix(path)
	if err != nil {
		t.Fatalf("over a stale socket: %v", err)
	}
	ln.Close()
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("socket left after Close: %v", err)
	}
	regular := dir + "/file"
	os.WriteFile(regular, nil, 0o600)
	if _, err := ListenUnix(regular); err == nil {
		t.Error("ListenUnix over a regular file succeeded")
	}
	if _, err := os.Stat(regular); err != nil {
		t.Errorf("regular file removed: %v", err)
	}
}

// TestHTTPSThroughGoTLS checks the tunnel carries a real TLS session end
// to end, with the certificate checked for the name asked for.
func TestHTTPSThroughGoTLS(t *testing.T) {
	u := newUpstreams(t)
	e := newEnv(t, u, baseConfig(u))
	c, br := e.connect(t, "secure.example.com:443")
	if br.Buffered() != 0 {
		t.Fatal("bytes after the 200")
	}
	tc := tls.Client(c, &tls.Config{ServerName: "secure.example.com", RootCAs: e.ca})
	fmt.Fprint(tc, "GET /hello HTTP/1.1\r\nHost: secure.example.com\r\nConnection: close\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(tc), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.HasPrefix(string(body), "hello host=secure.example.com") {
		t.Fatalf("%s %q", resp.Status, body)
	}
}
