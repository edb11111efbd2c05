package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/harnessd/harnessd/core/daemon"
	"github.com/harnessd/harnessd/core/event"
)

// garbageCase is one malformed request, written as raw bytes.
type garbageCase struct {
	name  string
	raw   []byte
	half  bool // close our writing side after sending (a truncated body)
	head  bool // a HEAD request: the response has no body
	reply bool // to /replies: recording an invalid_action is its designed answer
	// replaced: invalid UTF-8 or a lone surrogate in a string, which
	// core/event decodes to U+FFFD as encoding/json does (documented at
	// its slowString); the action may run with that text, recorded as run.
	replaced bool
}

const (
	garbageBodyTimeout = 2 * time.Second
	garbageMaxBody     = 64 << 10
	garbageWait        = 10 * time.Second // for each answer
)

// req builds a well-framed request.
func req(method, path, body string, headers ...string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: harnessd\r\n", method, path)
	for _, h := range headers {
		b.WriteString(h + "\r\n")
	}
	if body != "" || method == "POST" || method == "PUT" || method == "PATCH" {
		fmt.Fprintf(&b, "Content-Length: %d\r\n", len(body))
	}
	b.WriteString("Connection: close\r\n\r\n")
	b.WriteString(body)
	return b.Bytes()
}

// rawReq is a request exactly as given.
func rawReq(s string) []byte { return []byte(s) }

func gzipped(s string) string {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write([]byte(s))
	w.Close()
	return b.String()
}

func utf16le(s string) string {
	var b strings.Builder
	b.WriteString("\xff\xfe")
	for _, r := range s {
		b.WriteByte(byte(r))
		b.WriteByte(0)
	}
	return b.String()
}

