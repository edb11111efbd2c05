package config

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// decode parses data over Default without validating it, and returns the
// line of every key the document mentions.
//
// The TOML library parses into a generic map and this file does the
// typing itself, walking the document's keys in order against Config's
// toml tags. Decoding straight into the struct would match keys
// case-insensitively (so "Shell" and "SHELL" would both set the shell,
// the winner picked by map order) and report only the first type error
// it meets in map order, without a position for most.
func decode(data []byte, name string) (Config, map[string]int, error) {
	var raw map[string]any
	md, err := toml.Decode(string(data), &raw)
	if err != nil {
		return Config{}, nil, syntaxError(err, name)
	}
	d := decoder{
		raw:    raw,
		lines:  keyLines(string(data)),
		file:   name,
		done:   map[string]bool{},
		tables: map[string]bool{},
	}
	c := Default()
	root := reflect.ValueOf(&c).Elem()
	for _, k := range md.Keys() {
		d.key(root, k)
	}
	if len(d.errs) > 0 {
		return Config{}, nil, join(d.errs)
	}
	return c, d.lines, nil
}

func syntaxError(err error, name string) error {
	var pe toml.ParseError
	if !errors.As(err, &pe) {
		return &SyntaxError{File: name, Msg: err.Error(), Err: err}
	}
	msg := pe.Message
	if msg == "" {
		msg = pe.Error()
	}
	return &SyntaxError{File: name, Line: pe.Position.Line, Msg: msg, Err: pe}
}

// decoder holds the state of one decode.
type decoder struct {
	raw   map[string]any
	lines map[string]int
	file  string
	errs  []*KeyError

	// done holds the keys already dealt with: assigned, or reported. Keys
	// below them are skipped, so a misspelt table is one error, not one
	// per key in it.
	done map[string]bool

	// tables holds the tables whose value has been checked to be a table.
	tables map[string]bool
}

var durationType = reflect.TypeFor[Duration]()

// isTable reports whether values of t are TOML tables: a settings struct
// or a map such as terminal.env.
func isTable(t reflect.Type) bool {
	return t != durationType && (t.Kind() == reflect.Struct || t.Kind() == reflect.Map)
}

// key decodes the document's key k into root (a Config).
func (d *decoder) key(root reflect.Value, k toml.Key) {
	v := root
	for i := range k {
		path := k[:i+1]
		ks := path.String()
		if d.done[ks] {
			return
		}
		if v.Kind() == reflect.Map {
			// An entry of terminal.env: whatever is below it is the
			// entry's (wrong) value, reported here.
			d.done[ks] = true
			s, ok := d.value(path).(string)
			if !ok {
				d.fail(path, ErrType, "must be a string, got %s", describe(d.value(path)))
				return
			}
			v.SetMapIndex(reflect.ValueOf(k[i]), reflect.ValueOf(s))
			return
		}
		f, ok := field(v, k[i])
		if !ok {
			d.done[ks] = true
			d.fail(path, ErrUnknownKey, "%s", suggest(root.Type(), path))
			return
		}
		if !isTable(f.Type()) {
			d.done[ks] = true
			d.set(f, path)
			return
		}
		if !d.tables[ks] {
			d.tables[ks] = true
			if _, ok := d.value(path).(map[string]any); !ok {
				d.done[ks] = true
				d.fail(path, ErrType, "must be a table, got %s", describe(d.value(path)))
				return
			}
			if f.Kind() == reflect.Map {
				// The document's table replaces the default one whole.
				f.Set(reflect.MakeMap(f.Type()))
			}
		}
		v = f
	}
}

// set decodes the value at path into the setting f.
func (d *decoder) set(f reflect.Value, path toml.Key) {
	val := d.value(path)
	switch {
	case f.Type() == durationType:
		s, ok := val.(string)
		if !ok {
			d.fail(path, ErrType, `must be a duration string such as "10s", got %s`, describe(val))
			return
		}
		var dur Duration
		if err := dur.UnmarshalText([]byte(s)); err != nil {
			d.fail(path, ErrInvalid, "%v", err)
			return
		}
		f.Set(reflect.ValueOf(dur))
	case f.Kind() == reflect.String:
		s, ok := val.(string)
		if !ok {
			d.fail(path, ErrType, "must be a string, got %s", describe(val))
			return
		}
		f.SetString(s)
	case f.Kind() == reflect.Int:
		n, ok := val.(int64)
		if !ok {
			d.fail(path, ErrType, "must be an integer, got %s", describe(val))
			return
		}
		if n < math.MinInt || n > math.MaxInt {
			d.fail(path, ErrInvalid, "%d is out of range", n)
			return
		}
		f.SetInt(n)
	case f.Kind() == reflect.Slice && f.Type().Elem().Kind() == reflect.String:
		arr, ok := val.([]any)
		if !ok {
			d.fail(path, ErrType, "must be an array of strings, got %s", describe(val))
			return
		}
		out := reflect.MakeSlice(f.Type(), len(arr), len(arr))
		for i, e := range arr {
			s, ok := e.(string)
			if !ok {
				d.fail(path, ErrType, "must be an array of strings, got %s as element %d", describe(e), i+1)
				return
			}
			out.Index(i).SetString(s)
		}
		f.Set(out)
	case f.Kind() == reflect.Slice && f.Type().Elem().Kind() == reflect.Int:
		arr, ok := val.([]any)
		if !ok {
			d.fail(path, ErrType, "must be an array of integers, got %s", describe(val))
			return
		}
		out := reflect.MakeSlice(f.Type(), len(arr), len(arr))
		for i, e := range arr {
			n, ok := e.(int64)
			if !ok {
				d.fail(path, ErrType, "must be an array of integers, got %s as element %d", describe(e), i+1)
				return
			}
			if n < math.MinInt32 || n > math.MaxInt32 {
				d.fail(path, ErrInvalid, "element %d (%d) is out of range", i+1, n)
				return
			}
			out.Index(i).SetInt(n)
		}
		f.Set(out)
	default:
		// Only reachable by adding a field of a new type to Config; the
		// tests decode every field.
		panic(fmt.Sprintf("config: no decoder for %s (%s)", path, f.Type()))
	}
}

