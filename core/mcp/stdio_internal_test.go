package mcp

import (
	"bufio"
	"encoding/json"
	"strings"
	"testing"
)

// TestTooLongLineKeepsItsID: a message over MaxLine is skipped with an
// error the client can match to its call, whether the id comes first or
// last (JSON.stringify of {...request, jsonrpc, id} puts it last), and
// the next line is read as usual. Found by the red team: the id was lost,
// and a strict client waited forever for its answer.
func TestTooLongLineKeepsItsID(t *testing.T) {
	big := strings.Repeat("x", MaxLine+1000)
	for _, tc := range []struct{ line, id string }{
		{`{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"file_create","arguments":{"path":"a","content":"` + big + `"}}}`, "11"},
		{`{"method":"tools/call","params":{"name":"file_create","arguments":{"path":"a","content":"` + big + `"}},"jsonrpc":"2.0","id":"req-7"}`, `"req-7"`},
		{`{"method":"tools/call","params":{"content":"` + big + `","id":3}}`, "null"},
		{big, "null"},
	} {
		br := bufio.NewReaderSize(strings.NewReader(tc.line+"\n"+`{"jsonrpc":"2.0","id":12,"method":"ping"}`+"\n"), 64<<10)
		line, err := readLine(br)
		if err != nil {
			t.Fatal(err)
		}
		msg, reply := ParseLine(line)
		var r struct {
			ID    json.RawMessage `json:"id"`
			Error struct{ Message string }
		}
		if msg != nil || json.Unmarshal(reply, &r) != nil || string(r.ID) != tc.id || !strings.Contains(r.Error.Message, "over") {
			t.Errorf("%.60s…: reply %s, want id %s", tc.line, reply, tc.id)
		}
		next, err := readLine(br)
		if m, _ := ParseLine(next); err != nil || m == nil {
			t.Errorf("the line after: %q %v", next, err)
		}
	}
}
