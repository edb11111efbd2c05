package api_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/core/daemon"
)

// FuzzRequests sends arbitrary bodies and query strings to every endpoint
// of a real daemon on a real socket. Whatever arrives, the answer is a
// proper status (never 500) with a JSON body, and the daemon keeps
// working. Actions and replies go to a session that does not exist, so no
// fuzzed text is ever run as a command; sessions may be created (at most
// max_sessions of them).
func FuzzRequests(f *testing.F) {
	cfg := testConfig(f, f.TempDir())
	cfg.Daemon.MaxSessions = 3
	cfg.Daemon.MaxBody = 8192
	td := startDaemon(f, cfg)

	hc := &http.Client{Transport: &http.Transport{DialContext: dialer(td.socket)}}
	seeds := []struct {
		route uint8
		query string
		body  string
	}{
		{0, "", `{"id":"a","labels":{"k":"v"}}`},
		{0, "", `{"id":1}`},
		{1, "", `{"kind":"cmd_run","command":"ls","timeout_s":1e400}`},
		{1, "", `{"kind":"message","text":"\ud800"}`},
		{2, "", `{"text":"` + "```bash\\nls\\n```" + `"}`},
		{2, "", `{"tool":"bash","arguments":{"command":1}}`},
		{3, "after=18446744073709551616&follow=1", ``},
		{4, "from_line=3&to_line=1", ``},
		{5, "purge=yes", ``},
		{6, "state=live", ``},
	}
	for _, s := range seeds {
		f.Add(s.route, s.query, []byte(s.body))
	}
	routes := []struct{ method, path string }{
		{"POST", "/v1/sessions"},
		{"POST", "/v1/sessions/ghost/actions"},
		{"POST", "/v1/sessions/ghost/replies"},
		{"GET", "/v1/sessions/ghost/events"},
		{"GET", "/v1/outputs/o1"},
		{"DELETE", "/v1/sessions/ghost"},
		{"GET", "/v1/sessions"},
	}
	f.Fuzz(func(t *testing.T, route uint8, query string, body []byte) {
		r := routes[int(route)%len(routes)]
		u := "http://h" + r.path
		if q, err := url.ParseQuery(query); err == nil && len(q) > 0 {
			u += "?" + q.Encode()
		}
		req, err := http.NewRequest(r.method, u, bytes.NewReader(body))
		if err != nil {
			return
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", r.method, u, err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode >= 500 && resp.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("%s %s %q: %d %s", r.method, u, body, resp.StatusCode, data)
		}
		if resp.StatusCode >= 300 || strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
			if !json.Valid(data) {
				t.Fatalf("%s %s: %d with a body that is not JSON: %q", r.method, u, resp.StatusCode, data)
			}
		}
		if resp.StatusCode == http.StatusCreated {
			var info daemon.Info
			if json.Unmarshal(data, &info) == nil {
				td.cl.DeleteSession(t.Context(), info.ID, true)
			}
		}
	})
}
