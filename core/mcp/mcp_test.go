package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harnessd/harnessd/cmd/harnessd/serve"
	"github.com/harnessd/harnessd/core/api"
	"github.com/harnessd/harnessd/core/config"
	"github.com/harnessd/harnessd/core/event"
	"github.com/harnessd/harnessd/core/mcp"
)

// daemon starts a real harnessd (serve.Run, bbolt in t.TempDir(), the
// unsandboxed driver) and returns its socket; it is stopped at cleanup.
func daemon(t *testing.T, edit func(*config.Config)) string {
	t.Helper()
	dir := t.TempDir()
	cfg := config.Default()
	cfg.Daemon.DataDir = dir
	cfg.Daemon.Socket = filepath.Join(dir, "h.sock")
	cfg.Daemon.ShutdownGrace = config.Duration{Duration: 500 * time.Millisecond}
	cfg.Sandbox.Driver = config.DriverNone
	cfg.Terminal.SoftTimeout = config.Duration{Duration: 5 * time.Second}
	if edit != nil {
		edit(&cfg)
	}
	log := slog.New(slog.DiscardHandler)
	if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- serve.Run(ctx, serve.Options{Config: cfg, Logger: log, Ready: func(s string) { ready <- s }})
	}()
	var socket string
	select {
	case socket = <-ready:
	case err := <-done:
		t.Fatalf("serve: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return socket
}

// conn is one MCP client connected in memory to a Server over the
// daemon's socket.
type conn struct {
	t    *testing.T
	cs   *sdk.ClientSession
	srv  *mcp.Server
	ran  chan error
	cl   *api.Client
	prog chan *sdk.ProgressNotificationParams
}

func connect(t *testing.T, socket string, opts mcp.Options) *conn {
	t.Helper()
	cl := api.NewClient(socket)
	srv := mcp.New(cl, opts)
	st, ct := sdk.NewInMemoryTransports()
	c := &conn{t: t, srv: srv, ran: make(chan error, 1), cl: cl, prog: make(chan *sdk.ProgressNotificationParams, 100)}
	go func() { c.ran <- srv.Run(context.Background(), st) }()
	client := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, &sdk.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *sdk.ProgressNotificationClientRequest) {
			select {
			case c.prog <- r.Params:
			default:
			}
		},
	})
	cs, err := client.Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	c.cs = cs
	t.Cleanup(func() { c.close(); cl.Close() })
	return c
}

// close disconnects and waits for the server to end (and with it the
// default session).
func (c *conn) close() {
	if c.cs == nil {
		return
	}
	c.cs.Close()
	c.cs = nil
	if err := <-c.ran; err != nil {
		c.t.Errorf("server Run: %v", err)
	}
}

func (c *conn) call(name string, args any) *sdk.CallToolResult {
	c.t.Helper()
	res, err := c.cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		c.t.Fatalf("%s: protocol error: %v", name, err)
	}
	return res
}

// ok calls a tool that must succeed and decodes its structured result.
func ok[T any](c *conn, name string, args any) (T, string) {
	c.t.Helper()
	res := c.call(name, args)
	txt := textOf(res)
	if res.IsError {
		c.t.Fatalf("%s %v: tool error: %s", name, args, txt)
	}
	var out T
	raw, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(raw, &out); err != nil {
		c.t.Fatalf("%s: structured result %s: %v", name, raw, err)
	}
	return out, txt
}

// fails calls a tool that must fail as a tool result, and returns the
// message the model reads.
func (c *conn) fails(name string, args any) string {
	c.t.Helper()
	res := c.call(name, args)
	if !res.IsError {
		c.t.Fatalf("%s %v: want isError, got %s", name, args, textOf(res))
	}
	return textOf(res)
}

