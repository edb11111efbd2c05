package event

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

var when = time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC)

// samples has one event of every kind, with every field set, and a few
// with fields left zero.
func samples() []Event {
	env := func(seq uint64, src Source, cause uint64, p Payload) Event {
		return Event{V: Version, Session: "s1", Seq: seq, Time: when, Source: src, Cause: cause, Payload: p}
	}
	return []Event{
		env(1, SourceAgent, 0, CmdRun{Command: "ls -la", IsInput: true, TimeoutS: 2.5, Reset: true}),
		env(2, SourceUser, 0, Message{Text: "héllo\n\"quoted\"\t\x01 <b>&</b> \u2028"}),
		env(3, SourceAgent, 0, Finish{Message: "done"}),
		env(4, SourceAgent, 0, Delegate{Agent: "openai", Task: "write tests"}),
		env(5, SourceRuntime, 1, CmdOutput{
			ExitCode: -1, Cwd: "/work", Output: "a\nb\n",
			Trimmed:    &Trimmed{LinesTotal: 100, LinesOmitted: 90, BytesOmitted: 1 << 40, OutputID: "o7"},
			DurationMS: 1234, TimedOut: true, PID: 42, Note: "still running", ShellRebuilt: true,
		}),
		env(6, SourceRuntime, 0, InvalidAction{Reason: "no action", Guidance: "use a tool"}),
		env(7, SourceHook, 1, HookVeto{Hook: "policy.lua", Reason: "rm -rf /"}),
		env(8, SourceRuntime, 0, AgentCrashed{Reason: "exit status 2"}),
		env(9, SourceRuntime, 0, SandboxStarted{Driver: "native", SandboxID: "sb1", Workdir: "/work"}),
		env(10, SourceRuntime, 0, SandboxStopped{SandboxID: "sb1", Reason: "session deleted"}),
		{Payload: CmdRun{}},
		{Payload: CmdOutput{}},
		{Payload: Finish{}},
		{Payload: SandboxStopped{}},
		env(13, SourceRuntime, 0, NetConnect{Method: "CONNECT", Host: "pypi.org", Port: 443, Allowed: true, Reason: "allowed by sandbox.proxy.allow", Status: 200}),
		env(14, SourceRuntime, 0, NetConnect{Host: "evil.test", Allowed: false, Closed: true, BytesUp: 1, BytesDown: 1 << 33}),
		{Payload: NetConnect{}},
		env(11, SourceAgent, 0, CmdRun{Command: "sleep", TimeoutS: 1e-7}),
		env(12, SourceAgent, 0, CmdRun{Command: "x", TimeoutS: 1e300}),
	}
}

func TestRoundTrip(t *testing.T) {
	for _, ev := range samples() {
		b, err := ev.AppendJSON(nil)
		if err != nil {
			t.Fatalf("encode %+v: %v", ev, err)
		}
		if !json.Valid(b) {
			t.Fatalf("encoded %s is not valid JSON", b)
		}
		got, err := Decode(b)
		if err != nil {
			t.Fatalf("decode %s: %v", b, err)
		}
		if !reflect.DeepEqual(got, ev) {
			t.Errorf("round trip of %s:\n got %#v\nwant %#v", b, got, ev)
		}
		// encoding/json goes through MarshalJSON/UnmarshalJSON (and
		// escapes <, > and & on the way, which changes no value).
		jb, err := json.Marshal(ev)
		if err != nil {
			t.Fatalf("json.Marshal: %v", err)
		}
		if back, err := Decode(jb); err != nil || !reflect.DeepEqual(back, ev) {
			t.Errorf("json.Marshal = %s, decoding to %#v, %v", jb, back, err)
		}
		var viaJSON Event
		if err := json.Unmarshal(b, &viaJSON); err != nil || !reflect.DeepEqual(viaJSON, ev) {
			t.Errorf("json.Unmarshal(%s) = %#v, %v", b, viaJSON, err)
		}
	}
}