// fail records a problem with the key at path.
func (d *decoder) fail(path toml.Key, class error, format string, args ...any) {
	d.errs = append(d.errs, &KeyError{
		File: d.file,
		Line: lineOf(d.lines, path),
		Key:  path.String(),
		Msg:  fmt.Sprintf(format, args...),
		Err:  class,
	})
}

// lineOf returns the line of path, or failing that of its nearest parent
// that has one, or 0.
func lineOf(lines map[string]int, path toml.Key) int {
	for n := len(path); n > 0; n-- {
		if l, ok := lines[path[:n].String()]; ok {
			return l
		}
	}
	return 0
}

// value returns the document's value at path, or nil.
func (d *decoder) value(path toml.Key) any {
	var v any = d.raw
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[p]
	}
	return v
}

// field returns the field of struct v whose toml tag is name, exactly.
func field(v reflect.Value, name string) (reflect.Value, bool) {
	t := v.Type()
	for i := range t.NumField() {
		if tag(t.Field(i)) == name {
			return v.Field(i), true
		}
	}
	return reflect.Value{}, false
}

// tag returns the TOML key of a Config field.
func tag(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
	return name
}

// describe names a TOML value's type, and shows it if it is short.
func describe(v any) string {
	switch v := v.(type) {
	case string:
		return "string " + quote(v)
	case int64:
		return fmt.Sprintf("integer %d", v)
	case float64:
		return fmt.Sprintf("float %v", v)
	case bool:
		return fmt.Sprintf("boolean %v", v)
	case time.Time:
		return "datetime"
	case []map[string]any:
		return "array of tables"
	case []any:
		return "array"
	case map[string]any:
		return "table"
	case nil:
		return "nothing"
	}
	return fmt.Sprintf("%T", v)
}

// settings returns the keys of the settings under the struct type t at
// prefix, tables excluded.
func settings(t reflect.Type, prefix toml.Key) []toml.Key {
	var out []toml.Key
	for i := range t.NumField() {
		f := t.Field(i)
		k := append(prefix[:len(prefix):len(prefix)], tag(f))
		if f.Type.Kind() == reflect.Struct && f.Type != durationType {
			out = append(out, settings(f.Type, k)...)
		} else {
			out = append(out, k)
		}
	}
	return out
}

// suggest returns "did you mean X?" for the unknown key at path, or "".
// It looks first for a close spelling among the keys of the same table,
// then for a setting of that name (or close to it) in another table: a
// top-level "shell" gets "did you mean terminal.shell?".
func suggest(root reflect.Type, path toml.Key) string {
	bad := path[len(path)-1]
	t := root // the table the unknown key is in
	for _, p := range path[:len(path)-1] {
		f, ok := fieldType(t, p)
		if !ok {
			return ""
		}
		t = f
	}
	best, bestScore := "", math.MaxInt
	if t.Kind() == reflect.Struct {
		for i := range t.NumField() {
			name := tag(t.Field(i))
			if sc, ok := score(bad, name); ok && sc < bestScore {
				best, bestScore = name, sc
			}
		}
	}
	if best == "" {
		for _, k := range settings(root, nil) {
			if sc, ok := score(bad, k[len(k)-1]); ok && sc < bestScore {
				best, bestScore = k.String(), sc
			}
		}
	}
	if best == "" {
		return ""
	}
	return "did you mean " + best + "?"
}

// fieldType returns the type of the field of struct type t whose toml tag
// is name.
func fieldType(t reflect.Type, name string) (reflect.Type, bool) {
	if t.Kind() != reflect.Struct {
		return nil, false
	}
	for i := range t.NumField() {
		if tag(t.Field(i)) == name {
			return t.Field(i).Type, true
		}
	}
	return nil, false
}

// score says how far an unknown key is from a known one (lower is closer)
// and whether it is near enough to suggest: the same but for case, '-' and
// '_', or a few edits away.
func score(bad, known string) (int, bool) {
	norm := func(s string) string {
		return strings.NewReplacer("_", "", "-", "").Replace(strings.ToLower(s))
	}
	if norm(bad) == norm(known) {
		return 0, true
	}
	d := distance(strings.ToLower(bad), known)
	return d, d <= max(1, len(known)/4)
}

// distance is the edit distance between a and b in bytes, counting an
// insertion, a deletion, a substitution or a swap of neighbours as one
// edit (optimal string alignment). Long inputs count as far from
// everything, bounding the work.
func distance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return math.MaxInt / 2
	}
	// d[i][j] is the distance between a[:i] and b[:j].
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}
