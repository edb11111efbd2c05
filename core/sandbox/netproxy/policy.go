package netproxy

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
)

// verdict is the policy's answer for one target.
type verdict struct {
	allowed bool
	status  int    // for a refusal: the status to answer
	reason  string // why, as Decision.Reason says it
	// addrs are the addresses to connect to, in order, when allowed.
	addrs []netip.AddrPort
	// err is set when the policy allowed the name but it could not be
	// resolved: not a refusal, a failure (502/504).
	err error
}

func refuse(status int, format string, args ...any) verdict {
	return verdict{status: status, reason: fmt.Sprintf(format, args...)}
}

// decide applies the policy to t, resolving a name when the policy allows
// it. The addresses it returns are the only ones the proxy will connect to
// for this request, so what was checked is what is dialed: a name cannot
// resolve to a public address for the check and to a private one for the
// connection.
func (s *settings) decide(ctx context.Context, t target) verdict {
	var allowedBy string
	if t.isIP() {
		if raw, ok := s.deny.matchIP(t.ip); ok {
			return refuse(403, "%s is in the denylist (sandbox.proxy.deny %q)", t.host, raw)
		}
		raw, ok := s.allow.matchIP(t.ip)
		if !ok {
			return refuse(403, "%s is an IP address; only host names in the allowlist may be reached (sandbox.proxy.allow)", t.host)
		}
		allowedBy = raw
	} else {
		if raw, ok := s.deny.matchName(t.host); ok {
			return refuse(403, "%s is in the denylist (sandbox.proxy.deny %q)", t.host, raw)
		}
		raw, ok := s.allow.matchName(t.host)
		if !ok {
			if s.allow.empty() {
				return refuse(403, "%s is not in the allowlist (sandbox.proxy.allow is empty, so every host is refused)", t.host)
			}
			return refuse(403, "%s is not in the allowlist (sandbox.proxy.allow)", t.host)
		}
		allowedBy = raw
	}
	if _, ok := slices.BinarySearch(s.ports, t.port); !ok {
		return refuse(403, "port %d is not allowed (sandbox.proxy.ports: %s)", t.port, s.portsText())
	}
	allowed := fmt.Sprintf("allowed by sandbox.proxy.allow %q", allowedBy)

	if t.isIP() {
		// Listed explicitly by address: the operator asked for exactly
		// this, so the private-address rule does not apply.
		ap := netip.AddrPortFrom(t.ip.WithZone(""), uint16(t.port))
		return verdict{allowed: true, reason: allowed, addrs: []netip.AddrPort{ap}}
	}
	if m, ok := s.hosts[t.host]; ok {
		port := t.port
		if m.port != 0 {
			port = m.port
		}
		ap := netip.AddrPortFrom(m.addr, uint16(port))
		return verdict{allowed: true, reason: allowed + ", mapped by sandbox.proxy.hosts to " + ap.String(), addrs: []netip.AddrPort{ap}}
	}

	ctx, cancel := context.WithTimeout(ctx, s.dialTimeout)
	defer cancel()
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", t.host)
	if err != nil {
		return verdict{allowed: true, reason: allowed, err: fmt.Errorf("resolve %s: %w", t.host, err)}
	}
	var addrs []netip.AddrPort
	var first string // why the first refused address was refused
	for _, ip := range ips {
		ip = ip.Unmap()
		if raw, ok := s.deny.matchIP(ip); ok {
			if first == "" {
				first = fmt.Sprintf("%s resolves to %s, which is in the denylist (sandbox.proxy.deny %q)", t.host, ip, raw)
			}
			continue
		}
		if kind := nonPublic(ip); kind != "" && !s.allowPrivate {
			if _, ok := s.allow.matchIP(ip); !ok {
				if first == "" {
					first = fmt.Sprintf("%s resolves to %s, a %s address, which is refused (sandbox.proxy.allow_private is off)", t.host, ip, kind)
				}
				continue
			}
		}
		addrs = append(addrs, netip.AddrPortFrom(ip, uint16(t.port)))
	}
	if len(addrs) == 0 {
		if first == "" { // the resolver returned no error and no address
			return verdict{allowed: true, reason: allowed, err: fmt.Errorf("resolve %s: no addresses", t.host)}
		}
		return refuse(403, "%s", first)
	}
	return verdict{allowed: true, reason: allowed, addrs: addrs}
}

// Ranges that are not on the public internet, beyond what netip's
// predicates cover. Each could lead to a service on the host or its
// network, which is what a sandbox must not reach by a name it controls.
var nonPublicRanges = []struct {
	prefix netip.Prefix
	kind   string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "this-network"}, // 0.0.0.0 reaches the host itself on Linux
	{netip.MustParsePrefix("100.64.0.0/10"), "shared (CGNAT)"},
	{netip.MustParsePrefix("192.0.0.0/24"), "IETF protocol"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved"},
	{netip.MustParsePrefix("64:ff9b::/96"), "NAT64"}, // embeds an IPv4 address, maybe a private one
	{netip.MustParsePrefix("64:ff9b:1::/48"), "NAT64"},
}

// nonPublic names the kind of a non-public address, or returns "" for a
// public one.
func nonPublic(ip netip.Addr) string {
	ip = ip.WithZone("").Unmap()
	switch {
	case ip.IsLoopback():
		return "loopback"
	case ip.IsPrivate():
		return "private"
	case ip.IsLinkLocalUnicast():
		return "link-local"
	case ip.IsUnspecified():
		return "unspecified"
	case ip.IsMulticast():
		return "multicast"
	}
	for _, r := range nonPublicRanges {
		if r.prefix.Contains(ip) {
			return r.kind
		}
	}
	return ""
}

// joinHostPort formats a target for a log line or Decision.
func joinHostPort(host string, port int) string {
	return net.JoinHostPort(host, strconv.Itoa(port))
}
