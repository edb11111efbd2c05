package config

import (
	"bytes"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
)

// everything has a setting of every type unmarshal decodes.
type everything struct {
	Bool    bool          `toml:"bool"`
	Int     int           `toml:"int"`
	Int8    int8          `toml:"int8"`
	Int16   int16         `toml:"int16"`
	Int32   int32         `toml:"int32"`
	Int64   int64         `toml:"int64"`
	Uint    uint          `toml:"uint"`
	Uint8   uint8         `toml:"uint8"`
	Uint16  uint16        `toml:"uint16"`
	Uint32  uint32        `toml:"uint32"`
	Uint64  uint64        `toml:"uint64"`
	Float32 float32       `toml:"float32"`
	Float64 float64       `toml:"float64"`
	String  string        `toml:"string"`
	Level   level         `toml:"level"`
	Dur     Duration      `toml:"dur"`
	StdDur  time.Duration `toml:"std_dur"`

	Strings []string   `toml:"strings"`
	Ints    []int      `toml:"ints"`
	Bytes   []uint8    `toml:"bytes"`
	Floats  []float32  `toml:"floats"`
	Bools   []bool     `toml:"bools"`
	Durs    []Duration `toml:"durs"`
	Matrix  [][]int64  `toml:"matrix"`
	PtrInts []*int     `toml:"ptr_ints"`

	Table     agent               `toml:"table"`
	Ptr       *agent              `toml:"ptr"`
	PtrBool   *bool               `toml:"ptr_bool"`
	Tables    []agent             `toml:"tables"`
	PtrTables []*agent            `toml:"ptr_tables"`
	Env       map[string]string   `toml:"env"`
	Counts    map[string]uint16   `toml:"counts"`
	Agents    map[string]agent    `toml:"agents"`
	Lists     map[string][]string `toml:"lists"`
	Named     map[level]*agent    `toml:"named"`

	Ignored chan int `toml:"-"`
}

type level string

// agent is a table such as agent and hook settings will be: tables, maps
// and arrays of tables inside it, itself among them.
type agent struct {
	Name    string            `toml:"name"`
	Args    []string          `toml:"args"`
	On      bool              `toml:"on"`
	Timeout Duration          `toml:"timeout"`
	Env     map[string]string `toml:"env"`
	Limits  limits            `toml:"limits"`
	Hooks   []agent           `toml:"hooks"`
}

type limits struct {
	MemoryMB uint32  `toml:"memory_mb"`
	Ratio    float64 `toml:"ratio"`
}

// TestConfigDecodable walks Config by reflection: every field must be of
// a type the decoder fills, so that a new setting of another type fails
// here rather than in a user's hands. It then writes a document that sets
// every setting and reads it back.
func TestConfigDecodable(t *testing.T) {
	for _, typ := range []reflect.Type{reflect.TypeFor[Config](), reflect.TypeFor[everything]()} {
		walkFields(typ, nil, map[reflect.Type]bool{}, func(k path, f reflect.StructField) {
			if err := supportedField(f.Type); err != nil {
				t.Errorf("%s: %s (%s): %v", typ, k, f.Type, err)
			}
		})
		if err := decodable(typ); err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
		checkSample(t, typ)
	}
}

// supportedField checks the type of a field and, through pointers, slices
// and maps, the types it holds, down to a struct (whose fields walkFields
// visits) or a scalar.
func supportedField(typ reflect.Type) error {
	for seen := map[reflect.Type]bool{}; !seen[typ]; typ = typ.Elem() {
		seen[typ] = true
		if err := supported(typ); err != nil {
			return err
		}
		switch typ.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Map:
		default:
			return nil
		}
	}
	return nil
}

// walkFields calls fn for every field of the struct type typ and of the
// structs inside it, through pointers, slices and maps.
func walkFields(typ reflect.Type, at path, seen map[reflect.Type]bool, fn func(path, reflect.StructField)) {
	typ = deref(typ)
	switch {
	case seen[typ] || typ == durationType:
		return
	case typ.Kind() == reflect.Slice:
		walkFields(typ.Elem(), at.elem(0), seen, fn)
	case typ.Kind() == reflect.Map:
		walkFields(typ.Elem(), at.child("*"), seen, fn)
	case typ.Kind() == reflect.Struct:
		seen[typ] = true
		for i := range typ.NumField() {
			f := typ.Field(i)
			if tag(f) == "-" {
				continue
			}
			fn(at.child(tag(f)), f)
			walkFields(f.Type, at.child(tag(f)), seen, fn)
		}
	}
}

