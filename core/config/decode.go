package config

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/BurntSushi/toml"
)

// decode parses data over Default without validating it, and returns the
// line of every key the document mentions.
func decode(data []byte, name string) (Config, map[string]int, error) {
	c := Default()
	lines, err := unmarshal(data, name, &c)
	if err != nil {
		return Config{}, nil, err
	}
	return c, lines, nil
}

// unmarshal decodes the TOML document data over *dst, a struct, and
// returns the line of every key the document mentions: keyed by
// toml.Key.String(), and for keys in arrays also by path.String().
//
// The TOML library parses into a generic map and this file does the
// typing itself, walking the document's tables in the order they were
// written against the struct's toml tags. Decoding straight into the
// struct would match keys case-insensitively (so "Shell" and "SHELL" would
// both set the shell, the winner picked by map order) and report only the
// first type error it meets in map order, without a position for most.
//
// A setting may be a bool; an integer of any size, signed or not; a
// float32 or float64; a string; a Duration or time.Duration (a string such
// as "10s"); and, made of those, a slice (an array), a struct (a table),
// a map with string keys (a table of any keys) or a pointer, to any
// depth: a slice of structs is an array of tables. Such types pass
// decodable. A table in the document sets the keys it names over what is
// in *dst; an array, or a map of scalars or arrays, replaces the old one
// whole; a map of tables is merged entry by entry (see mapping). Every
// problem is a *KeyError with the line of its key, in file order: an
// unknown key, a value of the wrong TOML type, a number out of the
// setting's range, or (errors.ErrUnsupported, a bug in the caller) a
// setting of a Go type that is not one of those above. An element of a
// []int must fit in 32 bits (see setElem). On error *dst is left
// half-decoded.
func unmarshal(data []byte, name string, dst any) (map[string]int, error) {
	v := reflect.ValueOf(dst)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("config: decode into %T: not a pointer to a struct: %w", dst, errors.ErrUnsupported)
	}
	if err := supported(v.Elem().Type()); err != nil {
		return nil, fmt.Errorf("config: decode into %T: %w: %w", dst, err, errors.ErrUnsupported)
	}
	var raw map[string]any
	if _, err := toml.Decode(string(data), &raw); err != nil {
		return nil, syntaxError(err, name)
	}
	sc := scan(string(data))
	d := decoder{file: name, root: v.Elem().Type(), lines: sc.lines, pos: sc.pos}
	d.table(v.Elem(), raw, nil)
	if len(d.errs) > 0 {
		slices.SortStableFunc(d.errs, func(a, b *KeyError) int { return cmp.Compare(a.Line, b.Line) })
		return nil, join(d.errs)
	}
	lines := sc.lines
	for k, p := range sc.pos {
		if !hasKey(lines, k) {
			lines[k] = p.line
		}
	}
	return lines, nil
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
	file  string
	root  reflect.Type        // the type decoded into, for suggestions
	lines map[string]int      // from keyLines
	pos   map[string]position // from keyPositions
	errs  []*KeyError
}

var (
	durationType    = reflect.TypeFor[Duration]()
	stdDurationType = reflect.TypeFor[time.Duration]()
)

// value decodes the document's value val, at p, into v.
func (d *decoder) value(v reflect.Value, val any, p path) {
	t := v.Type()
	if d.unsupported(t, p) {
		return
	}
	switch {
	case isScalar(t):
		switch err := setScalar(v, val); err {
		case nil:
		case errWrongType:
			d.fail(p, ErrType, "must be %s, got %s", expect(t), describe(val))
		case errOutOfRange:
			d.fail(p, ErrInvalid, "%v is out of range", val)
		default:
			d.fail(p, ErrInvalid, "%v", err)
		}
	case t.Kind() == reflect.Pointer:
		// A new value, so that what the old one pointed to (a default,
		// maybe shared) is left as it was.
		n := reflect.New(t.Elem())
		if !v.IsNil() {
			n.Elem().Set(v.Elem())
		}
		d.value(n.Elem(), val, p)
		v.Set(n)
	case t.Kind() == reflect.Struct:
		d.table(v, val, p)
	case t.Kind() == reflect.Map:
		d.mapping(v, val, p)
	case t.Kind() == reflect.Slice:
		d.array(v, val, p)
	}
}

// table decodes a TOML table into the struct v: each key into the field
// of that toml tag, exactly.
func (d *decoder) table(v reflect.Value, val any, p path) {
	m, ok := val.(map[string]any)
	if !ok {
		d.fail(p, ErrType, "must be a table, got %s", describe(val))
		return
	}
	for _, k := range d.keys(m, p) {
		f, ok := field(v, k)
		if !ok {
			d.fail(p.child(k), ErrUnknownKey, "%s", suggest(d.root, v.Type(), k))
			continue
		}
		d.value(f, m[k], p.child(k))
	}
}

