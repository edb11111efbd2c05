package netproxy_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"

	"github.com/harnessd/harnessd/core/sandbox/netproxy"
)

// A refused request is answered 403 with a line that names the setting, and
// reported to OnDecision.
func Example() {
	dir, _ := os.MkdirTemp("", "netproxy")
	defer os.RemoveAll(dir)

	decisions := make(chan netproxy.Decision, 16) // buffered: OnDecision must not block
	p, err := netproxy.New(netproxy.Config{
		Allow:      []string{"proxy.golang.org", "*.debian.org"},
		OnDecision: func(d netproxy.Decision) { decisions <- d },
	})
	if err != nil {
		panic(err)
	}
	ln, err := netproxy.ListenUnix(filepath.Join(dir, "proxy.sock"))
	if err != nil {
		panic(err)
	}
	go p.Serve(context.Background(), ln)
	defer p.Close()

	// An HTTP client whose proxy is the unix socket, as the sandbox's
	// 127.0.0.1:3128 relays to it.
	proxyURL, _ := url.Parse("http://127.0.0.1:3128")
	tr := &http.Transport{
		Proxy: http.ProxyURL(proxyURL),
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", ln.Addr().String())
		},
	}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Get("http://example.org/")
	if err != nil {
		panic(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Print(resp.Status, "\n", string(body))

	d := <-decisions
	fmt.Println(d.Method, d.Host, d.Port, d.Allowed, d.Status)
	// Output:
	// 403 Forbidden
	// harnessd proxy: example.org is not in the allowlist (sandbox.proxy.allow)
	// GET example.org 80 false 403
}
