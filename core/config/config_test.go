package config

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
)

// defaultFile is the documented default config at the repository's root.
const defaultFile = "../../harness.toml"

func readDefaultFile(t *testing.T) []byte {
	t.Helper()
	data, err := os.ReadFile(defaultFile)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestDefaultFileIsDefault keeps harness.toml and Default in step: the
// file must say exactly what the code does.
func TestDefaultFileIsDefault(t *testing.T) {
	c, err := Parse(readDefaultFile(t), "harness.toml")
	if err != nil {
		t.Fatal(err)
	}
	if want := Default(); !reflect.DeepEqual(c, want) {
		t.Errorf("harness.toml differs from Default():\n file: %+v\n code: %+v", c, want)
	}
}

// TestDefaultFileHasEverySetting checks that harness.toml sets every field
// of Config explicitly (so a default cannot hide behind an omitted key),
// with a comment just above it.
func TestDefaultFileHasEverySetting(t *testing.T) {
	data := readDefaultFile(t)
	var raw map[string]any
	md, err := toml.Decode(string(data), &raw)
	if err != nil {
		t.Fatal(err)
	}
	keys := settings(reflect.TypeFor[Config](), nil)
	if len(keys) != 56 {
		t.Errorf("Config has %d settings, this test expects 56: check the list below still means something", len(keys))
	}
	lines := strings.Split(string(data), "\n")
	at := keyLines(string(data))
	for _, k := range keys {
		if !md.IsDefined(k...) {
			t.Errorf("harness.toml does not set %s", k)
			continue
		}
		// The comment may be above a run of related keys (cols, rows).
		l := at[k.String()] - 1 // 0-based
		for l > 0 && !strings.HasPrefix(lines[l-1], "#") && strings.Contains(lines[l-1], "=") {
			l--
		}
		if l == 0 || !strings.HasPrefix(lines[l-1], "#") {
			t.Errorf("harness.toml:%d: %s has no comment above it", at[k.String()], k)
		}
	}
}

func TestDefaultIsValid(t *testing.T) {
	if err := Default().Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestDefaultIsFresh(t *testing.T) {
	a := Default()
	a.Terminal.Env["X"] = "1"
	a.Trim.Keywords[0] = "changed"
	if b := Default(); len(b.Terminal.Env) != 0 || b.Trim.Keywords[0] != "error" {
		t.Fatalf("Default shares state between calls: %+v", b)
	}
}

func TestParseEmptyIsDefault(t *testing.T) {
	for _, src := range []string{"", "\n", "# nothing\n", "[terminal]\n[trim]\n[store]\n", "\ufeff"} {
		c, err := Parse([]byte(src), "t.toml")
		if err != nil {
			t.Fatalf("%q: %v", src, err)
		}
		if !reflect.DeepEqual(c, Default()) {
			t.Errorf("%q: got %+v, want Default()", src, c)
		}
	}
}

func TestParseOverrides(t *testing.T) {
	src := `
[terminal]
shell = "/bin/bash"
soft_timeout = "1m30s"
hard_timeout = "2h"
kill_grace = "500ms"
cols = 80
rows = 24
env = { GOFLAGS = "-mod=mod", "odd name" = "x" }
[trim]
head = 0
tail = 5
max_keep = 0
keywords = []
line_cap = 80
[store]
path = "/tmp/h.db"
durability = "batch"
max_output_mb = 0
max_session_output_mb = 64
`
	c, err := Parse([]byte(src), "t.toml")
	if err != nil {
		t.Fatal(err)
	}
	want := Config{
		Terminal: Terminal{
			Shell:       "/bin/bash",
			SoftTimeout: Duration{90 * time.Second},
			HardTimeout: Duration{2 * time.Hour},
			KillGrace:   Duration{500 * time.Millisecond},
			MaxWait:     Duration{30 * time.Second},
			Cols:        80,
			Rows:        24,
			Env:         map[string]string{"GOFLAGS": "-mod=mod", "odd name": "x"},
		},
		Trim:     Trim{MaxChars: 8000, Head: 0, Tail: 5, MaxKeep: 0, Keywords: []string{}, LineCap: 80},
		Store:    Store{Path: "/tmp/h.db", Durability: DurabilityBatch, MaxOutputMB: 0, MaxSessionOutputMB: 64},
		Daemon:   Default().Daemon,
		Sandbox:  Default().Sandbox,
		Hooks:    Default().Hooks,
		Run:      Default().Run,
		Agents:   Default().Agents,
		Profiles: Default().Profiles,
	}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("got  %+v\nwant %+v", c, want)
	}
}

// TestParseSpellings reads the same settings written in the other ways
// TOML allows.
func TestParseSpellings(t *testing.T) {
	want := Default()
	want.Terminal.Cols = 100
	want.Terminal.Env = map[string]string{"A": "1", "B": "2"}
	want.Trim.Keywords = []string{"x", "y"}
	for _, src := range []string{
		"terminal.cols = 100\nterminal.env.A = \"1\"\nterminal.env.B = \"2\"\ntrim.keywords = [\"x\", \"y\"]\n",
		"terminal = { cols = 100, env = { A = \"1\", B = \"2\" } }\ntrim = { keywords = [\n  \"x\", # first\n  \"y\",\n] }\n",
		"[terminal.env]\nA = \"1\"\nB = \"2\"\n[terminal]\ncols = 100\n[trim]\n'keywords' = ['x', \"\"\"y\"\"\"]\n",
		"[\"terminal\"]\n\"cols\" = 100\nenv.\"A\" = '1'\nenv . B = \"\\u0032\"\n[trim]\nkeywords = ['''x''', \"y\"]\n",
		"[terminal]\r\ncols = 100\r\nenv = {A = \"1\", B = \"2\"}\r\n[trim]\r\nkeywords = [\"x\", \"y\"]\r\n",
	} {
		c, err := Parse([]byte(src), "t.toml")
		if err != nil {
			t.Errorf("%q: %v", src, err)
			continue
		}
		if !reflect.DeepEqual(c, want) {
			t.Errorf("%q:\n got  %+v\n want %+v", src, c, want)
		}
	}
}

// TestEncodeRoundTrip: a Config written by the TOML encoder (Duration's
// MarshalText, the toml tags) reads back the same.
func TestEncodeRoundTrip(t *testing.T) {
	c := Default()
	c.Terminal.SoftTimeout = Duration{1500 * time.Millisecond}
	c.Terminal.HardTimeout = Duration{90 * time.Minute}
	c.Terminal.Env["A B"] = "x=y"
	var buf bytes.Buffer
	if err := toml.NewEncoder(&buf).Encode(c); err != nil {
		t.Fatal(err)
	}
	got, err := Parse(buf.Bytes(), "encoded.toml")
	if err != nil {
		t.Fatalf("%v\n%s", err, buf.Bytes())
	}
	if !reflect.DeepEqual(got, c) {
		t.Errorf("got  %+v\nwant %+v\nfrom:\n%s", got, c, buf.Bytes())
	}
}

func TestDurationText(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0:                                      "0s",
		250 * time.Millisecond:                 "250ms",
		10 * time.Second:                       "10s",
		30 * time.Minute:                       "30m",
		time.Hour:                              "1h",
		time.Hour + 30*time.Minute:             "1h30m",
		time.Hour + 5*time.Second:              "1h0m5s",
		-2 * time.Minute:                       "-2m",
		100*time.Minute + 500*time.Millisecond: "1h40m0.5s",
	} {
		b, err := Duration{d}.MarshalText()
		if err != nil || string(b) != want {
			t.Errorf("%v: MarshalText = %q, %v; want %q", d, b, err, want)
		}
		var back Duration
		if err := back.UnmarshalText(b); err != nil || back.Duration != d {
			t.Errorf("%q: UnmarshalText = %v, %v; want %v", b, back.Duration, err, d)
		}
	}
	var d Duration
	err := d.UnmarshalText([]byte("ten"))
	if err == nil || err.Error() != `invalid duration "ten": time: invalid duration "ten"` {
		t.Errorf("UnmarshalText(ten) = %v", err)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "harness.toml")
	if err := os.WriteFile(path, []byte("[trim]\nhead = 7\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if c.Trim.Head != 7 || c.Trim.Tail != 40 {
		t.Errorf("Load: %+v", c.Trim)
	}

	if err := os.WriteFile(path, []byte("[trim]\nhead = -1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Load(path)
	if want := path + ":2: trim.head: must be >= 0, got -1"; err == nil || err.Error() != want {
		t.Errorf("Load invalid: %v, want %s", err, want)
	}

	missing := filepath.Join(dir, "nope.toml")
	_, err = Load(missing)
	if err == nil || !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), missing) {
		t.Errorf("Load missing: %v", err)
	}

	_, err = Load(dir) // a directory
	if err == nil || !strings.Contains(err.Error(), dir) {
		t.Errorf("Load directory: %v", err)
	}

	big := filepath.Join(dir, "big.toml")
	if err := os.WriteFile(big, bytes.Repeat([]byte("# \n"), maxFileSize/3+1), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(big); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("Load big: %v", err)
	}
}