// mapping decodes a TOML table into the map v: each key is an entry. A
// map of scalars or lists (an environment, headers) is replaced whole, so
// the file says exactly what it holds. A map of tables (the agents) is
// merged: entries the file does not mention stay, and a table the file
// names sets its keys over the entry already there, as a struct's table
// does — so `[agents.openai] base_url = "…"` changes the built-in agent's
// address and keeps the rest of it, and adding [agents.mine] does not
// remove the built-in ones.
func (d *decoder) mapping(v reflect.Value, val any, p path) {
	t := v.Type()
	if d.unsupported(t.Elem(), p) {
		return
	}
	m, ok := val.(map[string]any)
	if !ok {
		d.fail(p, ErrType, "must be a table, got %s", describe(val))
		return
	}
	merge := deref(t.Elem()).Kind() == reflect.Struct
	out := reflect.MakeMapWithSize(t, len(m))
	if merge && !v.IsNil() {
		iter := v.MapRange()
		for iter.Next() {
			out.SetMapIndex(iter.Key(), iter.Value())
		}
	}
	for _, k := range d.keys(m, p) {
		key := reflect.ValueOf(k).Convert(t.Key())
		e := reflect.New(t.Elem()).Elem()
		if old := out.MapIndex(key); merge && old.IsValid() && old.Kind() == reflect.Struct {
			// A copy, so that the entry's own maps and slices, which
			// decoding replaces, are never shared with the old value's
			// being written to.
			e.Set(old)
		}
		d.value(e, m[k], p.child(k))
		out.SetMapIndex(key, e)
	}
	v.Set(out)
}

// array decodes a TOML array, or array of tables, into the slice v,
// replacing it. An element of the wrong TOML type, or a number out of
// range, is reported against the array as a whole ("element 2"), the
// first only; a problem inside an element that is a table or an array is
// reported at the element's own path ("hooks[1].event").
func (d *decoder) array(v reflect.Value, val any, p path) {
	t := v.Type()
	et := t.Elem()
	if d.unsupported(et, p) {
		return
	}
	var elems []any
	switch a := val.(type) {
	case []any:
		elems = a
	case []map[string]any: // [[array of tables]]
		elems = make([]any, len(a))
		for i := range a {
			elems[i] = a[i]
		}
	default:
		d.fail(p, ErrType, "must be %s, got %s", expect(t), describe(val))
		return
	}
	scalar := isScalar(deref(et))
	out := reflect.MakeSlice(t, len(elems), len(elems))
	for i, e := range elems {
		var err error
		switch {
		case !scalar && fits(et, e):
			d.value(out.Index(i), e, p.elem(i))
			continue
		case !scalar:
			err = errWrongType
		default:
			err = setElem(out.Index(i), e)
		}
		switch err {
		case nil:
			continue
		case errWrongType:
			d.fail(p, ErrType, "must be %s, got %s as element %d", expect(t), describe(e), i+1)
		case errOutOfRange:
			d.fail(p, ErrInvalid, "element %d (%v) is out of range", i+1, e)
		default:
			d.fail(p, ErrInvalid, "element %d: %v", i+1, err)
		}
		return
	}
	v.Set(out)
}

// setElem sets v, a new element of an array of scalars or of pointers to
// them, to the TOML value val, as setScalar does.
func setElem(v reflect.Value, val any) error {
	if v.Kind() == reflect.Pointer {
		v.Set(reflect.New(v.Type().Elem()))
		v = v.Elem()
	}
	if err := setScalar(v, val); err != nil {
		return err
	}
	if v.Kind() == reflect.Int && (v.Int() < math.MinInt32 || v.Int() > math.MaxInt32) {
		// The []int settings (uids, gids, ports) hold 32-bit values:
		// refused here rather than cut short where they are used.
		return errOutOfRange
	}
	return nil
}

// unsupported reports whether t is a type the decoder cannot fill, and if
// so records the problem at p.
func (d *decoder) unsupported(t reflect.Type, p path) bool {
	err := supported(t)
	if err != nil {
		d.fail(p, errors.ErrUnsupported, "cannot hold a setting: %v", err)
	}
	return err != nil
}

// keys returns the keys of the table m at p in the order the document
// gives them.
func (d *decoder) keys(m map[string]any, p path) []string {
	type ranked struct {
		k    string
		rank int
	}
	rs := make([]ranked, 0, len(m))
	for k := range m {
		r := math.MaxInt // not found by the scanner: last, by name
		if pos, ok := d.pos[p.child(k).String()]; ok {
			r = pos.seq
		}
		rs = append(rs, ranked{k, r})
	}
	slices.SortFunc(rs, func(a, b ranked) int { return cmp.Or(cmp.Compare(a.rank, b.rank), strings.Compare(a.k, b.k)) })
	ks := make([]string, len(rs))
	for i, r := range rs {
		ks[i] = r.k
	}
	return ks
}

