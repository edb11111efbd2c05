package config

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// TestProfiles reads profiles beside the shipped one, applies one over
// [sandbox], and refuses bad values with the key and line.
func TestProfiles(t *testing.T) {
	c, err := Parse([]byte(`
[sandbox]
memory_mb = 1000
[profiles.build]
network = "proxy"
memory_mb = 8192
`), "t.toml")
	if err != nil {
		t.Fatal(err)
	}
	if got := c.ProfileNames(); !reflect.DeepEqual(got, []string{"build", "small"}) {
		t.Fatalf("profiles %v, want build beside the shipped small", got)
	}
	sb := c.Profiles["build"].Apply(c.Sandbox)
	if sb.Network != NetworkProxy || sb.MemoryMB != 8192 || sb.Pids != c.Sandbox.Pids || sb.DiskMB != c.Sandbox.DiskMB {
		t.Errorf("build over [sandbox]: %+v", sb)
	}
	if sb := c.Profiles["small"].Apply(c.Sandbox); sb.MemoryMB != 512 || sb.DiskMB != 256 {
		t.Errorf("small over [sandbox]: %+v", sb)
	}

	for _, tc := range []struct{ src, want string }{
		{"[profiles.x]\nnetwork = \"wide\"\n", `t.toml:2: profiles.x.network: must be "none", "proxy" or "host"`},
		{"[profiles.x]\nmemory_mb = -1\n", "t.toml:2: profiles.x.memory_mb: must be 0 (sandbox.memory_mb) or between 1 and"},
		{"[profiles.x]\n\ndisk_mb = 8\n", "t.toml:3: profiles.x.disk_mb: must be 0 (sandbox.disk_mb) or between 16 and"},
		{"[profiles.\"a b\"]\npids = 1\n", "a profile's name is 1 to 64 letters"},
		{"[profiles.x]\nmemroy_mb = 1\n", "did you mean memory_mb?"},
	} {
		_, err := Parse([]byte(tc.src), "t.toml")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want %q", tc.src, err, tc.want)
		}
		if err != nil && !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrUnknownKey) {
			t.Errorf("%q: %v matches neither ErrInvalid nor ErrUnknownKey", tc.src, err)
		}
	}
}
