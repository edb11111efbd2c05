package netproxy

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func TestNormalizeHost(t *testing.T) {
	tests := []struct {
		in, want, err string
	}{
		{"example.com", "example.com", ""},
		{"Example.COM.", "example.com", ""},
		{"a_b-c.example.com", "a_b-c.example.com", ""},
		{"localhost", "localhost", ""},
		{"xn--bcher-kva.de", "xn--bcher-kva.de", ""},
		{"1.example.com", "1.example.com", ""},
		{"", "", "empty host name"},
		{".", "", "empty host name"},
		{"a..b", "", "empty label"},
		{".a", "", "empty label"},
		{"example.com..", "", "empty label"},
		{"bücher.de", "", "non-ASCII"},
		{"exa mple.com", "", "invalid character"},
		{"example.com:80", "", "invalid character"},
		{"127.1", "", "all digits"},
		{"2130706433", "", "all digits"},
		{"0x7f.0.0.1", "", "all digits"},
		{strings.Repeat("a", 64) + ".com", "", "longer than 63"},
		{strings.Repeat("a.", 127) + "com", "", "longer than 253"},
	}
	for _, tt := range tests {
		got, err := normalizeHost(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("normalizeHost(%q) = %q, %v; want error ~ %q", tt.in, got, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("normalizeHost(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestParseAuthority(t *testing.T) {
	tests := []struct {
		in          string
		defaultPort int
		host        string
		ip          bool
		port        int
		err         string
	}{
		{"example.com:443", 0, "example.com", false, 443, ""},
		{"EXAMPLE.com.:8443", 0, "example.com", false, 8443, ""},
		{"example.com", 80, "example.com", false, 80, ""},
		{"example.com", 0, "", false, 0, "missing port"},
		{"192.0.2.1:80", 0, "192.0.2.1", true, 80, ""},
		{"[2001:db8::1]:443", 0, "2001:db8::1", true, 443, ""},
		{"[2001:DB8::1]", 80, "2001:db8::1", true, 80, ""},
		{"[::ffff:127.0.0.1]:80", 0, "::ffff:127.0.0.1", true, 80, ""},
		{"[fe80::1%eth0]:80", 0, "fe80::1%eth0", true, 80, ""},
		{"[192.0.2.1]:80", 0, "", false, 0, "bad IPv6 literal"},
		{"2001:db8::1", 80, "", false, 0, "brackets"},
		{"[::1", 0, "", false, 0, "missing ']'"},
		{"[::1]x", 0, "", false, 0, "junk after"},
		{"[::1]:", 0, "", false, 0, "empty port"},
		{"example.com:", 80, "", false, 0, "empty port"},
		{"example.com:0", 0, "", false, 0, "out of range"},
		{"example.com:65536", 0, "", false, 0, "out of range"},
		{"example.com:+80", 0, "", false, 0, "bad port"},
		{"example.com:0080", 0, "example.com", false, 80, ""},
		{"example.com:123456", 0, "", false, 0, "bad port"},
		{":443", 0, "", false, 0, "empty host"},
		{"", 80, "", false, 0, "empty target"},
		{"user@example.com:443", 0, "", false, 0, "invalid character"},
	}
	for _, tt := range tests {
		got, err := parseAuthority(tt.in, tt.defaultPort)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("parseAuthority(%q) = %+v, %v; want error ~ %q", tt.in, got, err, tt.err)
			}
			continue
		}
		if err != nil || got.host != tt.host || got.isIP() != tt.ip || got.port != tt.port {
			t.Errorf("parseAuthority(%q) = %+v, %v; want %s ip=%v port %d", tt.in, got, err, tt.host, tt.ip, tt.port)
		}
	}
}

func TestPatterns(t *testing.T) {
	ps, err := compilePatterns("Allow", []string{"example.com", "*.Example.org.", "10.0.0.0/8", "192.0.2.7", "2001:db8::/32"})
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]string{
		"example.com":         "example.com",
		"www.example.com":     "",
		"example.org":         "", // the apex is not matched by "*."
		"www.example.org":     "*.Example.org.",
		"a.b.c.example.org":   "*.Example.org.",
		"notexample.org":      "",
		"example.org.evil.io": "",
	}
	for host, want := range names {
		got, ok := ps.matchName(host)
		if got != want || ok != (want != "") {
			t.Errorf("matchName(%q) = %q, %v; want %q", host, got, ok, want)
		}
	}
	ips := map[string]string{
		"10.1.2.3":         "10.0.0.0/8",
		"::ffff:10.1.2.3":  "10.0.0.0/8",
		"192.0.2.7":        "192.0.2.7",
		"192.0.2.8":        "",
		"2001:db8::5":      "2001:db8::/32",
		"2001:db8::5%eth0": "2001:db8::/32",
		"127.0.0.1":        "",
	}
	for s, want := range ips {
		got, ok := ps.matchIP(netip.MustParseAddr(s))
		if got != want || ok != (want != "") {
			t.Errorf("matchIP(%s) = %q, %v; want %q", s, got, ok, want)
		}
	}
	star, _ := compilePatterns("Allow", []string{"*"})
	if _, ok := star.matchName("anything.at.all"); !ok {
		t.Error(`"*" does not match a name`)
	}
	if _, ok := star.matchIP(netip.MustParseAddr("127.0.0.1")); ok {
		t.Error(`"*" matches an IP address`)
	}
}

func TestBadPatterns(t *testing.T) {
	for _, p := range []string{"", " ", "*.", "a.*.com", "*example.com", "**.example.com", "example.com:443",
		"http://example.com", "10.0.0.0/33", "fe80::1%eth0", "bücher.de", "127.1", "[::1"} {
		_, err := New(Config{Deny: []string{"ok.example", p}})
		var pe *PatternError
		if !errors.As(err, &pe) || pe.List != "Deny" || pe.Pattern != p {
			t.Errorf("New with Deny pattern %q: %v; want a *PatternError naming it", p, err)
		}
	}
}

func TestNewValidates(t *testing.T) {
	bad := []Config{
		{Ports: []int{0}},
		{Ports: []int{65536}},
		{DialTimeout: -1},
		{IdleTimeout: -1},
		{MaxConns: -1},
		{MaxHeaderBytes: -1},
		{Hosts: map[string]string{"a.example": "a.example:80"}},
		{Hosts: map[string]string{"a.example": "127.0.0.1:0"}},
		{Hosts: map[string]string{"*.example": "127.0.0.1"}},
	}
	for _, cfg := range bad {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) succeeded", cfg)
		}
	}
	if _, err := New(Config{}); err != nil {
		t.Errorf("New(Config{}): %v", err)
	}
}