// checkSample writes a document that sets every setting of typ (down to
// a few levels of recursion) and checks that unmarshal reads each back.
func checkSample(t *testing.T, typ reflect.Type) {
	t.Helper()
	doc := encode(t, sample(typ, 0))
	v := reflect.New(typ)
	if _, err := unmarshal(doc, "sample.toml", v.Interface()); err != nil {
		t.Fatalf("%s: %v\n%s", typ, err, doc)
	}
	// What was read, written out, is what was written.
	var want, got map[string]any
	if _, err := toml.Decode(string(doc), &want); err != nil {
		t.Fatal(err)
	}
	if _, err := toml.Decode(string(encode(t, v.Interface())), &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s: read back\n%v\nwant\n%v", typ, got, want)
	}
}

// sample returns a TOML value for a setting of type typ, with every
// setting in it set.
func sample(typ reflect.Type, depth int) any {
	typ = deref(typ)
	if typ == durationType || typ == stdDurationType {
		return "1m30s"
	}
	switch typ.Kind() {
	case reflect.Bool:
		return true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return int64(7)
	case reflect.Float32, reflect.Float64:
		return 0.5
	case reflect.String:
		return "x"
	case reflect.Slice:
		if depth > 3 {
			return []any{}
		}
		return []any{sample(typ.Elem(), depth+1), sample(typ.Elem(), depth+1)}
	case reflect.Map:
		if depth > 3 {
			return map[string]any{}
		}
		return map[string]any{"k": sample(typ.Elem(), depth+1), "a b": sample(typ.Elem(), depth+1)}
	case reflect.Struct:
		m := map[string]any{}
		if depth > 6 { // a type such as struct{ Next *T }
			return m
		}
		for i := range typ.NumField() {
			if f := typ.Field(i); tag(f) != "-" {
				m[tag(f)] = sample(f.Type, depth+1)
			}
		}
		return m
	}
	panic("no sample for " + typ.String())
}

func encode(t testing.TB, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := toml.NewEncoder(&buf).Encode(v); err != nil {
		t.Fatalf("encode %T: %v", v, err)
	}
	return buf.Bytes()
}

