package event_test

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/core/event"
)

// FileEdit is a kind declared outside core/event, as a plugin or a hook
// package would declare one.
type FileEdit struct {
	Path   string            `json:"path"`
	Diff   string            `json:"diff,omitempty"`
	Lines  []int             `json:"lines,omitempty"`
	Mode   uint32            `json:"mode,omitzero"`
	DryRun bool              `json:"dry_run,omitempty"`
	Labels map[string]string `json:"labels,omitempty"`
	Undo   *Undo             `json:"undo,omitempty"`
}

// Undo is a nested object of FileEdit.
type Undo struct {
	Backup string `json:"backup"`
}

// FileEdited answers a FileEdit.
type FileEdited struct {
	Bytes int64 `json:"bytes"`
}

const (
	KindFileEdit   event.Kind = "example.file_edit"
	KindFileEdited event.Kind = "example.file_edited"
)

func (FileEdit) Kind() event.Kind   { return KindFileEdit }
func (FileEdited) Kind() event.Kind { return KindFileEdited }

func init() {
	event.Register[FileEdit](KindFileEdit, event.Action)
	event.Register[FileEdited](KindFileEdited, event.Observation)
}

func TestRegisteredKind(t *testing.T) {
	if !KindFileEdit.Valid() || !KindFileEdit.IsAction() || KindFileEdit.IsObservation() || KindFileEdit.Class() != event.Action {
		t.Errorf("%s: valid %v, class %v", KindFileEdit, KindFileEdit.Valid(), KindFileEdit.Class())
	}
	if !KindFileEdited.IsObservation() || KindFileEdited.IsAction() {
		t.Errorf("%s: class %v", KindFileEdited, KindFileEdited.Class())
	}
	kinds := event.Kinds()
	at := func(k event.Kind) int {
		for i, have := range kinds {
			if have == k {
				return i
			}
		}
		t.Fatalf("Kinds() = %v, without %s", kinds, k)
		return -1
	}
	if at(KindFileEdit) > at(event.KindCmdOutput) || at(KindFileEdited) < at(event.KindSandboxStopped) {
		t.Errorf("Kinds() = %v: actions first, each class in registration order", kinds)
	}

	when := time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC)
	for _, tt := range []struct {
		ev   event.Event
		want string
	}{
		{
			event.Event{V: 1, Session: "s1", Seq: 7, Time: when, Source: event.SourceAgent, Payload: FileEdit{
				Path: "a.go", Diff: "-x\n+y\n", Lines: []int{1, 2}, Mode: 0o644, DryRun: true,
				Labels: map[string]string{"b": "2", "a": "1"}, Undo: &Undo{Backup: "a.go~"},
			}},
			`{"v":1,"session":"s1","seq":7,"time":"2025-01-02T03:04:05.000000006Z","source":"agent","kind":"example.file_edit",` +
				`"path":"a.go","diff":"-x\n+y\n","lines":[1,2],"mode":420,"dry_run":true,"labels":{"a":"1","b":"2"},"undo":{"backup":"a.go~"}}`,
		},
		{event.Event{Payload: FileEdit{}}, `{"kind":"example.file_edit","path":""}`},
		{event.Event{Cause: 7, Payload: FileEdited{Bytes: 12}}, `{"cause":7,"kind":"example.file_edited","bytes":12}`},
		{event.Event{Payload: FileEdit{Path: "bad \xff"}}, `{"kind":"example.file_edit","path":"bad \ufffd"}`},
	} {
		b, err := tt.ev.AppendJSON(nil)
		if err != nil || string(b) != tt.want {
			t.Errorf("AppendJSON = %s, %v\nwant %s", b, err, tt.want)
			continue
		}
		got, err := event.Decode(b)
		if err != nil {
			t.Errorf("Decode(%s): %v", b, err)
			continue
		}
		if fe, ok := tt.ev.Payload.(FileEdit); ok && strings.Contains(fe.Path, "\xff") {
			fe.Path = "bad \ufffd"
			tt.ev.Payload = fe
		}
		if !reflect.DeepEqual(got, tt.ev) {
			t.Errorf("Decode(%s)\n got %#v\nwant %#v", b, got, tt.ev)
		}
	}
}

