package hooks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harnessd/harnessd/core/event"
	"github.com/harnessd/harnessd/core/files"
)

// writeHooks writes files (name -> Lua source) to a new directory.
func writeHooks(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// load loads the hooks in dirs and checks, when the test ends, that the
// engine's pool still hands out working states.
func load(t testing.TB, opts Options) *Engine {
	t.Helper()
	e, err := Load(opts)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	t.Cleanup(func() {
		if _, err := e.Action(context.Background(), testSession, event.Message{Text: "still alive?"}); err != nil {
			t.Errorf("engine unusable after the test: %v", err)
		}
	})
	return e
}

func loadFiles(t testing.TB, files map[string]string) *Engine {
	t.Helper()
	return load(t, Options{Dirs: []Dir{{Path: writeHooks(t, files)}}})
}

var testSession = Session{ID: "s1", Workspace: "/workspace", Profile: "default"}

func act(t testing.TB, e *Engine, command string) Decision {
	t.Helper()
	d, err := e.Action(context.Background(), testSession, event.CmdRun{Command: command})
	if err != nil {
		t.Fatalf("Action(%q): %v", command, err)
	}
	return d
}

func TestVerdicts(t *testing.T) {
	e := loadFiles(t, map[string]string{"p.lua": `
harness.on("action.cmd_run", function(ev)
  if ev.command == "v" then return harness.veto("no v") end
  if ev.command == "a" then return harness.ask("sure?") end
  if ev.command == "r" then return harness.rewrite({command = "r2"}, "renamed") end
  if ev.command == "silent" then harness.veto("said without return") end
end)`})
	tests := []struct {
		cmd, hook, reason string
		want              Verdict
	}{
		{"v", "p.lua:3", "no v", Veto},
		{"a", "p.lua:4", "sure?", Ask},
		{"r", "p.lua:5", "renamed", Rewrite},
		{"silent", "p.lua:6", "said without return", Veto},
		{"ls", "", "", Allow},
	}
	for _, tt := range tests {
		d := act(t, e, tt.cmd)
		if d.Verdict != tt.want || !strings.HasSuffix(d.Hook, tt.hook) || d.Reason != tt.reason || d.Err != nil {
			t.Errorf("%s: got %+v, want %s at %s (%q)", tt.cmd, d, tt.want, tt.hook, tt.reason)
		}
	}
	if d := act(t, e, "r"); d.Action != (event.CmdRun{Command: "r2"}) {
		t.Errorf("rewrite: Action = %#v", d.Action)
	}
	// Other kinds reach action.* but not action.cmd_run.
	d, err := e.Action(context.Background(), testSession, event.Message{Text: "v"})
	if err != nil || d.Verdict != Allow {
		t.Errorf("message: %+v, %v", d, err)
	}
}

func TestStrictestWins(t *testing.T) {
	files := map[string]string{
		"1_allow.lua":   `harness.on("action.*", function(ev) end)`,
		"2_rewrite.lua": `harness.on("action.cmd_run", function(ev) if ev.command == "x" then return harness.rewrite{timeout_s = 5} end end)`,
		"3_ask.lua":     `harness.on("action.cmd_run", function(ev) if ev.command ~= "quiet" then return harness.ask("ask " .. ev.command) end end)`,
		"4_veto.lua":    `harness.on("action.cmd_run", function(ev) if ev.command == "y" then return harness.veto("veto y") end end)`,
	}
	e := loadFiles(t, files)
	if d := act(t, e, "y"); d.Verdict != Veto || d.Reason != "veto y" {
		t.Errorf("y: %+v", d)
	}
	d := act(t, e, "x")
	if d.Verdict != Ask || d.Reason != "ask x" {
		t.Errorf("x: %+v", d)
	}
	if d.Action != (event.CmdRun{Command: "x", TimeoutS: 5}) {
		t.Errorf("x: an ask after a rewrite should carry the rewritten action, got %#v", d.Action)
	}
	if d := act(t, e, "quiet"); d.Verdict != Allow {
		t.Errorf("quiet: %+v", d)
	}
	// Order of the files does not matter: the veto in the first file wins too.
	files["0_veto.lua"] = `harness.on("action.*", function(ev) return harness.veto("first") end)`
	e = loadFiles(t, files)
	if d := act(t, e, "x"); d.Verdict != Veto || d.Reason != "first" {
		t.Errorf("veto first: %+v", d)
	}
}

func TestRewriteIsCheckedAgain(t *testing.T) {
	e := loadFiles(t, map[string]string{
		"1_guard.lua":   `harness.on("action.cmd_run", function(ev) if ev.command:find("danger") then return harness.veto("danger") end end)`,
		"2_rewrite.lua": `harness.on("action.cmd_run", function(ev) if ev.command == "safe" then return harness.rewrite{command = "danger"} end end)`,
	})
	if d := act(t, e, "safe"); d.Verdict != Veto || d.Reason != "danger" {
		t.Errorf("a rewrite slipped past a veto: %+v", d)
	}
	e = loadFiles(t, map[string]string{
		"loop.lua": `harness.on("action.cmd_run", function(ev) return harness.rewrite{command = ev.command .. "!"} end)`,
	})
	if d := act(t, e, "x"); d.Verdict != Veto || !strings.Contains(d.Reason, "kept rewriting") {
		t.Errorf("unsettled rewrite: %+v", d)
	}
	e = loadFiles(t, map[string]string{
		"idem.lua": `harness.on("action.cmd_run", function(ev)
  if not ev.command:find("^timeout ") then return harness.rewrite({command = "timeout 60 " .. ev.command}, "bounded") end
end)`,
	})
	if d := act(t, e, "make"); d.Verdict != Rewrite || d.Action.(event.CmdRun).Command != "timeout 60 make" || d.Reason != "bounded" {
		t.Errorf("idempotent rewrite: %+v", d)
	}
}

func TestRewriteFields(t *testing.T) {
	e := loadFiles(t, map[string]string{"r.lua": `
harness.on("action.cmd_run", function(ev)
  if ev.command == "bad" then return harness.rewrite{nope = 1} end
  if ev.command == "kind" then return harness.rewrite{kind = "message"} end
  return harness.rewrite{reset = true, is_input = false, timeout_s = 2.5}
end)
harness.on("action.message", function(ev)
  if not ev.text:find("?", 1, true) then return harness.rewrite{text = ev.text .. "?"} end
end)`})
	if d := act(t, e, "ok"); d.Verdict != Rewrite || d.Action != (event.CmdRun{Command: "ok", Reset: true, TimeoutS: 2.5}) {
		t.Errorf("ok: %+v", d)
	}
	for _, c := range []string{"bad", "kind"} {
		if d := act(t, e, c); d.Verdict != Veto || d.Err == nil || !strings.Contains(d.Hook, "r.lua:") {
			t.Errorf("%s: %+v", c, d)
		}
	}
	d, _ := e.Action(context.Background(), testSession, event.Message{Text: "hi"})
	if d.Verdict != Rewrite || d.Action != (event.Message{Text: "hi?"}) {
		t.Errorf("message rewrite: %+v", d)
	}
}

func TestFailClosed(t *testing.T) {
	files := map[string]string{"f.lua": `
harness.on("action.cmd_run", function(ev)
  if ev.command == "err" then
    error("boom")
  elseif ev.command == "nil" then
    local t = nil
    return t.x
  elseif ev.command == "loop" then
    while true do end
  elseif ev.command == "pcall-loop" then
    while true do pcall(function() while true do end end) end
  elseif ev.command == "recurse" then
    local function f() return 1 + f() end
    return f()
  elseif ev.command == "string" then
    return "veto"
  elseif ev.command == "rep" then
    return string.rep("x", 1e9)
  elseif ev.command == "format" then
    return string.format("%99999999d", 1)
  end
end)`}
	for _, failOpen := range []bool{false, true} {
		e := load(t, Options{Dirs: []Dir{{Path: writeHooks(t, files), FailOpen: failOpen}}, Budget: 50 * time.Millisecond})
		for _, tt := range []struct{ cmd, line, msg string }{
			{"err", "f.lua:4", "boom"},
			{"nil", "f.lua:7", "attempt to index"},
			{"loop", "f.lua:", "overran its budget of 50ms"},
			{"pcall-loop", "f.lua:", "overran"},
			{"recurse", "f.lua:", "stack overflow"},
			{"string", "f.lua:2", "returned a string"},
			{"rep", "f.lua:18", "string.rep"},
			{"format", "f.lua:20", "string.format"},
		} {
			start := time.Now()
			d := act(t, e, tt.cmd)
			if took := time.Since(start); took > time.Second {
				t.Errorf("%s took %v, budget 50ms", tt.cmd, took)
			}
			if failOpen {
				if d.Verdict != Allow {
					t.Errorf("fail-open %s: %+v", tt.cmd, d)
				}
				continue
			}
			if d.Verdict != Veto || !strings.Contains(d.Hook, "/"+tt.line) || !strings.Contains(d.Reason, tt.msg) || !errors.Is(d.Err, ErrHook) {
				t.Errorf("%s: got %+v (err %v); want a veto at %s… saying %q", tt.cmd, d, d.Err, tt.line, tt.msg)
			}
		}
	}
}

func TestCallerContext(t *testing.T) {
	e := loadFiles(t, map[string]string{"loop.lua": `harness.on("action.cmd_run", function() while true do end end)`})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	d, err := e.Action(ctx, testSession, event.CmdRun{Command: "x"})
	if !errors.Is(err, context.Canceled) || d.Verdict != Veto {
		t.Errorf("cancelled: %+v, %v", d, err)
	}
}

// TestCallerContextMidCall checks that a caller's context ending stops a
// hook under way, long before its budget.
func TestCallerContextMidCall(t *testing.T) {
	e := load(t, Options{Budget: time.Minute, Dirs: []Dir{{Path: writeHooks(t, map[string]string{
		"loop.lua": `harness.on("action.cmd_run", function() while true do end end)`,
	})}}})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	d, err := e.Action(ctx, testSession, event.CmdRun{Command: "x"})
	if !errors.Is(err, context.DeadlineExceeded) || d.Verdict != Veto {
		t.Errorf("caller's deadline: %+v, %v", d, err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("took %v to stop", took)
	}
}

func TestBudget(t *testing.T) {
	var b budget
	b.start(context.Background(), time.Hour)
	for i := 0; i < 10*budgetCheck; i++ {
		if b.Done() != nil {
			t.Fatalf("Done at instruction %d of an hour's budget", i)
		}
	}
	if b.Err() != nil {
		t.Fatalf("Err = %v within the budget", b.Err())
	}
	b.start(context.Background(), time.Nanosecond)
	time.Sleep(time.Millisecond)
	n := 0
	for b.Done() == nil {
		n++
	}
	if n >= budgetCheck {
		t.Errorf("a spent budget went %d instructions unnoticed", n)
	}
	if b.stop(); !errors.Is(b.Err(), context.DeadlineExceeded) {
		t.Errorf("Err = %v, want DeadlineExceeded", b.Err())
	}
	select {
	case <-b.Done():
	default:
		t.Error("Done of a spent budget is not closed")
	}
	ctx, cancel := context.WithCancel(context.Background())
	b.start(ctx, time.Hour)
	cancel()
	if !errors.Is(b.Err(), context.Canceled) {
		t.Errorf("Err = %v after the parent was cancelled", b.Err())
	}
	b.clear()
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"syntax", "harness.on(\"action.*\", function(ev)\n  return 1 +\nend)", "syntax.lua:3: syntax error"},
		{"toplevel", "local x = nil\nx.y = 1", "toplevel.lua:2: attempt to index"},
		{"pattern", "harness.on(\"action.cmd_rnu\", function() end)", "pattern.lua:1: harness.on: unknown event \"action.cmd_rnu\""},
		{"example", "harness.on(\"action.*\", function() end)\n\nharness.examples{veto = {\"rm -rf /\"}}", `example.lua:3: example veto "rm -rf /" failed: got allow`},
		{"toplevel_loop", "while true do end", "toplevel_loop.lua:1: overran its budget"},
		{"deep", strings.Repeat("(", 300), "deep.lua: nested more than 200 deep"},
		{"on_in_hook", "harness.on(\"action.*\", function() harness.on(\"action.*\", print) end)\nharness.examples{allow = {\"x\"}}", "harness.on may only be called when the file loads"},
	}
	for _, tt := range tests {
		_, err := Load(Options{Dirs: []Dir{{Path: writeHooks(t, map[string]string{tt.name + ".lua": tt.src})}}})
		if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, ErrLoad) {
			t.Errorf("%s: err = %v, want %q", tt.name, err, tt.want)
		}
	}
	if _, err := Load(Options{Dirs: []Dir{{Path: "/does/not/exist"}}}); err == nil {
		t.Error("a missing directory loaded")
	}
	// Every failing file is named, not only the first.
	dir := writeHooks(t, map[string]string{"a.lua": "x = ", "b.lua": "y = ", "ok.lua": ""})
	_, err := Load(Options{Dirs: []Dir{{Path: dir}}})
	if err == nil || !strings.Contains(err.Error(), "a.lua") || !strings.Contains(err.Error(), "b.lua") {
		t.Errorf("err = %v", err)
	}
}

