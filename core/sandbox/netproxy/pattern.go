package netproxy

import (
	"errors"
	"net/netip"
	"strconv"
	"strings"
)

// maxHostLen is the longest host name DNS can carry (RFC 1035, less the
// root label and length octets).
const maxHostLen = 253

// normalizeHost returns the canonical form of a host name: ASCII lower
// case, one trailing dot removed. It refuses anything that is not a plain
// DNS name, because a name the policy cannot read the same way the resolver
// does is a way around the policy: non-ASCII (the caller must send the
// punycode form), empty labels, and a last label made only of digits, which
// no TLD is and which resolvers such as getaddrinfo read as an IPv4 address
// in shorthand ("2130706433", "127.1" are 127.0.0.1).
func normalizeHost(s string) (string, error) {
	s = strings.TrimSuffix(s, ".")
	if s == "" {
		return "", errors.New("empty host name")
	}
	if len(s) > maxHostLen {
		return "", errors.New("host name longer than 253 characters")
	}
	var b []byte // allocated only when s has upper case letters
	labelStart := 0
	allDigits := true
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == '.' {
			n := i - labelStart
			if n == 0 {
				return "", errors.New("empty label in host name")
			}
			if n > 63 {
				return "", errors.New("label longer than 63 characters in host name")
			}
			if i == len(s) && allDigits {
				return "", errors.New("last label is all digits: not a host name (an IP address must be written in full)")
			}
			labelStart = i + 1
			allDigits = true
			continue
		}
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c == '-', c == '_':
			allDigits = false
		case c >= '0' && c <= '9':
		case c >= 'A' && c <= 'Z':
			allDigits = false
			if b == nil {
				b = []byte(s)
			}
			b[i] = c + ('a' - 'A')
		case c >= 0x80:
			return "", errors.New("non-ASCII host name (use the punycode xn-- form)")
		default:
			return "", errors.New("invalid character " + strconv.QuoteRune(rune(c)) + " in host name")
		}
	}
	if b != nil {
		return string(b), nil
	}
	return s, nil
}

// parseIP reads an IP literal as it appears in a host: "192.0.2.1",
// "2001:db8::1", optionally in brackets ("[::1]"). Only the forms netip
// accepts are IP literals; the shorthand forms are refused by normalizeHost.
func parseIP(s string) (netip.Addr, bool) {
	if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		s = s[1 : len(s)-1]
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}, false
	}
	return a, true
}

// target is what a request asks to reach: a host name or an IP literal,
// and a port.
type target struct {
	host string     // normalized host name; for an IP literal, its text form
	ip   netip.Addr // valid when the host is an IP literal
	port int
}

func (t target) isIP() bool { return t.ip.IsValid() }

// parseAuthority parses "host:port", "[v6]:port", or, when defaultPort is
// not 0, a bare "host" or "[v6]". It is the one place request targets are
// read, for CONNECT and for absolute-form URLs alike, so both are held to
// the same rules.
func parseAuthority(s string, defaultPort int) (target, error) {
	if s == "" {
		return target{}, errors.New("empty target")
	}
	host, portStr := s, ""
	// A colon after the last ']' (or anywhere, without brackets) starts the
	// port; a bare IPv6 literal without brackets is ambiguous and refused.
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return target{}, errors.New("missing ']' in target")
		}
		host, rest := s[:end+1], s[end+1:]
		switch {
		case rest == "":
		case rest[0] == ':':
			portStr = rest[1:]
			if portStr == "" {
				return target{}, errors.New("empty port")
			}
		default:
			return target{}, errors.New("junk after ']' in target")
		}
		ip, ok := parseIP(host)
		if !ok || !ip.Is6() {
			return target{}, errors.New("bad IPv6 literal in target")
		}
		port, err := parsePort(portStr, defaultPort)
		if err != nil {
			return target{}, err
		}
		return target{host: ip.String(), ip: ip, port: port}, nil
	}
	if i := strings.LastIndexByte(s, ':'); i >= 0 {
		if strings.IndexByte(s[:i], ':') >= 0 {
			return target{}, errors.New("IPv6 literal must be in brackets")
		}
		host, portStr = s[:i], s[i+1:]
		if portStr == "" {
			return target{}, errors.New("empty port")
		}
	}
	port, err := parsePort(portStr, defaultPort)
	if err != nil {
		return target{}, err
	}
	// host has no colon here, so it can only be an IPv4 literal.
	if ip, ok := parseIP(host); ok {
		return target{host: ip.String(), ip: ip, port: port}, nil
	}
	name, err := normalizeHost(host)
	if err != nil {
		return target{}, err
	}
	return target{host: name, port: port}, nil
}

