package store

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/core/event"
)

// testdata/v1.db is a store written by harnessd's code of schema v1 (the
// hand-written event codec, before kinds were registered): a few sessions
// with events of every kind, edge-case strings and numbers, enough events
// in one session for its index to be written in blocks, and a spilled
// output. TestReadV1Store reads it with the code of the day. Its worth is
// that an older build wrote it: -create-v1 rewrites it, which is right only
// when that older build runs it.
var createV1 = flag.Bool("create-v1", false, "rewrite testdata/v1.db (only with the code that first wrote it)")

const v1DB = "testdata/v1.db"

var v1Time = time.Date(2025, 6, 7, 8, 9, 10, 123456789, time.UTC)

// v1Sessions is what testdata/v1.db holds: each session's events as
// appended, in order. Times are set, so the events read back are exactly
// these with V, Session and Seq filled in.
func v1Sessions() (ids []string, evs map[string][]event.Event) {
	at := func(i int) time.Time { return v1Time.Add(time.Duration(i) * time.Millisecond) }
	every := []event.Event{
		{Time: at(0), Source: event.SourceRuntime, Payload: event.SandboxStarted{Driver: "native", SandboxID: "sb1", Workdir: "/work"}},
		{Time: at(1), Source: event.SourceAgent, Payload: event.CmdRun{Command: "seq 1 30000", TimeoutS: 2.5}},
		{Time: at(2), Source: event.SourceRuntime, Cause: 2, Payload: event.CmdOutput{
			ExitCode: 0, Cwd: "/work", Output: "1\n2\n…\n30000\n",
			Trimmed:    &event.Trimmed{LinesTotal: 30000, LinesOmitted: 29997, BytesOmitted: 168881, OutputID: "o1"},
			DurationMS: 31, PID: 4242,
		}},
		{Time: at(3), Source: event.SourceAgent, Payload: event.CmdRun{Command: "sleep 100", TimeoutS: 1e-7}},
		{Time: at(4), Source: event.SourceRuntime, Cause: 4, Payload: event.CmdOutput{ExitCode: -1, Cwd: "/work", TimedOut: true, Note: "still running", ShellRebuilt: true}},
		{Time: at(5), Source: event.SourceAgent, Payload: event.CmdRun{Command: "C-c", IsInput: true, Reset: true}},
		{Time: at(6), Source: event.SourceUser, Payload: event.Message{Text: "héllo <b>&</b>\u2028\"\\\t\x01"}},
		{Time: at(7), Source: event.SourceAgent, Payload: event.Delegate{Agent: "reviewer", Task: "check the tests"}},
		{Time: at(8), Source: event.SourceRuntime, Payload: event.InvalidAction{Reason: "no action", Guidance: "use one tool"}},
		{Time: at(9), Source: event.SourceHook, Cause: 6, Payload: event.HookVeto{Hook: "policy.lua", Reason: "rm -rf /"}},
		{Time: at(10), Source: event.SourceRuntime, Payload: event.AgentCrashed{Reason: "exit status 2"}},
		{Time: at(11), Source: event.SourceRuntime, Payload: event.NetConnect{Method: "CONNECT", Host: "pypi.org", Port: 443, Allowed: true, Reason: "allowed", Status: 200}},
		{Time: at(12), Source: event.SourceRuntime, Payload: event.NetConnect{Host: "pypi.org", Port: 443, Allowed: true, Closed: true, BytesUp: 1 << 20, BytesDown: 1 << 33}},
		{Time: at(13), Source: event.SourceRuntime, Payload: event.NetConnect{Host: "evil.test", Reason: "not allowed"}},
		{Time: at(14), Source: event.SourceAgent, Payload: event.Finish{Message: "done"}},
		{Time: at(15), Source: event.SourceAgent, Payload: event.Finish{}},
		{Time: at(16), Source: event.SourceRuntime, Payload: event.SandboxStopped{SandboxID: "sb1", Reason: "session deleted"}},
		{Time: at(17), Source: event.SourceRuntime, Payload: event.SandboxStopped{}},
	}
	var long []event.Event
	for i := range 300 { // more than two index blocks
		switch i % 3 {
		case 0:
			long = append(long, event.Event{Time: at(i), Source: event.SourceAgent, Payload: event.CmdRun{Command: fmt.Sprintf("echo %d", i)}})
		case 1:
			long = append(long, event.Event{Time: at(i), Source: event.SourceRuntime, Cause: uint64(i), Payload: event.CmdOutput{Cwd: "/", Output: fmt.Sprintf("%d\n", i-1), DurationMS: int64(i)}})
		default:
			long = append(long, event.Event{Time: at(i), Source: event.SourceUser, Payload: event.Message{Text: strings.Repeat("x", i)}})
		}
	}
	var odd []event.Event
	for i, s := range []string{"", "\x00\x1f\x7f", "bad \xff utf8 \xed\xa0\x80", "real \ufffd", "\u2028\u2029", "😀 \U0010ffff", "/\\\"'`"} {
		odd = append(odd, event.Event{Time: at(i), Source: event.SourceUser, Payload: event.Message{Text: s}})
	}
	odd = append(odd,
		event.Event{Time: time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC), Source: event.SourceAgent, Payload: event.CmdRun{Command: "x", TimeoutS: 1e300}},
		event.Event{Time: time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC), Source: event.SourceAgent, Payload: event.CmdRun{Command: "y", TimeoutS: 1e21}},
	)
	return []string{"every-kind", "long", "odd strings ü"}, map[string][]event.Event{
		"every-kind": every, "long": long, "odd strings ü": odd,
	}
}

