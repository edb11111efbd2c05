package event

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"testing"
	"time"
)

// FuzzDecode checks that Decode never panics, that whatever it accepts is
// valid JSON and read alike by the fast path and the general one, that a
// decoded event re-encodes, and that the encoding decodes to the same value
// and re-encodes to the same bytes.
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
		// Kinds registered by register_test.go, which has no plan and one
		// that has.
		`{"kind":"example.file_edit","path":"a","lines":[1,2],"labels":{"b":"2","a":"1"},"undo":{"backup":"x"}}`,
		`{"v":1,"kind":"example.file_edited","bytes":-7}`,
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
		if fast, ok := decodeStored(data); ok {
			if slow, err := decodeAny(data); err != nil || !reflect.DeepEqual(fast, slow) {
				t.Fatalf("the fast path reads %q as %#v; the general one as %#v, %v", data, fast, slow, err)
			}
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

// FuzzRoundTrip goes the other way: events built from arbitrary values
// encode, decode to the same event (strings with invalid UTF-8 come back
// with U+FFFD for each bad byte, as encoding wrote them), and encode again to
// the same bytes; decoding and encoding, the fast path and the general one
// agree.
func FuzzRoundTrip(f *testing.F) {
	f.Add("s1", "ls -la", "/work", uint64(3), int64(-1), 2.5, true, uint8(0))
	f.Add("", "\x00\u2028<&>\xff\"\\", "héllo", uint64(0), int64(1)<<40, 1e-7, false, uint8(4))
	f.Add("x\xed\xa0\x80", "", "", uint64(1)<<63, int64(-1)<<63, -0.0, true, uint8(9))
	f.Fuzz(func(t *testing.T, session, s1, s2 string, seq uint64, n int64, x float64, flag bool, which uint8) {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return
		}
		payloads := []Payload{
			CmdRun{Command: s1, IsInput: flag, TimeoutS: x, Reset: !flag},
			Message{Text: s1},
			Finish{Message: s2},
			Delegate{Agent: s1, Task: s2},
			CmdOutput{ExitCode: int(n), Cwd: s2, Output: s1, DurationMS: n, TimedOut: flag, PID: int(n >> 3), Note: s2, ShellRebuilt: flag},
			CmdOutput{Output: s1, Trimmed: &Trimmed{LinesTotal: int(n), LinesOmitted: int(n / 2), BytesOmitted: n, OutputID: s2}},
			InvalidAction{Reason: s1, Guidance: s2},
			HookVeto{Hook: s1, Reason: s2},
			AgentCrashed{Reason: s1},
			SandboxStarted{Driver: s1, SandboxID: s2, Workdir: s1},
			SandboxStopped{SandboxID: s1, Reason: s2},
			NetConnect{Method: s1, Host: s2, Port: int(n), Allowed: flag, Reason: s1, Status: int(n), Closed: !flag, BytesUp: n, BytesDown: -n},
		}
		sources := []Source{"", SourceAgent, SourceUser, SourceHook, SourceRuntime}
		ev := Event{
			V: int(which % 2), Session: session, Seq: seq, Source: sources[int(which)%len(sources)], Cause: seq / 2,
			Payload: payloads[int(which)%len(payloads)],
		}
		if flag {
			ev.Time = time.Unix(0, n).UTC()
		}
		b, err := ev.AppendJSON(nil)
		if err != nil {
			if ev.Time.Year() < 0 || ev.Time.Year() > 9999 {
				return
			}
			t.Fatalf("encode %#v: %v", ev, err)
		}
		got, err := Decode(b)
		if err != nil {
			t.Fatalf("decode %q: %v", b, err)
		}
		if slow, err := decodeAny(b); err != nil || !reflect.DeepEqual(slow, got) {
			t.Fatalf("the general path reads %q as %#v, %v; the fast one as %#v", b, slow, err, got)
		}
		b2, err := got.AppendJSON(nil)
		if err != nil {
			t.Fatalf("re-encode %#v: %v", got, err)
		}
		if bytes.Contains(b, []byte(`\ufffd`)) {
			// Invalid UTF-8 came back as U+FFFD, which is written as itself.
			if got2, err := Decode(b2); err != nil || !reflect.DeepEqual(got2, got) {
				t.Fatalf("%q decodes to %#v, %v, want %#v", b2, got2, err, got)
			}
			return
		}
		if !bytes.Equal(b, b2) {
			t.Fatalf("encoded %q, re-encoded %q", b, b2)
		}
		if !reflect.DeepEqual(got, ev) && !(math.Signbit(x) && x == 0) {
			t.Fatalf("round trip of %q:\n got %#v\nwant %#v", b, got, ev)
		}
	})
}
