package config

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestParseErrors covers each kind of error with its exact message, which
// includes the line.
func TestParseErrors(t *testing.T) {
	tests := []struct {
		name  string
		src   string
		class error
		line  int
		want  string
	}{
		// Syntax.
		{"unclosed string", "[terminal]\nshell = \"bash\ncols = 1\n", ErrSyntax, 2,
			"harness.toml:2: strings cannot contain newlines"},
		{"duplicate key", "[trim]\nhead = 1\ntail = 2\nhead = 3\n", ErrSyntax, 4,
			"harness.toml:4: Key 'trim.head' has already been defined."},
		{"overflow", "\n[trim]\nhead = 99999999999999999999\n", ErrSyntax, 3,
			"harness.toml:3: 99999999999999999999 is out of range for int64"},

		// Unknown keys.
		{"typo", strings.Repeat("\n", 10) + "[terminal]\nsof_timeout = \"1s\"\n", ErrUnknownKey, 12,
			"harness.toml:12: unknown key terminal.sof_timeout (did you mean soft_timeout?)"},
		{"case", "[terminal]\nShell = \"bash\"\n", ErrUnknownKey, 2,
			"harness.toml:2: unknown key terminal.Shell (did you mean shell?)"},
		{"camel", "[trim]\n\nmaxKeep = 3\n", ErrUnknownKey, 3,
			"harness.toml:3: unknown key trim.maxKeep (did you mean max_keep?)"},
		{"wrong table", "[trim]\nshell = \"bash\"\n", ErrUnknownKey, 2,
			"harness.toml:2: unknown key trim.shell (did you mean terminal.shell?)"},
		{"top level", "head = 3\n", ErrUnknownKey, 1,
			"harness.toml:1: unknown key head (did you mean trim.head?)"},
		{"no suggestion", "[store]\npath = \"\"\nsomething = 1\n", ErrUnknownKey, 3,
			"harness.toml:3: unknown key store.something"},
		{"table", "# c\n[termnal]\nshell = \"x\"\ncols = 3\n", ErrUnknownKey, 2,
			"harness.toml:2: unknown key termnal (did you mean terminal?)"},
		{"subtable", "[terminal]\n[terminal.envs]\nA = \"1\"\n", ErrUnknownKey, 2,
			"harness.toml:2: unknown key terminal.envs (did you mean env?)"},
		{"dotted", "[trim]\nhead = 1\nterminal.cols = 3\n", ErrUnknownKey, 3,
			"harness.toml:3: unknown key trim.terminal"},
		{"dotted top level", "\nterminal.sof_timeout = \"1s\"\n", ErrUnknownKey, 2,
			"harness.toml:2: unknown key terminal.sof_timeout (did you mean soft_timeout?)"},
		{"inline table", "terminal = {\n  shell = \"bash\",\n  kols = 3,\n}\n", ErrUnknownKey, 3,
			"harness.toml:3: unknown key terminal.kols (did you mean cols?)"},
		{"after multi-line values", "[trim]\nkeywords = [\n  \"a\",\n  \"b\",\n]\n[terminal]\nenv = { A = \"\"\"x\ny\"\"\" }\nshel = 'x'\n", ErrUnknownKey, 9,
			"harness.toml:9: unknown key terminal.shel (did you mean shell?)"},
		{"quoted", "[store]\n\"pat h\" = 1\n", ErrUnknownKey, 2,
			`harness.toml:2: unknown key store."pat h" (did you mean path?)`},

		// Wrong types.
		{"string for int", "[terminal]\ncols = \"wide\"\n", ErrType, 2,
			`harness.toml:2: terminal.cols: must be an integer, got string "wide"`},
		{"float for int", "[trim]\n\nline_cap = 1.5\n", ErrType, 3,
			"harness.toml:3: trim.line_cap: must be an integer, got float 1.5"},
		{"int for duration", "[terminal]\nsoft_timeout = 10\n", ErrType, 2,
			`harness.toml:2: terminal.soft_timeout: must be a duration string such as "10s", got integer 10`},
		{"int for string", "[store]\npath = 3\n", ErrType, 2,
			"harness.toml:2: store.path: must be a string, got integer 3"},
		{"string for array", "[trim]\nkeywords = \"Error\"\n", ErrType, 2,
			`harness.toml:2: trim.keywords: must be an array of strings, got string "Error"`},
		{"array element", "[trim]\nkeywords = [\n\"Error\", 1]\n", ErrType, 2,
			"harness.toml:2: trim.keywords: must be an array of strings, got integer 1 as element 2"},
		{"table for string", "[terminal]\nshell = { a = 1 }\n", ErrType, 2,
			"harness.toml:2: terminal.shell: must be a string, got table"},
		{"subtable for int", "[terminal]\n[terminal.cols]\nx = 1\n", ErrType, 2,
			"harness.toml:2: terminal.cols: must be an integer, got table"},
		{"dotted below int", "[terminal]\ncols.x = 1\n", ErrType, 2,
			"harness.toml:2: terminal.cols: must be an integer, got table"},
		{"env not table", "[terminal]\nenv = \"A=1\"\n", ErrType, 2,
			`harness.toml:2: terminal.env: must be a table, got string "A=1"`},
		{"env value", "[terminal]\nenv = { A = \"1\", B = 2 }\n", ErrType, 2,
			"harness.toml:2: terminal.env.B: must be a string, got integer 2"},
		{"env table value", "[terminal.env]\nA = \"1\"\n[terminal.env.B]\nC = \"x\"\n", ErrType, 3,
			"harness.toml:3: terminal.env.B: must be a string, got table"},
		{"table not table", "\nterminal = 5\n", ErrType, 2,
			"harness.toml:2: terminal: must be a table, got integer 5"},
		{"array of tables", "[[terminal]]\nshell = \"bash\"\n[[terminal]]\n", ErrType, 1,
			"harness.toml:1: terminal: must be a table, got array of tables"},
		{"datetime", "[store]\npath = 1979-05-27 07:32:00Z\n", ErrType, 2,
			"harness.toml:2: store.path: must be a string, got datetime"},
		{"bool", "[trim]\nhead = true\n", ErrType, 2,
			"harness.toml:2: trim.head: must be an integer, got boolean true"},

		// Invalid values.
		{"bad duration", "[terminal]\nshell = \"bash\"\ncols = 200\nrows = 50\nsoft_timeout = \"ten\"\n", ErrInvalid, 5,
			`harness.toml:5: terminal.soft_timeout: invalid duration "ten": time: invalid duration "ten"`},
		{"negative head", "\n[trim]\nhead = -1\n", ErrInvalid, 3,
			"harness.toml:3: trim.head: must be >= 0, got -1"},
		{"huge tail", "[trim]\ntail = 10001\n", ErrInvalid, 2,
			"harness.toml:2: trim.tail: must be <= 10000, got 10001"},
		{"max_keep", "[trim]\nmax_keep = -5\n", ErrInvalid, 2,
			"harness.toml:2: trim.max_keep: must be >= 0, got -5"},
		{"line_cap", "[trim]\nline_cap = 79\n", ErrInvalid, 2,
			"harness.toml:2: trim.line_cap: must be >= 80, got 79"},
		{"cols", "[terminal]\ncols = 9\n", ErrInvalid, 2,
			"harness.toml:2: terminal.cols: must be between 10 and 1000, got 9"},
		{"rows", "[terminal]\nrows = 1001\n", ErrInvalid, 2,
			"harness.toml:2: terminal.rows: must be between 10 and 1000, got 1001"},
		{"zero duration", "[terminal]\nkill_grace = \"0s\"\n", ErrInvalid, 2,
			"harness.toml:2: terminal.kill_grace: must be > 0, got 0s"},
		{"negative duration", "[terminal]\nhard_timeout = \"-1m\"\n", ErrInvalid, 2,
			"harness.toml:2: terminal.hard_timeout: must be > 0, got -1m"},
		{"soft above hard", "[terminal]\nhard_timeout = \"1m\"\nsoft_timeout = \"2m\"\n", ErrInvalid, 3,
			"harness.toml:3: terminal.soft_timeout: must be <= terminal.hard_timeout (1m), got 2m"},
		{"hard below default soft", "[terminal]\nhard_timeout = \"5s\"\n", ErrInvalid, 2,
			"harness.toml:2: terminal.hard_timeout: must be >= terminal.soft_timeout (10s), got 5s"},
		{"soft above default hard", "[terminal]\nsoft_timeout = \"1h\"\n", ErrInvalid, 2,
			"harness.toml:2: terminal.soft_timeout: must be <= terminal.hard_timeout (30m), got 1h"},
		{"empty shell", "[terminal]\nshell = \"\"\n", ErrInvalid, 2,
			"harness.toml:2: terminal.shell: must not be empty"},
		{"empty keyword", "[trim]\nkeywords = [\"Error\", \"\"]\n", ErrInvalid, 2,
			"harness.toml:2: trim.keywords: keyword 2 of 2 is empty"},
		{"newline keyword", "[trim]\nkeywords = [\"a\\nb\"]\n", ErrInvalid, 2,
			`harness.toml:2: trim.keywords: keyword 1 of 1 ("a\nb") contains a newline and can never match within a line`},
		{"durability", "[store]\ndurability = \"fast\"\n", ErrInvalid, 2,
			`harness.toml:2: store.durability: must be "strict" or "batch", got "fast"`},
		{"env name", "[terminal.env]\n\"A=B\" = \"x\"\n", ErrInvalid, 2,
			`harness.toml:2: terminal.env."A=B": the variable's name must not contain '='`},
		{"env empty name", "[terminal]\nenv = {\"\" = \"x\"}\n", ErrInvalid, 2,
			`harness.toml:2: terminal.env."": the variable's name must not be empty`},
		{"env NUL", "[terminal]\n\nenv.A = \"x\\u0000y\"\n", ErrInvalid, 3,
			"harness.toml:3: terminal.env.A: must not contain NUL"},
		{"path NUL", "store.path = \"/tmp/\\u0000\"\n", ErrInvalid, 1,
			"harness.toml:1: store.path: must not contain NUL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.src), "harness.toml")
			checkError(t, err, tt.want, tt.class)
			var line int
			var se *SyntaxError
			var ke *KeyError
			switch {
			case errors.As(err, &se):
				line = se.Line
			case errors.As(err, &ke):
				line = ke.Line
				if ke.File != "harness.toml" {
					t.Errorf("File = %q", ke.File)
				}
			default:
				t.Fatalf("%T is neither *SyntaxError nor *KeyError", err)
			}
			if line != tt.line {
				t.Errorf("line %d, want %d", line, tt.line)
			}
		})
	}
}

