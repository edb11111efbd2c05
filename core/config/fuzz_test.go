package config

import (
	"bytes"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

// FuzzParse checks that Parse never panics, that its errors are never
// empty and always say where, that what it accepts validates, and that
// the line scanner finds every key the TOML library sees.
func FuzzParse(f *testing.F) {
	if data, err := os.ReadFile(defaultFile); err == nil {
		f.Add(data) // its [run] and [agents] need the reworked decoder
	}
	for _, s := range []string{
		"", "[terminal]\nsof_timeout = \"1s\"\n", "[trim]\nhead = -1\n",
		"terminal = { env = { A = \"1\" }, cols = 20 }\n", "[[terminal]]\n",
		"[terminal.env]\n\"A=B\" = \"x\"\n", "trim.keywords = [\"\", 1]\n",
		"s = \"\"\"\nx\n\"\"\"\n[store]\ndurability = \"batch\"\n",
		"[terminal]\nsoft_timeout = \"1h\"\nhard_timeout = \"1m\"\n",
		"x = [{a = 1}, {b = {c = 2}}]\n", "a = 1979-05-27 07:32:00Z\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		lines := strings.Count(string(data), "\n") + 1

		var raw map[string]any
		md, tomlErr := toml.Decode(string(data), &raw)
		if tomlErr == nil {
			at := keyLines(string(data))
			for _, k := range md.Keys() {
				l, ok := at[k.String()]
				if !ok || l < 1 || l > lines {
					t.Fatalf("key %s: line %d (found %v) in a %d-line document", k, l, ok, lines)
				}
			}
		}

		c, err := Parse(data, "f.toml")
		if err == nil {
			if tomlErr != nil {
				t.Fatalf("Parse accepted what the TOML library refused: %v", tomlErr)
			}
			if verr := c.Validate(); verr != nil {
				t.Fatalf("Parse accepted a config that fails Validate: %v", verr)
			}
			if c.Terminal.Env == nil || c.Trim.Keywords == nil {
				t.Fatalf("nil map or slice: %+v", c)
			}
			// What was read can be written and read back.
			var buf bytes.Buffer
			if err := toml.NewEncoder(&buf).Encode(c); err != nil {
				t.Fatalf("encode: %v", err)
			}
			back, err := Parse(buf.Bytes(), "encoded.toml")
			if err != nil {
				t.Fatalf("reading back %q: %v", buf.Bytes(), err)
			}
			if !reflect.DeepEqual(back, c) {
				t.Fatalf("round trip: %+v, want %+v", back, c)
			}
			return
		}
		if err.Error() == "" {
			t.Fatal("empty error")
		}
		checkErrorPlaces(t, err, tomlErr, lines)

		// The values Parse refuses are those Validate refuses (Parse may
		// blame the other key of a pair, so compare counts).
		if dc, _, derr := decode(data, "f.toml"); derr == nil {
			verr := dc.Validate()
			if verr == nil {
				t.Fatalf("Parse failed (%v) but Validate passes the decoded config", err)
			}
			if n, m := len(flatten(err)), len(flatten(verr)); n != m {
				t.Fatalf("Parse reports %d problems, Validate %d:\n%v\n---\n%v", n, m, err, verr)
			}
		}
	})
}

// checkErrorPlaces checks the error of Parse or unmarshal on a document
// of the given number of lines, which the TOML library accepted if tomlErr
// is nil: each problem in it is a *KeyError with the name "f.toml", a line
// and a class, or a *SyntaxError for what the library refused too.
func checkErrorPlaces(t *testing.T, err, tomlErr error, lines int) {
	t.Helper()
	for _, e := range flatten(err) {
		if e.Error() == "" {
			t.Fatalf("empty error in %q", err)
		}
		var ke *KeyError
		var se *SyntaxError
		switch {
		case errors.As(e, &ke):
			if ke.File != "f.toml" || ke.Line < 1 || ke.Line > lines || ke.Key == "" {
				t.Fatalf("%q: key error without a place: %+v", e, ke)
			}
			if !errors.Is(e, ErrUnknownKey) && !errors.Is(e, ErrType) && !errors.Is(e, ErrInvalid) {
				t.Fatalf("%q: no class", e)
			}
		case errors.As(e, &se):
			if tomlErr == nil {
				t.Fatalf("syntax error %q for what the TOML library accepted", e)
			}
		case strings.HasPrefix(e.Error(), "... and "):
		default:
			t.Fatalf("%q: unexpected %T", e, e)
		}
	}
}

// flatten returns the errors joined in err, or err itself.
func flatten(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