func textOf(r *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if t, ok := c.(*sdk.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

func TestToolsAndAnnotations(t *testing.T) {
	c := connect(t, daemon(t, nil), mcp.Options{})
	res, err := c.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	type hints struct{ ro, destructive, idempotent bool }
	want := map[string]hints{
		"session_create":   {false, false, false},
		"session_list":     {true, false, true},
		"session_delete":   {false, true, true},
		"exec":             {false, true, false},
		"output_read":      {true, false, true},
		"events":           {true, false, true},
		"file_view":        {true, false, true},
		"file_create":      {false, true, false},
		"file_str_replace": {false, true, false},
		"file_insert":      {false, false, false},
		"file_undo":        {false, true, false},
		"python_run":       {false, true, false},
	}
	for _, tool := range res.Tools {
		w, found := want[tool.Name]
		if !found {
			t.Errorf("unexpected tool %s", tool.Name)
			continue
		}
		delete(want, tool.Name)
		a := tool.Annotations
		destructive := a.DestructiveHint == nil || *a.DestructiveHint // the spec's default is true
		if a.ReadOnlyHint {
			destructive = false
		}
		if got := (hints{a.ReadOnlyHint, destructive, a.IdempotentHint}); got != w {
			t.Errorf("%s: hints %+v, want %+v", tool.Name, got, w)
		}
		if tool.Description == "" || tool.InputSchema == nil || tool.OutputSchema == nil {
			t.Errorf("%s: description, input or output schema missing", tool.Name)
		}
	}
	if len(want) > 0 {
		t.Errorf("tools missing: %v", want)
	}
	// The exec schema says what the model must know.
	for _, tool := range res.Tools {
		if tool.Name != "exec" {
			continue
		}
		raw, _ := json.Marshal(tool.InputSchema)
		for _, s := range []string{`"required":["command"]`, `"timeout_s":{`, `"minimum":0`, "still running"} {
			if !strings.Contains(string(raw), s) && s != "still running" {
				t.Errorf("exec input schema lacks %s: %s", s, raw)
			}
		}
		if !strings.Contains(tool.Description, "still running") {
			t.Errorf("exec description does not explain -1: %s", tool.Description)
		}
	}
}

func TestExecDefaultSessionPersistsAndEndsOnDisconnect(t *testing.T) {
	socket := daemon(t, nil)
	c := connect(t, socket, mcp.Options{})
	first, _ := ok[mcp.Exec](c, "exec", map[string]any{"command": "cd /tmp && export X=1"})
	if first.ExitCode != 0 || first.Cwd != "/tmp" || first.Session == "" {
		t.Fatalf("first exec: %+v", first)
	}
	second, txt := ok[mcp.Exec](c, "exec", map[string]any{"command": "echo $X $PWD"})
	if second.Output != "1 /tmp\n" || second.Session != first.Session {
		t.Fatalf("second exec: %+v", second)
	}
	if !strings.Contains(txt, "1 /tmp\n[exit 0; cwd /tmp;") {
		t.Errorf("exec text: %q", txt)
	}
	failed, _ := ok[mcp.Exec](c, "exec", map[string]any{"command": "false"})
	if failed.ExitCode != 1 {
		t.Errorf("false: exit %d", failed.ExitCode)
	}
	list, txt := ok[mcp.SessionList](c, "session_list", map[string]any{})
	if len(list.Sessions) != 1 || list.Sessions[0].State != "live" || !strings.Contains(txt, "this connection's default") {
		t.Fatalf("session_list: %+v\n%s", list, txt)
	}
	ev, _ := ok[mcp.Events](c, "events", map[string]any{"limit": 2})
	if ev.Count != 2 || !ev.More || !strings.Contains(ev.Text, `"kind":"sandbox_started"`) {
		t.Errorf("events limit 2: %+v", ev)
	}
	rest, _ := ok[mcp.Events](c, "events", map[string]any{"after": ev.Last})
	if rest.More || !strings.Contains(rest.Text, `"command":"false"`) {
		t.Errorf("events after %d: %+v", ev.Last, rest)
	}

	c.close()
	info, err := c.cl.Session(context.Background(), first.Session)
	if err != nil || info.State == "live" {
		t.Fatalf("after disconnect the default session is %+v, %v; want ended", info, err)
	}
}

func TestKeepLeavesTheDefaultSession(t *testing.T) {
	c := connect(t, daemon(t, nil), mcp.Options{Keep: true})
	e, _ := ok[mcp.Exec](c, "exec", map[string]any{"command": "true"})
	c.close()
	info, err := c.cl.Session(context.Background(), e.Session)
	if err != nil || info.State != "live" {
		t.Fatalf("with Keep the default session is %+v, %v; want live", info, err)
	}
}

func TestSessionsCreateDelete(t *testing.T) {
	c := connect(t, daemon(t, nil), mcp.Options{BaseDir: "/"})
	ws := t.TempDir()
	s, _ := ok[mcp.Session](c, "session_create", map[string]any{"workspace": ws, "id": "mine", "labels": map[string]string{"k": "v"}})
	if s.ID != "mine" || s.State != "live" || s.Workspace != ws {
		t.Fatalf("session_create: %+v", s)
	}
	e, _ := ok[mcp.Exec](c, "exec", map[string]any{"session": "mine", "command": "echo hi > f && pwd"})
	if e.Output != ws+"\n" {
		t.Errorf("pwd in the workspace: %q", e.Output)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "f")); err != nil || string(b) != "hi\n" {
		t.Errorf("the workspace file: %q, %v", b, err)
	}
	if msg := c.fails("session_create", map[string]any{"id": "mine"}); !strings.Contains(msg, "id is taken") {
		t.Errorf("a taken id: %s", msg)
	}
	ok[mcp.SessionDeleted](c, "session_delete", map[string]any{"session": "mine"})
	ok[mcp.SessionDeleted](c, "session_delete", map[string]any{"session": "mine"}) // idempotent, as annotated
	if msg := c.fails("exec", map[string]any{"session": "mine", "command": "true"}); !strings.Contains(msg, "has ended; create a new one") {
		t.Errorf("exec in an ended session: %s", msg)
	}
	// A relative workspace resolves against BaseDir ("/" here).
	rel := strings.TrimPrefix(t.TempDir(), "/")
	s2, _ := ok[mcp.Session](c, "session_create", map[string]any{"workspace": rel})
	if s2.Workspace != "/"+rel {
		t.Errorf("relative workspace: %+v", s2)
	}
	ok[mcp.SessionDeleted](c, "session_delete", map[string]any{"session": s2.ID, "purge": true})
	if msg := c.fails("session_delete", map[string]any{"session": s2.ID, "purge": true}); !strings.Contains(msg, "session_list shows") {
		t.Errorf("purging twice: %s", msg)
	}
}

func TestTrimmedOutputAndOutputRead(t *testing.T) {
	c := connect(t, daemon(t, nil), mcp.Options{})
	e, txt := ok[mcp.Exec](c, "exec", map[string]any{"command": "seq 1 5000"})
	if e.OutputID == "" || e.LinesTotal != 5000 || e.LinesOmitted == 0 || !strings.Contains(txt, "output_read") {
		t.Fatalf("seq 1 5000: not trimmed as expected: %+v\n%s", e, txt)
	}
	p, txt := ok[mcp.Page](c, "output_read", map[string]any{"output_id": e.OutputID, "from_line": 2500, "to_line": 2502})
	if p.Text != "2500\n2501\n2502\n" || p.TotalLines != 5000 || p.ToLine != 2502 || p.Next != "" {
		t.Fatalf("output_read 2500-2502: %+v", p)
	}
	if !strings.Contains(txt, "[lines 2500-2502 of 5000]") {
		t.Errorf("output_read text: %q", txt)
	}
	all, _ := ok[mcp.Page](c, "output_read", map[string]any{"output_id": e.OutputID})
	if all.FromLine != 1 || all.ToLine < 1 || (all.ToLine < 5000) != (all.Next != "") {
		t.Errorf("output_read whole: from %d to %d next %q", all.FromLine, all.ToLine, all.Next)
	}
}

func TestBadArgumentsAndUnknowns(t *testing.T) {
	c := connect(t, daemon(t, nil), mcp.Options{})
	for _, tc := range []struct {
		tool string
		args any
		want string
	}{
		{"exec", map[string]any{}, "command"},
		{"exec", map[string]any{"command": 7}, "command"},
		{"exec", map[string]any{"command": "true", "timeout_s": -1}, "timeout_s"},
		{"exec", map[string]any{"command": "true", "bogus": 1}, "bogus"},
		{"exec", map[string]any{"session": "nope", "command": "true"}, "session_list shows"},
		{"output_read", map[string]any{"output_id": "nope"}, "output_read nope"},
		{"output_read", map[string]any{"output_id": "x", "from_line": 0}, "from_line"},
		{"output_read", map[string]any{"output_id": "x", "from_line": 5, "to_line": 2}, "past to_line"},
		{"events", map[string]any{}, "no default session yet"},
		{"events", map[string]any{"session": "nope"}, "session_list shows"},
		{"events", map[string]any{"session": "x", "limit": 5000}, "limit"},
		{"session_delete", map[string]any{"session": "nope"}, "session_list shows"},
		{"session_create", map[string]any{"workspace": "relative/dir"}, "absolute"},
		{"session_create", map[string]any{"id": "bad id!"}, "refused the arguments"},
	} {
		if msg := c.fails(tc.tool, tc.args); !strings.Contains(msg, tc.want) {
			t.Errorf("%s %v: message %q lacks %q", tc.tool, tc.args, msg, tc.want)
		}
	}
	// An unknown tool is the protocol's error; the connection lives on.
	if _, err := c.cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "rm_rf"}); err == nil {
		t.Error("unknown tool: no error")
	}
	ok[mcp.Exec](c, "exec", map[string]any{"command": "true"})
}

