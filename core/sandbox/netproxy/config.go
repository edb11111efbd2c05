package netproxy

import (
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"strings"
	"time"
)

// Defaults for the zero fields of Config.
const (
	DefaultDialTimeout    = 10 * time.Second
	DefaultIdleTimeout    = 5 * time.Minute
	DefaultMaxConns       = 128
	DefaultMaxHeaderBytes = 64 << 10
)

// DefaultPorts are the ports a Config with no Ports allows: plain HTTP and
// HTTPS, which is what package managers and APIs need.
var DefaultPorts = []int{80, 443}

// Config configures a Proxy. The zero value is valid and refuses
// everything (an empty Allow list allows nothing); every other zero field
// means the default named on it.
type Config struct {
	// Allow lists the hosts requests may reach; Deny lists hosts they may
	// not, and wins over Allow. Each pattern is one of
	//
	//	example.com      that name only
	//	*.example.com    any name below example.com at any depth, but NOT
	//	                 example.com itself: list both to allow both
	//	*                every host name (not IP literals)
	//	192.0.2.7        that IP address
	//	192.0.2.0/24     the IP addresses in that range
	//
	// Names match case-insensitively and ignoring one trailing dot. A
	// request naming an IP address is refused unless an IP pattern in
	// Allow matches it. An IP pattern in Allow also admits a name that
	// resolves into its range even if the range is private (see
	// AllowPrivate); an IP pattern in Deny refuses any name that resolves
	// into it. A pattern New cannot read is a *PatternError.
	Allow, Deny []string

	// Ports the requests may reach (the port asked for, before any Hosts
	// mapping). Empty means DefaultPorts.
	Ports []int

	// Hosts maps a host name to the address requests for it go to, instead
	// of resolving it: "127.0.0.1:8080" (that port, whatever port was asked
	// for) or "127.0.0.1" (the port asked for). The name must still pass
	// Allow, Deny and Ports; the address is trusted, so it may be loopback
	// or private even when AllowPrivate is false. This is how an operator
	// (or a test) gives a sandbox one local service without opening the
	// host's loopback to it.
	Hosts map[string]string

	// AllowPrivate lets names resolve to loopback, private, link-local and
	// other non-public addresses (see doc.go). Off, such a name is refused
	// after resolution, so a DNS name the agent controls cannot point the
	// proxy at the host's own services.
	AllowPrivate bool

	// DialTimeout bounds resolving a name and connecting to it. Zero means
	// DefaultDialTimeout.
	DialTimeout time.Duration

	// IdleTimeout is how long a connection may carry no bytes before the
	// proxy closes it: a keep-alive connection between requests, a request
	// whose headers are slow to come, a tunnel quiet in both directions, an
	// upstream that stops answering, a client that stops reading. Zero
	// means DefaultIdleTimeout.
	IdleTimeout time.Duration

	// MaxConns bounds the client connections open at once; one past it is
	// answered 503 and closed, so one sandbox cannot use up the daemon's
	// file descriptors (each tunnel holds two). Zero means
	// DefaultMaxConns.
	MaxConns int

	// MaxHeaderBytes bounds a request's header (net/http allows 4 KiB of
	// slack over it), and an upstream response's; a request over it is
	// answered 431. Zero means DefaultMaxHeaderBytes.
	MaxHeaderBytes int

	// OnDecision, if not nil, is told about every request: once when the
	// proxy decides (Closed false), and once more, for an allowed request,
	// when it ends (Closed true). It is called on the connection's own
	// goroutine, from many goroutines at once, so it must be safe for
	// concurrent use and must not block: a slow OnDecision stalls that
	// connection. Hand the Decision to a buffered channel or a queue.
	OnDecision func(Decision)

	// Logger receives the proxy's own diagnostics (not the decisions).
	// Nil discards them.
	Logger *slog.Logger
}

// Decision is what OnDecision is told about one request: a CONNECT tunnel,
// a forwarded plain-HTTP request, or a connection refused before it sent
// any.
type Decision struct {
	// ID numbers the requests of one Proxy from 1, so the report at the
	// end of a request can be paired with the one at its decision.
	ID uint64

	// Time is when the proxy decided, or, when Closed, when the request
	// ended.
	Time time.Time

	// Method is "CONNECT" for a tunnel, the request's method (GET, POST…)
	// for plain HTTP, and "" for a connection refused before a request
	// was read (MaxConns).
	Method string

	// Host and Port are the target as asked for, Host normalized (lower
	// case, no trailing dot; an IP literal in its canonical form). Empty
	// and 0 when the request was too malformed to name one.
	Host string
	Port int

	// Addr is the address the proxy connects (or connected) to, "ip:port";
	// empty when the request was refused.
	Addr string

	// Allowed reports whether the policy let the request through. A
	// request allowed by the policy can still fail (the name does not
	// resolve, the upstream refuses): that is reported when it is Closed.
	Allowed bool

	// Reason says why: for a refusal, the text sent to the client (without
	// the "harnessd proxy: " prefix), naming the setting that refused it;
	// for an allowed request, the pattern that allowed it.
	Reason string

	// Status is the HTTP status the client was answered: 403, 400, 431,
	// 503 for refusals; on the closing report, 200 for a tunnel that was
	// established, the upstream's status for plain HTTP, or the proxy's
	// own 502/504 when the upstream failed.
	Status int

	// Closed marks the second report of an allowed request, made when it
	// ends. The fields below are set only on it.
	Closed bool

	// BytesUp and BytesDown count the bytes relayed from the client to the
	// upstream and back: the whole tunnel for CONNECT, the bodies for
	// plain HTTP.
	BytesUp, BytesDown int64

	// Err is why the request ended other than by finishing normally: the
	// upstream could not be resolved or reached, it or the client broke
	// off or went idle, or the proxy was closed. Nil when it finished.
	Err error
}