func TestRegisteredKindStrict(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want error
	}{
		{`{"kind":"example.file_edit","path":"a","colour":"red"}`, event.ErrUnknownField},
		{`{"kind":"example.file_edit","Path":"a"}`, event.ErrUnknownField},
		{`{"kind":"example.file_edit","PATH":"a"}`, event.ErrUnknownField},
		{`{"kind":"example.file_edit","undo":{"backup":"x","extra":1}}`, event.ErrUnknownField},
		{`{"kind":"example.file_edit","undo":{"Backup":"x"}}`, event.ErrUnknownField},
		{`{"kind":"example.file_edit","path":"a","path":"b"}`, event.ErrMalformed},
		{`{"path":"a","kind":"example.file_edit","path":"b"}`, event.ErrMalformed},
		{`{"kind":"example.file_edit","undo":{"backup":"x","backup":"y"}}`, event.ErrMalformed},
		{`{"kind":"example.file_edit","labels":{"a":"1","a":"2"}}`, event.ErrMalformed},
		{`{"kind":"example.file_edit","path":1}`, event.ErrMalformed},
		{`{"kind":"example.file_edit","lines":[1,"2"]}`, event.ErrMalformed},
		{`{"kind":"example.file_edit","mode":-1}`, event.ErrMalformed},
		{`{"kind":"example.file_edit","dry_run":"yes"}`, event.ErrMalformed},
		{`{"kind":"example.file_edited","bytes":1.5}`, event.ErrMalformed},
		{`{"kind":"example.file_edit","seq":1,"seq":2}`, event.ErrMalformed},
		{`{"kind":"example.file_edits"}`, event.ErrUnknownKind},
		{`{"kind":"Example.file_edit"}`, event.ErrUnknownKind},
		{`{"kind":"example.file_edit","path":1,"v":2}`, event.ErrUnsupportedVersion},
	} {
		if _, err := event.Decode([]byte(tt.in)); !errors.Is(err, tt.want) {
			t.Errorf("Decode(%s) = %v, want %v", tt.in, err, tt.want)
		}
	}
	// null is absent, members come in any order.
	got, err := event.Decode([]byte(` {"undo":null, "lines":null,"path":"p","kind":"example.file_edit","labels":null} `))
	if err != nil || !reflect.DeepEqual(got, event.Event{Payload: FileEdit{Path: "p"}}) {
		t.Errorf("Decode with nulls = %#v, %v", got, err)
	}
}

// Types that Register refuses, each a programming error.
type (
	collides struct {
		Seq int `json:"seq"`
	}
	collidesByName struct{ Time string } // no tag: the member is "Time", which is not "time"
	takesAll       struct {
		Rest map[string]any `json:",embed"`
	}
	notStruct    string
	wrongKind    struct{}
	embedsSource struct {
		Inner
	}
	Inner struct {
		Source string `json:"source"`
	}
)

func (collides) Kind() event.Kind       { return "example.collides" }
func (collidesByName) Kind() event.Kind { return "example.collides_by_name" }
func (takesAll) Kind() event.Kind       { return "example.takes_all" }
func (notStruct) Kind() event.Kind      { return "example.not_struct" }
func (wrongKind) Kind() event.Kind      { return "example.other" }
func (embedsSource) Kind() event.Kind   { return "example.embeds_source" }

// Tree contains itself: json v2 reads it (the fast path's plan would not
// end).
type Tree struct {
	Name string `json:"name"`
	Kid  *Tree  `json:"kid,omitempty"`
}

func (Tree) Kind() event.Kind { return "example.tree" }

func TestRecursiveKind(t *testing.T) {
	event.Register[Tree]("example.tree", event.Observation)
	ev := event.Event{Payload: Tree{Name: "a", Kid: &Tree{Name: "b", Kid: &Tree{Name: "c"}}}}
	b, err := ev.AppendJSON(nil)
	if err != nil || string(b) != `{"kind":"example.tree","name":"a","kid":{"name":"b","kid":{"name":"c"}}}` {
		t.Fatalf("AppendJSON = %s, %v", b, err)
	}
	if got, err := event.Decode(b); err != nil || !reflect.DeepEqual(got, ev) {
		t.Errorf("Decode(%s) = %#v, %v", b, got, err)
	}
	if _, err := event.Decode([]byte(`{"kind":"example.tree","kid":{"kid":{"name":"c","Name":"d"}}}`)); !errors.Is(err, event.ErrUnknownField) {
		t.Errorf("Decode with a wrongly-cased member three deep = %v", err)
	}
}