func TestReload(t *testing.T) {
	dir := writeHooks(t, map[string]string{"p.lua": `harness.on("action.cmd_run", function() return harness.veto("v1") end)`})
	e := load(t, Options{Dirs: []Dir{{Path: dir}}})
	if d := act(t, e, "x"); d.Reason != "v1" {
		t.Fatalf("v1: %+v", d)
	}
	if err := os.WriteFile(filepath.Join(dir, "p.lua"), []byte("harness.on(\"action.cmd_run\", function()\n  return harness.veto(\"v2\"\nend)"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := e.Reload()
	if err == nil || !strings.Contains(err.Error(), "p.lua:3") {
		t.Fatalf("Reload of a broken file: %v", err)
	}
	if d := act(t, e, "x"); d.Reason != "v1" {
		t.Fatalf("the previous set did not stay: %+v", d)
	}
	if err := os.WriteFile(filepath.Join(dir, "p.lua"), []byte(`harness.on("action.cmd_run", function() return harness.veto("v2") end)`), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := e.Reload()
	if err != nil || rep.Handlers != 1 || len(rep.Files) != 1 || rep.Files[0].Name != filepath.Join(dir, "p.lua") {
		t.Fatalf("Reload: %+v, %v", rep, err)
	}
	if d := act(t, e, "x"); d.Reason != "v2" {
		t.Fatalf("v2: %+v", d)
	}
}

func TestSandbox(t *testing.T) {
	src := `
for _, name in ipairs{"os", "io", "debug", "package", "load", "loadstring", "dofile", "loadfile", "require",
    "module", "collectgarbage", "getfenv", "setfenv", "rawset", "newproxy", "_printregs", "coroutine", "channel"} do
  if _G[name] ~= nil then error(name .. " is reachable") end
end
if string.dump ~= nil then error("string.dump is reachable") end
if pcall(function() harness.veto = nil end) then error("harness is writable") end
if pcall(function() harness.session.id = "x" end) then error("harness.session is writable") end
if pcall(setmetatable, harness, {}) then error("harness's metatable can be changed") end
-- each file has its own globals
leaked = "from sandbox.lua"
harness.on("action.cmd_run", function(ev)
  if ev.command == "session" then
    return harness.veto(harness.session.id .. " " .. harness.session.workspace .. " " .. harness.session.profile)
  end
end)`
	e := loadFiles(t, map[string]string{
		"sandbox.lua": src,
		"zz.lua":      `if leaked ~= nil then error("globals leak between files") end`,
	})
	if d := act(t, e, "session"); d.Reason != "s1 /workspace default" {
		t.Errorf("harness.session: %+v", d)
	}
}

func TestHelpers(t *testing.T) {
	e := loadFiles(t, map[string]string{"h.lua": `
local function check(cond, what) if not cond then error("failed: " .. what, 2) end end
check(harness.has_flag({"-rf", "/"}, "-r"), "cluster")
check(harness.has_flag({"-f", "-R"}, "-r", "-R"), "any of")
check(harness.has_flag({"--recursive=yes"}, "--recursive"), "long=value")
check(not harness.has_flag({"--", "-r"}, "-r"), "after --")
check(not harness.has_flag({"--rf"}, "-r"), "long is no cluster")
check(harness.any_arg({"-rf", "./build", "/"}, "/") == "/", "any_arg exact")
check(harness.any_arg({"./build"}, "/") == nil, "any_arg no partial")
check(harness.any_arg({"/etc/passwd"}, "/etc/*") == "/etc/passwd", "any_arg glob")
check(harness.match("/usr/bin/rm", "*/rm"), "glob crosses /")
check(harness.match("rm", "^r.$"), "lua pattern")
check(not harness.match("xrm", "^rm"), "lua anchored")
check(harness.match("a]", "[]a]]"), "class with ]")
check(not harness.pcall, "no pcall in harness")
local set = harness.patterns{"*.ssh/id_*", "/etc/*", "^/dev/sd"}
check(harness.match("/home/x/.ssh/id_rsa", set) and harness.match("/dev/sda", "x", set), "match a set")
check(not harness.match("/home/x/.ssh/config", set), "set no match")
check(harness.any_arg({"a", "/etc/passwd"}, "b", set) == "/etc/passwd", "any_arg a set")
check(harness.any_arg({"a"}, set) == nil, "any_arg a set, none")
check(tostring(set) == "patterns: 3" and getmetatable(set) == false, "set is opaque")
check(not pcall(harness.patterns, {"[a"}), "bad glob in a set")
check(not pcall(harness.patterns, {1, {}}), "not a string in a set")
check(not pcall(harness.match, "x", harness.veto), "a function is no pattern")
local cmds = harness.commands("sudo rm -rf / | cat")
check(#cmds == 3 and cmds[2].name == "rm" and cmds[2].via[1] == "sudo" and cmds[3].feeds[1] == "sudo", "commands")
check(cmds[2].args[1] == "-rf" and cmds[2].text == "rm -rf /", "commands args")
local d = harness.commands("$x -rf /")
check(d[1].dynamic and d[1].name == "", "dynamic")
local u = harness.commands("echo 'x")
check(u[1].unparseable and u[1].error ~= nil, "unparseable")
harness.log("loaded", 1, true)
print("printed")
`})
	_ = e
}

// TestLazyTables checks that the tables filled in as they are read (see
// lazy.go) look to a hook exactly like tables filled in at once.
func TestLazyTables(t *testing.T) {
	e := load(t, Options{MaxConcurrent: 1, Dirs: []Dir{{Path: writeHooks(t, map[string]string{"l.lua": `
local function check(cond, what) if not cond then error("failed: " .. what, 2) end end
harness.on("action.cmd_run", function(ev)
  if ev.command == "keep" then kept = harness.commands("ls -l")[1] return end
  if ev.command == "stale" then return harness.veto(tostring(#kept.args) .. " " .. tostring(kept.feeds)) end
  local keys = {}
  for k in pairs(ev) do keys[#keys + 1] = k end
  table.sort(keys)
  check(table.concat(keys, ",") == "command,is_input,kind,reset,timeout_s", "pairs(ev): " .. table.concat(keys, ","))
  check(ev.timeout_s == 7 and ev.is_input == false and ev.reset == true, "ev fields")

  local c = harness.commands("sudo X=1 rm -rf / | cat")[2]
  check(c.name == "rm" and c.argv0 == "rm" and c.text == "rm -rf /", "read")
  check(c.assigns[1] == "X=1" and c.via[1] == "sudo" and c.dynamic_args == false and c.error == nil, "lists")
  check(c.feeds == c.feeds, "the same table each read")
  table.insert(c.feeds, "x")
  check(#c.feeds == 1, "a list changed by the hook stays changed")
  keys = {}
  for k in pairs(harness.commands("ls")[1]) do keys[#keys + 1] = k end
  table.sort(keys)
  check(table.concat(keys, ",") == "args,argv0,assigns,dynamic,dynamic_args,feeds,name,redirs,text,unparseable,via", "pairs(c): " .. table.concat(keys, ","))
  local u = harness.commands("echo 'x")[1]
  check(rawget(u, "error") ~= nil and u.unparseable, "rawget")
  local d = harness.commands("ls")[1]
  check(next(d) ~= nil, "next")
  d.text = nil
  check(d.text == nil, "assigned nil stays nil")
  d.argv0 = "other"
  check(d.argv0 == "other", "assigned stays")
  d.extra = 1
  check(d.extra == 1, "new fields")
  check(getmetatable(d) == false and not pcall(setmetatable, d, nil), "protected metatable")
  return harness.veto("ok")
end)`})}}})
	d, err := e.Action(context.Background(), testSession, event.CmdRun{Command: "check", TimeoutS: 7, Reset: true})
	if err != nil || d.Reason != "ok" {
		t.Fatalf("%+v %v", d, err)
	}
	// A table kept from an earlier call: what was read is there, the rest
	// is an error (hooks must not keep state), so the action is vetoed.
	act(t, e, "keep")
	if d := act(t, e, "stale"); d.Verdict != Veto || d.Err == nil || !strings.Contains(d.Reason, "earlier hook call") {
		t.Errorf("stale table: %+v", d)
	}
}

func TestLogging(t *testing.T) {
	var buf bytes.Buffer
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return buf.Write(p)
	}), nil))
	e := load(t, Options{Dirs: []Dir{{Path: writeHooks(t, map[string]string{"l.lua": `
harness.on("session.start", function(ev) harness.log("hello", ev.name, harness.session.id) end)
harness.on("session.end", function(ev) error("bye") end)`})}}, Logger: logger})
	if err := e.Event(context.Background(), testSession, "session.start"); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	out := buf.String()
	mu.Unlock()
	if !strings.Contains(out, "hello session.start s1") || !strings.Contains(out, "hook=") {
		t.Errorf("log: %s", out)
	}
	if err := e.Event(context.Background(), testSession, "session.end"); err == nil || !strings.Contains(err.Error(), "l.lua:3: bye") {
		t.Errorf("session.end: %v", err)
	}
	if err := e.Event(context.Background(), testSession, "session.middle"); !errors.Is(err, ErrBadEvent) {
		t.Errorf("unknown event: %v", err)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

func TestObservation(t *testing.T) {
	e := loadFiles(t, map[string]string{
		"a.lua": `harness.on("observation.cmd_output", function(ev, action)
  if action.command == "go test" then
    return {trim = {head = 5, tail = 50, keep = {"FAIL"}}, max_chars = 1000,
            redact = {{pattern = "sec(ret)", label = "s"}}}
  end
end)`,
		"b.lua": `harness.on("observation.*", function(ev, action)
  if ev.exit_code ~= nil and ev.exit_code ~= 0 then
    return {trim = {head = 20, tail = 10, keep = {"panic:", "FAIL"}, line_cap = 100}, max_chars = 500,
            redact = {{pattern = [[token=(?P<secret>\w+)]], label = "token"}}}
  end
end)`,
	})
	ctx := context.Background()
	set, err := e.Observation(ctx, testSession, event.CmdRun{Command: "go test"}, event.CmdOutput{ExitCode: 1, Output: "x"})
	if err != nil {
		t.Fatal(err)
	}
	c := set.Trim
	if c == nil || c.Head != 20 || c.Tail != 50 || c.LineCap != 100 || set.MaxChars != 500 || len(set.Redactions) != 2 {
		t.Fatalf("settings: %+v %+v", set, c)
	}
	if n := strings.Count(strings.Join(c.Keywords, ","), "FAIL"); n != 1 {
		t.Errorf("keywords not merged: %q", c.Keywords)
	}
	if got := Redact("a secret and token=abc123 here", set.Redactions); got != "a [REDACTED s] and token=[REDACTED token] here" {
		t.Errorf("Redact: %q", got)
	}
	// Settings asked before the output exists.
	set, err = e.Observation(ctx, testSession, event.CmdRun{Command: "go test"}, nil)
	if err != nil || set.Trim == nil || set.Trim.Head != 5 {
		t.Errorf("no output yet: %+v, %v", set, err)
	}
	// Nothing asked.
	set, err = e.Observation(ctx, testSession, event.CmdRun{Command: "ls"}, event.CmdOutput{})
	if err != nil || set.Trim != nil || set.MaxChars != 0 || set.Redactions != nil {
		t.Errorf("nothing asked: %+v, %v", set, err)
	}
}

func TestObservationErrors(t *testing.T) {
	for _, tt := range []struct{ ret, want string }{
		{`"x"`, "returned a string"},
		{`{trim = {head = -1}}`, "trim.head must be a whole number"},
		{`{trim = {hed = 1}}`, "trim has no setting hed"},
		{`{colour = 1}`, "unknown setting colour"},
		{`{redact = {{pattern = "("}}}`, "redact[1].pattern"},
		{`{redact = {{pattern = "x", label = "a b"}}}`, "redact[1].label"},
		{`{trim = {keep = {"a\nb"}}}`, "trim.keep[1]"},
	} {
		for _, failOpen := range []bool{false, true} {
			dir := writeHooks(t, map[string]string{"o.lua": "harness.on(\"observation.*\", function()\n  return " + tt.ret + "\nend)"})
			e := load(t, Options{Dirs: []Dir{{Path: dir, FailOpen: failOpen}}})
			_, err := e.Observation(context.Background(), testSession, event.CmdRun{Command: "x"}, event.CmdOutput{})
			if failOpen {
				if err != nil {
					t.Errorf("fail-open %s: %v", tt.ret, err)
				}
			} else if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "o.lua:1") {
				t.Errorf("%s: err = %v, want %q", tt.ret, err, tt.want)
			}
		}
	}
}

