package event

import (
	"bytes"
	"encoding"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
	"unsafe"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// The fast path reads the form AppendJSON writes, which is what a replay
// reads: the envelope's members in their order, then "kind", then the
// payload's, with no spaces. It is written by hand because replay decodes
// every event of a session and the replay figure (500k events/s) needs it:
// json v2 alone reads a payload about twice as slowly. It reads a payload
// through a plan of its struct fields, made from the tags as json v2 reads
// them, for types made of strings, bools, numbers and nested structs; other
// types go to json v2. Whatever it does not take exactly as the general
// path would (escaped names, invalid UTF-8, spaces, a wrong type, an
// unknown or repeated member…) it leaves to decodeAny, which reads every
// form and says what is wrong. FuzzDecode checks that the two agree.

// decodeStored decodes data if it is in the stored form.
func decodeStored(data []byte) (e Event, ok bool) {
	c := scan{b: data}
	if !c.byte('{') {
		return e, false
	}
	more := false // a member was read: the next needs a comma
	member := func(name string) bool {
		if !c.name(name, more) {
			return false
		}
		more = true
		return true
	}
	if member(`"v":`) {
		v, ok := c.uint()
		if !ok || v < 1 || v > Version {
			return e, false
		}
		e.V = int(v)
	}
	if member(`"session":`) {
		if e.Session, ok = c.text(); !ok {
			return e, false
		}
	}
	if member(`"seq":`) {
		if e.Seq, ok = c.uint(); !ok {
			return e, false
		}
	}
	if member(`"time":`) {
		s, ok := c.plain()
		if !ok {
			return e, false
		}
		var err error
		if e.Time, err = parseTime(unsafeString(s)); err != nil {
			return e, false
		}
	}
	if member(`"source":`) {
		s, ok := c.plain()
		if !ok {
			return e, false
		}
		if e.Source, ok = parseSource(s); !ok {
			return e, false
		}
	}
	if member(`"cause":`) {
		if e.Cause, ok = c.uint(); !ok {
			return e, false
		}
	}
	if !member(`"kind":`) {
		return e, false
	}
	k, ok := c.plain()
	if !ok {
		return e, false
	}
	info := lookupBytes(k)
	if info == nil {
		return e, false
	}
	if info.plan != nil {
		v := reflect.New(info.typ).Elem()
		if !info.plan.members(&c, v, true) || c.i != len(data) {
			return e, false
		}
		e.Payload = v.Interface().(Payload)
		return e, true
	}
	// No plan: the payload's members, after the kind, are given to json v2
	// as an object of their own.
	var err error
	switch rest := data[c.i:]; {
	case len(rest) == 1 && rest[0] == '}':
		e.Payload, err = info.decode([]byte("{}"))
	case len(rest) > 1 && rest[0] == ',' && rest[1] == '"': // not ",}", which "{}" would hide
		buf := objects.Get().(*[]byte)
		*buf = append(append((*buf)[:0], '{'), rest[1:]...)
		e.Payload, err = info.decode(*buf)
		if cap(*buf) <= 64<<10 { // a huge event's buffer is not kept
			objects.Put(buf)
		}
	default:
		return e, false
	}
	return e, err == nil
}

// objects holds buffers for decodeStored's payload objects.
var objects = sync.Pool{New: func() any { return new([]byte) }}

// lookupBytes is lookup for a kind read from the input, without copying it.
func lookupBytes(k []byte) *kindInfo {
	if m := registry.Load(); m != nil {
		return (*m)[Kind(k)]
	}
	return nil
}

// unsafeString is b as a string, for parsing only: it must not outlive b.
func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// scan reads JSON without spaces.
type scan struct {
	b []byte
	i int
}

func (c *scan) byte(want byte) bool {
	if c.i < len(c.b) && c.b[c.i] == want {
		c.i++
		return true
	}
	return false
}

func (c *scan) literal(s string) bool {
	if bytes.HasPrefix(c.b[c.i:], []byte(s)) {
		c.i += len(s)
		return true
	}
	return false
}

// name consumes a member's name n (with its quotes and colon), and the
// comma before it if comma is set, if they are next.
func (c *scan) name(n string, comma bool) bool {
	i := c.i
	if comma {
		if i >= len(c.b) || c.b[i] != ',' {
			return false
		}
		i++
	}
	if !bytes.HasPrefix(c.b[i:], []byte(n)) {
		return false
	}
	c.i = i + len(n)
	return true
}

// plain reads a string of printable ASCII without escapes.
func (c *scan) plain() ([]byte, bool) {
	if !c.byte('"') {
		return nil, false
	}
	for i := c.i; i < len(c.b); i++ {
		switch ch := c.b[i]; {
		case ch == '"':
			s := c.b[c.i:i]
			c.i = i + 1
			return s, true
		case ch < 0x20 || ch == '\\' || ch >= 0x7f:
			return nil, false
		}
	}
	return nil, false
}

// text reads a string of valid UTF-8, escapes and all.
func (c *scan) text() (string, bool) {
	if c.i >= len(c.b) || c.b[c.i] != '"' {
		return "", false
	}
	simple := true
	j := c.i + 1
	for ; j < len(c.b) && c.b[j] != '"'; j++ {
		switch ch := c.b[j]; {
		case ch == '\\':
			simple = false
			j++
		case ch < 0x20:
			return "", false
		case ch >= utf8.RuneSelf:
			simple = false
		}
	}
	if j >= len(c.b) {
		return "", false
	}
	raw := c.b[c.i : j+1]
	c.i = j + 1
	if simple {
		return string(raw[1 : len(raw)-1]), true
	}
	if !utf8.Valid(raw) {
		return "", false // each bad byte is U+FFFD: left to json v2
	}
	s, err := jsontext.AppendUnquote(nil, raw)
	if err != nil { // a bad escape, or one of a lone surrogate
		return "", false
	}
	return unsafeString(s), true // s is ours alone
}

// uint reads a positive integer without leading zeros that fits in 64 bits.
func (c *scan) uint() (uint64, bool) {
	n, integer, ok := c.number()
	if !ok || !integer || n[0] == '0' || n[0] == '-' {
		return 0, false
	}
	v, err := strconv.ParseUint(unsafeString(n), 10, 64)
	return v, err == nil
}

// number reads a JSON number, and says whether it is written as an integer
// (no fraction, no exponent).
func (c *scan) number() (n []byte, integer, ok bool) {
	b, i := c.b, c.i
	digits := func() bool {
		start := i
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
		return i > start
	}
	if i < len(b) && b[i] == '-' {
		i++
	}
	if i < len(b) && b[i] == '0' {
		i++
	} else if !digits() {
		return nil, false, false
	}
	integer = true
	if i < len(b) && b[i] == '.' {
		i++
		integer = false
		if !digits() {
			return nil, false, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		integer = false
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !digits() {
			return nil, false, false
		}
	}
	n, c.i = b[c.i:i], i
	return n, integer, true
}

// plan is how the fast path reads a payload type: its fields by JSON name.
type plan struct {
	fields []planField
}

type planField struct {
	name  string
	index int
	kind  reflect.Kind
	bits  int
	sub   *plan // a struct, or a pointer to one
}

// maxPlanFields bounds a plan by the bits of a uint64, which say which
// fields were read.
const maxPlanFields = 64

// unmarshalerTypes are the methods json v2 would call instead of reading a
// value itself: a type with one has no plan.
var unmarshalerTypes = []reflect.Type{
	reflect.TypeFor[json.Unmarshaler](),
	reflect.TypeFor[json.UnmarshalerFrom](),
	reflect.TypeFor[encoding.TextUnmarshaler](),
}

// newPlan returns the plan of struct type t, or nil if it has a field of
// another type, a tag with an option other than omitempty and omitzero, an
// embedded field, a method of unmarshalerTypes, or contains itself: json v2
// reads those. within holds the struct types being planned.
func newPlan(t reflect.Type, within ...reflect.Type) *plan {
	if t.Kind() != reflect.Struct || t.NumField() > maxPlanFields || hasUnmarshaler(t) || slices.Contains(within, t) {
		return nil
	}
	within = append(within, t)
	p := &plan{}
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous {
			return nil
		}
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		for opt := range strings.SplitSeq(opts, ",") {
			if opt != "" && opt != "omitempty" && opt != "omitzero" {
				return nil
			}
		}
		if name == "" {
			name = f.Name
		}
		if !plainName(name) {
			return nil
		}
		pf := planField{name: name, index: i, kind: f.Type.Kind()}
		ft := f.Type
		if hasUnmarshaler(ft) {
			return nil
		}
		switch pf.kind {
		case reflect.String, reflect.Bool:
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
			reflect.Float32, reflect.Float64:
			pf.bits = ft.Bits()
		case reflect.Pointer:
			if ft.Elem().Kind() != reflect.Struct || hasUnmarshaler(ft.Elem()) {
				return nil
			}
			ft = ft.Elem()
			fallthrough
		case reflect.Struct:
			if pf.sub = newPlan(ft, within...); pf.sub == nil {
				return nil
			}
		default:
			return nil
		}
		for _, have := range p.fields {
			if have.name == name {
				return nil
			}
		}
		p.fields = append(p.fields, pf)
	}
	return p
}

func hasUnmarshaler(t reflect.Type) bool {
	for _, u := range unmarshalerTypes {
		if t.Implements(u) || reflect.PointerTo(t).Implements(u) {
			return true
		}
	}
	return false
}

// plainName reports whether a member name is printable ASCII that needs no
// escape, so the fast path can compare it with the input's bytes.
func plainName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '\'' {
			return false
		}
	}
	return true
}