// checkError checks that err says want, and matches class.
func checkError(t *testing.T, err error, want string, class error) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; want %s", want)
	}
	if err.Error() != want {
		t.Errorf("got  %s\nwant %s", err, want)
	}
	if !errors.Is(err, class) {
		t.Errorf("errors.Is(%v) false", class)
	}
}

// TestParseErrorsAll: every problem of a stage is reported, in file order.
func TestParseErrorsAll(t *testing.T) {
	src := "[trim]\nhead = -1\nline_cap = 5\n[terminal]\ncols = 5\n[store]\ndurability = \"x\"\n[terminal.env]\n\"=\" = \"\"\n"
	_, err := Parse([]byte(src), "h.toml")
	want := `h.toml:2: trim.head: must be >= 0, got -1
h.toml:3: trim.line_cap: must be >= 80, got 5
h.toml:5: terminal.cols: must be between 10 and 1000, got 5
h.toml:7: store.durability: must be "strict" or "batch", got "x"
h.toml:9: terminal.env."=": the variable's name must not contain '='`
	if err == nil || err.Error() != want {
		t.Errorf("got\n%v\nwant\n%s", err, want)
	}

	// Keys and types come before values: a bad value is not reported
	// while there is an unknown key.
	_, err = Parse([]byte("[trim]\nhead = -1\nhaed = 1\ntail = \"x\"\n"), "h.toml")
	want = "h.toml:3: unknown key trim.haed (did you mean head?)\n" +
		`h.toml:4: trim.tail: must be an integer, got string "x"`
	if err == nil || err.Error() != want {
		t.Errorf("got\n%v\nwant\n%s", err, want)
	}

	// A long list is cut.
	var b strings.Builder
	for i := range 25 {
		fmt.Fprintf(&b, "bogus%d = 1\n", i)
	}
	_, err = Parse([]byte(b.String()), "h.toml")
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != maxReported+1 || lines[0] != "h.toml:1: unknown key bogus0" || lines[maxReported] != "... and 15 more" {
		t.Errorf("got\n%v", err)
	}
	var ke *KeyError
	if !errors.As(err, &ke) || ke.Key != "bogus0" || ke.Line != 1 {
		t.Errorf("errors.As: %+v", ke)
	}
}

