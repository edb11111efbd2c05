package hooks

import (
	"fmt"
	"strings"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/pm"

	"github.com/harnessd/harnessd/core/event"
)

// harness returns the read-only harness table of file fileIdx.
func (w *worker) harness(fileIdx int, session *lua.LTable) *lua.LTable {
	L := w.L
	t := L.NewTable()
	fns := map[string]lua.LGFunction{
		"on":       func(L *lua.LState) int { return w.luaOn(L, fileIdx) },
		"veto":     func(L *lua.LState) int { return w.luaDecide(L, Veto) },
		"ask":      func(L *lua.LState) int { return w.luaDecide(L, Ask) },
		"rewrite":  w.luaRewrite,
		"commands": w.luaCommands,
		"has_flag": luaHasFlag,
		"any_arg":  w.luaAnyArg,
		"match":    w.luaMatch,
		"patterns": w.luaPatterns,
		"log": func(L *lua.LState) int {
			w.logArgs(L, "log")
			return 0
		},
		"examples": func(L *lua.LState) int { return w.luaExamples(L, fileIdx) },
	}
	for name, fn := range fns {
		t.RawSetString(name, L.NewFunction(fn))
	}
	t.RawSetString("session", session)
	return readOnly(L, t, "harness")
}

// where returns "file:line" of the Lua code calling the Go function.
func where(L *lua.LState) string {
	return strings.TrimSuffix(L.Where(1), ":")
}

// luaOn is harness.on(pattern, fn).
func (w *worker) luaOn(L *lua.LState, fileIdx int) int {
	pattern := L.CheckString(1)
	fn := L.CheckFunction(2)
	if w.loading != fileIdx {
		L.RaiseError("harness.on may only be called when the file loads, not from a hook")
	}
	var line int
	if _, l, _, ok := splitWhere(L.Where(1) + " x"); ok {
		line = l
	}
	add := func(cl class, kind event.Kind) {
		w.handlers = append(w.handlers, handler{file: fileIdx, class: cl, kind: kind, pattern: pattern, fn: fn, line: line})
	}
	prefix, kind, _ := strings.Cut(pattern, ".")
	switch prefix {
	case "action", "observation":
		k := event.Kind(kind)
		cl := classAction
		ok := k.IsAction()
		if prefix == "observation" {
			cl, ok = classObservation, k.IsObservation()
		}
		switch {
		case kind == "*":
			add(cl, "")
		case ok:
			add(cl, k)
		default:
			var names []string
			for _, k := range event.Kinds() {
				if (prefix == "action") == k.IsAction() {
					names = append(names, prefix+"."+string(k))
				}
			}
			L.RaiseError("harness.on: unknown event %q; want %s or %s.*", pattern, strings.Join(names, ", "), prefix)
		}
	case "session":
		switch kind {
		case "start":
			add(classStart, "")
		case "end":
			add(classEnd, "")
		case "*":
			add(classStart, "")
			add(classEnd, "")
		default:
			L.RaiseError("harness.on: unknown event %q; want session.start, session.end or session.*", pattern)
		}
	default:
		L.RaiseError("harness.on: unknown event %q; want action.KIND, observation.KIND, session.start or session.end", pattern)
	}
	return 0
}

// luaDecide is harness.veto(reason) and harness.ask(reason).
func (w *worker) luaDecide(L *lua.LState, v Verdict) int {
	reason := L.CheckString(1)
	c := w.call
	if c == nil || c.class != classAction {
		L.RaiseError("harness.%s may only be called from an action hook", v)
	}
	if v > c.verdict {
		c.verdict, c.hook, c.reason = v, where(L), reason
	}
	L.Push(w.marker[v])
	return 1
}

// luaRewrite is harness.rewrite{field=value…}[, reason].
func (w *worker) luaRewrite(L *lua.LState) int {
	t := L.CheckTable(1)
	reason := L.OptString(2, "")
	c := w.call
	if c == nil || c.class != classAction {
		L.RaiseError("harness.rewrite may only be called from an action hook")
	}
	base := c.action
	if c.rewritten != nil {
		base = c.rewritten
	}
	p, err := rewrite(base, t)
	if err != nil {
		L.RaiseError("harness.rewrite: %v", err)
	}
	c.rewritten, c.rwHook, c.rwReason = p, where(L), reason
	L.Push(w.marker[Rewrite])
	return 1
}

