package python

import (
	"bytes"
	"encoding/binary"
	"testing"
)

func TestParseStatus(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want status
		ok   bool
	}{
		{`{"ready": true, "ipython": true, "version": "3.11.2"}`, status{Ready: true, IPython: true, Version: "3.11.2"}, true},
		{`{"id": 3, "error": ""}`, status{ID: 3}, true},
		{`{"id": 3, "error": "mod.sub.MyError"}`, status{ID: 3, Error: "mod.sub.MyError"}, true},
		{`{"id": 3, "error": "\u001b]7779;x\u0007"}`, status{ID: 3, Error: "Exception"}, true},
		{`{"id": 3, "error": "a..b"}`, status{ID: 3, Error: "Exception"}, true},
		{`{"id": 0}`, status{}, false},
		{`{"id": -1}`, status{}, false},
		{`[1]`, status{}, false},
		{``, status{}, false},
	} {
		got, err := parseStatus([]byte(tc.in))
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseStatus(%s) = %+v, %v; want %+v, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

// FuzzStatusFrame feeds the status reader what a cell could write on
// fd 3: it must never panic, never read past a frame's bound, and never
// hand on an exception name that is not a dotted identifier.
func FuzzStatusFrame(f *testing.F) {
	frame := func(s string) []byte {
		return append(binary.BigEndian.AppendUint32(nil, uint32(len(s))), s...)
	}
	f.Add(frame(`{"ready": true, "ipython": false, "version": "3.11.2"}`))
	f.Add(frame(`{"id": 1, "error": "ZeroDivisionError"}`))
	f.Add(append(frame(`{"id": 1, "error": ""}`), frame(`{"id": 2}`)...))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Add(frame(`{"id": 1e30}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r := bytes.NewReader(b)
		for range 8 {
			st, err := readStatus(r)
			if err != nil {
				return
			}
			if !exceptionName(st.Error) || len(st.Version) > 40 || (!st.Ready && st.ID == 0) {
				t.Fatalf("accepted %+v", st)
			}
		}
	})
}