// TestDecodableRefuses: a setting of a type the decoder cannot fill is
// found by decodable, and gives an error, not a panic, when a document
// sets it.
func TestDecodableRefuses(t *testing.T) {
	type untagged struct{ A int }
	type unexported struct {
		a int `toml:"a"`
	}
	type twice struct {
		A int `toml:"a"`
		B int `toml:"a"`
	}
	type self *self
	type deep []struct {
		Y []*chan int `toml:"y"`
	}
	for _, tt := range []struct {
		typ  reflect.Type // the type of the setting x
		doc  string       // a document that sets x
		want string       // the error's message
	}{
		{reflect.TypeFor[chan int](), "x = 1", "f.toml:1: x: cannot hold a setting: chan int is not a type a setting can have"},
		{reflect.TypeFor[func()](), "x = 1", "f.toml:1: x: cannot hold a setting: func() is not a type a setting can have"},
		{reflect.TypeFor[any](), "x = 1", "f.toml:1: x: cannot hold a setting: interface {} is not a type a setting can have"},
		{reflect.TypeFor[complex128](), "x = 1", "f.toml:1: x: cannot hold a setting: complex128 is not a type a setting can have"},
		{reflect.TypeFor[uintptr](), "x = 1", "f.toml:1: x: cannot hold a setting: uintptr is not a type a setting can have"},
		{reflect.TypeFor[[2]int](), "x = [1, 2]", "f.toml:1: x: cannot hold a setting: [2]int is not a type a setting can have"},
		{reflect.TypeFor[time.Time](), "x = 1979-05-27T07:32:00Z", `f.toml:1: x: cannot hold a setting: time.Time.wall is unexported and not tagged toml:"-"`},
		{reflect.TypeFor[map[int]string](), "x = {}", "f.toml:1: x: cannot hold a setting: map[int]string has keys that are not strings"},
		{reflect.TypeFor[**int](), "x = 1", "f.toml:1: x: cannot hold a setting: **int is a pointer to a pointer"},
		{reflect.TypeFor[self](), "x = 1", "f.toml:1: x: cannot hold a setting: config.self is a pointer to a pointer"},
		{reflect.TypeFor[[]self](), "x = 1", "f.toml:1: x: cannot hold a setting: config.self is a pointer to a pointer"},
		{reflect.TypeFor[map[string]self](), "x = 1", "f.toml:1: x: cannot hold a setting: config.self is a pointer to a pointer"},
		{reflect.TypeFor[untagged](), "[x]\nA = 1", "f.toml:1: x: cannot hold a setting: config.untagged.A has no toml tag"},
		{reflect.TypeFor[unexported](), "[x]\na = 1", `f.toml:1: x: cannot hold a setting: config.unexported.a is unexported and not tagged toml:"-"`},
		{reflect.TypeFor[twice](), "x.a = 1", `f.toml:1: x: cannot hold a setting: config.twice.A and config.twice.B have the same toml key "a"`},
		{reflect.TypeFor[[]chan int](), "\nx = []", "f.toml:2: x: cannot hold a setting: chan int is not a type a setting can have"},
		{reflect.TypeFor[map[string]func()](), "[x]\n", "f.toml:1: x: cannot hold a setting: func() is not a type a setting can have"},
		{reflect.TypeFor[deep](), "[[x]]\n[[x]]\ny = [1]", "f.toml:3: x[1].y: cannot hold a setting: chan int is not a type a setting can have"},
	} {
		typ := reflect.StructOf([]reflect.StructField{{Name: "X", Type: tt.typ, Tag: `toml:"x"`}})
		if decodable(typ) == nil {
			t.Errorf("%s: decodable", typ)
		}
		_, err := unmarshal([]byte(tt.doc), "f.toml", reflect.New(typ).Interface())
		if !errors.Is(err, errors.ErrUnsupported) || err.Error() != tt.want {
			t.Errorf("%s: got  %v\nwant %s", typ, err, tt.want)
		}
	}

	// The struct decoded into must be one the decoder fills itself.
	for _, v := range []any{nil, 1, new(int), struct{}{}, (*struct{})(nil), &struct{ A int }{}} {
		if _, err := unmarshal(nil, "f.toml", v); !errors.Is(err, errors.ErrUnsupported) {
			t.Errorf("%T: %v", v, err)
		}
	}
}