// fail records a problem with the value at p.
func (d *decoder) fail(p path, class error, format string, args ...any) {
	d.errs = append(d.errs, &KeyError{
		File: d.file,
		Line: d.line(p),
		Key:  p.String(),
		Msg:  fmt.Sprintf(format, args...),
		Err:  class,
	})
}

// line returns the line of p, or failing that of its nearest parent that
// has one, or 0.
func (d *decoder) line(p path) int {
	full, plain := p.prefixes()
	for n := len(p) - 1; n >= 0; n-- {
		if pos, ok := d.pos[full[n]]; ok {
			return pos.line
		}
		if l, ok := d.lines[plain[n]]; ok {
			return l
		}
	}
	return 0
}

// Reasons setScalar refuses a value.
var (
	errWrongType  = errors.New("wrong TOML type")
	errOutOfRange = errors.New("out of range")
)

// Largest integers a float32 and a float64 hold exactly, as the TOML
// library has them: an integer beyond is refused rather than rounded.
const (
	maxFloat32Int = 1<<24 - 1
	maxFloat64Int = 1<<53 - 1
)

// isScalar reports whether t is a setting that is one TOML value, not a
// table or an array.
func isScalar(t reflect.Type) bool {
	if t == durationType || t == stdDurationType {
		return true
	}
	switch t.Kind() {
	case reflect.Bool, reflect.String,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return true
	}
	return false
}

// setScalar sets v, of a type isScalar accepts, to the TOML value val.
// It returns errWrongType for a value of a TOML type v does not take,
// errOutOfRange for a number v cannot hold (exactly, for an integer into
// a float), or why a duration does not parse.
func setScalar(v reflect.Value, val any) error {
	if t := v.Type(); t == durationType || t == stdDurationType {
		s, ok := val.(string)
		if !ok {
			return errWrongType
		}
		var dur Duration
		if err := dur.UnmarshalText([]byte(s)); err != nil {
			return err
		}
		if t == durationType {
			v.Set(reflect.ValueOf(dur))
		} else {
			v.SetInt(int64(dur.Duration))
		}
		return nil
	}
	switch v.Kind() {
	case reflect.Bool:
		b, ok := val.(bool)
		if !ok {
			return errWrongType
		}
		v.SetBool(b)
	case reflect.String:
		s, ok := val.(string)
		if !ok {
			return errWrongType
		}
		v.SetString(s)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := val.(int64)
		if !ok {
			return errWrongType
		}
		if v.OverflowInt(n) {
			return errOutOfRange
		}
		v.SetInt(n)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, ok := val.(int64)
		if !ok {
			return errWrongType
		}
		if n < 0 || v.OverflowUint(uint64(n)) {
			return errOutOfRange
		}
		v.SetUint(uint64(n))
	case reflect.Float32, reflect.Float64:
		var f float64
		switch n := val.(type) {
		case float64:
			if v.Kind() == reflect.Float32 && (n < -math.MaxFloat32 || n > math.MaxFloat32) {
				return errOutOfRange
			}
			f = n
		case int64:
			limit := int64(maxFloat64Int)
			if v.Kind() == reflect.Float32 {
				limit = maxFloat32Int
			}
			if n < -limit || n > limit {
				return errOutOfRange
			}
			f = float64(n)
		default:
			return errWrongType
		}
		v.SetFloat(f)
	default:
		return errWrongType // not a scalar: isScalar keeps this from happening
	}
	return nil
}

// fits reports whether val, a TOML table or array, is of the TOML type a
// setting of type t (not a scalar) takes.
func fits(t reflect.Type, val any) bool {
	switch deref(t).Kind() {
	case reflect.Struct, reflect.Map:
		_, ok := val.(map[string]any)
		return ok
	case reflect.Slice:
		switch val.(type) {
		case []any, []map[string]any:
			return true
		}
	}
	return false
}

// deref returns the type a pointer type points to, or t. Once only: a
// pointer to a pointer is not supported, and may point to itself.
func deref(t reflect.Type) reflect.Type {
	if t.Kind() == reflect.Pointer {
		return t.Elem()
	}
	return t
}

// expect says what TOML value a setting of type t takes: "an integer".
func expect(t reflect.Type) string {
	one, _ := nouns(t, 0)
	return one
}

