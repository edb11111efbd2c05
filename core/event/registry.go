package event

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"sync"
	"sync/atomic"

	"github.com/go-json-experiment/json"
)

// Class says whether a kind is an action or an observation.
type Class uint8

// The classes of kinds.
const (
	// Action: what an agent (or a person) asks for.
	Action Class = iota + 1
	// Observation: what happened, answering an action (Cause) or reporting
	// on the runtime.
	Observation
)

func (c Class) String() string {
	switch c {
	case Action:
		return "action"
	case Observation:
		return "observation"
	}
	return fmt.Sprintf("Class(%d)", uint8(c))
}

// kindInfo is what the registry knows of a kind.
type kindInfo struct {
	kind  Kind
	class Class
	typ   reflect.Type // T, a struct type

	// decode unmarshals a JSON object of the payload's members into a T.
	decode func(obj []byte) (Payload, error)
	// plan reads T on the fast path; nil if T is not made of the field
	// types it knows.
	plan *plan
}

// registry is copied on write: lookups, on every Decode and AppendJSON, are
// one atomic load; Register, at init, takes regMu and publishes a new map.
var (
	regMu    sync.Mutex
	registry atomic.Pointer[map[Kind]*kindInfo]
	regOrder []Kind // registration order, for Kinds
)

// lookup returns the registered kind k, or nil.
func lookup(k Kind) *kindInfo {
	if m := registry.Load(); m != nil {
		return (*m)[k]
	}
	return nil
}

// envelopeNames are the members of the flat form that are not the
// payload's; a payload must not have them.
var envelopeNames = []string{"v", "session", "seq", "time", "source", "cause", "kind"}

// Register adds kind, with payload type T and class, to the schema: from
// then on Decode reads events of that kind into T values and AppendJSON
// writes them. Call it from an init function of the package that declares
// T; built-in kinds are registered by this package's own init.
//
// T must be a struct type whose Kind method returns kind. Its JSON form is
// given by its struct tags, as github.com/go-json-experiment/json (the
// encoding/json/v2 proposal) reads them: members are matched exactly,
// unknown, duplicate and wrongly-cased members are refused, null is the
// zero value; omitempty omits zero values as encoding/json (v1) does, and
// omitzero works too. Its members are written beside the envelope's, so none
// may be named v, session, seq, time, source, cause or kind, and T must not
// take unknown members (no `json:",embed"` map or jsontext.Value field).
//
// Register panics if kind is already registered or T breaks these rules:
// that is a programming error, found at init. (The sandbox's init program
// skips the rules' JSON probes: see probeKinds.)
//
// Adding a field or a kind changes what strict decoding accepts: a store
// written with the new kind is unreadable by a build without it. See
// Version.
func Register[T Payload](kind Kind, class Class) {
	typ := reflect.TypeFor[T]()
	if err := checkKind[T](kind, class, typ); err != nil {
		panic(fmt.Sprintf("event.Register(%q, %v): %v", kind, class, err))
	}
	info := &kindInfo{
		kind:  kind,
		class: class,
		typ:   typ,
		decode: func(obj []byte) (Payload, error) {
			var p T
			if err := json.Unmarshal(obj, &p, unmarshalOptions); err != nil {
				return nil, err
			}
			return p, nil
		},
	}
	if probeKinds {
		if p := newPlan(typ); p != nil && planAgrees[T](p) {
			info.plan = p
		}
	}
	regMu.Lock()
	defer regMu.Unlock()
	old := registry.Load()
	if old != nil && (*old)[kind] != nil {
		panic(fmt.Sprintf("event.Register(%q, %v): kind already registered with %v", kind, class, (*old)[kind].typ))
	}
	m := map[Kind]*kindInfo{}
	if old != nil {
		m = maps.Clone(*old)
	}
	m[kind] = info
	regOrder = append(regOrder, kind)
	registry.Store(&m)
}

// checkKind checks what Register asks of T.
func checkKind[T Payload](kind Kind, class Class, typ reflect.Type) error {
	if !validKindName(kind) {
		return errors.New("a kind is 1-64 bytes of a-z, 0-9, '_' and '.'")
	}
	if class != Action && class != Observation {
		return errors.New("class must be Action or Observation")
	}
	if typ.Kind() != reflect.Struct {
		return fmt.Errorf("payload type %v is not a struct", typ)
	}
	var zero T
	if zero.Kind() != kind {
		return fmt.Errorf("%v.Kind() is %q", typ, zero.Kind())
	}
	if !probeKinds {
		return nil
	}
	if b, err := json.Marshal(zero, marshalOptions); err != nil || len(b) < 2 || b[0] != '{' {
		return fmt.Errorf("%v does not marshal to a JSON object: %s %v", typ, b, err)
	}
	// Ask the JSON package itself which names T takes: a payload member
	// named like the envelope's, or caught by a field of unknown members,
	// would make the flat form ambiguous.
	const probe = `\u0000not a member` // a name no field has
	for _, name := range append([]string{probe}, envelopeNames...) {
		err := json.Unmarshal([]byte(`{"`+name+`":null}`), new(T), unmarshalOptions)
		if err == nil {
			if name == probe {
				return fmt.Errorf("%v accepts unknown members", typ)
			}
			return fmt.Errorf("%v has a member %q, which the envelope has", typ, name)
		}
		if !errors.Is(err, json.ErrUnknownName) {
			return fmt.Errorf("%v cannot be unmarshaled: %v", typ, err)
		}
	}
	return nil
}

// planAgrees reports whether json v2 takes every member name of p, so the
// fast path and json v2 read T by the same names.
func planAgrees[T Payload](p *plan) bool {
	for _, f := range p.fields {
		if json.Unmarshal([]byte(`{"`+f.name+`":null}`), new(T), unmarshalOptions) != nil {
			return false
		}
	}
	return true
}

func validKindName(k Kind) bool {
	if k == "" || len(k) > 64 {
		return false
	}
	for _, c := range []byte(k) {
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// Kinds returns every registered kind, actions first, each class in the
// order the kinds were registered.
func Kinds() []Kind {
	regMu.Lock()
	defer regMu.Unlock()
	out := make([]Kind, 0, len(regOrder))
	for _, class := range []Class{Action, Observation} {
		for _, k := range regOrder {
			if lookup(k).class == class {
				out = append(out, k)
			}
		}
	}
	return out
}

// Class returns the class k was registered with, or 0 if k is not
// registered.
func (k Kind) Class() Class {
	if info := lookup(k); info != nil {
		return info.class
	}
	return 0
}

// IsAction reports whether k is a registered action kind.
func (k Kind) IsAction() bool { return k.Class() == Action }

// IsObservation reports whether k is a registered observation kind.
func (k Kind) IsObservation() bool { return k.Class() == Observation }

// Valid reports whether k is a registered kind.
func (k Kind) Valid() bool { return lookup(k) != nil }

func init() {
	Register[CmdRun](KindCmdRun, Action)
	Register[Message](KindMessage, Action)
	Register[Finish](KindFinish, Action)
	Register[Delegate](KindDelegate, Action)
	Register[CmdOutput](KindCmdOutput, Observation)
	Register[InvalidAction](KindInvalidAction, Observation)
	Register[HookVeto](KindHookVeto, Observation)
	Register[AgentCrashed](KindAgentCrashed, Observation)
	Register[NetConnect](KindNetConnect, Observation)
	Register[SandboxStarted](KindSandboxStarted, Observation)
	Register[SandboxStopped](KindSandboxStopped, Observation)
}