func TestHookVetoIsAToolError(t *testing.T) {
	c := connect(t, daemon(t, nil), mcp.Options{})
	msg := c.fails("exec", map[string]any{"command": "sudo rm -rf /"})
	if !strings.Contains(msg, "refused by harnessd policy") || !strings.Contains(msg, "dangerous.lua") {
		t.Errorf("veto: %s", msg)
	}
}

func TestStillRunningThenReadMore(t *testing.T) {
	socket := daemon(t, func(cfg *config.Config) {
		cfg.Terminal.SoftTimeout = config.Duration{Duration: 300 * time.Millisecond}
	})
	c := connect(t, socket, mcp.Options{})
	// The command waits on a fifo the test opens, so no timing decides
	// when it ends.
	fifo := filepath.Join(t.TempDir(), "go")
	e, txt := ok[mcp.Exec](c, "exec", map[string]any{"command": "mkfifo " + fifo + " && echo started && cat " + fifo})
	if e.ExitCode != -1 || !e.StillRunning || !strings.Contains(txt, "exec with an empty command reads more") {
		t.Fatalf("want still running: %+v\n%s", e, txt)
	}
	f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(f, "released\n")
	f.Close()
	for {
		more, _ := ok[mcp.Exec](c, "exec", map[string]any{"command": ""})
		if more.ExitCode == -1 {
			continue
		}
		if more.ExitCode != 0 || !strings.Contains(more.Output, "released") {
			t.Fatalf("read more: %+v", more)
		}
		break
	}
}