func TestValidate(t *testing.T) {
	c := Default()
	c.Trim.Head = -1
	c.Terminal.SoftTimeout = Duration{time.Hour}
	c.Store.Durability = ""
	want := "terminal.soft_timeout: must be <= terminal.hard_timeout (30m), got 1h\n" +
		"trim.head: must be >= 0, got -1\n" +
		`store.durability: must be "strict" or "batch", got ""`
	err := c.Validate()
	if err == nil || err.Error() != want {
		t.Errorf("got\n%v\nwant\n%s", err, want)
	}
	if !errors.Is(err, ErrInvalid) {
		t.Error("not ErrInvalid")
	}
	var ke *KeyError
	if !errors.As(err, &ke) || ke.Line != 0 || ke.File != "" {
		t.Errorf("errors.As: %+v", ke)
	}
}

func TestKeyErrorFormat(t *testing.T) {
	for _, tt := range []struct {
		e    KeyError
		want string
	}{
		{KeyError{File: "f", Line: 3, Key: "a.b", Msg: "m", Err: ErrInvalid}, "f:3: a.b: m"},
		{KeyError{File: "f", Key: "a.b", Msg: "m", Err: ErrInvalid}, "f: a.b: m"},
		{KeyError{Line: 3, Key: "a.b", Msg: "m", Err: ErrInvalid}, "line 3: a.b: m"},
		{KeyError{Key: "a.b", Msg: "m", Err: ErrType}, "a.b: m"},
		{KeyError{Env: "V", File: "f", Line: 1, Key: "a.b", Msg: "m", Err: ErrInvalid}, "V: a.b: m"},
		{KeyError{File: "f", Line: 3, Key: "a.b", Err: ErrUnknownKey}, "f:3: unknown key a.b"},
	} {
		if got := tt.e.Error(); got != tt.want {
			t.Errorf("got %q, want %q", got, tt.want)
		}
	}
}
