package hooks

import (
	"context"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	lua "github.com/yuin/gopher-lua"

	"github.com/harnessd/harnessd/core/event"
	"github.com/harnessd/harnessd/hooks/hooksbench"
)

// FuzzLoad checks that no Lua source can panic the engine: loading it
// fails cleanly or gives an engine whose every entry point returns, in
// bounded time, without a panic.
func FuzzLoad(f *testing.F) {
	for _, s := range []string{
		hooksbench.OneHook,
		`harness.on("action.*", function(ev) return harness.veto("no") end)`,
		`harness.on("action.cmd_run", function(ev) return harness.rewrite{command = ev.command .. "!"} end)`,
		`harness.on("observation.*", function(ev, a) return {trim = {head = 1, keep = {"x"}}, redact = {{pattern = "a+"}}} end)`,
		`harness.on("session.*", function(ev) harness.log(ev.name) end)`,
		`harness.examples{veto = {"rm -rf /"}}`,
		`while true do end`,
		`local function f() return f() end f()`,
		`local t = setmetatable({}, {__index = function(t, k) return t[k] end}) return t.x`,
		`harness.on("action.*", function() error({}) end)`,
		`harness.on("action.*", function() return harness.commands(string.rep("(", 100)) end)`,
		`x = ("x"):rep(1000):gsub("x", "%0%0")`,
		`string.format("%5s", 1)`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		start := time.Now()
		e, err := Load(Options{
			Dirs:   []Dir{{Path: ".", FS: fstest.MapFS{"fuzz.lua": {Data: []byte(src)}}}},
			Budget: 5 * time.Millisecond,
		})
		if err != nil {
			return
		}
		ctx := context.Background()
		s := Session{ID: "fuzz", Workspace: "/workspace"}
		if _, err := e.Action(ctx, s, event.CmdRun{Command: "rm -rf /"}); err != nil {
			t.Errorf("Action: %v", err)
		}
		if _, err := e.Action(ctx, s, event.Message{Text: "hi"}); err != nil {
			t.Errorf("Action: %v", err)
		}
		_, _ = e.Observation(ctx, s, event.CmdRun{Command: "ls"}, event.CmdOutput{Output: "out"})
		_ = e.Event(ctx, s, "session.start")
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("took %v", d)
		}
	})
}

// FuzzPatternSet checks that a harness.patterns set matches exactly the
// strings one of its patterns matches: its filter turns none away wrongly.
func FuzzPatternSet(f *testing.F) {
	for _, seed := range [][2]string{
		{"*.ssh/id_rsa", "/root/.ssh/id_rsa"}, {"*_history", "~/.bash_history"}, {"*/etc/shadow", "/etc/shadow"},
		{"a*b", "ab"}, {"\\*x", "*x"}, {"[ab]c*", "bcd"}, {"*é?", "éé"}, {"^ab", "abc"}, {"?", "x"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, pats, s string) {
		L := lua.NewState(lua.Options{SkipOpenLibs: true})
		defer L.Close()
		srcs := strings.Split(pats, "\n")
		want := false
		for _, src := range srcs {
			ok, err := Match(s, src)
			if err != nil {
				return // a bad pattern: harness.patterns refuses it
			}
			want = want || ok
		}
		var got bool
		if err := L.CallByParam(lua.P{Fn: L.NewFunction(func(L *lua.LState) int {
			ps := &patternSet{}
			for _, src := range srcs {
				ps.pats = append(ps.pats, newPattern(L, src, "fuzz"))
			}
			ps.index()
			got = ps.match(L, s, "fuzz")
			return 0
		}), Protect: true}); err != nil {
			t.Fatalf("set %q: %v", srcs, err)
		}
		if got != want {
			t.Errorf("set %q on %q: %v, its patterns one by one: %v", srcs, s, got, want)
		}
	})
}