// garbageCases are the malformed requests, against session g.
func garbageCases() []garbageCase {
	const acts = "/v1/sessions/g/actions"
	var cs []garbageCase
	add := func(name string, raw []byte) { cs = append(cs, garbageCase{name: name, raw: raw}) }
	act := func(name, body string) { add(name, req("POST", acts, body)) }

	// Bad JSON.
	act("json: lone brace", `{`)
	act("json: cut in a value", `{"kind":"cmd_run","command":`)
	act("json: array", `[]`)
	act("json: string", `"cmd_run"`)
	act("json: null", `null`)
	act("json: number", `42`)
	act("json: two objects", `{"kind":"cmd_run","command":"true"}{"kind":"cmd_run","command":"true"}`)
	act("json: trailing comma", `{"kind":"cmd_run","command":"true",}`)
	act("json: single quotes", `{'kind':'cmd_run','command':'true'}`)
	act("json: unquoted key", `{kind:"cmd_run",command:"true"}`)
	act("json: missing brace", `{"kind":"cmd_run","command":"true"`)
	cs = append(cs, garbageCase{name: "json: invalid UTF-8 in a string", replaced: true,
		raw: req("POST", acts, "{\"kind\":\"cmd_run\",\"command\":\"true \xff\xfe\"}")})
	act("json: invalid UTF-8 in a key", "{\"kind\":\"cmd_run\",\"comm\xffand\":\"true\"}")
	act("json: byte order mark", "\ufeff"+`{"kind":"cmd_run","command":"true"}`)
	act("json: nested 20000 deep in a field", `{"kind":"cmd_run","command":"true","x":`+strings.Repeat("[", 20000)+strings.Repeat("]", 20000)+`}`)
	act("json: nested 60000 deep", strings.Repeat("[", 60000))
	act("json: duplicate kind", `{"kind":"cmd_run","command":"true","kind":"finish"}`)
	act("json: duplicate command", `{"kind":"cmd_run","command":"true","command":"false"}`)
	act("json: command a number", `{"kind":"cmd_run","command":123}`)
	act("json: command an array", `{"kind":"cmd_run","command":["true"]}`)
	act("json: command an object", `{"kind":"cmd_run","command":{"sh":"true"}}`)
	act("json: kind upper case", `{"kind":"CMD_RUN","command":"true"}`)
	act("json: kind empty", `{"kind":"","command":"true"}`)
	act("json: no kind", `{"command":"true"}`)
	act("json: an observation as action", `{"kind":"cmd_output","exit_code":0}`)
	act("json: sandbox_stopped as action", `{"kind":"sandbox_stopped","reason":"x"}`)
	act("json: version 99", `{"v":99,"kind":"cmd_run","command":"true"}`)
	act("json: version -1", `{"v":-1,"kind":"cmd_run","command":"true"}`)
	act("json: unknown field", `{"kind":"cmd_run","command":"true","sudo":true}`)
	act("json: bad escape", `{"kind":"cmd_run","command":"\q"}`)
	cs = append(cs, garbageCase{name: "json: lone surrogate escape", replaced: true,
		raw: req("POST", acts, `{"kind":"cmd_run","command":"true \ud800"}`)})
	act("json: raw control char in a string", "{\"kind\":\"cmd_run\",\"command\":\"a\x01b\"}")
	act("json: whitespace only", "   \n\t ")

	// Huge and out-of-range numbers.
	act("number: timeout_s 1e308", `{"kind":"cmd_run","command":"true","timeout_s":1e308}`)
	act("number: timeout_s 1e999", `{"kind":"cmd_run","command":"true","timeout_s":1e999}`)
	act("number: timeout_s -5", `{"kind":"cmd_run","command":"true","timeout_s":-5}`)
	act("number: timeout_s -0.001", `{"kind":"cmd_run","command":"true","timeout_s":-0.001}`)
	act("number: timeout_s 86401", `{"kind":"cmd_run","command":"true","timeout_s":86401}`)
	act("number: timeout_s 2^64", `{"kind":"cmd_run","command":"true","timeout_s":18446744073709551616}`)
	act("number: timeout_s NaN", `{"kind":"cmd_run","command":"true","timeout_s":NaN}`)
	act("number: timeout_s Infinity", `{"kind":"cmd_run","command":"true","timeout_s":Infinity}`)
	act("number: timeout_s a string", `{"kind":"cmd_run","command":"true","timeout_s":"30"}`)
	act("number: timeout_s 1 followed by 400 zeros", `{"kind":"cmd_run","command":"true","timeout_s":1`+strings.Repeat("0", 400)+`}`)
	act("number: seq 2^64-1", `{"kind":"cmd_run","command":"true","seq":18446744073709551615}`)
	act("number: seq 1e30", `{"kind":"cmd_run","command":"true","seq":1e30}`)
	act("number: cause -1", `{"kind":"cmd_run","command":"true","cause":-1}`)
	act("number: v 2^64", `{"v":18446744073709551616,"kind":"cmd_run","command":"true"}`)
	act("time: not a time", `{"kind":"cmd_run","command":"true","time":"yesterday"}`)
	act("time: year 99999", `{"kind":"cmd_run","command":"true","time":"99999-01-01T00:00:00Z"}`)

	// NUL.
	act("nul: escaped in a command", `{"kind":"cmd_run","command":"echo a\u0000b"}`)
	act("nul: the whole command", `{"kind":"cmd_run","command":"\u0000"}`)
	act("nul: raw byte in a command", "{\"kind\":\"cmd_run\",\"command\":\"a\x00b\"}")
	act("nul: raw byte outside strings", "{\"kind\":\"cmd_run\",\x00\"command\":\"true\"}")
	add("nul: in a session id", req("POST", "/v1/sessions", `{"id":"a\u0000b"}`))
	add("nul: %00 in the path", req("GET", "/v1/sessions/g%00", ""))
	add("nul: raw byte in the path", rawReq("GET /v1/sessions/g\x00 HTTP/1.1\r\nHost: harnessd\r\nConnection: close\r\n\r\n"))
	add("nul: in a header value", rawReq("GET /healthz HTTP/1.1\r\nHost: harnessd\r\nX-A: a\x00b\r\nConnection: close\r\n\r\n"))
	cs = append(cs, garbageCase{name: "nul: in a reply's bash block", reply: true,
		raw: req("POST", "/v1/sessions/g/replies", `{"text":"`+"```bash\\necho a\\u0000b\\n```"+`"}`)})
	cs = append(cs, garbageCase{name: "nul: in a tool call's command", reply: true,
		raw: req("POST", "/v1/sessions/g/replies", `{"tool":"bash","arguments":{"command":"echo \u0000"}}`)})

	// Query parameters.
	for _, q := range []string{"after=18446744073709551615", "after=18446744073709551616", "after=-1", "after=1e3", "after=0x10",
		"after=%00", "after=" + strings.Repeat("9", 40), "follow=maybe", "follow=", "after=1&after=2"} {
		add("events: "+q, req("GET", "/v1/sessions/g/events?"+q, ""))
	}
	for _, p := range []string{"o18446744073709551615", "o18446744073709551616", "o-1", "o0", "o1?from_line=9223372036854775807",
		"o1?from_line=" + strings.Repeat("9", 30), "o1?from_line=5&to_line=2", "o1?to_line=-1", "o1?from_line=abc",
		"%2e%2e%2f%2e%2e%2fetc%2fpasswd", "o1%00"} {
		add("outputs: "+p, req("GET", "/v1/outputs/"+p, ""))
	}

	// Paths.
	for _, p := range []string{"/v1/sessions/../../etc/passwd", "/v1/sessions/%2e%2e/%2e%2e/etc/passwd", "/v1/sessions/%2e%2e",
		"//v1/sessions", "/v1/sessions/g/../g/actions", "/v1/./sessions", "/v1/sessions/g%2Factions", "/v1/sessions/g/",
		"/v1/sessions/" + strings.Repeat("a", 5000), "/v1/sessions/%C3%BC", "/v1/sessions/%ff", "/%", "/v1/sessions/g?%zz"} {
		add("path: "+trunc(p, 50), req("GET", p, ""))
	}
	add("path: DELETE ..%2f..%2fetc purge", req("DELETE", "/v1/sessions/..%2f..%2fetc?purge=true", ""))
	add("path: DELETE %2E%2E purge", req("DELETE", "/v1/sessions/%2E%2E?purge=true", ""))
	add("path: absolute-form URI", req("GET", "http://elsewhere.example/v1/sessions/nope", ""))
	add("path: 100 kB request line", req("GET", "/v1/sessions/"+strings.Repeat("a", 100<<10), ""))
	add("id: ../../etc", req("POST", "/v1/sessions", `{"id":"../../etc"}`))
	add("id: 10000 characters", req("POST", "/v1/sessions", `{"id":"`+strings.Repeat("a", 10000)+`"}`))
	add("id: unicode", req("POST", "/v1/sessions", `{"id":"ü"}`))
	add("id: a number", req("POST", "/v1/sessions", `{"id":7}`))
	add("create: unknown field", req("POST", "/v1/sessions", `{"id":"x1","color":"red"}`))
	add("create: labels not strings", req("POST", "/v1/sessions", `{"id":"x2","labels":{"a":1}}`))

	// Methods.
	for _, m := range []struct{ method, path string }{
		{"PUT", "/v1/sessions/g"}, {"PATCH", acts}, {"DELETE", "/healthz"}, {"POST", "/metrics"},
		{"TRACE", "/v1/sessions"}, {"OPTIONS", "/v1/sessions"}, {"get", "/v1/sessions"}, {"FOO", "/healthz"},
		{"DELETE", "/v1/sessions"}, {"GET", acts}, {"POST", "/v1/sessions/g/events"}, {"PUT", "/v1/outputs/o1"},
	} {
		add("method: "+m.method+" "+m.path, req(m.method, m.path, ""))
	}
	add("method: control byte in the method", rawReq("G\x01T /healthz HTTP/1.1\r\nHost: harnessd\r\nConnection: close\r\n\r\n"))
	add("method: CONNECT", rawReq("CONNECT harnessd:80 HTTP/1.1\r\nHost: harnessd\r\nConnection: close\r\n\r\n"))
	cs = append(cs, garbageCase{name: "method: HEAD of a session", head: true, raw: req("HEAD", "/v1/sessions/g", "")})

	// Wrong content.
	add("content: a form", req("POST", acts, "kind=cmd_run&command=true", "Content-Type: application/x-www-form-urlencoded"))
	add("content: multipart", req("POST", acts, "--b\r\nContent-Disposition: form-data; name=\"kind\"\r\n\r\ncmd_run\r\n--b--\r\n", "Content-Type: multipart/form-data; boundary=b"))
	add("content: XML", req("POST", acts, `<action kind="cmd_run"><command>true</command></action>`, "Content-Type: application/xml"))
	add("content: gzip with Content-Encoding", req("POST", acts, gzipped(`{"kind":"cmd_run","command":"true"}`), "Content-Encoding: gzip"))
	add("content: UTF-16", req("POST", acts, utf16le(`{"kind":"cmd_run","command":"true"}`)))
	add("content: empty action", req("POST", acts, ""))
	add("content: empty reply", req("POST", "/v1/sessions/g/replies", ""))
	add("content: over max_body", req("POST", acts, `{"kind":"cmd_run","command":"`+strings.Repeat("x", garbageMaxBody)+`"}`))
	add("content: binary", req("POST", acts, "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"))
	cs = append(cs, garbageCase{name: "reply: text a number", reply: true, raw: req("POST", "/v1/sessions/g/replies", `{"text":123}`)})
	cs = append(cs, garbageCase{name: "reply: text and tool", reply: true, raw: req("POST", "/v1/sessions/g/replies", `{"text":"x","tool":"bash"}`)})
	cs = append(cs, garbageCase{name: "reply: arguments with 1e999", reply: true, raw: req("POST", "/v1/sessions/g/replies", `{"tool":"bash","arguments":"{\"command\": 1e999}"}`)})
	cs = append(cs, garbageCase{name: "reply: arguments nested deep", reply: true, raw: req("POST", "/v1/sessions/g/replies", `{"tool":"bash","arguments":`+strings.Repeat("[", 5000)+strings.Repeat("]", 5000)+`}`)})
	cs = append(cs, garbageCase{name: "reply: unclosed fence", reply: true, raw: req("POST", "/v1/sessions/g/replies", `{"text":"`+"```bash\\nrm -rf /"+`"}`)})

	// Framing and truncated bodies.
	body := `{"kind":"cmd_run","command":"true"}`
	cs = append(cs, garbageCase{name: "framing: body shorter than Content-Length, then EOF", half: true,
		raw: rawReq("POST " + acts + " HTTP/1.1\r\nHost: harnessd\r\nContent-Length: 100\r\n\r\n" + body[:20])})
	add("framing: body shorter than Content-Length, held open", rawReq("POST "+acts+" HTTP/1.1\r\nHost: harnessd\r\nContent-Length: 100\r\n\r\n"+body[:20]))
	add("framing: Content-Length -1", rawReq("POST "+acts+" HTTP/1.1\r\nHost: harnessd\r\nContent-Length: -1\r\nConnection: close\r\n\r\n"+body))
	add("framing: Content-Length abc", rawReq("POST "+acts+" HTTP/1.1\r\nHost: harnessd\r\nContent-Length: abc\r\nConnection: close\r\n\r\n"+body))
	add("framing: two Content-Lengths", rawReq("POST "+acts+" HTTP/1.1\r\nHost: harnessd\r\nContent-Length: 5\r\nContent-Length: 35\r\nConnection: close\r\n\r\n"+body))
	add("framing: Content-Length 2^64", rawReq("POST "+acts+" HTTP/1.1\r\nHost: harnessd\r\nContent-Length: 18446744073709551616\r\nConnection: close\r\n\r\n"+body))
	cs = append(cs, garbageCase{name: "framing: Content-Length 2^63-1, then EOF", half: true,
		raw: rawReq("POST " + acts + " HTTP/1.1\r\nHost: harnessd\r\nContent-Length: 9223372036854775807\r\n\r\n" + body)})
	add("framing: bad chunk size", rawReq("POST "+acts+" HTTP/1.1\r\nHost: harnessd\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\nzz\r\n"+body+"\r\n0\r\n\r\n"))
	add("framing: huge chunk size", rawReq("POST "+acts+" HTTP/1.1\r\nHost: harnessd\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\nffffffffffffffff\r\n"+body+"\r\n0\r\n\r\n"))
	cs = append(cs, garbageCase{name: "framing: chunked, cut mid-chunk", half: true,
		raw: rawReq("POST " + acts + " HTTP/1.1\r\nHost: harnessd\r\nTransfer-Encoding: chunked\r\n\r\n40\r\n" + body[:10])})
	// Both: Transfer-Encoding wins (RFC 9112 6.3); the chunk is bad JSON,
	// the Content-Length's share would be good.
	add("framing: chunked and Content-Length", rawReq("POST "+acts+" HTTP/1.1\r\nHost: harnessd\r\nTransfer-Encoding: chunked\r\nContent-Length: 35\r\nConnection: close\r\n\r\n5\r\n"+body[:5]+"\r\n0\r\n\r\n"+body))
	add("framing: Transfer-Encoding gzip", rawReq("POST "+acts+" HTTP/1.1\r\nHost: harnessd\r\nTransfer-Encoding: gzip\r\nConnection: close\r\n\r\n"+body))
	add("framing: HTTP/1.0 without Host", rawReq("GET /v1/sessions/nope HTTP/1.0\r\n\r\n"))
	add("framing: HTTP/2 preface", rawReq("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"))
	add("framing: HTTP/9.9", rawReq("GET /healthz HTTP/9.9\r\nHost: harnessd\r\n\r\n"))
	add("framing: not HTTP", rawReq("hello there\r\n\r\n"))
	add("framing: empty lines only", rawReq("\r\n\r\n\r\n"))
	add("framing: 1 MB header", rawReq("GET /healthz HTTP/1.1\r\nHost: harnessd\r\nX-Big: "+strings.Repeat("a", 1<<20)+"\r\nConnection: close\r\n\r\n"))
	add("framing: 20000 headers", rawReq("GET /healthz HTTP/1.1\r\nHost: harnessd\r\n"+strings.Repeat("X-A: b\r\n", 20000)+"Connection: close\r\n\r\n"))
	add("framing: header without colon", rawReq("GET /healthz HTTP/1.1\r\nHost: harnessd\r\nNoColonHere\r\nConnection: close\r\n\r\n"))
	add("framing: bare LF line ends", rawReq("GET /healthz HTTP/1.1\nHost: harnessd\nConnection: close\n\n"))
	add("framing: Expect 100-continue, body never sent", rawReq("POST "+acts+" HTTP/1.1\r\nHost: harnessd\r\nExpect: 100-continue\r\nContent-Length: 35\r\nConnection: close\r\n\r\n"))
	return cs
}

