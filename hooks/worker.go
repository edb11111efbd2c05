package hooks

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	lua "github.com/yuin/gopher-lua"

	"github.com/harnessd/harnessd/core/event"
	"github.com/harnessd/harnessd/hooks/shcmd"
)

// class is the kind of event a handler is for.
type class int

const (
	classAction class = iota
	classObservation
	classStart
	classEnd
	numClasses
)

// handler is one harness.on registration.
type handler struct {
	file    int
	class   class
	kind    event.Kind // "" = every kind of its class
	pattern string
	fn      *lua.LFunction
	line    int    // where harness.on was called
	where   string // "file:line", made on first use (whereOf)
}

// call is the state of the hook call under way on a worker.
type call struct {
	class     class
	action    event.Payload // the action the hook was given
	verdict   Verdict       // Allow, Ask or Veto: the strictest asked for
	hook      string        // file:line of that decision
	reason    string
	rewritten event.Payload // the action as rewritten, or nil
	rwHook    string
	rwReason  string
}

// worker is one Lua state with every hook file loaded into it. It is used
// by one goroutine at a time (it is taken from the set's pool).
type worker struct {
	set      *set
	L        *lua.LState
	handlers []handler
	byClass  [numClasses][]int
	sess     *lua.LTable // the data behind harness.session
	sessID   string
	marker   [numVerdicts]*lua.LUserData
	call     *call
	callBuf  call   // what call points to during an action hook's call
	budget   budget // the context of the hook call under way
	loading  int    // the file whose top-level code is running, or -1
	examples [][]example
	parser   *shcmd.Parser
	lazy     lazyState
	cache    cmdCache
	patterns map[string]*pattern
	patLists [8]patList
	setMeta  *lua.LTable // the metatable of harness.patterns sets
	patNext  int
	broken   bool
}

// example is one harness.examples entry.
type example struct {
	want    Verdict
	command string
	line    int
}

// newWorker makes a Lua state, sandboxes it and runs every file's
// top-level code in it. With collect, the files' examples are kept for
// checking.
func (s *set) newWorker(collect bool) (w *worker, err error) {
	e := s.eng
	L := lua.NewState(lua.Options{
		SkipOpenLibs:        true,
		CallStackSize:       e.opts.MaxStack,
		RegistrySize:        1024,
		RegistryMaxSize:     e.opts.RegistrySize,
		MinimizeStackMemory: true,
	})
	w = &worker{set: s, L: L, loading: -1, parser: shcmd.NewParser(nil)}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: setting up a Lua state: %v", ErrHook, r)
		}
		if err != nil {
			L.Close()
		}
	}()
	for _, lib := range []struct {
		name string
		fn   lua.LGFunction
	}{{lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable}, {lua.StringLibName, lua.OpenString}, {lua.MathLibName, lua.OpenMath}} {
		L.Push(L.NewFunction(lib.fn))
		L.Push(lua.LString(lib.name))
		L.Call(1, 0)
	}
	w.sandbox()
	w.initLazy()
	w.setMeta = setMetatable(L)
	for v := Verdict(0); v < numVerdicts; v++ {
		ud := L.NewUserData()
		ud.Value = v
		w.marker[v] = ud
	}
	w.sess = L.NewTable()
	for _, k := range []string{"id", "workspace", "profile"} {
		w.sess.RawSetString(k, lua.LString(""))
	}
	sessProxy := readOnly(L, w.sess, "harness.session")
	globals := L.Get(lua.GlobalsIndex).(*lua.LTable)
	if collect {
		w.examples = make([][]example, len(s.files))
	}
	for i, f := range s.files {
		env := L.NewTable()
		globals.ForEach(func(k, v lua.LValue) { env.RawSet(k, v) })
		env.RawSetString("_G", env)
		env.RawSetString("harness", w.harness(i, sessProxy))
		fn := L.NewFunctionFromProto(f.proto)
		fn.Env = env
		b := &w.budget
		b.start(context.Background(), e.opts.Budget*time.Duration(budgetMult(ErrLoad)))
		L.SetContext(b)
		w.loading = i
		err := L.CallByParam(lua.P{Fn: fn, NRet: 0, Protect: true})
		w.loading = -1
		w.dropLazy()
		L.RemoveContext()
		b.stop()
		if err != nil {
			return nil, w.fileError(f.name, 0, err, b.Err(), ErrLoad)
		}
		b.clear()
	}
	for i, h := range w.handlers {
		w.byClass[h.class] = append(w.byClass[h.class], i)
	}
	return w, nil
}

