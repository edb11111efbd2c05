package event_test

import (
	"errors"
	"testing"
	"time"

	"github.com/harnessd/harnessd/core/event"
)

type extThing struct {
	Name  string   `json:"name"`
	Count int      `json:"count,omitempty"`
	Tags  []string `json:"tags,omitempty"`
}

func (extThing) Kind() event.Kind { return "test_ext_thing" }

func init() { event.RegisterExt("test_ext_thing", extThing{}) }

func TestExtRoundTrip(t *testing.T) {
	ev := event.Event{V: 1, Session: "s", Seq: 4, Time: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC), Source: event.SourceRuntime, Cause: 2,
		Payload: event.Ext{Value: extThing{Name: "<a&b>", Count: 3, Tags: []string{"x"}}}}
	b, err := ev.AppendJSON(nil)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"v":1,"session":"s","seq":4,"time":"2026-01-02T03:04:05.000000006Z","source":"runtime","cause":2,"kind":"test_ext_thing","name":"<a&b>","count":3,"tags":["x"]}`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
	got, err := event.DecodeExt(b)
	if err != nil {
		t.Fatal(err)
	}
	x, ok := got.Payload.(event.Ext)
	if !ok || got.Seq != 4 || got.Cause != 2 || !got.Time.Equal(ev.Time) || x.Value.(extThing).Name != "<a&b>" {
		t.Fatalf("%+v", got)
	}
	if _, err := event.DecodeExt([]byte(`{"kind":"test_ext_thing","name":"x","extra":1}`)); !errors.Is(err, event.ErrUnknownField) {
		t.Fatalf("%v, want ErrUnknownField", err)
	}
	if _, err := event.DecodeExt([]byte(`{"kind":"nope"}`)); !errors.Is(err, event.ErrUnknownKind) {
		t.Fatalf("%v, want ErrUnknownKind", err)
	}
	if _, err := event.DecodeExt([]byte(`{"kind":"cmd_run","command":"ls"}`)); err != nil {
		t.Fatal(err)
	}
}
