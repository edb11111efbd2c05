package config

import (
	"reflect"
	"testing"

	"github.com/BurntSushi/toml"
)

func TestKeyLines(t *testing.T) {
	tests := []struct {
		src  string
		want map[string]int
	}{
		{"a = 1\n\nb = 2", map[string]int{"a": 1, "b": 3}},
		{"[a.b]\nc = 1\n[a]\nd = 2\n", map[string]int{"a": 1, "a.b": 1, "a.b.c": 2, "a.d": 4}},
		{"x.y . z = 1\n", map[string]int{"x": 1, "x.y": 1, "x.y.z": 1}},
		{"t = {\n  a = 1, # one\n  b = { c = [\n 1, 2 ] },\n}\nz = 0\n",
			map[string]int{"t": 1, "t.a": 2, "t.b": 3, "t.b.c": 3, "z": 6}},
		{"x = [ { a = 1 },\n { b = 2 } ]\n", map[string]int{"x": 1, "x.a": 1, "x.b": 2}},
		{"[[p]]\nn = 1\n[[p]]\nn = 2\nm = 3\n[p.q]\n", map[string]int{"p": 1, "p.n": 2, "p.m": 5, "p.q": 6}},
		{"s = \"\"\"\n[fake]\nk = 1\n\"\"\"\"\"\nr = '''\n# x\n'''\nq = 1\n",
			map[string]int{"s": 1, "r": 5, "q": 8}},
		{"s = \"\"\"a \\\n  b\\\"\"\"\"\nq = 1\n", map[string]int{"s": 1, "q": 3}},
		{"\"a.b\" = 1\n'c d' = 2\n\"\\u0041\\x42\\e\" = 3\n",
			map[string]int{`"a.b"`: 1, `"c d"`: 2, `"AB\u001b"`: 3}},
		{"d = 1979-05-27 07:32:00Z # c\ne = 2\n", map[string]int{"d": 1, "e": 2}},
		{"\ufeffa = 1\r\nb = \"#\" # x\r\n", map[string]int{"a": 1, "b": 2}},
	}
	for _, tt := range tests {
		// Each document is valid TOML, and the scanner finds every key
		// the library does.
		var raw map[string]any
		md, err := toml.Decode(tt.src, &raw)
		if err != nil {
			t.Errorf("%q is not valid TOML: %v", tt.src, err)
			continue
		}
		got := keyLines(tt.src)
		for _, k := range md.Keys() {
			if _, ok := got[k.String()]; !ok {
				t.Errorf("%q: key %s not found", tt.src, k)
			}
		}
		for k, l := range tt.want {
			if got[k] != l {
				t.Errorf("%q: %s at line %d, want %d (all: %v)", tt.src, k, got[k], l, got)
			}
		}
		for k := range got {
			if _, ok := tt.want[k]; !ok {
				t.Errorf("%q: found %s, which is not a key (all: %v)", tt.src, k, got)
			}
		}
	}
}

// TestKeyLinesGarbage: on input that is not TOML the scanner ends without
// panicking.
func TestKeyLinesGarbage(t *testing.T) {
	for _, src := range []string{
		"[", "[[", "]", "{", "a = [", "a = {", `a = "`, `a = """`, "a = '''", `"\`, `"\u12`,
		"= = =", "a.", "a = [1,,", "a = { b = \"\"\"", "[a.\"b", "a = 1 ]]]", "\x00\xff",
	} {
		_ = keyLines(src)
	}
	if got := keyLines(""); !reflect.DeepEqual(got, map[string]int{}) {
		t.Errorf("empty: %v", got)
	}
}

// TestKeyPositions: the tables in arrays have their own lines (an array
// in an array has its key's), and the keys rank in the order they are
// written in.
func TestKeyPositions(t *testing.T) {
	src := "[[p]]\nn = 1\n[[p]]\nn = 2\n[p.q]\n[[p.r]]\nk = 1\n[[p.r]]\n[[p]]\n" +
		"x = [ { a = 1 },\n { b = [[1], 2, {c = 3}] } ]\n[[p.r]]\n"
	want := map[string]position{
		"p": {1, 0}, "p[0]": {1, 1}, "p[0].n": {2, 2}, "p[1]": {3, 3}, "p[1].n": {4, 4},
		"p[1].q": {5, 5}, "p[1].r": {6, 6}, "p[1].r[0]": {6, 7}, "p[1].r[0].k": {7, 8}, "p[1].r[1]": {8, 9},
		"p[2]": {9, 10}, "p[2].x": {10, 11}, "p[2].x[0]": {10, 12}, "p[2].x[0].a": {10, 13},
		"p[2].x[1]": {11, 14}, "p[2].x[1].b": {11, 15}, "p[2].x[1].b[2]": {11, 16},
		"p[2].x[1].b[2].c": {11, 17}, "p[2].r": {12, 18}, "p[2].r[0]": {12, 19},
	}
	if got := keyPositions(src); !reflect.DeepEqual(got, want) {
		t.Errorf("got  %v\nwant %v", got, want)
	}
}