// TestUnmarshal reads each type written each way TOML allows.
func TestUnmarshal(t *testing.T) {
	ptr := func(n int) *int { return &n }
	yes := true
	tests := []struct {
		name string
		src  string
		want func(e *everything)
	}{
		{"scalars", `
bool = true
int = -9223372036854775808
int8 = -128
int16 = 32767
int32 = -2147483648
int64 = 9223372036854775807
uint = 9223372036854775807
uint8 = 255
uint16 = 65535
uint32 = 4294967295
uint64 = 0x7fffffffffffffff
float32 = 3.4028234663852886e+38
float64 = -0.0
string = 'c:\x'
level = "debug"
dur = "1h30m"
std_dur = "250ms"
`, func(e *everything) {
			*e = everything{Bool: true, Int: math.MinInt, Int8: -128, Int16: 32767, Int32: math.MinInt32,
				Int64: math.MaxInt64, Uint: math.MaxInt64, Uint8: 255, Uint16: 65535, Uint32: math.MaxUint32,
				Uint64: math.MaxInt64, Float32: math.MaxFloat32, Float64: math.Copysign(0, -1), String: `c:\x`,
				Level: "debug", Dur: Duration{90 * time.Minute}, StdDur: 250 * time.Millisecond}
		}},
		{"integers into floats", "float32 = 16777215\nfloat64 = -9007199254740991\n", func(e *everything) {
			e.Float32, e.Float64 = 16777215, -9007199254740991
		}},
		{"arrays of scalars", `
strings = ["a", 'b', """c"""]
ints = [-2147483648, 2147483647]
bytes = [0, 255]
floats = [1, 2.5, -0.5]
bools = []
durs = ["1s", "2m"]
matrix = [[1, 2], [], [3]]
ptr_ints = [1, 2]
`, func(e *everything) {
			e.Strings = []string{"a", "b", "c"}
			e.Ints = []int{math.MinInt32, math.MaxInt32}
			e.Bytes = []byte{0, 255}
			e.Floats = []float32{1, 2.5, -0.5}
			e.Bools = []bool{}
			e.Durs = []Duration{{time.Second}, {2 * time.Minute}}
			e.Matrix = [][]int64{{1, 2}, {}, {3}}
			e.PtrInts = []*int{ptr(1), ptr(2)}
		}},
		{"tables to any depth", `
ptr_bool = true
[table]
name = "a"
limits.memory_mb = 5
[table.env]
A = "1"
[ptr.limits]
ratio = 0.5
`, func(e *everything) {
			e.PtrBool = &yes
			e.Table = agent{Name: "a", Env: map[string]string{"A": "1"}, Limits: limits{MemoryMB: 5}}
			e.Ptr = &agent{Limits: limits{Ratio: 0.5}}
		}},
		{"arrays of tables", `
[[tables]]
name = "a"
[[tables.hooks]]
name = "a1"
[[tables.hooks.hooks]]
on = true
[[tables.hooks]]
name = "a2"
[tables.limits]
ratio = 1
[[tables]]
[[tables]]
args = ["x"]
[tables.env]
B = "2"
[[ptr_tables]]
name = "p"
`, func(e *everything) {
			e.Tables = []agent{
				{Name: "a", Limits: limits{Ratio: 1}, Hooks: []agent{{Name: "a1", Hooks: []agent{{On: true}}}, {Name: "a2"}}},
				{},
				{Args: []string{"x"}, Env: map[string]string{"B": "2"}},
			}
			e.PtrTables = []*agent{{Name: "p"}}
		}},
		{"inline arrays of tables", `tables = [{name = "a"}, {hooks = [{on = true}]}]
ptr_tables = []
`, func(e *everything) {
			e.Tables = []agent{{Name: "a"}, {Hooks: []agent{{On: true}}}}
			e.PtrTables = []*agent{}
		}},
		{"maps", `
env = {A = "1", "B C" = ""}
counts.x = 65535
[agents.claude]
name = "c"
args = ["--print"]
timeout = "5m"
[agents.claude.env]
HOME = "/tmp"
[agents."my agent"]
[lists]
a = ["1"]
b = []
[named.n.limits]
memory_mb = 1
`, func(e *everything) {
			e.Env = map[string]string{"A": "1", "B C": ""}
			e.Counts = map[string]uint16{"x": 65535}
			e.Agents = map[string]agent{
				"claude":   {Name: "c", Args: []string{"--print"}, Timeout: Duration{5 * time.Minute}, Env: map[string]string{"HOME": "/tmp"}},
				"my agent": {},
			}
			e.Lists = map[string][]string{"a": {"1"}, "b": {}}
			e.Named = map[level]*agent{"n": {Limits: limits{MemoryMB: 1}}}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got, want everything
			if _, err := unmarshal([]byte(tt.src), "f.toml", &got); err != nil {
				t.Fatal(err)
			}
			tt.want(&want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got  %+v\nwant %+v", got, want)
			}
		})
	}
}

// TestUnmarshalOver: a document is read over what is there. Tables merge,
// and so do maps of tables, entry by entry; other maps and arrays are
// replaced whole, and what a pointer pointed to is left as it was.
func TestUnmarshalOver(t *testing.T) {
	old := &agent{Name: "old", On: true, Env: map[string]string{"A": "1"}}
	oldAgents := map[string]agent{"x": {Name: "x", Env: map[string]string{"K": "v"}}, "z": {Name: "z"}}
	e := everything{
		Table:  agent{Name: "t", On: true, Args: []string{"a"}},
		Ptr:    old,
		Env:    map[string]string{"OLD": "1"},
		Agents: oldAgents,
	}
	src := "env = {NEW = \"2\"}\n[table]\nargs = [\"b\"]\n[ptr]\nname = \"new\"\nenv.B = \"2\"\n[agents.y]\n[agents.x]\non = true\nenv = {J = \"w\"}\n"
	if _, err := unmarshal([]byte(src), "f.toml", &e); err != nil {
		t.Fatal(err)
	}
	want := everything{
		Table:  agent{Name: "t", On: true, Args: []string{"b"}},
		Ptr:    &agent{Name: "new", On: true, Env: map[string]string{"B": "2"}},
		Env:    map[string]string{"NEW": "2"},
		Agents: map[string]agent{"x": {Name: "x", On: true, Env: map[string]string{"J": "w"}}, "y": {}, "z": {Name: "z"}},
	}
	if !reflect.DeepEqual(oldAgents, map[string]agent{"x": {Name: "x", Env: map[string]string{"K": "v"}}, "z": {Name: "z"}}) {
		t.Errorf("the old map changed: %+v", oldAgents)
	}
	if !reflect.DeepEqual(e, want) {
		t.Errorf("got  %+v\nwant %+v", e, want)
	}
	if !reflect.DeepEqual(*old, agent{Name: "old", On: true, Env: map[string]string{"A": "1"}}) {
		t.Errorf("the old value changed: %+v", old)
	}
}

