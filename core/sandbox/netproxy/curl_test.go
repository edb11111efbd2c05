package netproxy

import (
	"bytes"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// forwarder stands in for the sandbox init: it listens on TCP 127.0.0.1
// and relays each connection byte for byte to the proxy's unix socket.
func forwarder(t *testing.T, sock string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // owned: ends when ln is closed in Cleanup
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				u, err := net.Dial("unix", sock)
				if err != nil {
					return
				}
				defer u.Close()
				done := make(chan struct{})
				go func() {
					io.Copy(u, c)
					u.(*net.UnixConn).CloseWrite()
					close(done)
				}()
				io.Copy(c, u)
				c.(*net.TCPConn).CloseWrite()
				<-done
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
	})
	return ln.Addr().String()
}

// TestCurl runs curl through the proxy, as an agent's tools would.
func TestCurl(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Fatal("curl is needed (scripts/test installs it)")
	}
	u := newUpstreams(t)
	e := newEnv(t, u, baseConfig(u))
	proxy := "http://" + forwarder(t, e.sock)
	ca := filepath.Join(shortDir(t), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: u.tls.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (stdout []byte, stderr string, err error) {
		// -q: no .curlrc; a bare environment: no proxy settings but ours.
		cmd := exec.Command(curl, append([]string{"-q", "-sS", "--max-time", "20", "--proxy", proxy, "--cacert", ca}, args...)...)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err = cmd.Run()
		return out.Bytes(), errb.String(), err
	}

	const n = 4 << 20
	for _, url := range []string{"http://www.example.com", "https://secure.example.com"} {
		out, stderr, err := run(fmt.Sprintf("%s/big?n=%d", url, n))
		if err != nil {
			t.Fatalf("curl %s: %v\n%s", url, err, stderr)
		}
		if len(out) != n || sum(out) != sum(payload(n, n)) {
			t.Fatalf("curl %s: %d bytes, want %d intact", url, len(out), n)
		}
		body := payload(11, 1<<20)
		upload := filepath.Join(shortDir(t), "up")
		os.WriteFile(upload, body, 0o600)
		out, stderr, err = run("--data-binary", "@"+upload, url+"/upload")
		if want := fmt.Sprintf("%d %s", len(body), sum(body)); err != nil || string(out) != want {
			t.Fatalf("curl upload to %s: %q %v, want %q\n%s", url, out, err, want, stderr)
		}
	}

	out, _, err := run("-w", " %{http_code}", "http://example.org/")
	if want := "harnessd proxy: example.org is not in the allowlist (sandbox.proxy.allow)\n 403"; err != nil || string(out) != want {
		t.Fatalf("curl refused http: %q %v, want %q", out, err, want)
	}
	// For https, curl reports the refused CONNECT and its status itself.
	_, stderr, err := run("https://bad.example.com/")
	if err == nil || !strings.Contains(stderr, "403") {
		t.Fatalf("curl refused https: %v %q", err, stderr)
	}
}