// nouns names what TOML value a setting of type t takes, one and many:
// "an integer", "integers". depth bounds the recursion of a type such as
// type S []S.
func nouns(t reflect.Type, depth int) (one, many string) {
	t = deref(t)
	if t == durationType || t == stdDurationType {
		return `a duration string such as "10s"`, `duration strings such as "10s"`
	}
	switch t.Kind() {
	case reflect.Bool:
		return "a boolean", "booleans"
	case reflect.String:
		return "a string", "strings"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer", "integers"
	case reflect.Float32, reflect.Float64:
		return "a number", "numbers"
	case reflect.Struct, reflect.Map:
		return "a table", "tables"
	case reflect.Slice:
		if depth > 3 {
			return "an array", "arrays"
		}
		_, m := nouns(t.Elem(), depth+1)
		return "an array of " + m, "arrays of " + m
	}
	return "a value", "values"
}

// supported reports why the decoder cannot fill a value of type t itself,
// or nil if it can; decodable checks the types t is made of as well.
// A struct qualifies if each of its fields has a toml tag and is
// exported, or is tagged "-" and left alone.
func supported(t reflect.Type) error {
	if isScalar(t) {
		return nil
	}
	switch t.Kind() {
	case reflect.Pointer:
		if t.Elem().Kind() == reflect.Pointer {
			return fmt.Errorf("%s is a pointer to a pointer", t)
		}
		return supported(t.Elem())
	case reflect.Slice:
		return nil
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return fmt.Errorf("%s has keys that are not strings", t)
		}
		return nil
	case reflect.Struct:
		if err, ok := structErrs.Load(t); ok {
			return err.(structErr).err
		}
		err := checkStruct(t)
		structErrs.Store(t, structErr{err})
		return err
	}
	return fmt.Errorf("%s is not a type a setting can have", t)
}

// structErrs caches checkStruct's answers, by type.
var structErrs sync.Map

type structErr struct{ err error }

// checkStruct is supported for a struct type.
func checkStruct(t reflect.Type) error {
	seen := map[string]string{} // toml key -> field
	for i := range t.NumField() {
		f := t.Field(i)
		name := tag(f)
		switch {
		case name == "-":
			continue
		case !f.IsExported():
			return fmt.Errorf("%s.%s is unexported and not tagged toml:\"-\"", t, f.Name)
		case name == "":
			return fmt.Errorf("%s.%s has no toml tag", t, f.Name)
		case seen[name] != "":
			return fmt.Errorf("%s.%s and %s.%s have the same toml key %q", t, seen[name], t, f.Name, name)
		}
		seen[name] = f.Name
	}
	return nil
}

// decodable reports, for a type that is to hold settings, the first of
// the types it is made of (itself included) that the decoder cannot fill,
// and why; nil if it can fill them all. A field tagged toml:"-" is not
// looked into.
func decodable(t reflect.Type) error { return decodableSeen(t, map[reflect.Type]bool{}) }

func decodableSeen(t reflect.Type, seen map[reflect.Type]bool) error {
	if seen[t] {
		return nil // a recursive type: checked, or being checked
	}
	seen[t] = true
	if err := supported(t); err != nil || isScalar(t) {
		return err
	}
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Map:
		return decodableSeen(t.Elem(), seen)
	case reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			if tag(f) == "-" {
				continue
			}
			if err := decodableSeen(f.Type, seen); err != nil {
				return fmt.Errorf("%s.%s: %w", t, f.Name, err)
			}
		}
	}
	return nil
}

// field returns the field of struct v whose toml tag is name, exactly.
func field(v reflect.Value, name string) (reflect.Value, bool) {
	t := v.Type()
	for i := range t.NumField() {
		if tag(t.Field(i)) == name && name != "-" {
			return v.Field(i), true
		}
	}
	return reflect.Value{}, false
}

// tag returns the TOML key of a settings struct's field.
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
		if tag(f) == "-" {
			continue
		}
		k := append(prefix[:len(prefix):len(prefix)], tag(f))
		if f.Type.Kind() == reflect.Struct && f.Type != durationType {
			out = append(out, settings(f.Type, k)...)
		} else {
			out = append(out, k)
		}
	}
	return out
}

// suggest returns "did you mean X?" for the unknown key bad in a table of
// struct type in, or "". It looks first for a close spelling among the
// keys of the same table, then for a setting of that name (or close to
// it) in another table of root: a top-level "shell" gets "did you mean
// terminal.shell?".
func suggest(root, in reflect.Type, bad string) string {
	best, bestScore := "", math.MaxInt
	for i := range in.NumField() {
		name := tag(in.Field(i))
		if name == "-" {
			continue
		}
		if sc, ok := score(bad, name); ok && sc < bestScore {
			best, bestScore = name, sc
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