func TestDecide(t *testing.T) {
	s, err := compile(Config{
		Allow: []string{"*.example.com", "localhost", "10.9.0.0/16", "192.0.2.9"},
		Deny:  []string{"no.example.com", "169.254.169.254"},
		Ports: []int{443, 80, 8080},
		Hosts: map[string]string{"svc.example.com": "127.0.0.1:9000", "any.example.com": "127.0.0.2"},
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		target  string
		allowed bool
		reason  string
		addr    string
	}{
		{"svc.example.com:443", true, `allowed by sandbox.proxy.allow "*.example.com", mapped by sandbox.proxy.hosts to 127.0.0.1:9000`, "127.0.0.1:9000"},
		{"any.example.com:8080", true, "mapped by sandbox.proxy.hosts to 127.0.0.2:8080", "127.0.0.2:8080"},
		{"svc.example.com:22", false, "port 22 is not allowed (sandbox.proxy.ports: 80, 443, 8080)", ""},
		{"no.example.com:443", false, `no.example.com is in the denylist (sandbox.proxy.deny "no.example.com")`, ""},
		{"example.com:443", false, "example.com is not in the allowlist (sandbox.proxy.allow)", ""},
		{"192.0.2.9:443", true, `allowed by sandbox.proxy.allow "192.0.2.9"`, "192.0.2.9:443"},
		{"10.9.1.1:80", true, `allowed by sandbox.proxy.allow "10.9.0.0/16"`, "10.9.1.1:80"},
		{"169.254.169.254:80", false, `169.254.169.254 is in the denylist (sandbox.proxy.deny "169.254.169.254")`, ""},
		{"192.0.2.10:443", false, "192.0.2.10 is an IP address; only host names in the allowlist may be reached (sandbox.proxy.allow)", ""},
		{"localhost:80", false, "localhost resolves to 127.0.0.1, a loopback address, which is refused (sandbox.proxy.allow_private is off)", ""},
	}
	for _, tt := range tests {
		tg, err := parseAuthority(tt.target, 0)
		if err != nil {
			t.Fatal(err)
		}
		v := s.decide(context.Background(), tg)
		if v.allowed != tt.allowed || !strings.Contains(v.reason, tt.reason) || v.err != nil {
			t.Errorf("%s: %+v; want allowed=%v reason ~ %q", tt.target, v, tt.allowed, tt.reason)
			continue
		}
		if tt.allowed && (len(v.addrs) != 1 || v.addrs[0].String() != tt.addr) {
			t.Errorf("%s: addrs %v, want %s", tt.target, v.addrs, tt.addr)
		}
		if !tt.allowed && v.status != 403 {
			t.Errorf("%s: status %d", tt.target, v.status)
		}
	}
	empty, _ := compile(Config{})
	v := empty.decide(context.Background(), target{host: "example.com", port: 443})
	if v.allowed || !strings.Contains(v.reason, "sandbox.proxy.allow is empty") {
		t.Errorf("empty allowlist: %+v", v)
	}
}

func TestNonPublic(t *testing.T) {
	for s, want := range map[string]string{
		"127.0.0.1":        "loopback",
		"::1":              "loopback",
		"::ffff:127.0.0.1": "loopback",
		"10.0.0.1":         "private",
		"172.16.0.1":       "private",
		"192.168.1.1":      "private",
		"fd00::1":          "private",
		"169.254.169.254":  "link-local",
		"fe80::1":          "link-local",
		"0.0.0.0":          "unspecified",
		"::":               "unspecified",
		"0.1.2.3":          "this-network",
		"100.64.0.1":       "shared (CGNAT)",
		"224.0.0.1":        "multicast",
		"255.255.255.255":  "reserved",
		"64:ff9b::7f00:1":  "NAT64",
		"192.0.2.1":        "",
		"8.8.8.8":          "",
		"2606:4700::1111":  "",
	} {
		if got := nonPublic(netip.MustParseAddr(s)); got != want {
			t.Errorf("nonPublic(%s) = %q, want %q", s, got, want)
		}
	}
}