// luaExamples is harness.examples{veto={…}, ask={…}, rewrite={…}, allow={…}}.
func (w *worker) luaExamples(L *lua.LState, fileIdx int) int {
	t := L.CheckTable(1)
	if w.loading != fileIdx {
		L.RaiseError("harness.examples may only be called when the file loads")
	}
	var line int
	if _, l, _, ok := splitWhere(L.Where(1) + " x"); ok {
		line = l
	}
	var exs []example
	t.ForEach(func(k, v lua.LValue) {
		key, ok := k.(lua.LString)
		if !ok {
			L.RaiseError("harness.examples: keys are verdicts (veto, ask, rewrite, allow), not %s", k.Type())
		}
		want, err := ParseVerdict(string(key))
		if err != nil {
			L.RaiseError("harness.examples: %v", err)
		}
		list, ok := v.(*lua.LTable)
		if !ok {
			L.RaiseError("harness.examples: %s must be a list of commands", key)
		}
		for i := 1; i <= list.Len(); i++ {
			switch x := list.RawGetInt(i).(type) {
			case lua.LString:
				exs = append(exs, example{want: want, command: string(x), line: line})
			case *lua.LTable:
				cmd, ok := x.RawGetString("command").(lua.LString)
				if !ok {
					L.RaiseError("harness.examples: %s[%d] needs a command", key, i)
				}
				exs = append(exs, example{want: want, command: string(cmd), line: line})
			default:
				L.RaiseError("harness.examples: %s[%d] is a %s, not a command", key, i, x.Type())
			}
		}
	})
	if w.examples != nil {
		// Checked in a fixed order: the verdicts, then as listed.
		for v := Verdict(0); v < numVerdicts; v++ {
			for _, ex := range exs {
				if ex.want == v {
					w.examples[fileIdx] = append(w.examples[fileIdx], ex)
				}
			}
		}
	}
	return 0
}

// luaCommands is harness.commands(cmd): the simple commands cmd runs.
func (w *worker) luaCommands(L *lua.LState) int {
	src := L.CheckString(1)
	if ctx := L.Context(); ctx != nil && ctx.Err() != nil {
		L.RaiseError("%v", ctx.Err())
	}
	cmds := w.commands(src)
	out := L.CreateTable(len(cmds), 0)
	for i := range cmds {
		out.Append(w.commandTable(L, &cmds[i]))
	}
	L.Push(out)
	return 1
}

func stringList(L *lua.LState, ss []string) *lua.LTable {
	t := L.CreateTable(len(ss), 0)
	for _, s := range ss {
		t.Append(lua.LString(s))
	}
	return t
}

// commandTable is one command as harness.commands gives it: the fields
// policies read about every command here, the rest when read (see
// lazy.go).
func (w *worker) commandTable(L *lua.LState, lc *luaCommand) *lua.LTable {
	t := L.CreateTable(0, 6)
	t.RawSetString("name", lc.name)
	t.RawSetString("args", valueList(L, lc.args))
	t.RawSetString("via", valueList(L, lc.via))
	rs := L.CreateTable(len(lc.redirs), 0)
	for _, r := range lc.redirs {
		rt := L.CreateTable(0, 2)
		rt.RawSetString("op", r[0])
		rt.RawSetString("target", r[1])
		rs.Append(rt)
	}
	t.RawSetString("redirs", rs)
	t.RawSetString("dynamic", lua.LBool(lc.cmd.Dynamic))
	t.RawSetString("unparseable", lua.LBool(lc.cmd.Unparseable))
	w.lazyTable(L, t, lazyEntry{cmd: lc.cmd})
	return t
}

// checkArgs raises an error unless t is a list of strings (a command's
// args), and returns its length.
func checkArgs(L *lua.LState, t *lua.LTable, fn string) int {
	n := t.Len()
	for i := 1; i <= n; i++ {
		if _, ok := t.RawGetInt(i).(lua.LString); !ok {
			L.RaiseError("%s: args[%d] is not a string", fn, i)
		}
	}
	return n
}

