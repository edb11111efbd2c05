package event

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

// FuzzDecode checks that Decode never panics, that whatever it accepts is
// valid JSON, that a decoded event re-encodes, and that the encoding decodes
// to the same value and re-encodes to the same bytes.
func FuzzDecode(f *testing.F) {
	for _, ev := range samples() {
		b, err := ev.AppendJSON(nil)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{
		`{"kind":"cmd_run","command":"ls","timeout_s":30}`,
		`{"command":"ls","kind":"cmd_run","trimmed":{}}`,
		`{"kind":"cmd_output","trimmed":{"lines_total":1,"output_id":"o\u0031"},"exit_code":-1}`,
		`{"kind":"message","text":"\ud83d\ude00\ud800\udc00\udbff"}`,
		`{"v":2,"kind":"nope"}`,
		`{"kind":"finish","time":"2025-01-02T03:04:05.123+14:00"}`,
		`{"x":[1,{"y":null}],"kind":"finish"}`,
		"{\"kind\":\"message\",\"text\":\"\xff\xfe\"}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ev, err := Decode(data)
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrUnknownKind) &&
				!errors.Is(err, ErrUnknownField) && !errors.Is(err, ErrUnsupportedVersion) {
				t.Fatalf("Decode(%q) error %v is of no known class", data, err)
			}
			return
		}
		if !json.Valid(data) {
			t.Fatalf("Decode accepted invalid JSON %q", data)
		}
		b, err := ev.AppendJSON(nil)
		if err != nil {
			t.Fatalf("decoded %#v from %q but cannot encode it: %v", ev, data, err)
		}
		ev2, err := Decode(b)
		if err != nil {
			t.Fatalf("re-encoded %q does not decode: %v", b, err)
		}
		if !reflect.DeepEqual(ev, ev2) {
			t.Fatalf("round trip changed the event:\n in %q\nout %q\n %#v\n %#v", data, b, ev, ev2)
		}
		b2, err := ev2.AppendJSON(nil)
		if err != nil || !bytes.Equal(b, b2) {
			t.Fatalf("second encoding differs: %q vs %q (%v)", b, b2, err)
		}
	})
}