// parsePort reads a decimal port 1-65535; "" means defaultPort, or an
// error when there is none.
func parsePort(s string, defaultPort int) (int, error) {
	if s == "" {
		if defaultPort == 0 {
			return 0, errors.New("missing port")
		}
		return defaultPort, nil
	}
	if len(s) > 5 {
		return 0, errors.New("bad port " + strconv.Quote(s))
	}
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, errors.New("bad port " + strconv.Quote(s))
		}
		n = n*10 + int(c-'0')
	}
	if n < 1 || n > 65535 {
		return 0, errors.New("port out of range: " + s)
	}
	return n, nil
}

// patternSet is a compiled allowlist or denylist. Host names are matched by
// map look-ups, one per label of the host, so a long list costs no more per
// request than a short one.
type patternSet struct {
	exact    map[string]string // host -> pattern as written
	suffix   map[string]string // "example.com" for "*.example.com" -> pattern as written
	any      string            // the "*" pattern as written, or ""
	prefixes []ipPattern
}

type ipPattern struct {
	prefix netip.Prefix
	raw    string
}

// compilePatterns compiles list (the Config field named by field). Patterns:
//
//	example.com      that name only
//	*.example.com    any name below example.com, at any depth, but not
//	                 example.com itself
//	*                any host name (not IP literals)
//	192.0.2.7        that IP address
//	2001:db8::/32    IP addresses in the range
func compilePatterns(field string, list []string) (*patternSet, error) {
	ps := &patternSet{exact: map[string]string{}, suffix: map[string]string{}}
	for _, raw := range list {
		bad := func(reason string) error {
			return &PatternError{List: field, Pattern: raw, Reason: reason}
		}
		p := strings.TrimSpace(raw)
		switch {
		case p == "":
			return nil, bad("empty pattern")
		case p == "*":
			ps.any = raw
		case strings.Contains(p, "/"):
			pre, err := netip.ParsePrefix(p)
			if err != nil {
				return nil, bad("bad IP range: " + err.Error())
			}
			ps.prefixes = append(ps.prefixes, ipPattern{pre.Masked(), raw})
		case strings.HasPrefix(p, "*."):
			name, err := normalizeHost(p[2:])
			if err != nil {
				return nil, bad(err.Error())
			}
			ps.suffix[name] = raw
		case strings.Contains(p, "*"):
			return nil, bad(`"*" may only stand alone or as the whole first label ("*.example.com")`)
		default:
			if ip, ok := parseIP(p); ok {
				if ip.Zone() != "" {
					return nil, bad("IP address with a zone")
				}
				ip = ip.Unmap()
				ps.prefixes = append(ps.prefixes, ipPattern{netip.PrefixFrom(ip, ip.BitLen()), raw})
				continue
			}
			if strings.ContainsAny(p, ":[]") {
				return nil, bad("a pattern is a host name or an IP address, without a port or scheme")
			}
			name, err := normalizeHost(p)
			if err != nil {
				return nil, bad(err.Error())
			}
			ps.exact[name] = raw
		}
	}
	return ps, nil
}

// empty reports whether the set has no patterns at all.
func (ps *patternSet) empty() bool {
	return len(ps.exact) == 0 && len(ps.suffix) == 0 && ps.any == "" && len(ps.prefixes) == 0
}

// matchName returns the pattern that matches the normalized host name.
func (ps *patternSet) matchName(host string) (string, bool) {
	if raw, ok := ps.exact[host]; ok {
		return raw, true
	}
	// Try each proper suffix: "a.b.example.com" looks up
	// "b.example.com", then "example.com", then "com".
	for i := 0; i < len(host); i++ {
		if host[i] == '.' {
			if raw, ok := ps.suffix[host[i+1:]]; ok {
				return raw, true
			}
		}
	}
	if ps.any != "" {
		return ps.any, true
	}
	return "", false
}

// matchIP returns the IP pattern whose range holds ip.
func (ps *patternSet) matchIP(ip netip.Addr) (string, bool) {
	ip = ip.WithZone("").Unmap()
	for _, p := range ps.prefixes {
		if p.prefix.Contains(ip) {
			return p.raw, true
		}
	}
	return "", false
}