// maxStackFlags is how many flags harness.has_flag reads without
// allocating.
const maxStackFlags = 16

// luaHasFlag is harness.has_flag(args, flag, …): whether any of the flags
// is among args before "--": "-r" is found alone and in clusters such as
// -rf, "--recursive" alone and as --recursive=….
func luaHasFlag(L *lua.LState) int {
	t := L.CheckTable(1)
	n := L.GetTop()
	if n < 2 {
		L.RaiseError("harness.has_flag: name at least one flag")
	}
	var buf [maxStackFlags]string
	flags := buf[:0]
	for i := 2; i <= n; i++ {
		f := L.CheckString(i)
		if len(f) < 2 || f[0] != '-' {
			L.RaiseError("harness.has_flag: %q is not a flag (-x or --name)", f)
		}
		flags = append(flags, f)
	}
	found := false
	for i, nargs := 1, checkArgs(L, t, "harness.has_flag"); i <= nargs; i++ {
		a := string(t.RawGetInt(i).(lua.LString))
		if a == "--" {
			break
		}
		if isFlag(a, flags) {
			found = true
			break
		}
	}
	L.Push(lua.LBool(found))
	return 1
}

// HasFlag reports whether any of flags is among args before "--". A short
// flag ("-r") is also found in a cluster of short flags ("-rf", "-fr"); a
// long one ("--recursive") also as "--recursive=value". A value glued to a
// short flag (-n5) is read as flags too.
func HasFlag(args []string, flags ...string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if isFlag(a, flags) {
			return true
		}
	}
	return false
}

// isFlag reports whether the arg a is one of flags, as HasFlag finds them.
func isFlag(a string, flags []string) bool {
	cluster := isCluster(a)
	for _, f := range flags {
		if a == f {
			return true
		}
		if strings.HasPrefix(f, "--") {
			if len(a) > len(f) && a[len(f)] == '=' && a[:len(f)] == f {
				return true
			}
			continue
		}
		if len(f) == 2 && cluster && strings.IndexByte(a[1:], f[1]) >= 0 {
			return true
		}
	}
	return false
}