// The wire form is a contract (DESIGN.md); these are its exact bytes.
func TestGolden(t *testing.T) {
	tests := []struct {
		ev   Event
		want string
	}{
		{
			Event{V: 1, Session: "s1", Seq: 3, Time: when, Source: SourceAgent, Payload: CmdRun{Command: "ls", TimeoutS: 30}},
			`{"v":1,"session":"s1","seq":3,"time":"2025-01-02T03:04:05.000000006Z","source":"agent","kind":"cmd_run","command":"ls","timeout_s":30}`,
		},
		{
			Event{Payload: CmdRun{Command: "ls", TimeoutS: 30}},
			`{"kind":"cmd_run","command":"ls","timeout_s":30}`,
		},
		{
			Event{V: 1, Session: "s1", Seq: 4, Source: SourceRuntime, Cause: 3, Payload: CmdOutput{
				Cwd: "/w", Output: "x\n", Trimmed: &Trimmed{LinesTotal: 9, LinesOmitted: 5, BytesOmitted: 50, OutputID: "o1"}, DurationMS: 7,
			}},
			`{"v":1,"session":"s1","seq":4,"source":"runtime","cause":3,"kind":"cmd_output","exit_code":0,"cwd":"/w","output":"x\n",` +
				`"trimmed":{"lines_total":9,"lines_omitted":5,"bytes_omitted":50,"output_id":"o1"},"duration_ms":7}`,
		},
		{
			Event{Payload: Message{Text: "\x00\x1f\u2029\xff"}},
			`{"kind":"message","text":"\u0000\u001f\u2029\ufffd"}`,
		},
	}
	for _, tt := range tests {
		got, err := tt.ev.AppendJSON(nil)
		if err != nil || string(got) != tt.want {
			t.Errorf("AppendJSON = %s, %v\nwant %s", got, err, tt.want)
		}
	}
}

func TestDecodeAccepts(t *testing.T) {
	tests := []struct {
		in   string
		want Event
	}{
		{`{"kind":"cmd_run","command":"ls","timeout_s":30}`, Event{Payload: CmdRun{Command: "ls", TimeoutS: 30}}},
		// Fields in any order, kind last.
		{` { "command" : "ls" , "seq":2, "kind" : "cmd_run" } `, Event{Seq: 2, Payload: CmdRun{Command: "ls"}}},
		// null is absent.
		{`{"kind":"cmd_output","trimmed":null,"cwd":null,"session":null,"time":null}`, Event{Payload: CmdOutput{}}},
		{`{"kind":"message","text":"\u00e9\ud83d\ude00\ud800x\/"}`, Event{Payload: Message{Text: "é😀\ufffdx/"}}},
		{`{"kind":"finish","time":"2025-01-02T04:04:05.000000006+01:00"}`, Event{Time: when, Payload: Finish{}}},
		{`{"v":0,"kind":"finish"}`, Event{Payload: Finish{}}},
		{`{"kind":"cmd_run","timeout_s":1.5e1}`, Event{Payload: CmdRun{TimeoutS: 15}}},
	}
	for _, tt := range tests {
		got, err := Decode([]byte(tt.in))
		if err != nil {
			t.Errorf("Decode(%s): %v", tt.in, err)
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Decode(%s)\n got %#v\nwant %#v", tt.in, got, tt.want)
		}
	}
}

func TestDecodeRejects(t *testing.T) {
	tests := []struct {
		in      string
		want    error
		mention string
	}{
		{``, ErrMalformed, "expected an event object"},
		{`[]`, ErrMalformed, "expected an event object"},
		{`{"kind":"cmd_run"`, ErrMalformed, "unexpected EOF"},
		{`{"kind":"cmd_run"} x`, ErrMalformed, "data after"},
		{`{"kind":"cmd_run"}{}`, ErrMalformed, "data after"},
		{`{}`, ErrMalformed, "no kind"},
		{`{"command":"ls"}`, ErrMalformed, "no kind"},
		{`{"kind":null}`, ErrMalformed, "kind is null"},
		{`{"kind":"rm_rf"}`, ErrUnknownKind, `"rm_rf"`},
		{`{"kind":"CMD_RUN"}`, ErrUnknownKind, `"CMD_RUN"`},
		{`{"kind":"cmd_run","comand":"ls"}`, ErrUnknownField, `cmd_run has no field "comand"`},
		{`{"comand":"ls","kind":"cmd_run"}`, ErrUnknownField, `"comand"`},
		{`{"kind":"cmd_run","Command":"ls"}`, ErrUnknownField, `"Command"`},
		{`{"kind":"cmd_run","text":"hi"}`, ErrUnknownField, `"text"`},
		{`{"kind":"cmd_output","trimmed":{"lines":1}}`, ErrUnknownField, `"lines"`},
		{`{"kind":"cmd_run","command":"a","command":"b"}`, ErrMalformed, "twice"},
		{`{"seq":1,"seq":1,"kind":"finish"}`, ErrMalformed, "twice"},
		{`{"kind":"cmd_run","command":1}`, ErrMalformed, "expected a string"},
		{`{"kind":"cmd_run","reset":"yes"}`, ErrMalformed, "expected true or false"},
		{`{"kind":"cmd_output","exit_code":1.5}`, ErrMalformed, "expected an integer"},
		{`{"kind":"finish","seq":-1}`, ErrMalformed, "non-negative"},
		{`{"kind":"finish","seq":18446744073709551616}`, ErrMalformed, "out of range"},
		{`{"kind":"cmd_run","timeout_s":1e999}`, ErrMalformed, "out of range"},
		{`{"kind":"finish","seq":01}`, ErrMalformed, "expecting ','"},
		{`{"kind":"finish","source":"robot"}`, ErrMalformed, `unknown source "robot"`},
		{`{"kind":"finish","time":"yesterday"}`, ErrMalformed, "RFC 3339"},
		{`{"kind":"finish","time":"0000-01-01T00:00:00+01:00"}`, ErrMalformed, "outside years"},
		{`{"kind":"message","text":"a` + "\n" + `"}`, ErrMalformed, "control character"},
		{`{"kind":"message","text":"\x"}`, ErrMalformed, "invalid escape sequence `\\x`"},
		{`{"kind":"message","text":"\u12"}`, ErrMalformed, "invalid escape sequence `\\u12"},
		{`{"kind":"message","text":"abc`, ErrMalformed, "unexpected EOF"},
		{`{"kind":"finish","v":-1}`, ErrMalformed, "negative schema version"},
		{`{"kind":"cmd_output","trimmed":[]}`, ErrMalformed, "expected an object"},
		{`{"x":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]],"kind":"finish"}`, ErrMalformed, "nested deeper"},
		// A newer schema is reported as such, whatever else is unknown.
		{`{"v":2,"kind":"finish"}`, ErrUnsupportedVersion, "v2"},
		{`{"kind":"teleport","v":2}`, ErrUnsupportedVersion, "upgrade"},
		{`{"kind":"finish","colour":"red","v":3}`, ErrUnsupportedVersion, "v3"},
	}
	for _, tt := range tests {
		_, err := Decode([]byte(tt.in))
		if !errors.Is(err, tt.want) {
			t.Errorf("Decode(%s) = %v, want %v", tt.in, err, tt.want)
			continue
		}
		if !strings.Contains(err.Error(), tt.mention) {
			t.Errorf("Decode(%s) = %q, want it to mention %q", tt.in, err, tt.mention)
		}
	}
}