// sandbox removes what a hook must not reach and bounds what could make
// one Go call run long or allocate without end.
func (w *worker) sandbox() {
	L := w.L
	g := L.Get(lua.GlobalsIndex).(*lua.LTable)
	for _, name := range []string{"dofile", "loadfile", "load", "loadstring", "require", "module",
		"collectgarbage", "getfenv", "setfenv", "rawset", "newproxy", "_printregs", "print"} {
		g.RawSetString(name, lua.LNil)
	}
	g.RawSetString("print", L.NewFunction(func(L *lua.LState) int {
		w.logArgs(L, "print")
		return 0
	}))
	str := g.RawGetString("string").(*lua.LTable)
	str.RawSetString("dump", lua.LNil)
	rep := str.RawGetString("rep").(*lua.LFunction)
	str.RawSetString("rep", L.NewFunction(func(L *lua.LState) int {
		s := L.CheckString(1)
		n := L.CheckInt(2)
		if n > 0 && int64(len(s))*int64(n) > maxString {
			L.RaiseError("string.rep: result longer than %d bytes", maxString)
		}
		return rep.GFunction(L)
	}))
	format := str.RawGetString("format").(*lua.LFunction)
	str.RawSetString("format", L.NewFunction(func(L *lua.LState) int {
		if !fmtSafe.MatchString(L.CheckString(1)) {
			L.RaiseError("string.format: width and precision may have at most 2 digits, and * is not allowed")
		}
		return format.GFunction(L)
	}))
	gsub := str.RawGetString("gsub").(*lua.LFunction)
	str.RawSetString("gsub", L.NewFunction(func(L *lua.LState) int {
		s := L.CheckString(1)
		if r, ok := L.Get(3).(lua.LString); ok && int64(len(s)+1)*int64(len(r)+1) > maxString {
			L.RaiseError("string.gsub: result could be longer than %d bytes", maxString)
		}
		return gsub.GFunction(L)
	}))
}

// maxString bounds the strings string.rep and string.gsub may build.
const maxString = 4 << 20

// fmtSafe matches format strings whose conversions have widths and
// precisions of at most two digits, as Lua 5.1 requires.
var fmtSafe = regexp.MustCompile(`^(?:[^%]|%%|%[-+ #0]*[0-9]{0,2}(?:\.[0-9]{0,2})?[a-zA-Z])*$`)

// readOnly returns a table that reads from data and refuses writes.
func readOnly(L *lua.LState, data *lua.LTable, name string) *lua.LTable {
	proxy := L.NewTable()
	mt := L.NewTable()
	mt.RawSetString("__index", data)
	mt.RawSetString("__newindex", L.NewFunction(func(L *lua.LState) int {
		L.RaiseError("%s is read-only", name)
		return 0
	}))
	mt.RawSetString("__metatable", lua.LFalse)
	L.SetMetatable(proxy, mt)
	return proxy
}