func isCluster(a string) bool {
	if len(a) < 3 || a[0] != '-' || a[1] == '-' {
		return false
	}
	for i := 1; i < len(a); i++ {
		c := a[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// luaAnyArg is harness.any_arg(args, pattern, …): the first arg matching
// any pattern (as harness.match reads them) or pattern set, or nil.
func (w *worker) luaAnyArg(L *lua.LState) int {
	t := L.CheckTable(1)
	if L.GetTop() < 2 {
		L.RaiseError("harness.any_arg: name at least one pattern")
	}
	pats := w.patternList(L, 2, "harness.any_arg")
	for i, n := 1, checkArgs(L, t, "harness.any_arg"); i <= n; i++ {
		a := t.RawGetInt(i).(lua.LString)
		for _, p := range pats {
			if p.match(L, string(a), "harness.any_arg") {
				L.Push(a)
				return 1
			}
		}
	}
	L.Push(lua.LNil)
	return 1
}

// luaMatch is harness.match(str, pattern, …): whether str matches any of
// the patterns or pattern sets.
func (w *worker) luaMatch(L *lua.LState) int {
	str := L.CheckString(1)
	n := L.GetTop()
	if n < 2 {
		L.RaiseError("harness.match: name at least one pattern")
	}
	for i := 2; i <= n; i++ {
		var m matcher
		if ud, ok := L.Get(i).(*lua.LUserData); ok {
			m = checkSet(L, ud, i, "harness.match")
		} else {
			m = w.pattern(L, L.CheckString(i), "harness.match")
		}
		if m.match(L, str, "harness.match") {
			L.Push(lua.LTrue)
			return 1
		}
	}
	L.Push(lua.LFalse)
	return 1
}

// luaPatterns is harness.patterns{pattern, …}: the patterns compiled once,
// as a set that harness.match and harness.any_arg take in place of a
// pattern. A policy that checks strings against the same long list on
// every call makes the set when it loads: matching a set skips, by a
// quick look at the string, the patterns it cannot match, and passing
// one value costs less than passing the list.
func (w *worker) luaPatterns(L *lua.LState) int {
	t := L.CheckTable(1)
	n := t.Len()
	ps := &patternSet{pats: make([]*pattern, n)}
	for i := 1; i <= n; i++ {
		src, ok := t.RawGetInt(i).(lua.LString)
		if !ok {
			L.RaiseError("harness.patterns: [%d] is a %s, not a pattern", i, t.RawGetInt(i).Type())
		}
		ps.pats[i-1] = newPattern(L, string(src), "harness.patterns")
	}
	ps.index()
	ud := L.NewUserData()
	ud.Value = ps
	ud.Metatable = w.setMeta
	L.Push(ud)
	return 1
}

// setMetatable is the metatable of pattern sets: protected, and naming
// them for tostring.
func setMetatable(L *lua.LState) *lua.LTable {
	mt := L.NewTable()
	mt.RawSetString("__metatable", lua.LFalse)
	mt.RawSetString("__tostring", L.NewFunction(func(L *lua.LState) int {
		ps, _ := L.CheckUserData(1).Value.(*patternSet)
		n := 0
		if ps != nil {
			n = len(ps.pats)
		}
		L.Push(lua.LString(fmt.Sprintf("patterns: %d", n)))
		return 1
	}))
	return mt
}

// checkSet returns the pattern set ud, the i-th argument of fn, or raises
// an error.
func checkSet(L *lua.LState, ud *lua.LUserData, i int, fn string) *patternSet {
	ps, ok := ud.Value.(*patternSet)
	if !ok {
		L.RaiseError("%s: argument %d is a userdata, not a pattern or harness.patterns set", fn, i)
	}
	return ps
}

// pattern is a glob or Lua pattern, with the longest literal part of a
// glob: a string without it cannot match, which is quick to see.
type pattern struct {
	src string
	lua bool
	lit string
}

// maxPatterns bounds a Lua state's cache of patterns.
const maxPatterns = 1024

// matcher is a pattern or a pattern set.
type matcher interface {
	match(L *lua.LState, s, fn string) bool
}

// pattern returns the pattern src, from the state's cache.
func (w *worker) pattern(L *lua.LState, src, fn string) *pattern {
	if p, ok := w.patterns[src]; ok {
		return p
	}
	p := newPattern(L, src, fn)
	if w.patterns == nil || len(w.patterns) >= maxPatterns {
		w.patterns = make(map[string]*pattern)
	}
	w.patterns[src] = p
	return p
}

// newPattern compiles src, raising an error for fn if it is malformed.
func newPattern(L *lua.LState, src, fn string) *pattern {
	p := &pattern{src: src, lua: strings.HasPrefix(src, "^")}
	if !p.lua {
		if _, err := glob(src, ""); err != nil {
			L.RaiseError("%s: %v", fn, err)
		}
		p.lit = globLiteral(src)
	}
	return p
}

// patList is a list of patterns and pattern sets as a hook passed them,
// compiled.
type patList struct {
	args []lua.LValue
	ms   []matcher
}

// patternList returns the patterns and pattern sets given as arguments
// first… of the Go function running, compiled. A policy passes the same
// list again and again (harness.any_arg(c.args, unpack(globs))): the last
// few lists are kept, and comparing the strings of one is cheap, since
// they are the same strings.
func (w *worker) patternList(L *lua.LState, first int, fn string) []matcher {
	n := L.GetTop() - first + 1
	for i := range w.patLists {
		pl := &w.patLists[i]
		if len(pl.args) != n {
			continue
		}
		same := true
		for j, a := range pl.args {
			if L.Get(first+j) != a {
				same = false
				break
			}
		}
		if same {
			return pl.ms
		}
	}
	pl := patList{args: make([]lua.LValue, n), ms: make([]matcher, n)}
	for j := range n {
		if ud, ok := L.Get(first + j).(*lua.LUserData); ok {
			pl.args[j], pl.ms[j] = ud, checkSet(L, ud, first+j, fn)
			continue
		}
		src := L.CheckString(first + j)
		pl.args[j], pl.ms[j] = lua.LString(src), w.pattern(L, src, fn)
	}
	w.patLists[w.patNext] = pl
	w.patNext = (w.patNext + 1) % len(w.patLists)
	return pl.ms
}

// patternSet is what harness.patterns makes: patterns compiled once, with
// a filter on the pairs of bytes their globs' literals start with.
type patternSet struct {
	pats []*pattern
	// pairs, when every pattern is a glob with a literal of two bytes or
	// more, has the bit of each literal's first two bytes (see pairBit)
	// set: a string with none of those pairs cannot match. nil otherwise.
	pairs *[pairBits / 64]uint64
}

// pairBits is the size of a pattern set's filter.
const pairBits = 1 << 12

func pairBit(a, b byte) uint { return (uint(a)<<5 ^ uint(b)) & (pairBits - 1) }

// index makes the filter of ps, if its patterns allow one.
func (ps *patternSet) index() {
	var f [pairBits / 64]uint64
	for _, p := range ps.pats {
		if p.lua || len(p.lit) < 2 {
			return
		}
		k := pairBit(p.lit[0], p.lit[1])
		f[k/64] |= 1 << (k % 64)
	}
	ps.pairs = &f
}

func (ps *patternSet) match(L *lua.LState, s, fn string) bool {
	if f := ps.pairs; f != nil {
		may := false
		for i := 0; i+1 < len(s); i++ {
			if k := pairBit(s[i], s[i+1]); f[k/64]&(1<<(k%64)) != 0 {
				may = true
				break
			}
		}
		if !may {
			return false
		}
	}
	for _, p := range ps.pats {
		if p.match(L, s, fn) {
			return true
		}
	}
	return false
}

func (p *pattern) match(L *lua.LState, s, fn string) bool {
	if p.lua {
		ok, err := Match(s, p.src)
		if err != nil {
			L.RaiseError("%s: %v", fn, err)
		}
		return ok
	}
	if p.lit != "" && !strings.Contains(s, p.lit) {
		return false
	}
	ok, err := glob(p.src, s)
	if err != nil {
		L.RaiseError("%s: %v", fn, err)
	}
	return ok
}

// globLiteral returns the longest run of plain characters in a glob.
func globLiteral(g string) string {
	best, cur := "", []byte(nil)
	flush := func() {
		if len(cur) > len(best) {
			best = string(cur)
		}
		cur = cur[:0]
	}
	for i := 0; i < len(g); i++ {
		switch c := g[i]; c {
		case '*', '?':
			flush()
		case '[':
			flush()
			_, end, err := matchClass(g, i, 0)
			if err != nil {
				return best
			}
			i = end - 1
		case '\\':
			if i+1 < len(g) {
				i++
				cur = append(cur, g[i])
			}
		default:
			cur = append(cur, c)
		}
	}
	flush()
	return best
}

// Match reports whether s matches pattern. A pattern starting with "^" is
// a Lua pattern (as string.find reads it; end it with "$" to anchor the
// end too). Any other pattern is a glob matched against the whole of s:
// * matches any run of characters ("/" included), ? one character, [a-z]
// and [!a-z] a class, and \ quotes the next character.
func Match(s, pattern string) (bool, error) {
	if strings.HasPrefix(pattern, "^") {
		mds, err := pm.Find(pattern, []byte(s), 0, 1)
		if err != nil {
			return false, fmt.Errorf("bad Lua pattern %q: %v", pattern, err)
		}
		return len(mds) > 0, nil
	}
	return glob(pattern, s)
}

// logArgs logs the arguments of a Lua call, as tostring shows them.
func (w *worker) logArgs(L *lua.LState, what string) {
	n := L.GetTop()
	parts := make([]string, n)
	for i := 1; i <= n; i++ {
		parts[i-1] = L.ToStringMeta(L.Get(i)).String()
	}
	w.set.eng.log.Info(strings.Join(parts, " "), "hook", where(L), "via", what, "session", w.sessID)
}