func TestCancellationInterruptsTheCommand(t *testing.T) {
	c := connect(t, daemon(t, nil), mcp.Options{Progress: 20 * time.Millisecond})
	ok[mcp.Exec](c, "exec", map[string]any{"command": "true"}) // the default session exists
	ctx, cancel := context.WithCancel(context.Background())
	params := &sdk.CallToolParams{Name: "exec", Arguments: map[string]any{"command": "sleep 60; echo not-interrupted"}}
	params.SetProgressToken("tok")
	called := make(chan error, 1)
	go func() {
		_, err := c.cs.CallTool(ctx, params)
		called <- err
	}()
	// The first progress notification says the command is running.
	p := <-c.prog
	if p.ProgressToken != "tok" || !strings.HasPrefix(p.Message, "running for") {
		t.Errorf("progress: %+v", p)
	}
	cancel()
	if err := <-called; err == nil {
		t.Error("cancelled call: no error")
	}
	// The next command runs at once in the same shell: sleep was
	// interrupted, not waited for (it would hold the session's turn).
	e, _ := ok[mcp.Exec](c, "exec", map[string]any{"command": "echo after"})
	if e.Output != "after\n" {
		t.Errorf("after cancel: %+v", e)
	}
	ev, _ := ok[mcp.Events](c, "events", map[string]any{"limit": 1000})
	if !strings.Contains(ev.Text, `"command":"C-c","is_input":true`) || strings.Contains(ev.Text, "not-interrupted\\n") {
		t.Errorf("the log does not show the interrupt:\n%s", ev.Text)
	}
}

