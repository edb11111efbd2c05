// Package shcmd finds every simple command a shell command line would run,
// so that a policy can judge what a line does rather than how it is spelled.
//
// It parses the line with a real shell parser (mvdan.cc/sh/v3, bash
// dialect) and walks everything that runs: lists, pipelines, subshells,
// brace groups, command and process substitutions, if/while/for/case
// bodies, and functions (at their definition and again at each call, with
// the call's arguments as $1…). It splits off VAR=x prefixes, unwraps
// wrappers (sudo, env, timeout, xargs, find -exec, …), and parses the
// strings a shell will parse again (bash -c STRING, eval, here-strings and
// literal text piped into a shell) the same way, up to a depth. A line
// that is one command of plain words (letters, digits, - _ . / and the
// like, no quotes, expansions or operators) is split into its words
// without the parser, which would find nothing more in it.
//
// What it cannot know is reported, never dropped: a command whose name is
// computed at run time is Dynamic, and text the parser cannot read gives an
// Unparseable command (with whatever could still be read beside it).
package shcmd

import (
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Command is one simple command the shell would run.
//
// Words are given after quote removal (so r”m, "rm" and \rm are all rm)
// and brace expansion; parts computed at run time ($x, $(…), $((…))) are
// kept as written, with ${x} written $x, so a policy can still look for
// "$HOME". Globs and ~ are kept as written.
type Command struct {
	// Name is the base name of Argv0 (/usr/bin/rm and ./rm give "rm"); ""
	// when Unparseable, or when Dynamic and not known. (A positional
	// parameter, "$1" in a function or a bash -c string, is Dynamic but
	// named after the argument given at the call, a fair guess.)
	Name string
	// Argv0 is the first word as written (after quote removal).
	Argv0 string
	// Args are the words after Argv0.
	Args []string
	// Assigns are the NAME=value words that set the command's environment:
	// prefixes (X=1 cmd) and those given to env or sudo.
	Assigns []string
	// Redirs are the command's redirections, and those of the compound
	// commands around it.
	Redirs []Redirect
	// Feeds are the names of the commands whose output this one reads: the
	// earlier stages of its pipeline and the commands in substitutions
	// among its words and redirections (bash <(curl …) is fed by curl).
	Feeds []string
	// Via says how the command was reached, outermost first: wrappers
	// ("sudo", "xargs", "find -exec"), re-parsed strings ("bash -c",
	// "eval", "sh stdin"), substitutions ("$( )", "<( )"), functions
	// ("function f" at its definition, "f()" at a call).
	Via []string
	// Dynamic is set when the command's name is computed at run time
	// ($x -rf /, $(echo rm) -rf /): Argv0 shows the expansion as written.
	// A line whose code itself is computed at run time (eval "$x", bash -c
	// "$x", echo "$x" | sh) gives a Dynamic command whose Argv0 is that
	// code as written, besides the commands read from it as written.
	Dynamic bool
	// DynamicArgs is set when some argument is computed at run time.
	DynamicArgs bool
	// Unparseable is set for text the analysis could not read; Err says
	// why. Commands that could still be read around the error are returned
	// beside it.
	Unparseable bool
	// Err is the parser's complaint (with line:column), or the limit hit.
	Err string
}

// Redirect is one redirection: Op is the operator (">", ">>", "<", "<<",
// "<<<", "&>", ">&" …) and Target its word (for "<<", the delimiter).
type Redirect struct {
	Op     string
	Target string
}

// Options bounds the analysis. Zero fields take the defaults.
type Options struct {
	// MaxBytes is the longest line analysed; a longer one is Unparseable.
	// Default 256 KiB.
	MaxBytes int
	// MaxDepth is how deep strings are re-parsed (bash -c "bash -c '…'").
	// Default 8.
	MaxDepth int
	// MaxCommands is the most commands returned; past it the list ends
	// with an Unparseable command. Default 1000.
	MaxCommands int
}

// Defaults for Options.
const (
	DefaultMaxBytes    = 256 << 10
	DefaultMaxDepth    = 8
	DefaultMaxCommands = 1000
)

// Limits that are not worth an option.
const (
	maxFuncCalls   = 64  // function bodies expanded at calls, in all
	maxNesting     = 128 // brackets nested in one text
	maxBraceWords  = 256
	maxBraces      = 16       // brace expansions in one word
	maxVars        = 256      // variables and substitution outputs remembered
	maxVarLen      = 1024     // the longest value remembered
	maxOut         = 64 << 10 // the most text kept of what a list of commands prints
	maxParallelArg = 64
	workFactor     = 4 // bytes parsed in all, nested strings included, <= workFactor*MaxBytes
)

// Parser analyses command lines. It keeps the shell parser's buffers
// between calls, so reuse one per goroutine; it is not safe for concurrent
// use. The zero value is not usable: use NewParser.
type Parser struct {
	opts    Options
	sh      *syntax.Parser
	recover *syntax.Parser
	printer *syntax.Printer
	noPlain bool // always use the parser (tests compare the two)
}

// NewParser returns a Parser with the given limits; opts may be nil.
func NewParser(opts *Options) *Parser {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.MaxDepth <= 0 {
		o.MaxDepth = DefaultMaxDepth
	}
	if o.MaxCommands <= 0 {
		o.MaxCommands = DefaultMaxCommands
	}
	return &Parser{
		opts:    o,
		sh:      syntax.NewParser(syntax.Variant(syntax.LangBash)),
		printer: syntax.NewPrinter(syntax.SingleLine(true)),
	}
}

// Commands returns every simple command src would run, in the order the
// analysis met them (roughly the order they run). It never panics and
// always returns at least one command for a line that is not blank: an
// empty result means there is nothing to run.
func (p *Parser) Commands(src string) []Command {
	w := &walker{p: p, work: workFactor * p.opts.MaxBytes}
	if len(src) > p.opts.MaxBytes {
		w.unparseable(ctx{}, "command is too long to analyse: "+strconv.Itoa(len(src))+" bytes, limit "+strconv.Itoa(p.opts.MaxBytes))
		return w.out
	}
	w.parse(src, ctx{}, "", false)
	return w.out
}

// Commands analyses src with a new Parser and the default limits.
func Commands(src string) []Command {
	return NewParser(nil).Commands(src)
}

// Names returns the names of cmds that have one, in order, with repeats.
func Names(cmds []Command) []string {
	out := make([]string, 0, len(cmds))
	for _, c := range cmds {
		if c.Name != "" {
			out = append(out, c.Name)
		}
	}
	return out
}

// String renders c for messages: argv joined by spaces, or the error.
func (c Command) String() string {
	if c.Unparseable {
		return "unparseable: " + c.Err
	}
	if len(c.Args) == 0 {
		return c.Argv0
	}
	return c.Argv0 + " " + strings.Join(c.Args, " ")
}

// base returns what follows the last '/' of argv0.
func base(argv0 string) string {
	if i := strings.LastIndexByte(argv0, '/'); i >= 0 {
		return argv0[i+1:]
	}
	return argv0
}
