package event

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// unmarshalOptions read a payload strictly: json v2 refuses duplicate
// members and matches names exactly by default; unknown members are refused
// too. Invalid UTF-8 in a string reads as U+FFFD, as v1 read it.
var unmarshalOptions = json.JoinOptions(
	json.RejectUnknownMembers(true),
	jsontext.AllowInvalidUTF8(true),
)

// Decode parses one event in its flat JSON form. It is strict: the input
// must be exactly one JSON object (surrounding whitespace aside) with a
// registered kind, only the envelope's and that kind's fields, each at most
// once and spelled exactly, of the right JSON types. A field that is null
// counts as absent. Errors wrap ErrMalformed, ErrUnknownKind,
// ErrUnknownField or ErrUnsupportedVersion; when the event carries a
// version newer than this build's, that is the error reported, whatever
// else is wrong with it.
//
// Times are returned in UTC. Decode never panics, whatever the input.
func Decode(data []byte) (Event, error) {
	if e, ok := decodeStored(data); ok {
		return e, nil
	}
	e, err := decodeAny(data)
	if err != nil {
		if v, ok := findVersion(data); ok && v > Version {
			return Event{}, versionError(v)
		}
		return Event{}, err
	}
	return e, nil
}

// UnmarshalJSON decodes e from its flat JSON form, as Decode does. It
// implements json.Unmarshaler.
func (e *Event) UnmarshalJSON(data []byte) error {
	ev, err := Decode(data)
	if err != nil {
		return err
	}
	*e = ev
	return nil
}

func versionError(v int64) error {
	return fmt.Errorf("%w: v%d (this build reads up to v%d; upgrade harnessd)", ErrUnsupportedVersion, v, Version)
}

// parseTime reads an RFC 3339 time, in UTC, in years 0-9999.
func parseTime(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("time %q is not RFC 3339", s)
	}
	t = t.UTC()
	if y := t.Year(); y < 0 || y > 9999 {
		return time.Time{}, fmt.Errorf("time %q outside years 0-9999", s)
	}
	return t, nil
}

// parseSource returns the constants, so decoding allocates nothing.
func parseSource(s []byte) (Source, bool) {
	switch Source(s) {
	case SourceAgent:
		return SourceAgent, true
	case SourceUser:
		return SourceUser, true
	case SourceHook:
		return SourceHook, true
	case SourceRuntime:
		return SourceRuntime, true
	case "":
		return "", true
	}
	return "", false
}

// maxDepth bounds the nesting of members met before "kind", which are held
// unread until the kind is known, as v1 bounded them.
const maxDepth = 64

// Bits of the envelope's members, to refuse one seen twice.
const (
	seenV = 1 << iota
	seenSession
	seenSeq
	seenTime
	seenSource
	seenCause
	seenKind
)