func TestRegisterRefuses(t *testing.T) {
	refuses := func(name, mention string, register func()) {
		t.Helper()
		defer func() {
			t.Helper()
			r := recover()
			if r == nil || !strings.Contains(fmt.Sprint(r), mention) {
				t.Errorf("%s: panic %v, want one mentioning %q", name, r, mention)
			}
		}()
		register()
	}
	refuses("duplicate", "already registered", func() { event.Register[FileEdit](KindFileEdit, event.Action) })
	refuses("built-in duplicate", "already registered", func() { event.Register[event.CmdRun](event.KindCmdRun, event.Action) })
	refuses("envelope member", `member "seq"`, func() { event.Register[collides]("example.collides", event.Observation) })
	refuses("catch-all", "unknown members", func() { event.Register[takesAll]("example.takes_all", event.Observation) })
	refuses("not a struct", "not a struct", func() { event.Register[notStruct]("example.not_struct", event.Observation) })
	refuses("kind mismatch", `Kind() is "example.other"`, func() { event.Register[wrongKind]("example.wrong", event.Observation) })
	refuses("no class", "class", func() { event.Register[wrongKind]("example.other", 0) })
	refuses("bad name", "a kind is", func() { event.Register[wrongKind]("Example Other", event.Action) })
	refuses("embedded envelope member", `member "source"`, func() { event.Register[embedsSource]("example.embeds_source", event.Action) })
	if event.Kind("example.collides").Valid() || event.Kind("example.other").Valid() {
		t.Error("a refused kind was registered")
	}
	// Member names match exactly: "Time" is not the envelope's "time".
	event.Register[collidesByName]("example.collides_by_name", event.Observation)
	ev, err := event.Decode([]byte(`{"time":"2025-01-02T03:04:05Z","Time":"t","kind":"example.collides_by_name"}`))
	if err != nil || ev.Payload != (collidesByName{Time: "t"}) || ev.Time.IsZero() {
		t.Errorf("Decode = %#v, %v", ev, err)
	}
}

func TestEncodeRefusesUnregistered(t *testing.T) {
	for _, p := range []event.Payload{unregistered{}, impostor{}} {
		if _, err := (event.Event{Payload: p}).AppendJSON(nil); !errors.Is(err, event.ErrInvalid) {
			t.Errorf("AppendJSON(%T) = %v, want ErrInvalid", p, err)
		}
	}
	// A pointer to the registered type is written as the value.
	b, err := event.Event{Payload: &FileEdited{Bytes: 1}}.AppendJSON(nil)
	if err != nil || string(b) != `{"kind":"example.file_edited","bytes":1}` {
		t.Errorf("AppendJSON(&FileEdited) = %s, %v", b, err)
	}
	if _, err := (event.Event{Payload: (*FileEdited)(nil)}).AppendJSON(nil); !errors.Is(err, event.ErrInvalid) {
		t.Errorf("AppendJSON(nil *FileEdited) = %v, want ErrInvalid", err)
	}
}

type unregistered struct{}

func (unregistered) Kind() event.Kind { return "example.unregistered" }

// impostor claims a kind registered with another type.
type impostor struct{}

func (impostor) Kind() event.Kind { return event.KindCmdRun }

// A plugin declares its payload type and registers it once, in its init.
func ExampleRegister() {
	// In the plugin's package:
	//
	//	type Lint struct {
	//		File     string `json:"file"`
	//		Problems int    `json:"problems,omitempty"`
	//	}
	//
	//	func (Lint) Kind() event.Kind { return "example.lint" }
	//
	//	func init() { event.Register[Lint]("example.lint", event.Observation) }
	b, _ := event.Event{Source: event.SourceRuntime, Payload: Lint{File: "a.go", Problems: 2}}.AppendJSON(nil)
	fmt.Println(string(b))
	ev, err := event.Decode(b)
	fmt.Println(ev.Payload, ev.IsObservation(), err)
	_, err = event.Decode([]byte(`{"kind":"example.lint","file":"a.go","severity":"high"}`))
	fmt.Println(err)
	// Output:
	// {"source":"runtime","kind":"example.lint","file":"a.go","problems":2}
	// {a.go 2} true <nil>
	// event: unknown field: example.lint has no field "severity"
}

type Lint struct {
	File     string `json:"file"`
	Problems int    `json:"problems,omitempty"`
}

func (Lint) Kind() event.Kind { return "example.lint" }

func init() { event.Register[Lint]("example.lint", event.Observation) }