// object reads an object into struct v.
func (p *plan) object(c *scan, v reflect.Value) bool {
	return c.byte('{') && p.members(c, v, false)
}

// members reads members into struct v up to the object's '}', the first
// preceded by a comma if comma is set.
func (p *plan) members(c *scan, v reflect.Value, comma bool) bool {
	var seen uint64
	for {
		if c.byte('}') {
			return true
		}
		if comma && !c.byte(',') {
			return false
		}
		comma = true
		name, ok := c.plain()
		if !ok || !c.byte(':') {
			return false
		}
		i := p.field(name)
		if i < 0 || seen&(1<<i) != 0 {
			return false
		}
		seen |= 1 << i
		if !p.fields[i].read(c, v.Field(p.fields[i].index)) {
			return false
		}
	}
}

func (p *plan) field(name []byte) int {
	for i := range p.fields {
		if p.fields[i].name == string(name) {
			return i
		}
	}
	return -1
}

// read reads a value into field v, as json v2 would, or reports false.
func (f *planField) read(c *scan, v reflect.Value) bool {
	if c.literal("null") {
		v.SetZero()
		return true
	}
	switch f.kind {
	case reflect.String:
		s, ok := c.text()
		if ok {
			v.SetString(s)
		}
		return ok
	case reflect.Bool:
		switch {
		case c.literal("true"):
			v.SetBool(true)
		case c.literal("false"):
			v.SetBool(false)
		default:
			return false
		}
		return true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, integer, ok := c.number()
		if !ok || !integer {
			return false
		}
		x, err := strconv.ParseInt(unsafeString(n), 10, f.bits)
		v.SetInt(x)
		return err == nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, integer, ok := c.number()
		if !ok || !integer || n[0] == '-' {
			return false
		}
		x, err := strconv.ParseUint(unsafeString(n), 10, f.bits)
		v.SetUint(x)
		return err == nil
	case reflect.Float32, reflect.Float64:
		n, _, ok := c.number()
		if !ok {
			return false
		}
		x, err := strconv.ParseFloat(unsafeString(n), f.bits)
		v.SetFloat(x)
		return err == nil && !math.IsInf(x, 0)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		if !f.sub.object(c, p.Elem()) {
			return false
		}
		v.Set(p)
		return true
	case reflect.Struct:
		return f.sub.object(c, v)
	}
	return false
}
