package event

import (
	"fmt"
	"reflect"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"
)

// The flat JSON form is the envelope's members, written here by hand (a
// few scalars, in a fixed order, zero ones left out), then "kind", then the
// payload's members as github.com/go-json-experiment/json marshals the
// registered type. The options make that exactly what the hand-written
// codec of schema v1 wrote (testdata/golden.ndjson holds it), so stores
// and streams keep their bytes.
var marshalOptions = json.JoinOptions(
	jsontext.EscapeForJS(true),                // U+2028 and U+2029 escaped; <, > and & not: events are not embedded in HTML
	jsonv1.OmitEmptyWithLegacySemantics(true), // omitempty omits false, 0 and nil too, as encoding/json does
	json.Deterministic(true),                  // map keys sorted: one event, one encoding
)

// invalidUTF8Options marshal a payload with invalid UTF-8 in a string:
// each bad byte is written as the escape \ufffd, as v1 did (the JSON
// package would write U+FFFD itself, which decodes the same but is not the
// same bytes).
var invalidUTF8Options = json.JoinOptions(
	marshalOptions,
	jsontext.AllowInvalidUTF8(true),
	jsontext.PreserveRawStrings(true),
	json.WithMarshalers(json.MarshalToFunc(func(enc *jsontext.Encoder, s string) error {
		return enc.WriteValue(appendString(nil, s))
	})),
)

// MarshalJSON encodes e in its flat JSON form. It implements json.Marshaler.
func (e Event) MarshalJSON() ([]byte, error) { return e.AppendJSON(nil) }

// AppendJSON appends e's flat JSON form to b, without a trailing newline.
// Envelope fields that are zero are left out, except kind. It fails with
// ErrInvalid for an event that cannot be written: no payload, a payload of
// a kind not registered (or not of the registered type), an unknown
// source, a time outside years 0-9999, a number that is not finite.
func (e Event) AppendJSON(b []byte) ([]byte, error) {
	t := reflect.TypeOf(e.Payload)
	if t == nil || t.Kind() == reflect.Pointer && reflect.ValueOf(e.Payload).IsNil() {
		return b, fmt.Errorf("%w: event has no payload", ErrInvalid)
	}
	kind := e.Payload.Kind()
	info := lookup(kind)
	if info == nil {
		return b, fmt.Errorf("%w: kind %q is not registered", ErrInvalid, kind)
	}
	if t != info.typ && (t.Kind() != reflect.Pointer || t.Elem() != info.typ) {
		return b, fmt.Errorf("%w: a %v payload claims kind %q, registered for %v", ErrInvalid, t, kind, info.typ)
	}
	if e.V < 0 || e.V > Version {
		return b, fmt.Errorf("%w: schema version %d (this build writes %d)", ErrInvalid, e.V, Version)
	}
	if e.Source != "" && !e.Source.Valid() {
		return b, fmt.Errorf("%w: source %q", ErrInvalid, e.Source)
	}
	start := len(b)
	b = append(b, '{')
	sep := func(name string) {
		if len(b) > start+1 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, name...)
		b = append(b, '"', ':')
	}
	if e.V != 0 {
		sep("v")
		b = strconv.AppendInt(b, int64(e.V), 10)
	}
	if e.Session != "" {
		sep("session")
		b = appendString(b, e.Session)
	}
	if e.Seq != 0 {
		sep("seq")
		b = strconv.AppendUint(b, e.Seq, 10)
	}
	if !e.Time.IsZero() {
		t := e.Time.UTC()
		if y := t.Year(); y < 0 || y > 9999 {
			return b[:start], fmt.Errorf("%w: time %v outside years 0-9999", ErrInvalid, e.Time)
		}
		sep("time")
		b = append(b, '"')
		b = t.AppendFormat(b, time.RFC3339Nano)
		b = append(b, '"')
	}
	if e.Source != "" {
		sep("source")
		b = appendString(b, string(e.Source))
	}
	if e.Cause != 0 {
		sep("cause")
		b = strconv.AppendUint(b, e.Cause, 10)
	}
	sep("kind")
	b = appendString(b, string(kind))

	// The payload's object, its '{' turned into the comma after "kind" and
	// its '}' ending the event's.
	at := len(b)
	w := appender{b}
	if err := json.MarshalWrite(&w, e.Payload, marshalOptions); err != nil {
		// Most likely invalid UTF-8, which the default options refuse;
		// anything else fails again.
		w.b = b
		err = json.MarshalWrite(&w, e.Payload, invalidUTF8Options)
		if err != nil {
			return b[:start], fmt.Errorf("%w: %s: %v", ErrInvalid, kind, err)
		}
	}
	b = w.b
	if len(b)-at == 2 { // {}
		return append(b[:at], '}'), nil
	}
	b[at] = ','
	return b, nil
}

// appender is an io.Writer that appends to b.
type appender struct{ b []byte }

func (w *appender) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

const hexDigits = "0123456789abcdef"

// appendString writes s as a JSON string, as v1 did: invalid UTF-8 becomes
// the escape \ufffd, so everything written is valid UTF-8 and decodes to
// what a second encoding writes again; U+2028 and U+2029 are escaped (they
// end lines in JavaScript); <, > and & are not: events are not embedded in
// HTML.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
