package event

// This file is interim. The closed codec of encode.go and decode.go knows
// only this package's kinds; until the open registry (event.Register)
// replaces it, kinds declared in other packages (core/agent's run_started,
// run_ended, agent_step, ...) travel as an Ext payload, encoded from the
// value's JSON struct tags beside the envelope's fields, exactly as the
// registry will encode them. When the registry lands, this file goes:
// RegisterExt becomes event.Register, Ext{v} becomes v, and DecodeExt's
// callers call Decode.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"
)

// ExtPayload is the payload type of a kind declared outside this package.
type ExtPayload interface {
	// Kind names the payload's type.
	Kind() Kind
}

// Ext carries an ExtPayload as an event's Payload.
type Ext struct {
	Value ExtPayload
}

// Kind implements Payload.
func (x Ext) Kind() Kind {
	if x.Value == nil {
		return ""
	}
	return x.Value.Kind()
}

func (x Ext) appendFields(b []byte) ([]byte, error) {
	if x.Value == nil {
		return b, fmt.Errorf("%w: empty Ext payload", ErrInvalid)
	}
	if _, ok := extType(x.Value.Kind()); !ok {
		return b, fmt.Errorf("%w: kind %q is not registered", ErrInvalid, x.Value.Kind())
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(x.Value); err != nil {
		return b, fmt.Errorf("%w: %s: %w", ErrInvalid, x.Value.Kind(), err)
	}
	obj := bytes.TrimSpace(buf.Bytes())
	if len(obj) < 2 || obj[0] != '{' {
		return b, fmt.Errorf("%w: %s does not encode to an object", ErrInvalid, x.Value.Kind())
	}
	if inner := bytes.TrimSpace(obj[1 : len(obj)-1]); len(inner) > 0 {
		b = append(b, ',')
		b = append(b, inner...)
	}
	return b, nil
}

var (
	extMu    sync.RWMutex
	extKinds = map[Kind]reflect.Type{}
)

// RegisterExt adds kind, whose payloads are values of proto's struct type,
// to what AppendJSON writes and DecodeExt reads. It panics if kind is one
// of this package's or is registered already, or if proto is not a struct
// whose Kind is kind: a programming error, found at init.
func RegisterExt(kind Kind, proto ExtPayload) {
	t := reflect.TypeOf(proto)
	switch {
	case kind.Valid():
		panic(fmt.Sprintf("event.RegisterExt(%q): a built-in kind", kind))
	case t == nil || t.Kind() != reflect.Struct:
		panic(fmt.Sprintf("event.RegisterExt(%q): %v is not a struct", kind, t))
	case proto.Kind() != kind:
		panic(fmt.Sprintf("event.RegisterExt(%q): %v.Kind() is %q", kind, t, proto.Kind()))
	}
	extMu.Lock()
	defer extMu.Unlock()
	if _, ok := extKinds[kind]; ok {
		panic(fmt.Sprintf("event.RegisterExt(%q): registered twice", kind))
	}
	extKinds[kind] = t
}

func extType(k Kind) (reflect.Type, bool) {
	extMu.RLock()
	defer extMu.RUnlock()
	t, ok := extKinds[k]
	return t, ok
}

// DecodeExt decodes as Decode does, and also events of the kinds
// registered with RegisterExt, whose payload comes back as an Ext. Those
// are decoded with encoding/json: an unknown field is an error, as in
// Decode, but a field given twice is not caught.
func DecodeExt(data []byte) (Event, error) {
	ev, err := Decode(data)
	if err == nil || !errors.Is(err, ErrUnknownKind) {
		return ev, err
	}
	var fields map[string]json.RawMessage
	if jerr := json.Unmarshal(data, &fields); jerr != nil {
		return Event{}, err
	}
	var kind Kind
	if jerr := json.Unmarshal(fields["kind"], &kind); jerr != nil {
		return Event{}, err
	}
	t, ok := extType(kind)
	if !ok {
		return Event{}, err
	}
	var e Event
	for _, f := range []struct {
		key string
		v   any
	}{{"v", &e.V}, {"session", &e.Session}, {"seq", &e.Seq}, {"source", &e.Source}, {"cause", &e.Cause}} {
		if raw, ok := fields[f.key]; ok {
			if err := json.Unmarshal(raw, f.v); err != nil {
				return Event{}, fmt.Errorf("%w: %s: %v", ErrMalformed, f.key, err)
			}
		}
		delete(fields, f.key)
	}
	if raw, ok := fields["time"]; ok {
		var ts string
		if err := json.Unmarshal(raw, &ts); err != nil {
			return Event{}, fmt.Errorf("%w: time: %v", ErrMalformed, err)
		}
		if e.Time, err = time.Parse(time.RFC3339Nano, ts); err != nil {
			return Event{}, fmt.Errorf("%w: time: %v", ErrMalformed, err)
		}
		e.Time = e.Time.UTC()
		delete(fields, "time")
	}
	delete(fields, "kind")
	if e.V > Version {
		return Event{}, fmt.Errorf("%w: v%d (this build reads up to v%d; upgrade harnessd)", ErrUnsupportedVersion, e.V, Version)
	}
	if e.Source != "" && !e.Source.Valid() {
		return Event{}, fmt.Errorf("%w: unknown source %q", ErrMalformed, e.Source)
	}
	rest, _ := json.Marshal(fields)
	dec := json.NewDecoder(bytes.NewReader(rest))
	dec.DisallowUnknownFields()
	p := reflect.New(t)
	if err := dec.Decode(p.Interface()); err != nil {
		if strings.HasPrefix(err.Error(), "json: unknown field") {
			return Event{}, fmt.Errorf("%w: %s: %v", ErrUnknownField, kind, err)
		}
		return Event{}, fmt.Errorf("%w: %s: %v", ErrMalformed, kind, err)
	}
	e.Payload = Ext{Value: p.Elem().Interface().(ExtPayload)}
	return e, nil
}
