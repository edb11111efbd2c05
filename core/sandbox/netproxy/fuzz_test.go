package netproxy

import (
	"strings"
	"testing"
)

// FuzzParseAuthority checks that any request target either fails or parses
// to a target that is canonical: written back out and parsed again, it is
// the same target, and a host name is its own normal form.
func FuzzParseAuthority(f *testing.F) {
	for _, s := range []string{"example.com:443", "EXAMPLE.com.:80", "[::1]:443", "[fe80::1%eth0]:80",
		"192.0.2.1", "127.1:80", "::1:443", "[::ffff:127.0.0.1]", "a..b:1", ":", "[]:", "x:00443"} {
		f.Add(s, true)
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, s string, withDefault bool) {
		def := 0
		if withDefault {
			def = 80
		}
		tg, err := parseAuthority(s, def)
		if err != nil {
			return
		}
		if tg.port < 1 || tg.port > 65535 || tg.host == "" {
			t.Fatalf("parseAuthority(%q) = %+v", s, tg)
		}
		if !tg.isIP() {
			if n, err := normalizeHost(tg.host); err != nil || n != tg.host {
				t.Fatalf("host %q of %q is not normal: %q, %v", tg.host, s, n, err)
			}
		}
		again, err := parseAuthority(joinHostPort(tg.host, tg.port), 0)
		if err != nil || again != tg {
			t.Fatalf("%q parsed to %+v, which reparses to %+v, %v", s, tg, again, err)
		}
	})
}

// FuzzPatterns checks the matcher against what the patterns mean: a name
// pattern matches its own name (in any case, with a trailing dot), a
// wildcard matches the names below its suffix and not the suffix itself,
// and nothing panics.
func FuzzPatterns(f *testing.F) {
	for _, s := range [][2]string{{"example.com", "example.com"}, {"*.example.com", "a.example.com"},
		{"*.example.com", "example.com"}, {"*", "x"}, {"10.0.0.0/8", "10.1.1.1"}, {"Ex.COM.", "ex.com"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pat, host string) {
		ps, err := compilePatterns("Allow", []string{pat})
		if err != nil {
			return
		}
		if tg, err := parseAuthority(host, 80); err == nil {
			if tg.isIP() {
				ps.matchIP(tg.ip)
			} else {
				ps.matchName(tg.host)
			}
		}
		p := strings.TrimSpace(pat)
		if p == "*" || strings.Contains(p, "/") {
			return
		}
		if ip, ok := parseIP(p); ok {
			if _, match := ps.matchIP(ip); !match {
				t.Fatalf("IP pattern %q does not match its address", pat)
			}
			return
		}
		if suffix, ok := strings.CutPrefix(p, "*."); ok {
			n, _ := normalizeHost(suffix)
			if _, match := ps.matchName(n); match {
				t.Fatalf("%q matches its apex %q", pat, n)
			}
			if len(n) < maxHostLen-2 {
				if _, match := ps.matchName("a." + n); !match {
					t.Fatalf("%q does not match a.%s", pat, n)
				}
			}
			return
		}
		n, err := normalizeHost(strings.ToUpper(p) + ".")
		if err != nil {
			return // too long with the dot
		}
		if _, match := ps.matchName(n); !match {
			t.Fatalf("%q does not match %q", pat, n)
		}
	})
}
