package hooks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"

	lua "github.com/yuin/gopher-lua"

	"github.com/harnessd/harnessd/core/event"
)

// payloadTable is the Lua table a hook is given for an event payload: its
// JSON fields, and kind.
func (w *worker) payloadTable(p event.Payload) *lua.LTable {
	L := w.L
	switch p := p.(type) {
	case event.CmdRun:
		// kind, command and is_input (which a policy must read to know
		// what command means) here, the rest when read (see lazy.go).
		t := L.CreateTable(0, 3)
		t.RawSetString("kind", lua.LString(event.KindCmdRun))
		t.RawSetString("command", lua.LString(p.Command))
		t.RawSetString("is_input", lua.LBool(p.IsInput))
		w.lazyTable(L, t, lazyEntry{run: p, isRun: true})
		return t
	case event.CmdOutput:
		// Its eight fields, and no more: a Go map sized for up to eight is
		// one group, without the directory and table a larger hint makes.
		t := L.CreateTable(0, 8)
		t.RawSetString("kind", lua.LString(event.KindCmdOutput))
		t.RawSetString("exit_code", lua.LNumber(p.ExitCode))
		t.RawSetString("cwd", lua.LString(p.Cwd))
		t.RawSetString("output", lua.LString(p.Output))
		t.RawSetString("duration_ms", lua.LNumber(p.DurationMS))
		t.RawSetString("timed_out", lua.LBool(p.TimedOut))
		t.RawSetString("note", lua.LString(p.Note))
		t.RawSetString("shell_rebuilt", lua.LBool(p.ShellRebuilt))
		return t
	case nil:
		return L.CreateTable(0, 1)
	}
	t := L.CreateTable(0, 4)
	if b, err := json.Marshal(p); err == nil {
		var m map[string]any
		if json.Unmarshal(b, &m) == nil {
			for k, v := range m {
				t.RawSetString(k, goToLua(L, v))
			}
		}
	}
	t.RawSetString("kind", lua.LString(p.Kind()))
	return t
}

// goToLua converts a value decoded from JSON.
func goToLua(L *lua.LState, v any) lua.LValue {
	switch v := v.(type) {
	case string:
		return lua.LString(v)
	case float64:
		return lua.LNumber(v)
	case bool:
		return lua.LBool(v)
	case []any:
		t := L.CreateTable(len(v), 0)
		for _, x := range v {
			t.Append(goToLua(L, x))
		}
		return t
	case map[string]any:
		t := L.CreateTable(0, len(v))
		for k, x := range v {
			t.RawSetString(k, goToLua(L, x))
		}
		return t
	}
	return lua.LNil
}

// luaToGo converts a Lua value to what encoding/json would decode: strings,
// float64s, bools, nil, []any and map[string]any.
func luaToGo(v lua.LValue, depth int) (any, error) {
	if depth > 16 {
		return nil, fmt.Errorf("nested too deep")
	}
	switch v := v.(type) {
	case *lua.LNilType:
		return nil, nil
	case lua.LBool:
		return bool(v), nil
	case lua.LString:
		return string(v), nil
	case lua.LNumber:
		f := float64(v)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("%v is not a number JSON can hold", f)
		}
		return f, nil
	case *lua.LTable:
		if n := v.Len(); n > 0 {
			out := make([]any, 0, n)
			for i := 1; i <= n; i++ {
				x, err := luaToGo(v.RawGetInt(i), depth+1)
				if err != nil {
					return nil, err
				}
				out = append(out, x)
			}
			return out, nil
		}
		out := map[string]any{}
		var err error
		v.ForEach(func(k, x lua.LValue) {
			ks, ok := k.(lua.LString)
			if !ok {
				err = fmt.Errorf("table key %v is not a string", k)
				return
			}
			if out[string(ks)], err = luaToGo(x, depth+1); err != nil {
				return
			}
		})
		return out, err
	}
	return nil, fmt.Errorf("a %s cannot be part of an action", v.Type())
}

// rewrite returns base with the fields of t changed.
func rewrite(base event.Payload, t *lua.LTable) (event.Payload, error) {
	if cr, ok := base.(event.CmdRun); ok {
		var err error
		t.ForEach(func(k, v lua.LValue) {
			if err != nil {
				return
			}
			key, _ := k.(lua.LString)
			switch key {
			case "command":
				s, ok := v.(lua.LString)
				if !ok {
					err = fmt.Errorf("command must be a string, not a %s", v.Type())
				}
				cr.Command = string(s)
			case "is_input", "reset":
				b, ok := v.(lua.LBool)
				if !ok {
					err = fmt.Errorf("%s must be a boolean, not a %s", key, v.Type())
				}
				if key == "reset" {
					cr.Reset = bool(b)
				} else {
					cr.IsInput = bool(b)
				}
			case "timeout_s":
				n, ok := v.(lua.LNumber)
				if !ok || n < 0 || math.IsNaN(float64(n)) || math.IsInf(float64(n), 0) {
					err = fmt.Errorf("timeout_s must be a number of seconds >= 0")
				}
				cr.TimeoutS = float64(n)
			case "kind":
				if s, ok := v.(lua.LString); !ok || event.Kind(s) != event.KindCmdRun {
					err = fmt.Errorf("a rewrite cannot change the kind of an action")
				}
			default:
				err = fmt.Errorf("cmd_run has no field %v (it has command, is_input, timeout_s, reset)", k)
			}
		})
		return cr, err
	}
	// Any other kind: through its JSON form, strictly.
	fields, err := luaToGo(t, 0)
	if err != nil {
		return nil, err
	}
	m, ok := fields.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("give the fields to change as a table of name = value")
	}
	if k, ok := m["kind"]; ok {
		if k != string(base.Kind()) {
			return nil, fmt.Errorf("a rewrite cannot change the kind of an action")
		}
		delete(m, "kind")
	}
	b, err := json.Marshal(base)
	if err != nil {
		return nil, err
	}
	var merged map[string]any
	if err := json.Unmarshal(b, &merged); err != nil {
		return nil, err
	}
	if merged == nil {
		merged = map[string]any{}
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		merged[k] = m[k]
	}
	b, err = json.Marshal(merged)
	if err != nil {
		return nil, err
	}
	typ := reflect.TypeOf(base)
	ptr := reflect.New(typ)
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(ptr.Interface()); err != nil {
		return nil, fmt.Errorf("%s: %v", base.Kind(), err)
	}
	p, ok := ptr.Elem().Interface().(event.Payload)
	if !ok {
		return nil, fmt.Errorf("%s cannot be rewritten", base.Kind())
	}
	return p, nil
}
