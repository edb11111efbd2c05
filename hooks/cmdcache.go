package hooks

import (
	lua "github.com/yuin/gopher-lua"

	"github.com/harnessd/harnessd/hooks/shcmd"
)

// cmdCache remembers the analyses of the command lines a Lua state saw
// lately, keyed by their text: every action hook of a call asks about the
// same line, a rewrite asks again, and agents repeat commands. It belongs
// to one state, so it takes no lock.
//
// It keeps two generations: a line is looked up in the current one, then
// in the previous one (and moved up); when the current one holds
// cacheLines lines, it becomes the previous. So at least the last
// cacheLines lines asked about are kept, at most twice as many: an LRU's
// hit rate without its list.
type cmdCache struct {
	cur, prev map[string][]luaCommand
}

// luaCommand is an analysed command with the Lua values of its words made
// once: Lua strings are immutable, so each call's fresh tables can hold
// the same values, and making them (a Go allocation each) is most of the
// cost of a table.
type luaCommand struct {
	cmd    *shcmd.Command
	name   lua.LValue
	args   []lua.LValue
	via    []lua.LValue
	redirs [][2]lua.LValue // op, target
}

const (
	// cacheLines is the size of a generation.
	cacheLines = 128
	// maxCachedLine is the longest line kept: longer ones (a heredoc, a
	// script) are analysed each time, so the cache stays small.
	maxCachedLine = 4 << 10
)

// get returns the analysis of src, made by parse if it is not cached.
// The result is shared: it must not be changed.
func (c *cmdCache) get(src string, parse func(string) []shcmd.Command) []luaCommand {
	if cmds, ok := c.cur[src]; ok {
		return cmds
	}
	cmds, ok := c.prev[src]
	if !ok {
		cmds = luaCommands(parse(src))
		if len(src) > maxCachedLine {
			return cmds
		}
	}
	if c.cur == nil || len(c.cur) >= cacheLines {
		c.prev, c.cur = c.cur, make(map[string][]luaCommand, cacheLines)
	}
	c.cur[src] = cmds
	return cmds
}

func luaCommands(cmds []shcmd.Command) []luaCommand {
	out := make([]luaCommand, len(cmds))
	for i := range cmds {
		c := &cmds[i]
		lc := luaCommand{cmd: c, name: lua.LString(c.Name), args: luaStrings(c.Args), via: luaStrings(c.Via)}
		if len(c.Redirs) > 0 {
			lc.redirs = make([][2]lua.LValue, len(c.Redirs))
			for j, r := range c.Redirs {
				lc.redirs[j] = [2]lua.LValue{lua.LString(r.Op), lua.LString(r.Target)}
			}
		}
		out[i] = lc
	}
	return out
}

func luaStrings(ss []string) []lua.LValue {
	if len(ss) == 0 {
		return nil
	}
	out := make([]lua.LValue, len(ss))
	for i, s := range ss {
		out[i] = lua.LString(s)
	}
	return out
}

// valueList is a new Lua list of vs.
func valueList(L *lua.LState, vs []lua.LValue) *lua.LTable {
	t := L.CreateTable(len(vs), 0)
	for _, v := range vs {
		t.Append(v)
	}
	return t
}