// v1Output is the spilled output of session every-kind, o1.
func v1Output() []byte {
	var b bytes.Buffer
	for i := 1; i <= 30000; i++ {
		fmt.Fprintf(&b, "%d\n", i)
	}
	return b.Bytes()
}

func writeV1(t *testing.T) {
	if err := os.Remove(v1DB); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	s, err := Open(v1DB, &Options{InitialMmapSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ids, evs := v1Sessions()
	for i, id := range ids {
		if _, err := s.CreateSession(ctx, Session{ID: id, State: "stopped", Created: v1Time.Add(time.Duration(i) * time.Second), Labels: map[string]string{"n": fmt.Sprint(i)}}); err != nil {
			t.Fatal(err)
		}
		if id == "every-kind" {
			w, err := s.Outputs().Create(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if w.ID() != "o1" {
				t.Fatalf("output id %s", w.ID())
			}
			if _, err := w.Write(v1Output()); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
		}
		for _, ev := range evs[id] { // one commit each, as a daemon makes them
			if _, err := s.Append(ctx, id, ev); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestReadV1Store(t *testing.T) {
	if *createV1 {
		writeV1(t)
	}
	// A copy: Open takes the file's lock and may write.
	path := filepath.Join(t.TempDir(), "v1.db")
	copyFile(t, v1DB, path)
	s, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeAndCheck(t, s) })
	ctx := t.Context()

	ids, want := v1Sessions()
	sessions, err := s.Sessions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(sessions) != len(ids) {
		t.Fatalf("%d sessions, want %d", len(sessions), len(ids))
	}
	for _, id := range ids {
		var got []event.Event
		if err := s.Read(ctx, id, 0, func(ev event.Event) error { got = append(got, ev); return nil }); err != nil {
			t.Fatalf("read %s: %v", id, err)
		}
		if len(got) != len(want[id]) {
			t.Fatalf("session %s: %d events, want %d", id, len(got), len(want[id]))
		}
		var raws [][]byte
		err := s.ReadRaw(ctx, id, 0, func(seq uint64, raw []byte) error {
			if seq != uint64(len(raws)+1) {
				t.Fatalf("session %s: raw seq %d after %d", id, seq, len(raws))
			}
			raws = append(raws, bytes.Clone(raw))
			return nil
		})
		if err != nil {
			t.Fatalf("read raw %s: %v", id, err)
		}
		for i, ev := range got {
			w := want[id][i]
			w.V, w.Session, w.Seq = event.Version, id, uint64(i+1)
			enc, err := ev.AppendJSON(nil)
			if err != nil {
				t.Fatalf("session %s seq %d: re-encode: %v", id, i+1, err)
			}
			if bytes.Contains(raws[i], []byte(`\ufffd`)) {
				// Invalid UTF-8 was stored as \ufffd: U+FFFD comes back.
				if m, ok := ev.Payload.(event.Message); !ok || !strings.Contains(m.Text, "\ufffd") {
					t.Errorf("session %s seq %d: %s read as %+v", id, i+1, raws[i], ev)
				}
				continue
			}
			if !reflect.DeepEqual(ev, w) {
				t.Errorf("session %s seq %d:\n got %+v\nwant %+v", id, i+1, ev, w)
			}
			if !bytes.Equal(enc, raws[i]) {
				t.Errorf("session %s seq %d: stored\n%s\nre-encoded\n%s", id, i+1, raws[i], enc)
			}
		}
	}
	lines, err := s.Outputs().ReadLines(ctx, "o1", 29990, 0)
	if err != nil {
		t.Fatal(err)
	}
	if out := v1Output(); lines.Total != 30000 || !bytes.HasSuffix(out, []byte(lines.Text)) || lines.Text != "29990\n29991\n29992\n29993\n29994\n29995\n29996\n29997\n29998\n29999\n30000\n" {
		t.Errorf("output o1: %+v", lines)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