// decodeAny reads any form of an event and reports the first thing wrong:
// the envelope's members by hand, as they come; the payload's gathered into
// one object, which the JSON package reads into the payload at the end.
func decodeAny(data []byte) (Event, error) {
	var e Event
	dec := jsontext.NewDecoder(bytes.NewReader(data), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	if dec.PeekKind() != '{' {
		return e, fmt.Errorf("%w: offset %d: expected an event object", ErrMalformed, dec.InputOffset())
	}
	if _, err := dec.ReadToken(); err != nil {
		return e, syntaxError(err)
	}
	var (
		seen    uint
		info    *kindInfo
		payload = []byte{'{'}
	)
	for dec.PeekKind() != '}' {
		rawName, err := dec.ReadValue()
		if err != nil {
			return e, syntaxError(err)
		}
		name := unquote(rawName)
		// The member as the payload's, in case it is; rawName is valid
		// only until the next read.
		mark := len(payload)
		if mark > 1 {
			payload = append(payload, ',')
		}
		payload = append(append(payload, rawName...), ':')
		raw, err := dec.ReadValue()
		if err != nil {
			return e, syntaxError(err)
		}
		at := dec.InputOffset() - int64(len(raw))
		bit, err := e.envelope(name, raw, at, &info)
		if err != nil {
			return e, err
		}
		if bit == 0 {
			if info == nil && depth(raw) > maxDepth {
				return e, fmt.Errorf("%w: offset %d: nested deeper than %d", ErrMalformed, at, maxDepth)
			}
			payload = append(payload, raw...)
			continue
		}
		payload = payload[:mark]
		if seen&bit != 0 {
			return e, fmt.Errorf("%w: offset %d: field %q appears twice", ErrMalformed, at, name)
		}
		seen |= bit
	}
	if _, err := dec.ReadToken(); err != nil {
		return e, syntaxError(err)
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return e, fmt.Errorf("%w: offset %d: data after the event object", ErrMalformed, dec.InputOffset())
	}
	if info == nil {
		return e, fmt.Errorf("%w: event has no kind", ErrMalformed)
	}
	var err error
	if e.Payload, err = info.decode(append(payload, '}')); err != nil {
		return Event{}, payloadError(err, info.kind)
	}
	return e, nil
}

// envelope decodes the envelope's member name, returning its bit, or 0 for
// a member that is not the envelope's.
func (e *Event) envelope(name string, raw jsontext.Value, at int64, info **kindInfo) (uint, error) {
	bad := func(format string, args ...any) (uint, error) {
		return 0, fmt.Errorf("%w: offset %d: %s", ErrMalformed, at, fmt.Sprintf(format, args...))
	}
	switch name {
	case "v":
		var v int32
		if err := json.Unmarshal(raw, &v); err != nil {
			return bad("v: %s", describe(err, raw))
		}
		if v < 0 {
			return bad("negative schema version %d", v)
		}
		if v > Version {
			return 0, versionError(int64(v))
		}
		e.V = int(v)
		return seenV, nil
	case "session":
		if err := json.Unmarshal(raw, &e.Session, unmarshalOptions); err != nil {
			return bad("session: %s", describe(err, raw))
		}
		return seenSession, nil
	case "seq":
		if err := json.Unmarshal(raw, &e.Seq); err != nil {
			return bad("seq: %s", describe(err, raw))
		}
		return seenSeq, nil
	case "cause":
		if err := json.Unmarshal(raw, &e.Cause); err != nil {
			return bad("cause: %s", describe(err, raw))
		}
		return seenCause, nil
	case "time":
		var s *string
		if err := json.Unmarshal(raw, &s, unmarshalOptions); err != nil {
			return bad("time: %s", describe(err, raw))
		}
		if s != nil {
			var err error
			if e.Time, err = parseTime(*s); err != nil {
				return bad("%v", err)
			}
		}
		return seenTime, nil
	case "source":
		var s string
		if err := json.Unmarshal(raw, &s, unmarshalOptions); err != nil {
			return bad("source: %s", describe(err, raw))
		}
		var ok bool
		if e.Source, ok = parseSource([]byte(s)); !ok {
			return bad("unknown source %q (want agent, user, hook or runtime)", s)
		}
		return seenSource, nil
	case "kind":
		var s *string
		if err := json.Unmarshal(raw, &s, unmarshalOptions); err != nil {
			return bad("kind: %s", describe(err, raw))
		}
		if s == nil {
			return bad("kind is null")
		}
		if *info = lookup(Kind(*s)); *info == nil {
			return 0, fmt.Errorf("%w %q", ErrUnknownKind, *s)
		}
		return seenKind, nil
	}
	return 0, nil
}

// unquote returns the text of a JSON string token.
func unquote(raw jsontext.Value) string {
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1 : len(raw)-1])
	}
	s, _ := jsontext.AppendUnquote(nil, raw) // invalid UTF-8 is U+FFFD and an error
	return string(s)
}

// depth returns how deeply a JSON value nests.
func depth(raw []byte) int {
	d, most := 0, 0
	for i := 0; i < len(raw); i++ {
		switch raw[i] {
		case '[', '{':
			d++
			most = max(most, d)
		case ']', '}':
			d--
		case '"':
			for i++; i < len(raw) && raw[i] != '"'; i++ {
				if raw[i] == '\\' {
					i++
				}
			}
		}
	}
	return most
}

