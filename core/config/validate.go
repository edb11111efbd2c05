package config

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
)

// check returns the problems of c in field order, as *KeyErrors without a
// place. set reports whether a key was given by the source being checked
// (the file, the environment); a rule between two keys blames the one that
// was set, so the message points at the line that can fix it. set may be
// nil.
func (c *Config) check(set func(key string) bool) []*KeyError {
	if set == nil {
		set = func(string) bool { return false }
	}
	var errs []*KeyError
	bad := func(key, format string, args ...any) {
		errs = append(errs, &KeyError{Key: key, Msg: fmt.Sprintf(format, args...), Err: ErrInvalid})
	}

	t := &c.Terminal
	switch {
	case t.Shell == "":
		bad("terminal.shell", "must not be empty")
	case strings.IndexByte(t.Shell, 0) >= 0:
		bad("terminal.shell", "must not contain NUL")
	}
	positive := func(key string, d Duration) bool {
		if d.Duration <= 0 {
			bad(key, "must be > 0, got %s", d)
			return false
		}
		return true
	}
	softOK := positive("terminal.soft_timeout", t.SoftTimeout)
	hardOK := positive("terminal.hard_timeout", t.HardTimeout)
	if softOK && hardOK && t.SoftTimeout.Duration > t.HardTimeout.Duration {
		if set("terminal.hard_timeout") && !set("terminal.soft_timeout") {
			bad("terminal.hard_timeout", "must be >= terminal.soft_timeout (%s), got %s", t.SoftTimeout, t.HardTimeout)
		} else {
			bad("terminal.soft_timeout", "must be <= terminal.hard_timeout (%s), got %s", t.HardTimeout, t.SoftTimeout)
		}
	}
	positive("terminal.kill_grace", t.KillGrace)
	positive("terminal.max_wait", t.MaxWait)
	window := func(key string, n int) {
		if n < MinWindow || n > MaxWindow {
			bad(key, "must be between %d and %d, got %d", MinWindow, MaxWindow, n)
		}
	}
	window("terminal.cols", t.Cols)
	window("terminal.rows", t.Rows)
	names := make([]string, 0, len(t.Env))
	for name := range t.Env {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		key := toml.Key{"terminal", "env", name}.String()
		switch {
		case name == "":
			bad(key, "the variable's name must not be empty")
		case strings.IndexByte(name, '=') >= 0:
			bad(key, "the variable's name must not contain '='")
		case strings.IndexByte(name, 0) >= 0:
			bad(key, "the variable's name must not contain NUL")
		case strings.IndexByte(t.Env[name], 0) >= 0:
			bad(key, "must not contain NUL")
		}
	}

	r := &c.Trim
	bounded := func(key string, n, lo, hi int) {
		switch {
		case n < lo:
			bad(key, "must be >= %d, got %d", lo, n)
		case n > hi:
			bad(key, "must be <= %d, got %d", hi, n)
		}
	}
	lines := func(key string, n int) { bounded(key, n, 0, MaxLines) }
	lines("trim.head", r.Head)
	lines("trim.tail", r.Tail)
	lines("trim.max_keep", r.MaxKeep)
	for i, k := range r.Keywords {
		switch {
		case k == "":
			bad("trim.keywords", "keyword %d of %d is empty", i+1, len(r.Keywords))
		case strings.IndexByte(k, '\n') >= 0:
			bad("trim.keywords", "keyword %d of %d (%s) contains a newline and can never match within a line", i+1, len(r.Keywords), quote(k))
		}
	}
	bounded("trim.line_cap", r.LineCap, MinLineCap, MaxLineCap)
	bounded("trim.max_chars", r.MaxChars, MinChars, MaxChars)

	s := &c.Store
	if strings.IndexByte(s.Path, 0) >= 0 {
		bad("store.path", "must not contain NUL")
	}
	if s.Durability != DurabilityStrict && s.Durability != DurabilityBatch {
		bad("store.durability", "must be %q or %q, got %s", DurabilityStrict, DurabilityBatch, quote(s.Durability))
	}

	bounded("store.max_output_mb", s.MaxOutputMB, 0, 1<<20)
	bounded("store.max_session_output_mb", s.MaxSessionOutputMB, 0, 1<<20)

	dm := &c.Daemon
	for _, p := range []struct{ key, v string }{{"daemon.socket", dm.Socket}, {"daemon.data_dir", dm.DataDir}, {"sandbox.image", c.Sandbox.Image}} {
		if strings.IndexByte(p.v, 0) >= 0 {
			bad(p.key, "must not contain NUL")
		}
	}
	if len(dm.Socket) > MaxSocketPath {
		bad("daemon.socket", "is %d bytes; a unix socket path must be at most %d", len(dm.Socket), MaxSocketPath)
	}
	ids := func(key string, v []int) {
		for i, id := range v {
			if id < 0 {
				bad(key, "element %d (%d) must be >= 0", i+1, id)
			}
		}
	}
	ids("daemon.allow_uids", dm.AllowUIDs)
	ids("daemon.allow_gids", dm.AllowGIDs)
	bounded("daemon.max_body", dm.MaxBody, 1024, 1<<30)
	positive("daemon.body_timeout", dm.BodyTimeout)
	bounded("daemon.max_conns_per_peer", dm.MaxConnsPerPeer, 1, 1<<20)
	bounded("daemon.max_sessions", dm.MaxSessions, 1, 100000)
	positive("daemon.shutdown_grace", dm.ShutdownGrace)
	bounded("daemon.heap_floor_mb", dm.HeapFloorMB, 0, 1<<20)

	hk := &c.Hooks
	positive("hooks.budget", hk.Budget)
	positive("hooks.ask_timeout", hk.AskTimeout)
	for i, d := range hk.Dirs {
		if d == "" || strings.IndexByte(d, 0) >= 0 {
			bad("hooks.dirs", "element %d is empty or holds a NUL", i+1)
		}
	}
	for i, d := range hk.FailOpen {
		if !slices.Contains(hk.Dirs, d) {
			bad("hooks.fail_open", "element %d (%q) is not one of hooks.dirs", i+1, d)
		}
	}

	sb := &c.Sandbox
	if sb.Driver != DriverNative && sb.Driver != DriverNone {
		bad("sandbox.driver", "must be %q or %q, got %s", DriverNative, DriverNone, quote(sb.Driver))
	}
	switch sb.Network {
	case NetworkNone, NetworkProxy, NetworkHost:
	default:
		bad("sandbox.network", "must be %q, %q or %q, got %s", NetworkNone, NetworkProxy, NetworkHost, quote(sb.Network))
	}
	for i, p := range sb.Protected {
		switch {
		case p == "" || strings.IndexByte(p, 0) >= 0:
			bad("sandbox.protected", "path %d of %d is empty or contains NUL", i+1, len(sb.Protected))
		case strings.HasPrefix(p, "/") || slices.Contains(strings.Split(p, "/"), ".."):
			bad("sandbox.protected", "path %d of %d (%s) must be relative to the workspace, without ..", i+1, len(sb.Protected), quote(p))
		}
	}
	bounded("sandbox.memory_mb", sb.MemoryMB, 0, 1<<24)
	bounded("sandbox.pids", sb.Pids, 0, 1<<22)
	bounded("sandbox.cpu_weight", sb.CPUWeight, 1, 10000)
	bounded("sandbox.tmp_mb", sb.TmpMB, 1, 1<<24)
	if sb.DiskMB != 0 {
		bounded("sandbox.disk_mb", sb.DiskMB, 16, 1<<24) // mkfs needs room for its metadata
	}
	positive("sandbox.clone_timeout", sb.CloneTimeout)
	bounded("sandbox.pool_size", sb.PoolSize, 0, 1000)
	for _, l := range []struct {
		key string
		v   []string
	}{{"sandbox.proxy.allow", sb.Proxy.Allow}, {"sandbox.proxy.deny", sb.Proxy.Deny}} {
		for i, d := range l.v {
			if !validDomainPattern(d) {
				bad(l.key, "entry %d of %d (%s) is not a domain, *.domain, *, IP address or CIDR range", i+1, len(l.v), quote(d))
			}
		}
	}
	for i, p := range sb.Proxy.Ports {
		if p < 1 || p > 65535 {
			bad("sandbox.proxy.ports", "port %d of %d (%d) must be between 1 and 65535", i+1, len(sb.Proxy.Ports), p)
		}
	}
	errs = append(errs, c.checkProfiles()...)
	return append(errs, c.checkAgents()...)
}

// validDomainPattern accepts what the egress proxy does: "example.com",
// "*.example.com", "*", an IP address or a CIDR range.
func validDomainPattern(p string) bool {
	if p == "*" {
		return true
	}
	if _, err := netip.ParseAddr(p); err == nil {
		return true
	}
	if _, err := netip.ParsePrefix(p); err == nil {
		return true
	}
	p = strings.TrimPrefix(p, "*.")
	if p == "" || len(p) > 253 || strings.HasPrefix(p, ".") || strings.Contains(p, "..") {
		return false
	}
	for i := 0; i < len(p); i++ {
		c := p[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// quote returns s as a Go string literal, shortened to a readable length.
func quote(s string) string {
	const max = 40
	if len(s) > max {
		cut := max
		for cut > 0 && !isRuneStart(s[cut]) {
			cut--
		}
		return fmt.Sprintf("%q...", s[:cut])
	}
	return fmt.Sprintf("%q", s)
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }
