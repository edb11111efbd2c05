package mcp_test

import (
	"encoding/json"
	"testing"

	"github.com/harnessd/harnessd/core/mcp"
)

// FuzzParseLine: whatever a client writes, a line is a message or an
// error reply that is itself one JSON-RPC response; never a panic.
func FuzzParseLine(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"exec","arguments":{"command":"ls"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":"a","result":{}}`,
		`{"id":9,"x":1}`, `{"id":null}`, `{"id":[1]}`, `{"id":1.5e400}`, `[1,2]`, `garbage{`, ``, `null`, `"str"`, `{}`,
		"\x00line too long",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		msg, reply := mcp.ParseLine(line)
		if (msg == nil) == (reply == nil) {
			t.Fatalf("%q: want a message or a reply, got %v and %q", line, msg, reply)
		}
		if reply == nil {
			return
		}
		var r struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Error   *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(reply, &r); err != nil || r.JSONRPC != "2.0" || r.Error == nil || r.Error.Message == "" || len(r.ID) == 0 {
			t.Fatalf("%q: reply %q is not a JSON-RPC error response (%v)", line, reply, err)
		}
	})
}
