// Package netproxy is the egress proxy of a sandbox whose network mode is
// "proxy": an HTTP forward proxy that lets the sandbox reach the hosts its
// policy allows, and says why when it refuses.
//
// # Basics
//
// Each session gets its own Proxy on its own unix socket (ListenUnix), so
// every decision is the session's. Inside the sandbox, the sandbox init
// listens on 127.0.0.1:3128 and relays each TCP connection byte for byte to
// that socket; the agent's tools find the proxy through HTTP_PROXY and
// HTTPS_PROXY=http://127.0.0.1:3128.
//
//	p, err := netproxy.New(netproxy.Config{
//		Allow:      []string{"proxy.golang.org", "*.debian.org"},
//		OnDecision: func(d netproxy.Decision) { events <- d }, // buffered
//	})
//	ln, err := netproxy.ListenUnix(filepath.Join(runDir, "proxy.sock"))
//	go p.Serve(ctx, ln) // returns when ctx ends or p.Close is called
//
// The proxy serves two kinds of request. "CONNECT host:port" opens a tunnel,
// used for HTTPS: the proxy answers 200 and copies bytes both ways until
// both sides have closed, passing a half-close on. A request in absolute
// form ("GET http://host/path HTTP/1.1") is relayed as plain HTTP, with the
// hop-by-hop headers (Proxy-Authorization and Proxy-Connection among them)
// removed and both bodies streamed, never held whole. Anything else, a
// request in origin form ("GET /path") or a CONNECT target that is not
// host:port, is answered 400.
//
// The policy, in order: a denylist match refuses; a host that is not in the
// allowlist is refused (an empty allowlist refuses everything); a request
// naming an IP address is refused unless an IP pattern in the allowlist
// matches it; a port not in Ports (default 80 and 443) is refused. A name
// that passes is looked up in Config.Hosts, or else resolved, and a name
// that resolves only to non-public addresses (loopback, private, link-local,
// unspecified, multicast, CGNAT, reserved and NAT64 ranges) is refused
// unless AllowPrivate is set, so a name the agent controls cannot be
// pointed at the host's own services (DNS rebinding). The addresses checked
// are the ones connected to; names are not resolved twice. A Hosts entry is
// trusted: it maps a name to a local service on purpose.
//
// Patterns are "example.com" (that name), "*.example.com" (names below it,
// at any depth, but not example.com itself: list both to allow both), "*"
// (every name), and IP addresses or ranges ("192.0.2.7", "10.1.0.0/16").
// Names match ignoring case and one trailing dot.
//
// A refusal is answered 403 with one line of plain text that names the
// setting, e.g. "harnessd proxy: example.org is not in the allowlist
// (sandbox.proxy.allow)", so the agent can tell its user what to change. Every request
// is reported to Config.OnDecision once when decided and, if allowed, once
// more when it ends, with the bytes relayed each way.
//
// # Caveats
//
// For HTTPS the proxy sees only the CONNECT target: the host name and port
// the client asked for, never the TLS contents, URL or the name in the TLS
// handshake (SNI). A client can CONNECT to an allowed name and then speak
// any protocol, or ask its server for another virtual host; the policy is
// about where connections go, not what they say.
//
// The proxy resolves names on the host, with the host's resolver; a name
// that resolves differently inside the sandbox does not matter, since the
// sandbox has no other way out.
//
// OnDecision is called synchronously on the connection's goroutine and must
// not block. Plain-HTTP requests on one client connection are each decided
// and reported; a request net/http cannot parse at all (a garbled request
// line, a header over MaxHeaderBytes) is answered 400 or 431 by net/http
// without a report, since it names no target.
//
// A CONNECT tries each address a name resolved to, in the resolver's order;
// plain HTTP goes to the first one only. Upstream connections for plain HTTP
// are kept alive and reused per address, for up to IdleTimeout or 90
// seconds. Bytes after a plain-HTTP Upgrade (a WebSocket over http://) are
// relayed but not counted, and its idle timeout runs on the upstream's
// reads alone.
//
// A Proxy serves once. Serve waits for every connection it accepted; the
// plain-HTTP Transport's pooled connections are closed on the way out, and
// their goroutines end as they notice.
package netproxy
