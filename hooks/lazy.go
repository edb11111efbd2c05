package hooks

import (
	lua "github.com/yuin/gopher-lua"

	"github.com/harnessd/harnessd/core/event"
	"github.com/harnessd/harnessd/hooks/shcmd"
)

// Lazy tables: the tables harness.commands returns and the cmd_run table
// an action hook gets have fields that hooks seldom read (a command's
// argv0, assigns, feeds, text …). Setting a string key of a gopher-lua
// table costs two map inserts and an allocation, more than most hooks
// spend reading, so those fields are filled in when first read, by the
// __index of a metatable all such tables of a state share.
//
// What a hook sees does not change: the first read of a field gives what
// an eager table would have held (and stores it), pairs, next and rawget
// fill every field in first, and a field the hook assigned, nil included,
// stays as assigned. The metatable is protected (__metatable), so
// getmetatable gives false and setmetatable fails.
//
// The Go values behind a state's lazy tables are dropped when the hook
// call that made them returns: a hook that keeps such a table for a
// later call (hooks must not keep state) gets an error reading a field
// it never read before.

// lazyEntry is what a lazy table's fields are made from.
type lazyEntry struct {
	cmd    *shcmd.Command // a harness.commands entry, or
	run    event.CmdRun   // a cmd_run action
	isRun  bool
	filled uint16 // bit i: lazy field i was filled in or assigned
}

// The lazy fields of each kind of table, in their bit order.
var (
	lazyCmdFields = []string{"argv0", "assigns", "feeds", "dynamic_args", "error", "text"}
	lazyRunFields = []string{"timeout_s", "reset"}
)

// lazyState is a Lua state's share of the machinery.
type lazyState struct {
	meta    *lua.LTable         // the shared metatable
	index   map[*lua.LTable]int // table -> its entry in entries
	entries []lazyEntry
}

func (w *worker) initLazy() {
	L := w.L
	w.lazy.index = make(map[*lua.LTable]int)
	mt := L.NewTable()
	mt.RawSetString("__index", L.NewFunction(w.lazyIndex))
	mt.RawSetString("__newindex", L.NewFunction(w.lazyNewIndex))
	mt.RawSetString("__metatable", lua.LFalse)
	w.lazy.meta = mt

	// pairs, next and rawget see every field.
	g := L.Get(lua.GlobalsIndex).(*lua.LTable)
	next := g.RawGetString("next").(*lua.LFunction)
	rawget := g.RawGetString("rawget").(*lua.LFunction)
	g.RawSetString("next", L.NewFunction(func(L *lua.LState) int {
		if t, ok := L.Get(1).(*lua.LTable); ok {
			w.fillAll(L, t)
		}
		return next.GFunction(L)
	}))
	g.RawSetString("pairs", L.NewFunction(func(L *lua.LState) int {
		t := L.CheckTable(1)
		w.fillAll(L, t)
		L.Push(next)
		L.Push(t)
		L.Push(lua.LNil)
		return 3
	}))
	g.RawSetString("rawget", L.NewFunction(func(L *lua.LState) int {
		if t, ok := L.Get(1).(*lua.LTable); ok {
			w.fillAll(L, t)
		}
		return rawget.GFunction(L)
	}))
}

// lazyTable makes t lazy, its lazy fields coming from e.
func (w *worker) lazyTable(L *lua.LState, t *lua.LTable, e lazyEntry) {
	w.lazy.index[t] = len(w.lazy.entries)
	w.lazy.entries = append(w.lazy.entries, e)
	t.Metatable = w.lazy.meta
}

// dropLazy forgets the Go values behind the lazy tables made so far: the
// hook call that could read them has returned.
func (w *worker) dropLazy() {
	if len(w.lazy.entries) == 0 {
		return
	}
	clear(w.lazy.index)
	clear(w.lazy.entries) // no pointers kept into the command cache
	w.lazy.entries = w.lazy.entries[:0]
}

// entry returns t's lazy entry and the names of its lazy fields.
func (w *worker) entry(t *lua.LTable) (*lazyEntry, []string) {
	i, ok := w.lazy.index[t]
	if !ok {
		return nil, nil
	}
	e := &w.lazy.entries[i]
	if e.isRun {
		return e, lazyRunFields
	}
	return e, lazyCmdFields
}

// lazyIndex is the shared __index: it fills in a lazy field.
func (w *worker) lazyIndex(L *lua.LState) int {
	t := L.CheckTable(1)
	key, ok := L.Get(2).(lua.LString)
	if !ok {
		L.Push(lua.LNil)
		return 1
	}
	e, fields := w.entry(t)
	if e == nil {
		if isLazyField(string(key)) {
			L.RaiseError("field %s of a table from an earlier hook call: hooks must not keep state between calls", key)
		}
		L.Push(lua.LNil)
		return 1
	}
	for i, f := range fields {
		if f != string(key) {
			continue
		}
		if e.filled&(1<<i) != 0 {
			break // assigned nil by the hook
		}
		e.filled |= 1 << i
		v := e.value(L, i)
		if v != lua.LNil {
			t.RawSetString(f, v)
		}
		L.Push(v)
		return 1
	}
	L.Push(lua.LNil)
	return 1
}

// lazyNewIndex is the shared __newindex: an assigned lazy field is the
// hook's from then on.
func (w *worker) lazyNewIndex(L *lua.LState) int {
	t := L.CheckTable(1)
	k, v := L.Get(2), L.Get(3)
	if key, ok := k.(lua.LString); ok {
		if e, fields := w.entry(t); e != nil {
			for i, f := range fields {
				if f == string(key) {
					e.filled |= 1 << i
				}
			}
		}
	}
	L.RawSet(t, k, v)
	return 0
}

// fillAll fills in every lazy field of t not yet filled in (if t is lazy).
func (w *worker) fillAll(L *lua.LState, t *lua.LTable) {
	if t.Metatable != w.lazy.meta {
		return
	}
	e, fields := w.entry(t)
	if e == nil {
		return
	}
	for i, f := range fields {
		if e.filled&(1<<i) != 0 {
			continue
		}
		e.filled |= 1 << i
		if v := e.value(L, i); v != lua.LNil {
			t.RawSetString(f, v)
		}
	}
}

func isLazyField(key string) bool {
	for _, fields := range [][]string{lazyCmdFields, lazyRunFields} {
		for _, f := range fields {
			if f == key {
				return true
			}
		}
	}
	return false
}

// value makes lazy field i of e.
func (e *lazyEntry) value(L *lua.LState, i int) lua.LValue {
	if e.isRun {
		switch lazyRunFields[i] {
		case "timeout_s":
			return lua.LNumber(e.run.TimeoutS)
		case "reset":
			return lua.LBool(e.run.Reset)
		}
		return lua.LNil
	}
	c := e.cmd
	switch lazyCmdFields[i] {
	case "argv0":
		return lua.LString(c.Argv0)
	case "assigns":
		return stringList(L, c.Assigns)
	case "feeds":
		return stringList(L, c.Feeds)
	case "dynamic_args":
		return lua.LBool(c.DynamicArgs)
	case "error":
		if c.Err != "" {
			return lua.LString(c.Err)
		}
	case "text":
		return lua.LString(c.String())
	}
	return lua.LNil
}
