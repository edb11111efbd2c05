package config

import (
	"errors"
	"reflect"
	"testing"
	"time"
)

func TestApplyEnv(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want func(*Config) // the change to Default, if the call succeeds
		err  string
	}{
		{name: "nothing set", env: nil, want: func(*Config) {}},
		{name: "empty means unset", env: map[string]string{EnvSoftTimeout: "", EnvDurability: ""}, want: func(*Config) {}},
		{
			name: "all",
			env: map[string]string{
				EnvSoftTimeout: "5s", EnvHardTimeout: "1h", EnvStore: "/tmp/x.db", EnvDurability: "batch",
			},
			want: func(c *Config) {
				c.Terminal.SoftTimeout = Duration{5 * time.Second}
				c.Terminal.HardTimeout = Duration{time.Hour}
				c.Store.Path = "/tmp/x.db"
				c.Store.Durability = DurabilityBatch
			},
		},
		{name: "bad duration", env: map[string]string{EnvSoftTimeout: "ten"},
			err: `HARNESSD_SOFT_TIMEOUT: terminal.soft_timeout: invalid duration "ten": time: invalid duration "ten"`},
		{name: "zero", env: map[string]string{EnvHardTimeout: "0s"},
			err: "HARNESSD_HARD_TIMEOUT: terminal.hard_timeout: must be > 0, got 0s"},
		{name: "durability", env: map[string]string{EnvDurability: "fast"},
			err: `HARNESSD_DURABILITY: store.durability: must be "strict" or "batch", got "fast"`},
		{name: "soft above file's hard", env: map[string]string{EnvSoftTimeout: "1h"},
			err: "HARNESSD_SOFT_TIMEOUT: terminal.soft_timeout: must be <= terminal.hard_timeout (30m), got 1h"},
		{name: "hard below file's soft", env: map[string]string{EnvHardTimeout: "1s"},
			err: "HARNESSD_HARD_TIMEOUT: terminal.hard_timeout: must be >= terminal.soft_timeout (10s), got 1s"},
		{name: "both, inconsistent", env: map[string]string{EnvSoftTimeout: "2m", EnvHardTimeout: "1m"},
			err: "HARNESSD_SOFT_TIMEOUT: terminal.soft_timeout: must be <= terminal.hard_timeout (1m), got 2m"},
		{name: "both, consistent", env: map[string]string{EnvSoftTimeout: "2h", EnvHardTimeout: "3h"},
			want: func(c *Config) {
				c.Terminal.SoftTimeout = Duration{2 * time.Hour}
				c.Terminal.HardTimeout = Duration{3 * time.Hour}
			}},
		{name: "two errors", env: map[string]string{EnvSoftTimeout: "x", EnvDurability: "y"},
			err: `HARNESSD_SOFT_TIMEOUT: terminal.soft_timeout: invalid duration "x": time: invalid duration "x"` + "\n" +
				`HARNESSD_DURABILITY: store.durability: must be "strict" or "batch", got "y"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Default()
			err := c.ApplyEnv(func(k string) string { return tt.env[k] })
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("got  %v\nwant %s", err, tt.err)
				}
				if !errors.Is(err, ErrInvalid) {
					t.Error("not ErrInvalid")
				}
				var ke *KeyError
				if !errors.As(err, &ke) || ke.Env == "" {
					t.Errorf("no *KeyError naming the variable: %+v", ke)
				}
				if !reflect.DeepEqual(c, Default()) {
					t.Errorf("config changed by a failed ApplyEnv: %+v", c)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := Default()
			tt.want(&want)
			if !reflect.DeepEqual(c, want) {
				t.Errorf("got  %+v\nwant %+v", c, want)
			}
		})
	}
}

// TestApplyEnvIgnoresOtherProblems: ApplyEnv answers for what it changed,
// not for a config that was already invalid.
func TestApplyEnvIgnoresOtherProblems(t *testing.T) {
	c := Default()
	c.Trim.Head = -1
	if err := c.ApplyEnv(func(k string) string { return map[string]string{EnvStore: "/x"}[k] }); err != nil {
		t.Fatal(err)
	}
	if c.Store.Path != "/x" {
		t.Errorf("path %q", c.Store.Path)
	}
}

func TestApplyEnvOS(t *testing.T) {
	t.Setenv(EnvDurability, "batch")
	c := Default()
	if err := c.ApplyEnv(nil); err != nil {
		t.Fatal(err)
	}
	if c.Store.Durability != DurabilityBatch {
		t.Errorf("durability %q", c.Store.Durability)
	}
}