// fileError turns an error of a Lua call into a *FileError naming the
// file and line the message names (else the given line).
func (w *worker) fileError(name string, line int, err error, ctxErr error, sentinel error) *FileError {
	msg := err.Error()
	var ae *lua.ApiError
	if errors.As(err, &ae) && ae.Object != nil {
		msg = ae.Object.String()
	}
	file := name
	if f, l, rest, ok := splitWhere(msg); ok {
		file, line, msg = f, l, rest
	}
	if errors.Is(ctxErr, context.DeadlineExceeded) {
		msg = fmt.Sprintf("overran its budget of %v", w.set.eng.opts.Budget*time.Duration(budgetMult(sentinel)))
	}
	return &FileError{File: file, Line: line, Msg: msg, Err: sentinel}
}

func budgetMult(sentinel error) int64 {
	if sentinel == ErrLoad {
		return 20
	}
	return 1
}

// splitWhere splits "file:12: message" into its parts.
func splitWhere(msg string) (file string, line int, rest string, ok bool) {
	first, _, _ := strings.Cut(msg, "\n")
	for i := 0; i < len(first); i++ {
		if first[i] != ':' {
			continue
		}
		j := i + 1
		for j < len(first) && first[j] >= '0' && first[j] <= '9' {
			j++
		}
		if j == i+1 || j >= len(first) || first[j] != ':' {
			continue
		}
		n, err := strconv.Atoi(first[i+1 : j])
		if err != nil {
			continue
		}
		return first[:i], n, strings.TrimSpace(msg[j+1:]), true
	}
	return "", 0, msg, false
}

// invoke calls h.fn with args under the budget and returns what it
// returned (one value).
//
// The budget is wall-clock time. A call that overran it having run few Lua
// instructions was starved of CPU (a loaded machine, a long GC) rather
// than slow, and is run once more, from a clean slate, before it counts
// as an overrun.
func (w *worker) invoke(ctx context.Context, h *handler, args ...lua.LValue) (lua.LValue, error) {
	L := w.L
	defer w.dropLazy()
	limit := w.set.eng.opts.Budget
	b := &w.budget
	for attempt := 0; ; attempt++ {
		b.start(ctx, limit)
		L.SetContext(b)
		err := L.CallByParam(lua.P{Fn: h.fn, NRet: 1, Protect: true}, args...)
		var ret lua.LValue = lua.LNil
		if err == nil {
			ret = L.Get(-1)
			L.Pop(1)
		}
		L.RemoveContext()
		n := b.stop()
		spent := b.Err()
		b.clear()
		if err == nil {
			return ret, nil
		}
		starved := n < limit.Microseconds()*minInstrPerMicro
		if attempt == 0 && starved && ctx.Err() == nil && errors.Is(spent, context.DeadlineExceeded) {
			if w.call != nil {
				*w.call = call{class: w.call.class, action: w.call.action}
			}
			w.set.eng.log.Debug("hook starved of CPU; running it again", "hook", w.set.files[h.file].name, "instructions", n)
			continue
		}
		w.broken = true
		return nil, w.fileError(w.set.files[h.file].name, h.line, err, spent, ErrHook)
	}
}

// minInstrPerMicro is the Lua instructions per microsecond below which a
// call that overran its budget is deemed starved of CPU: a healthy core
// runs some 20 to 50.
const minInstrPerMicro = 2

// recoverBroken, deferred around a call, marks the state broken if the
// call panics (the panic goes on: it is a bug in this package), so that it
// is not used again.
func (w *worker) recoverBroken() {
	if r := recover(); r != nil {
		w.broken = true
		w.call = nil
		panic(r)
	}
}

// setSession makes s what harness.session shows.
func (w *worker) setSession(s Session) {
	if w.sessID == s.ID && s.ID != "" {
		return
	}
	w.sessID = s.ID
	w.sess.RawSetString("id", lua.LString(s.ID))
	w.sess.RawSetString("workspace", lua.LString(s.Workspace))
	w.sess.RawSetString("profile", lua.LString(s.Profile))
}

// commands analyses a command line, from the state's cache when the line
// was analysed lately.
func (w *worker) commands(src string) []luaCommand {
	return w.cache.get(src, w.parser.Commands)
}