// TestUnmarshalErrors: each type refuses what it cannot hold, with the
// line of the key, and unknown keys are refused wherever they are.
func TestUnmarshalErrors(t *testing.T) {
	tests := []struct {
		name  string
		src   string
		class error
		want  string // the whole message, one problem a line
	}{
		{"bool", "\nbool = 1", ErrType, "f.toml:2: bool: must be a boolean, got integer 1"},
		{"bool string", `bool = "true"`, ErrType, `f.toml:1: bool: must be a boolean, got string "true"`},
		{"int8 over", "int8 = 128", ErrInvalid, "f.toml:1: int8: 128 is out of range"},
		{"int8 under", "int8 = -129", ErrInvalid, "f.toml:1: int8: -129 is out of range"},
		{"int16", "int16 = 32768", ErrInvalid, "f.toml:1: int16: 32768 is out of range"},
		{"int32", "int32 = 2147483648", ErrInvalid, "f.toml:1: int32: 2147483648 is out of range"},
		{"negative uint", "uint = -1", ErrInvalid, "f.toml:1: uint: -1 is out of range"},
		{"negative uint64", "uint64 = -9223372036854775808", ErrInvalid, "f.toml:1: uint64: -9223372036854775808 is out of range"},
		{"uint8", "uint8 = 256", ErrInvalid, "f.toml:1: uint8: 256 is out of range"},
		{"uint16", "uint16 = 65536", ErrInvalid, "f.toml:1: uint16: 65536 is out of range"},
		{"uint32", "uint32 = 4294967296", ErrInvalid, "f.toml:1: uint32: 4294967296 is out of range"},
		{"float into int", "int = 1.0", ErrType, "f.toml:1: int: must be an integer, got float 1"},
		{"float into uint", "uint8 = 1e3", ErrType, "f.toml:1: uint8: must be an integer, got float 1000"},
		{"float32 over", "float32 = 1e39", ErrInvalid, "f.toml:1: float32: 1e+39 is out of range"},
		{"float32 inf", "float32 = -inf", ErrInvalid, "f.toml:1: float32: -Inf is out of range"},
		{"inexact float32", "float32 = 16777216", ErrInvalid, "f.toml:1: float32: 16777216 is out of range"},
		{"inexact float64", "float64 = 9007199254740992", ErrInvalid, "f.toml:1: float64: 9007199254740992 is out of range"},
		{"string for float", `float64 = "1.5"`, ErrType, `f.toml:1: float64: must be a number, got string "1.5"`},
		{"bool for string", "level = false", ErrType, "f.toml:1: level: must be a string, got boolean false"},
		{"int for duration", "std_dur = 1000", ErrType, `f.toml:1: std_dur: must be a duration string such as "10s", got integer 1000`},
		{"bad duration", `std_dur = "1 s"`, ErrInvalid, `f.toml:1: std_dur: invalid duration "1 s": time: unknown unit " s" in duration "1 s"`},

		{"array for scalar", "int = [1]", ErrType, "f.toml:1: int: must be an integer, got array"},
		{"scalar for array", "ints = 1", ErrType, "f.toml:1: ints: must be an array of integers, got integer 1"},
		{"array element", "bools = [true,\n 1]", ErrType, "f.toml:1: bools: must be an array of booleans, got integer 1 as element 2"},
		{"array element range", "bytes = [1, 256]", ErrInvalid, "f.toml:1: bytes: element 2 (256) is out of range"},
		{"array int32", "ints = [2147483648]", ErrInvalid, "f.toml:1: ints: element 1 (2147483648) is out of range"},
		{"array float range", "floats = [1e39]", ErrInvalid, "f.toml:1: floats: element 1 (1e+39) is out of range"},
		{"array duration", `durs = ["1s", "x"]`, ErrInvalid, `f.toml:1: durs: element 2: invalid duration "x": time: invalid duration "x"`},
		{"array of durations", `durs = [1]`, ErrType, `f.toml:1: durs: must be an array of duration strings such as "10s", got integer 1 as element 1`},
		{"nested array", "matrix = [[1],\n  [2, \"x\"]]", ErrType, `f.toml:1: matrix[1]: must be an array of integers, got string "x" as element 2`},
		{"nested array element", "matrix = [1]", ErrType, "f.toml:1: matrix: must be an array of arrays of integers, got integer 1 as element 1"},
		{"pointer element", `ptr_ints = [1, "2"]`, ErrType, `f.toml:1: ptr_ints: must be an array of integers, got string "2" as element 2`},
		{"pointer", "ptr_bool = 0", ErrType, "f.toml:1: ptr_bool: must be a boolean, got integer 0"},

		{"table", "table = 1", ErrType, "f.toml:1: table: must be a table, got integer 1"},
		{"pointer table", "ptr = []", ErrType, "f.toml:1: ptr: must be a table, got array"},
		{"nested table", "[table]\nlimits.ratio = true", ErrType, "f.toml:2: table.limits.ratio: must be a number, got boolean true"},
		{"nested unknown", "[table]\nname = \"x\"\n[table.limits]\nmemorymb = 1", ErrUnknownKey,
			"f.toml:4: unknown key table.limits.memorymb (did you mean memory_mb?)"},
		{"case", "[table]\nName = \"x\"", ErrUnknownKey, "f.toml:2: unknown key table.Name (did you mean name?)"},

		{"not an array of tables", "tables = {name = \"x\"}", ErrType, "f.toml:1: tables: must be an array of tables, got table"},
		{"element not a table", "tables = [{}, 1]", ErrType, "f.toml:1: tables: must be an array of tables, got integer 1 as element 2"},
		{"array of tables element", "[[tables]]\nname = \"a\"\n\n[[tables]]\nname = 1\n", ErrType,
			"f.toml:5: tables[1].name: must be a string, got integer 1"},
		{"unknown in array of tables", "[[tables]]\nname = \"a\"\n[[tables]]\nnmae = \"b\"\n", ErrUnknownKey,
			"f.toml:4: unknown key tables[1].nmae (did you mean name?)"},
		{"deep array of tables", "[[tables]]\n[[tables]]\n[[tables.hooks]]\n[[tables.hooks]]\n[tables.hooks.limits]\nratio = \"x\"\n", ErrType,
			`f.toml:6: tables[1].hooks[1].limits.ratio: must be a number, got string "x"`},
		{"inline array of tables", "tables = [\n  {name = \"a\"},\n  {name = \"b\", on = 1},\n]", ErrType,
			"f.toml:3: tables[1].on: must be a boolean, got integer 1"},
		{"unknown in inline array", "ptr_tables = [{name = \"a\"}, {nam = \"b\"}]", ErrUnknownKey,
			"f.toml:1: unknown key ptr_tables[1].nam (did you mean name?)"},

		{"map not a table", "env = [\"A=1\"]", ErrType, "f.toml:1: env: must be a table, got array"},
		{"map value", "[counts]\na = 1\nb = -1", ErrInvalid, "f.toml:3: counts.b: -1 is out of range"},
		{"map of tables", "[agents.a]\nname = \"a\"\n[agents.b]\ntimeout = 5", ErrType,
			`f.toml:4: agents.b.timeout: must be a duration string such as "10s", got integer 5`},
		{"unknown in map value", "[agents.a]\nnmae = \"a\"", ErrUnknownKey, "f.toml:2: unknown key agents.a.nmae (did you mean name?)"},
		{"unknown deep in map value", "[agents.\"x y\".limits]\nratoi = 1", ErrUnknownKey,
			`f.toml:2: unknown key agents."x y".limits.ratoi (did you mean ratio?)`},
		{"map value not a table", "agents.a = \"x\"", ErrType, `f.toml:1: agents.a: must be a table, got string "x"`},
		{"map of arrays", "lists = {a = [\"x\", 1]}", ErrType, "f.toml:1: lists.a: must be an array of strings, got integer 1 as element 2"},
		{"map of pointers", "[named.a]\non = \"yes\"", ErrType, `f.toml:2: named.a.on: must be a boolean, got string "yes"`},
		{"ignored field", "Ignored = 1\n", ErrUnknownKey, "f.toml:1: unknown key Ignored"},
		{"dash", "\"-\" = 1\n", ErrUnknownKey, "f.toml:1: unknown key -"},

		{"all, in file order", "[[tables]]\nname = 1\n[table]\non = 2\n[[tables]]\nbad = 3\n[agents.a]\non = 4\n[table.limits]\nratio = \"5\"\n", ErrType,
			"f.toml:2: tables[0].name: must be a string, got integer 1\n" +
				"f.toml:4: table.on: must be a boolean, got integer 2\n" +
				"f.toml:6: unknown key tables[1].bad\n" +
				"f.toml:8: agents.a.on: must be a boolean, got integer 4\n" +
				`f.toml:10: table.limits.ratio: must be a number, got string "5"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var e everything
			_, err := unmarshal([]byte(tt.src), "f.toml", &e)
			checkError(t, err, tt.want, tt.class)
			// Each problem's line is also in the *KeyError.
			for i, e := range flatten(err) {
				var ke *KeyError
				if !errors.As(e, &ke) || !strings.HasPrefix(strings.Split(tt.want, "\n")[i], where(ke.File, ke.Line, "")) {
					t.Errorf("%v: %+v", e, ke)
				}
			}
		})
	}
}

// TestUnmarshalDeep: a document nested deep costs time in proportion to
// the length of its keys, not more. An array in an array is not given
// a position of its own, so deep arrays cost next to nothing.
func TestUnmarshalDeep(t *testing.T) {
	const n = 100000
	start := time.Now()
	src := "matrix = " + strings.Repeat("[", n) + strings.Repeat("]", n) + "\n"
	var e everything
	_, err := unmarshal([]byte(src), "f.toml", &e)
	want := "f.toml:1: matrix[0]: must be an array of integers, got array as element 1"
	if err == nil || err.Error() != want {
		t.Errorf("got  %v\nwant %s", err, want)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("%d nested arrays took %v", n, d)
	}
}

// FuzzUnmarshal decodes arbitrary TOML into a struct with a setting of
// every type. It checks that unmarshal never panics and that its errors
// say where; that what it accepts, the TOML library's own decoder reads
// the same (it is laxer: case-insensitive, unknown keys ignored); and
// that what it reads, written out, reads back the same.
func FuzzUnmarshal(f *testing.F) {
	f.Add(encode(f, sample(reflect.TypeFor[everything](), 2)))
	for _, s := range []string{
		"", "int8 = 128\n", "uint = -1\n", "float32 = 1e39\n", "[[tables]]\nname = 1\n",
		"tables = [{hooks = [{on = true}]}]\n", "[agents.a.limits]\nratio = 1\n",
		"matrix = [[1], [2, 3]]\n", "named.x.args = [\"a\"]\n", "[[tables]]\n[[tables.hooks]]\n[tables.hooks.env]\nA = \"b\"\n",
		"ptr_ints = [1]\nptr_bool = false\n[ptr]\n", "std_dur = \"1h\"\ndurs = [\"1s\"]\n", "floats = [nan, -inf, 1]\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		lines := strings.Count(string(data), "\n") + 1
		var raw map[string]any
		_, tomlErr := toml.Decode(string(data), &raw)

		var got everything
		_, err := unmarshal(data, "f.toml", &got)
		if err != nil {
			checkErrorPlaces(t, err, tomlErr, lines)
			return
		}
		if tomlErr != nil {
			t.Fatalf("accepted what the TOML library refused: %v", tomlErr)
		}
		out := encode(t, got) // compared as text: NaN is not DeepEqual to itself

		var lib everything
		if _, err := toml.Decode(string(data), &lib); err != nil {
			t.Fatalf("the TOML library refuses what unmarshal accepted: %v", err)
		}
		if libOut := encode(t, lib); !bytes.Equal(libOut, out) {
			t.Fatalf("the TOML library reads\n%s\nunmarshal reads\n%s", libOut, out)
		}

		var back everything
		if _, err := unmarshal(out, "out.toml", &back); err != nil {
			t.Fatalf("reading back %q: %v", out, err)
		}
		if again := encode(t, back); !bytes.Equal(again, out) {
			t.Fatalf("round trip:\n%s\nwant\n%s", again, out)
		}
	})
}
