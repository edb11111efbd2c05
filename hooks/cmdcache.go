package hooks

import "github.com/harnessd/harnessd/hooks/shcmd"

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
	cur, prev map[string][]shcmd.Command
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
func (c *cmdCache) get(src string, parse func(string) []shcmd.Command) []shcmd.Command {
	if cmds, ok := c.cur[src]; ok {
		return cmds
	}
	cmds, ok := c.prev[src]
	if !ok {
		cmds = parse(src)
		if len(src) > maxCachedLine {
			return cmds
		}
	}
	if c.cur == nil || len(c.cur) >= cacheLines {
		c.prev, c.cur = c.cur, make(map[string][]shcmd.Command, cacheLines)
	}
	c.cur[src] = cmds
	return cmds
}