// TestHTTPEndpoint drives the daemon's own /mcp (Streamable HTTP on its
// unix socket) with the Go SDK's client.
func TestHTTPEndpoint(t *testing.T) {
	socket := daemon(t, nil)
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", socket)
	}}}
	defer hc.CloseIdleConnections()
	client := sdk.NewClient(&sdk.Implementation{Name: "http-test", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: "http://harnessd/mcp", HTTPClient: hc}, nil)
	if err != nil {
		t.Fatalf("connect /mcp: %v", err)
	}
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "exec", Arguments: map[string]any{"command": "cd /tmp && echo $((6*7))"}})
	if err != nil || res.IsError {
		t.Fatalf("exec over /mcp: %v %s", err, textOf(res))
	}
	if txt := textOf(res); !strings.HasPrefix(txt, "42\n[exit 0; cwd /tmp;") {
		t.Errorf("exec over /mcp: %q", txt)
	}
	var e mcp.Exec
	raw, _ := json.Marshal(res.StructuredContent)
	json.Unmarshal(raw, &e)
	cl := api.NewClient(socket)
	defer cl.Close()
	info, err := cl.Session(context.Background(), e.Session)
	if err != nil || info.State != "live" || info.Labels["client"] != "mcp" {
		t.Fatalf("the /mcp default session: %+v %v", info, err)
	}
	// Closing the client DELETEs the MCP session; its default session ends.
	cs.Close()
	for {
		info, err = cl.Session(context.Background(), e.Session)
		if err != nil || info.State != "live" {
			break
		}
		time.Sleep(10 * time.Millisecond) // the end is recorded by the server's watcher
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestHTTPSessionOwner: an MCP session on /mcp is its starter's. Another
// allowed user who presents its Mcp-Session-Id gets 403 and nothing runs
// in the starter's default session; the starter goes on.
func TestHTTPSessionOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to connect as other uids")
	}
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Fatal("curl is needed (scripts/test installs it): ", err)
	}
	socket := daemon(t, func(c *config.Config) { c.Daemon.AllowUIDs = []int{65533, 65534} })
	os.Chmod(socket, 0o666)
	os.Chmod(filepath.Dir(socket), 0o755)
	os.Chmod(filepath.Dir(filepath.Dir(socket)), 0o755)
	// post sends one JSON-RPC message to /mcp as uid and returns the
	// status, the session id the answer names, and the body.
	post := func(uid int, sid, body string) (int, string, string) {
		t.Helper()
		args := []string{"-s", "-D", "-", "--unix-socket", socket, "-X", "POST",
			"-H", "Content-Type: application/json", "-H", "Accept: application/json, text/event-stream",
			"-H", "MCP-Protocol-Version: 2025-06-18", "-d", body}
		if sid != "" {
			args = append(args, "-H", "Mcp-Session-Id: "+sid)
		}
		cmd := exec.Command(curl, append(args, "http://harnessd/mcp")...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("curl as %d: %v", uid, err)
		}
		head, rest, _ := strings.Cut(string(out), "\r\n\r\n")
		var code int
		fmt.Sscanf(head, "HTTP/1.1 %d", &code)
		id := ""
		for _, l := range strings.Split(head, "\r\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.EqualFold(k, "Mcp-Session-Id") {
				id = strings.TrimSpace(v)
			}
		}
		return code, id, rest
	}
	code, sid, body := post(65534, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}`)
	if code != 200 || sid == "" {
		t.Fatalf("initialize as 65534: %d session %q %s", code, sid, body)
	}
	if code, _, body := post(65534, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); code != 202 {
		t.Fatalf("initialized: %d %s", code, body)
	}
	call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"exec","arguments":{"command":"echo ran-as-$((60000+5000))"}}}`
	if code, _, body := post(65533, sid, call); code != 403 || !strings.Contains(body, "another user") || strings.Contains(body, "ran-as") {
		t.Errorf("another uid with the MCP session id: %d %s", code, body)
	}
	if code, _, body := post(65534, sid, call); code != 200 || !strings.Contains(body, "ran-as-65000") {
		t.Errorf("the starter after the refusal: %d %s", code, body)
	}
	cl := api.NewClient(socket)
	defer cl.Close()
	all, err := cl.Sessions(context.Background())
	if err != nil || len(all) != 1 || all[0].Owner != 65534 {
		t.Fatalf("sessions: %+v %v", all, err)
	}
	runs := 0
	if err := cl.Events(context.Background(), all[0].ID, 0, false, func(ev event.Event) error {
		if ev.Kind() == event.KindCmdRun {
			runs++
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if runs != 1 {
		t.Errorf("the starter's session ran %d commands, want 1", runs)
	}
}