// settings is a Config with its defaults applied and its patterns
// compiled; read-only after New.
type settings struct {
	allow, deny    *patternSet
	ports          []int
	hosts          map[string]hostMapping
	allowPrivate   bool
	dialTimeout    time.Duration
	idleTimeout    time.Duration
	maxConns       int
	maxHeaderBytes int
	onDecision     func(Decision)
	log            *slog.Logger
}

// hostMapping is one compiled Config.Hosts entry.
type hostMapping struct {
	addr netip.Addr
	port int // 0: the port asked for
}

func compile(cfg Config) (*settings, error) {
	s := &settings{
		allowPrivate:   cfg.AllowPrivate,
		dialTimeout:    orDefault(cfg.DialTimeout, DefaultDialTimeout),
		idleTimeout:    orDefault(cfg.IdleTimeout, DefaultIdleTimeout),
		maxConns:       orDefault(cfg.MaxConns, DefaultMaxConns),
		maxHeaderBytes: orDefault(cfg.MaxHeaderBytes, DefaultMaxHeaderBytes),
		onDecision:     cfg.OnDecision,
		log:            cfg.Logger,
	}
	switch {
	case cfg.DialTimeout < 0:
		return nil, fmt.Errorf("netproxy: DialTimeout %v is negative", cfg.DialTimeout)
	case cfg.IdleTimeout < 0:
		return nil, fmt.Errorf("netproxy: IdleTimeout %v is negative", cfg.IdleTimeout)
	case cfg.MaxConns < 0:
		return nil, fmt.Errorf("netproxy: MaxConns %d is negative", cfg.MaxConns)
	case cfg.MaxHeaderBytes < 0:
		return nil, fmt.Errorf("netproxy: MaxHeaderBytes %d is negative", cfg.MaxHeaderBytes)
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	var err error
	if s.allow, err = compilePatterns("Allow", cfg.Allow); err != nil {
		return nil, err
	}
	if s.deny, err = compilePatterns("Deny", cfg.Deny); err != nil {
		return nil, err
	}
	s.ports = slices.Clone(cfg.Ports)
	if len(s.ports) == 0 {
		s.ports = slices.Clone(DefaultPorts)
	}
	for _, p := range s.ports {
		if p < 1 || p > 65535 {
			return nil, fmt.Errorf("netproxy: Ports: %d is not a port (1-65535)", p)
		}
	}
	slices.Sort(s.ports)
	s.ports = slices.Compact(s.ports)
	s.hosts = make(map[string]hostMapping, len(cfg.Hosts))
	for name, to := range cfg.Hosts {
		n, err := normalizeHost(name)
		if err != nil {
			return nil, &PatternError{List: "Hosts", Pattern: name, Reason: err.Error()}
		}
		m, err := parseMapping(to)
		if err != nil {
			return nil, &PatternError{List: "Hosts", Pattern: name, Reason: fmt.Sprintf("address %q: %v", to, err)}
		}
		s.hosts[n] = m
	}
	return s, nil
}

// parseMapping reads a Hosts value: an IP address, or an IP address and
// port. Names are not accepted: a mapping is trusted past the private
// address check, and a name could resolve anywhere later.
func parseMapping(s string) (hostMapping, error) {
	if ip, ok := parseIP(s); ok {
		return hostMapping{addr: ip}, nil
	}
	ap, err := netip.ParseAddrPort(s)
	if err != nil {
		return hostMapping{}, fmt.Errorf("want an IP address or IP:port")
	}
	if ap.Port() == 0 {
		return hostMapping{}, fmt.Errorf("port 0")
	}
	return hostMapping{addr: ap.Addr(), port: int(ap.Port())}, nil
}

func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// portsText lists the allowed ports for a refusal message.
func (s *settings) portsText() string {
	var b strings.Builder
	for i, p := range s.ports {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprint(&b, p)
	}
	return b.String()
}