func trunc(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// answer is what a garbage request got.
type answer struct {
	status int
	json   bool // the body is harnessd's JSON error (or a 2xx JSON body)
	code   string
	none   string // why there was no answer
}

func (a answer) String() string {
	if a.status == 0 {
		return "no answer (" + a.none + ")"
	}
	return fmt.Sprint(a.status)
}

// send writes one raw request and reads its answer.
func send(socket string, c garbageCase) answer {
	conn, err := net.Dial("unix", socket)
	if err != nil {
		return answer{none: err.Error()}
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(garbageWait))
	go func() {
		conn.Write(c.raw) // may fail midway when the daemon answers early
		if c.half {
			conn.(*net.UnixConn).CloseWrite()
		}
	}()
	method := "GET"
	if c.head {
		method = "HEAD"
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, &http.Request{Method: method})
	for err == nil && resp.StatusCode < 200 { // 100 Continue: the answer follows
		resp, err = http.ReadResponse(br, &http.Request{Method: method})
	}
	if err != nil {
		switch {
		case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
			return answer{none: "closed"}
		case isReset(err):
			return answer{none: "reset"}
		}
		return answer{none: err.Error()}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	a := answer{status: resp.StatusCode}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		a.json = true
		a.code = errCode(string(b))
	}
	return a
}

// garbage is the garbage part.
func (h *harness) garbage(ctx context.Context, p *Part) error {
	d, err := h.launch(ctx, "garbage", fmt.Sprintf("body_timeout = %q\nmax_body = %d\n", garbageBodyTimeout, garbageMaxBody))
	if err != nil {
		return err
	}
	defer d.cleanup()
	cl := d.cl
	if _, err := cl.CreateSession(ctx, daemon.CreateRequest{ID: "g"}); err != nil {
		return err
	}
	if _, err := cl.Act(ctx, "g", event.SourceUser, event.CmdRun{Command: "seq 1 5"}); err != nil {
		return err
	}
	sessions := func() int {
		l, err := cl.Sessions(ctx)
		if err != nil {
			return -1
		}
		return len(l)
	}
	lastSeq := func() uint64 {
		in, err := cl.Session(ctx, "g")
		if err != nil {
			return 0
		}
		return in.LastSeq
	}
	nSessions, seq := sessions(), lastSeq()

	counts := map[string]int{}
	var fivexx, changed, plain, crashed []string
	replies := 0
	var replaced, ok2xx []string
	cases := garbageCases()
	for _, c := range cases {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		a := send(d.spec.socket(), c)
		counts[a.String()]++
		if a.status == http.StatusInternalServerError || (a.status >= 500 && a.json) {
			fivexx = append(fivexx, fmt.Sprintf("%s: %d %s", c.name, a.status, a.code))
		}
		if a.status >= 200 && a.status < 300 {
			ok2xx = append(ok2xx, c.name)
		}
		if a.status >= 400 && !a.json {
			plain = append(plain, fmt.Sprintf("%s: %d", c.name, a.status))
		}
		if !d.alive() {
			crashed = append(crashed, c.name)
			break
		}
		if now := lastSeq(); now != seq {
			// Only a reply may add to the log, and only an invalid_action.
			var kinds []string
			onlyInvalid, withFFFD := true, false
			cl.Events(ctx, "g", seq, false, func(ev event.Event) error {
				kinds = append(kinds, string(ev.Kind()))
				onlyInvalid = onlyInvalid && ev.Kind() == event.KindInvalidAction
				if r, ok := ev.Payload.(event.CmdRun); ok && strings.ContainsRune(r.Command, utf8.RuneError) {
					withFFFD = true
				}
				return nil
			})
			switch {
			case c.reply && onlyInvalid:
				replies++
			case c.replaced && withFFFD:
				replaced = append(replaced, c.name)
			default:
				changed = append(changed, fmt.Sprintf("%s: answered %s, recorded %s", c.name, a, strings.Join(kinds, ", ")))
			}
			seq = now
		}
	}
	code, _, herr := get(ctx, d.spec.socket(), "/healthz")
	panicked := d.logHas("panic")
	var keys []string
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var dist []string
	for _, k := range keys {
		dist = append(dist, fmt.Sprintf("%s: %d", k, counts[k]))
	}
	p.info("malformed requests", "%d", len(cases))
	p.info("answers", "%s", strings.Join(dist, ", "))
	p.zero("answered 500, or 5xx by harnessd", len(fivexx))
	p.zero("daemon exited", len(crashed))
	p.check("panics in the daemon's log", !panicked, "none", "%s", map[bool]string{true: "yes", false: "none"}[panicked])
	p.check("/healthz afterwards", herr == nil && code == http.StatusOK, "200", "%d %v", code, errOrNil(herr))
	p.zero("requests that changed the session", len(changed))
	p.check("sessions afterwards", sessions() == nSessions, fmt.Sprint(nSessions), "%d", sessions())
	p.info("replies answered with a recorded invalid_action", "%d (a malformed model reply is recorded for the model to read: by design)", replies)
	p.info("run with invalid text replaced by U+FFFD", "%d (core/event decodes invalid UTF-8 and lone surrogates as encoding/json does; recorded as run)", len(replaced))
	p.info("4xx/5xx answered by net/http itself (plain text, before harnessd's handler)", "%d", len(plain))
	p.note("answered 2xx (read-only, or designed): %s", strings.Join(ok2xx, "; "))
	for _, s := range fivexx {
		p.note("5xx: %s", s)
	}
	for _, s := range changed {
		p.note("changed: %s", s)
	}
	for _, s := range crashed {
		p.note("the daemon exited after: %s", s)
	}
	for _, s := range plain {
		p.note("net/http's own answer: %s", s)
	}
	if d.alive() {
		return d.stop()
	}
	return nil
}

func errOrNil(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