func TestEncodeRejects(t *testing.T) {
	tests := []Event{
		{},
		{V: Version + 1, Payload: Finish{}},
		{Source: "robot", Payload: Finish{}},
		{Time: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), Payload: Finish{}},
		{Payload: CmdRun{TimeoutS: math.NaN()}},
		{Payload: CmdRun{TimeoutS: math.Inf(1)}},
	}
	for _, ev := range tests {
		if _, err := ev.AppendJSON(nil); !errors.Is(err, ErrInvalid) {
			t.Errorf("AppendJSON(%+v) = %v, want ErrInvalid", ev, err)
		}
	}
}

func TestKinds(t *testing.T) {
	actions, builtin := 0, 0
	for _, k := range Kinds() {
		if strings.Contains(string(k), ".") {
			continue // registered by a test
		}
		builtin++
		if k.IsAction() == k.IsObservation() {
			t.Errorf("%s: IsAction %v, IsObservation %v", k, k.IsAction(), k.IsObservation())
		}
		if k.IsAction() {
			actions++
		}
		if info := lookup(k); info == nil || reflect.Zero(info.typ).Interface().(Payload).Kind() != k {
			t.Errorf("no decoder for %s", k)
		}
	}
	if actions != 4 || builtin != 11 {
		t.Errorf("%d kinds, %d actions", builtin, actions)
	}
	ev := Event{Payload: CmdRun{}}
	if !ev.IsAction() || ev.IsObservation() || ev.Kind() != KindCmdRun {
		t.Errorf("cmd_run event: kind %q action %v", ev.Kind(), ev.IsAction())
	}
	if (Event{}).Kind() != "" || Kind("x").Valid() {
		t.Error("empty event has a kind, or an unknown kind is valid")
	}
}

func BenchmarkEncode(b *testing.B) {
	ev := samples()[4]
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		buf, _ = ev.AppendJSON(buf[:0])
	}
	b.SetBytes(int64(len(buf)))
}

func BenchmarkDecode(b *testing.B) {
	data, _ := samples()[4].AppendJSON(nil)
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := Decode(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeStdlib is the baseline: encoding/json decoding the same
// bytes into a flat struct (which is not strict and not a union).
func BenchmarkDecodeStdlib(b *testing.B) {
	data, _ := samples()[4].AppendJSON(nil)
	type flat struct {
		V       int       `json:"v"`
		Session string    `json:"session"`
		Seq     uint64    `json:"seq"`
		Time    time.Time `json:"time"`
		Source  string    `json:"source"`
		Cause   uint64    `json:"cause"`
		Kind    string    `json:"kind"`
		CmdOutput
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		var f flat
		if err := json.Unmarshal(data, &f); err != nil {
			b.Fatal(err)
		}
	}
}