func TestConcurrentActions(t *testing.T) {
	// The budget is wall-clock time: under the race detector, on a shared
	// machine, 50ms is not enough. Budgets are tested in TestFailClosed.
	e := load(t, Options{Budget: 10 * time.Second, Dirs: []Dir{Builtin, {Path: writeHooks(t, map[string]string{"s.lua": `
harness.on("action.cmd_run", function(ev)
  if ev.command == "who" then return harness.veto(harness.session.id) end
end)`})}}})
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for g := 0; g < 32; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := Session{ID: "s" + string(rune('A'+g)), Workspace: "/workspace"}
			for i := 0; i < 200; i++ {
				var cmd string
				var want Verdict
				switch i % 4 {
				case 0:
					cmd, want = "rm -rf /", Veto
				case 1:
					cmd, want = "ls -la", Allow
				case 2:
					cmd, want = "rm -rf .", Ask
				case 3:
					cmd, want = "who", Veto
				}
				d, err := e.Action(context.Background(), s, event.CmdRun{Command: cmd})
				if err != nil || d.Verdict != want || (cmd == "who" && d.Reason != s.ID) {
					errs <- cmd + ": " + d.Verdict.String() + " " + d.Reason
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

func TestTest(t *testing.T) {
	dir := writeHooks(t, map[string]string{"p.lua": `
harness.on("action.cmd_run", function(ev)
  if ev.command == "rm -rf /" then return harness.veto("no") end
  if ev.command == "make" then return harness.rewrite({command = "make -j2"}, "parallel") end
end)
harness.on("observation.cmd_output", function(ev, action)
  return {trim = {head = 1, tail = 1, keep = {"BAD"}}, redact = {{pattern = "AKIA[A-Z0-9]{16}", label = "aws"}}}
end)`})
	var out bytes.Buffer
	if err := Test(context.Background(), dir, "rm -rf /", nil, &out); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); !strings.HasPrefix(got, "veto\nhook: ") || !strings.Contains(got, "p.lua:3\nreason: no\n") {
		t.Errorf("veto:\n%s", got)
	}
	out.Reset()
	// Longer than the trimmer's budget, so that head and tail apply.
	output := "first\nmiddle BAD AKIAABCDEFGHIJKLMNOP\n" + strings.Repeat("other line of the build log\n", 400) + "last\n"
	if err := Test(context.Background(), filepath.Join(dir, "p.lua"), "make", strings.NewReader(output), &out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{"rewrite\n", "reason: parallel\n", "command: make -j2\n", "head=1 tail=1", "redact: aws", "[REDACTED aws]", "first\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
	if _, seen, _ := strings.Cut(got, "--- output"); strings.Contains(seen, "AKIA") || strings.Contains(seen, "other") {
		t.Errorf("not trimmed or redacted:\n%s", got)
	}
	if err := Test(context.Background(), writeHooks(t, map[string]string{"bad.lua": "x ="}), "ls", nil, &out); err == nil {
		t.Error("a broken file tested fine")
	}
}

// TestTestAction asks policies about file actions, as `hooks test --action`
// does: a veto by kind and path, a rewrite shown as the action's JSON, and
// a view's text redacted but not trimmed.
func TestTestAction(t *testing.T) {
	dir := writeHooks(t, map[string]string{"f.lua": `
harness.on("action.*", function(ev)
  if ev.kind:sub(1, 5) ~= "file_" then return end
  if ev.kind ~= "file_view" and ev.path:find(".github/", 1, true) then return harness.veto("CI is edited by people") end
  if ev.kind == "file_create" and ev.path:match("%.sh$") and ev.content:sub(1, 2) ~= "#!" then return harness.rewrite({content = "#!/bin/sh\n" .. ev.content}, "a shebang") end
end)
harness.on("observation.*", function(ev, action)
  return {redact = {{pattern = "AKIA[A-Z0-9]{16}", label = "aws"}}}
end)`})
	ask := func(a event.Payload, output io.Reader) string {
		t.Helper()
		var out bytes.Buffer
		if err := TestAction(context.Background(), Dir{Path: dir}, a, output, &out); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	if got := ask(files.StrReplace{Path: "/workspace/.github/workflows/ci.yml", Old: "a", New: "b"}, nil); !strings.HasPrefix(got, "veto\n") || !strings.Contains(got, "f.lua:4\nreason: CI is edited by people") {
		t.Errorf("str_replace under .github:\n%s", got)
	}
	if got := ask(files.Create{Path: "run.sh", Content: "echo hi\n"}, nil); !strings.HasPrefix(got, "rewrite\n") || !strings.Contains(got, `action: {"kind":"file_create","path":"run.sh","content":"#!/bin/sh\necho hi\n"}`) {
		t.Errorf("create run.sh:\n%s", got)
	}
	view := strings.Repeat("line of a long file\n", 3000) + "KEY=AKIAABCDEFGHIJKLMNOP\n"
	got := ask(files.View{Path: ".env"}, strings.NewReader(view))
	if !strings.HasPrefix(got, "allow\n") || !strings.Contains(got, "KEY=[REDACTED aws]") || strings.Count(got, "line of a long file") != 3000 {
		t.Errorf("a view of .env: %.300s … %d bytes", got, len(got))
	}
}

// TestRedactionsMerged: the same redaction from two hooks is kept once,
// credited to the first, whether there are a few (compared one by one)
// or many (a map); different labels of one pattern are both kept.
func TestRedactionsMerged(t *testing.T) {
	many := ""
	for i := range 40 {
		many += fmt.Sprintf("{pattern = \"k%d=\\\\w+\", label = \"k%d\"}, ", i, i)
	}
	dir := writeHooks(t, map[string]string{
		"a.lua": `harness.on("observation.*", function() return {redact = {` + many + `{pattern = "AKIA\\w+", label = "aws"}}} end)`,
		"b.lua": `harness.on("observation.*", function() return {redact = {{pattern = "AKIA\\w+", label = "aws"}, {pattern = "AKIA\\w+", label = "other"}, {pattern = "k3=\\w+", label = "k3"}}} end)`,
	})
	e, err := Load(Options{Dirs: []Dir{{Path: dir}}})
	if err != nil {
		t.Fatal(err)
	}
	set, err := e.Observation(context.Background(), Session{ID: "s"}, event.CmdRun{Command: "env"}, event.CmdOutput{Output: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Redactions) != 42 {
		t.Fatalf("%d redactions, want 40 + aws + other", len(set.Redactions))
	}
	for _, r := range set.Redactions {
		if r.Label == "aws" && !strings.HasSuffix(r.Hook, "a.lua:1") || r.Label == "other" && !strings.HasSuffix(r.Hook, "b.lua:1") {
			t.Errorf("%s credited to %s", r.Label, r.Hook)
		}
	}
}