// syntaxError wraps an error of the JSON syntax.
func syntaxError(err error) error {
	var serr *jsontext.SyntacticError
	if errors.As(err, &serr) {
		return fmt.Errorf("%w: offset %d: %v", ErrMalformed, serr.ByteOffset, serr.Err)
	}
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return fmt.Errorf("%w: unexpected end of input", ErrMalformed)
	}
	return fmt.Errorf("%w: %v", ErrMalformed, err)
}

// payloadError wraps an error of the JSON package decoding a payload of
// kind k.
func payloadError(err error, k Kind) error {
	var serr *json.SemanticError
	var syn *jsontext.SyntacticError
	switch {
	case errors.Is(err, json.ErrUnknownName) && errors.As(err, &serr):
		if parent := serr.JSONPointer.Parent(); parent != "" {
			return fmt.Errorf("%w: %s %s has no field %q", ErrUnknownField, k, parent, serr.JSONPointer.LastToken())
		}
		return fmt.Errorf("%w: %s has no field %q", ErrUnknownField, k, serr.JSONPointer.LastToken())
	case errors.Is(err, jsontext.ErrDuplicateName) && errors.As(err, &syn):
		return fmt.Errorf("%w: %s: field %q appears twice", ErrMalformed, k, syn.JSONPointer)
	case errors.As(err, &serr):
		return fmt.Errorf("%w: %s %s: %s", ErrMalformed, k, serr.JSONPointer, describe(err, nil))
	}
	return fmt.Errorf("%w: %s: %s", ErrMalformed, k, describe(err, nil))
}

// describe says what was wrong with a value, as v1 said it.
func describe(err error, raw []byte) string {
	var serr *json.SemanticError
	if !errors.As(err, &serr) || serr.GoType == nil {
		var syn *jsontext.SyntacticError
		if errors.As(err, &syn) {
			return syn.Err.Error()
		}
		return err.Error()
	}
	if serr.JSONValue != nil {
		raw = serr.JSONValue
	}
	got := serr.JSONKind.String()
	if raw != nil {
		got = string(raw)
	}
	switch t := serr.GoType; t.Kind() {
	case reflect.String:
		return "expected a string, got " + got
	case reflect.Bool:
		return "expected true or false, got " + got
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if serr.JSONKind != '0' || bytes.ContainsAny(raw, ".eE") {
			return "expected an integer, got " + got
		}
		return "integer " + got + " out of range"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if serr.JSONKind != '0' || bytes.ContainsAny(raw, ".eE-") {
			return "expected a non-negative integer, got " + got
		}
		return "integer " + got + " out of range"
	case reflect.Float32, reflect.Float64:
		if serr.JSONKind != '0' {
			return "expected a number, got " + got
		}
		return "number " + got + " out of range"
	case reflect.Struct, reflect.Map, reflect.Pointer:
		if serr.JSONKind != '{' {
			return "expected an object, got " + got
		}
	}
	if serr.Err != nil {
		return fmt.Sprintf("%v: %v", serr.GoType, serr.Err)
	}
	return fmt.Sprintf("cannot read %s into %v", got, serr.GoType)
}

// findVersion looks, leniently, for a top-level "v" holding an integer, so
// that an event from a newer schema is reported as such even when it also
// has fields or kinds this build does not know.
func findVersion(data []byte) (int64, bool) {
	dec := jsontext.NewDecoder(bytes.NewReader(data), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return 0, false
	}
	for dec.PeekKind() != '}' {
		name, err := dec.ReadValue()
		if err != nil {
			return 0, false
		}
		value, err := dec.ReadValue()
		if err != nil {
			return 0, false
		}
		if unquote(name) == "v" {
			v, err := strconv.ParseInt(string(value), 10, 32)
			return v, err == nil
		}
	}
	return 0, false
}
