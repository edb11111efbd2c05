package config

import (
	"fmt"
	"strings"

	"github.com/BurntSushi/toml"
)

// Profile is one [profiles.NAME] table: a named set of sandbox settings a
// session may be created with instead of [sandbox]'s (session new
// --profile NAME, "profile" in POST /v1/sessions, the MCP tool
// session_create). The operator writes profiles, so a profile may be
// more open than [sandbox] (a "build" profile with the network through
// the proxy, say); a client can only choose among them. A key left out,
// 0 or "", keeps [sandbox]'s value.
type Profile struct {
	Network   string `toml:"network"`    // as sandbox.network
	Image     string `toml:"image"`      // as sandbox.image
	MemoryMB  int    `toml:"memory_mb"`  // as sandbox.memory_mb
	Pids      int    `toml:"pids"`       // as sandbox.pids
	CPUWeight int    `toml:"cpu_weight"` // as sandbox.cpu_weight
	TmpMB     int    `toml:"tmp_mb"`     // as sandbox.tmp_mb
	DiskMB    int    `toml:"disk_mb"`    // as sandbox.disk_mb
}

// defaultProfiles are the profiles harness.toml documents.
func defaultProfiles() map[string]Profile {
	return map[string]Profile{
		"small": {Network: NetworkNone, MemoryMB: 512, Pids: 128, CPUWeight: 50, TmpMB: 64, DiskMB: 256},
	}
}

// Apply returns sb with the profile's settings over it.
func (p Profile) Apply(sb Sandbox) Sandbox {
	if p.Network != "" {
		sb.Network = p.Network
	}
	if p.Image != "" {
		sb.Image = p.Image
	}
	for _, f := range []struct {
		dst *int
		v   int
	}{{&sb.MemoryMB, p.MemoryMB}, {&sb.Pids, p.Pids}, {&sb.CPUWeight, p.CPUWeight}, {&sb.TmpMB, p.TmpMB}, {&sb.DiskMB, p.DiskMB}} {
		if f.v != 0 {
			*f.dst = f.v
		}
	}
	return sb
}

// ProfileNames returns the profiles' names, sorted.
func (c Config) ProfileNames() []string { return agentNames(c.Profiles) }

// checkProfiles returns the problems of [profiles.*]: each one's values
// within the bounds of the [sandbox] key it replaces.
func (c *Config) checkProfiles() []*KeyError {
	var errs []*KeyError
	bad := func(key, format string, args ...any) {
		errs = append(errs, &KeyError{Key: key, Msg: fmt.Sprintf(format, args...), Err: ErrInvalid})
	}
	for _, name := range agentNames(c.Profiles) {
		p := c.Profiles[name]
		key := func(k string) string { return toml.Key{"profiles", name, k}.String() }
		if !agentNameRE.MatchString(name) {
			bad(toml.Key{"profiles", name}.String(), "a profile's name is 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit")
			continue
		}
		switch p.Network {
		case "", NetworkNone, NetworkProxy, NetworkHost:
		default:
			bad(key("network"), "must be %q, %q or %q (or left out: sandbox.network), got %s", NetworkNone, NetworkProxy, NetworkHost, quote(p.Network))
		}
		if strings.IndexByte(p.Image, 0) >= 0 {
			bad(key("image"), "must not contain NUL")
		}
		bounded := func(k string, n, lo, hi int) {
			if n != 0 && (n < lo || n > hi) {
				bad(key(k), "must be 0 (sandbox.%s) or between %d and %d, got %d", k, lo, hi, n)
			}
		}
		bounded("memory_mb", p.MemoryMB, 1, 1<<24)
		bounded("pids", p.Pids, 1, 1<<22)
		bounded("cpu_weight", p.CPUWeight, 1, 10000)
		bounded("tmp_mb", p.TmpMB, 1, 1<<24)
		bounded("disk_mb", p.DiskMB, 16, 1<<24)
	}
	return errs
}
