package shcmd

import (
	"fmt"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// word is one argv word after quote removal: its text, whether it is fully
// literal, and, when it is not, whether text is still a fair guess at its
// value (a positional parameter of a call whose arguments we saw).
type word struct {
	text    string
	lit     bool
	guessed bool
}

// known reports whether w's text says what the word will be (for certain,
// or as a fair guess).
func (w word) known() bool { return w.lit || w.guessed }

// params are the positional parameters of a function call or of a
// bash -c STRING NAME ARGS…; as values of the words given there, they are
// guesses (shift and set -- can change them).
type params struct {
	zero  word
	words []word
}

// ctx is what the walk knows about the place of a command.
type ctx struct {
	via    []string
	feeds  []string
	redirs []Redirect
	stdin  *word   // text on stdin when it is known (a here-document, echo … |)
	params *params // nil: not known
	open   bool    // arguments are appended at run time (xargs, find -exec): $1… unknown
}

// funcDef is a function body and the scope it was defined in.
type funcDef struct {
	body *syntax.Stmt
}

// nesting returns how deeply src nests brackets, counted without regard
// to quoting (so it may count more than the shell would).
func nesting(src string) int {
	depth, max := 0, 0
	for i := 0; i < len(src); i++ {
		switch src[i] {
		case '(', '{', '[':
			depth++
			if depth > max {
				max = depth
			}
		case ')', '}', ']':
			if depth > 0 {
				depth--
			}
		}
	}
	return max
}

// scope is one parsed text: the functions defined in it so far, and the
// variables given a value we can read (a guess: a branch, a loop or an
// earlier command line may set them otherwise).
type scope struct {
	funcs map[string]funcDef
	vars  map[string]word
}

// setVar records name = v, or forgets name when v is not known.
func (sc *scope) setVar(name string, v word, appending bool) {
	if appending {
		old, ok := sc.vars[name]
		if !ok || !v.known() {
			delete(sc.vars, name)
			return
		}
		v.text = old.text + v.text
	}
	if !v.known() || len(v.text) > maxVarLen {
		delete(sc.vars, name)
		return
	}
	if sc.vars == nil {
		sc.vars = make(map[string]word)
	}
	if len(sc.vars) < maxVars {
		sc.vars[name] = word{text: v.text, guessed: true}
	}
}

type walker struct {
	p        *Parser
	substOut map[*syntax.CmdSubst]word // what command substitutions print, when known
	out      []Command
	sc       *scope
	depth    int
	calls    int
	work     int
	full     bool
	active   map[*syntax.Stmt]bool
}

// with returns a new slice: s followed by x.
func with(s []string, x ...string) []string {
	r := make([]string, 0, len(s)+len(x))
	r = append(r, s...)
	return append(r, x...)
}

// maxFeeds bounds Command.Feeds.
const maxFeeds = 64

// addFeeds returns feeds and then the names not yet in it. It never
// changes its arguments, and may return one of them: slices of names are
// never appended to in place.
func addFeeds(feeds, names []string) []string {
	if len(names) == 0 {
		return feeds
	}
	if len(feeds) == 0 && len(names) <= 8 && !hasDup(names) {
		return names
	}
	r := make([]string, len(feeds), len(feeds)+len(names))
	copy(r, feeds)
	for _, n := range names {
		if len(r) >= maxFeeds {
			break
		}
		if !slices.Contains(r, n) {
			r = append(r, n)
		}
	}
	return r
}

func hasDup(s []string) bool {
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[i] == s[j] {
				return true
			}
		}
	}
	return false
}

func (w *walker) add(c Command) {
	if w.full {
		return
	}
	if len(w.out) >= w.p.opts.MaxCommands {
		w.full = true
		w.out = append(w.out, Command{Unparseable: true, Via: c.Via,
			Err: fmt.Sprintf("more than %d commands: the rest were not analysed", w.p.opts.MaxCommands)})
		return
	}
	if c.Args == nil {
		c.Args = []string{}
	}
	w.out = append(w.out, c)
}

func (w *walker) unparseable(c ctx, msg string) {
	w.add(Command{Unparseable: true, Err: msg, Via: c.via, Feeds: c.feeds, Redirs: c.redirs})
}

// parseFile parses src, recovering from a panic of the parser (which is
// then replaced, its state being unknown).
func (w *walker) parseFile(src string, salvage bool) (f *syntax.File, err error) {
	defer func() {
		if r := recover(); r != nil {
			f, err = nil, fmt.Errorf("shell parser failed: %v", r)
			w.p.sh = syntax.NewParser(syntax.Variant(syntax.LangBash))
			w.p.recover = nil
		}
	}()
	p := w.p.sh
	if salvage {
		if w.p.recover == nil {
			w.p.recover = syntax.NewParser(syntax.Variant(syntax.LangBash), syntax.RecoverErrors(16))
		}
		p = w.p.recover
	}
	return p.Parse(strings.NewReader(src), "")
}

// parse analyses src, text a shell will parse, reached through via. With
// share, src runs in the same shell as the text around it (eval, trap) and
// shares its functions. It returns the names of the commands found and the
// text they print, when known.
func (w *walker) parse(src string, c ctx, via string, share bool) ([]string, *word) {
	if w.full {
		return nil, nil
	}
	if via != "" {
		c.via = with(c.via, via)
	}
	if w.depth >= w.p.opts.MaxDepth {
		w.unparseable(c, fmt.Sprintf("strings re-parsed more than %d deep", w.p.opts.MaxDepth))
		return nil, nil
	}
	w.work -= len(src)
	if w.work < 0 {
		w.unparseable(c, "analysis budget exhausted")
		return nil, nil
	}
	if nesting(src) > maxNesting {
		// The shell parser's time grows fast with nesting, and no real
		// command nests this deep.
		w.unparseable(c, fmt.Sprintf("brackets nested more than %d deep", maxNesting))
		return nil, nil
	}
	var f *syntax.File
	plain, isPlain := []word(nil), false
	var list []plainAndOr
	if !w.p.noPlain {
		plain, isPlain = plainWords(src)
		if !isPlain {
			list, isPlain = plainList(src)
		}
	}
	if !isPlain {
		var err error
		if f, err = w.parseFile(src, false); err != nil {
			w.unparseable(c, err.Error())
			f, err = w.parseFile(src, true)
			if err != nil || f == nil {
				return nil, nil
			}
		}
	}
	old := w.sc
	if !share || w.sc == nil {
		// A new shell: it sees the variables (exported or not: a guess
		// that errs on the side of seeing more).
		sc := &scope{}
		if old != nil && len(old.vars) > 0 {
			sc.vars = make(map[string]word, len(old.vars))
			for k, v := range old.vars {
				sc.vars[k] = v
			}
		}
		w.sc = sc
	}
	w.depth++
	var names []string
	var out *word
	if isPlain {
		// What stmts would make of the one simple command, or of the
		// commands joined by operators.
		if list != nil {
			names, out = w.plainStmts(list, c)
		} else if len(plain) > 0 {
			n, o := w.emit(plain, nil, c)
			names = addFeeds(nil, n)
			out = o
		}
	} else {
		names, out = w.stmts(f.Stmts, c)
	}
	w.depth--
	w.sc = old
	return names, out
}

// code analyses text a shell will run as code: literal, or computed at run
// time, in which case a Dynamic command says so beside what can be read of
// it as written.
func (w *walker) code(text word, c ctx, via string, share bool) ([]string, *word) {
	if !text.lit {
		w.add(Command{Argv0: text.text, Dynamic: true, DynamicArgs: true,
			Via: with(c.via, via), Feeds: c.feeds, Redirs: c.redirs, Args: []string{}})
	}
	return w.parse(text.text, c, via, share)
}

func (w *walker) stmts(list []*syntax.Stmt, c ctx) ([]string, *word) {
	var names []string
	var outs []*word
	for _, st := range list {
		n, o := w.stmt(st, c)
		names = addFeeds(names, n)
		if o != nil {
			outs = append(outs, o)
		}
	}
	return names, joinOuts(outs)
}

// plainStmts is stmts on the and-or lists of a plain line, as the parser
// would have given them: && and || join the pipelines of an and-or list,
// and | the commands of a pipeline, from the left ((a | b) | c).
func (w *walker) plainStmts(list []plainAndOr, c ctx) ([]string, *word) {
	var names []string
	var outs []*word
	for _, andOr := range list {
		var n []string
		var o *word
		for i, pipe := range andOr {
			// BinaryCmd's && and ||: the left, then the right.
			pn, po := w.plainPipe(pipe, c)
			if i == 0 {
				n, o = pn, po
				continue
			}
			n, o = addFeeds(n, pn), joinOut(o, po)
		}
		names = addFeeds(names, n)
		if o != nil {
			outs = append(outs, o)
		}
	}
	return names, joinOuts(outs)
}

// plainPipe is what stmt makes of a pipeline of plain commands.
func (w *walker) plainPipe(pipe [][]word, c ctx) ([]string, *word) {
	var names []string
	var out *word
	for i, words := range pipe {
		c2 := c
		if i > 0 {
			// BinaryCmd's |: the right reads what the left printed.
			c2.feeds = addFeeds(c.feeds, names)
			c2.stdin = out
		}
		n, o := w.emit(words, nil, c2)
		n = addFeeds(nil, n) // as call returns it
		if i == 0 {
			names, out = n, o
			continue
		}
		names, out = addFeeds(names, n), o
	}
	return names, out
}

// joinOuts is what a list of statements prints, of what each prints.
func joinOuts(outs []*word) *word {
	switch len(outs) {
	case 0:
		return nil
	case 1:
		return outs[0]
	}
	var b strings.Builder
	r := word{lit: true, guessed: true}
	for _, o := range outs {
		if b.Len()+len(o.text) > maxOut {
			// Too much to analyse as a script: what it is, is not known.
			r.lit, r.guessed = false, false
			break
		}
		b.WriteString(o.text)
		r.lit = r.lit && o.lit
		r.guessed = r.guessed && o.known()
	}
	if r.lit {
		r.guessed = false
	}
	r.text = b.String()
	return &r
}

func (w *walker) stmt(st *syntax.Stmt, c ctx) ([]string, *word) {
	if st == nil || w.full {
		return nil, nil
	}
	var names []string
	if len(st.Redirs) > 0 {
		var rs []Redirect
		for _, r := range st.Redirs {
			if r == nil {
				continue
			}
			rd := Redirect{Op: r.Op.String()}
			if r.Word != nil {
				sub := w.substs(r.Word, c)
				names = addFeeds(names, sub)
				c.feeds = addFeeds(c.feeds, sub)
				rt := w.render(r.Word, c)
				rd.Target = rt.text
				if r.Op == syntax.WordHdoc {
					rt.text += "\n"
					c.stdin = &rt
				}
			}
			switch r.Op {
			case syntax.Hdoc, syntax.DashHdoc:
				text := word{lit: true}
				if r.Hdoc != nil {
					sub := w.substs(r.Hdoc, c)
					names = addFeeds(names, sub)
					c.feeds = addFeeds(c.feeds, sub)
					text = w.renderDoc(r.Hdoc, r.Word, c)
				}
				c.stdin = &text
			case syntax.RdrIn, syntax.RdrInOut:
				c.stdin = nil
			}
			rs = append(rs, rd)
		}
		c.redirs = append(append([]Redirect(nil), c.redirs...), rs...)
	}
	n, out := w.command(st.Cmd, c)
	return addFeeds(names, n), out
}

func (w *walker) command(cmd syntax.Command, c ctx) ([]string, *word) {
	switch cmd := cmd.(type) {
	case nil:
		return nil, nil
	case *syntax.CallExpr:
		return w.call(cmd, c)
	case *syntax.BinaryCmd:
		switch cmd.Op {
		case syntax.Pipe, syntax.PipeAll:
			left, out := w.stmt(cmd.X, c)
			c2 := c
			c2.feeds = addFeeds(c.feeds, left)
			c2.stdin = out
			right, out2 := w.stmt(cmd.Y, c2)
			return addFeeds(left, right), out2
		default:
			left, o1 := w.stmt(cmd.X, c)
			right, o2 := w.stmt(cmd.Y, c)
			return addFeeds(left, right), joinOut(o1, o2)
		}
	case *syntax.Subshell:
		return w.stmts(cmd.Stmts, c)
	case *syntax.Block:
		return w.stmts(cmd.Stmts, c)
	case *syntax.IfClause:
		var names []string
		var out *word
		for ic := cmd; ic != nil; ic = ic.Else {
			n, o := w.stmts(ic.Cond, c)
			names = addFeeds(names, n)
			out = joinOut(out, o)
			n, o = w.stmts(ic.Then, c)
			names = addFeeds(names, n)
			out = joinOut(out, o)
		}
		return names, out
	case *syntax.WhileClause:
		n, o := w.stmts(cmd.Cond, c)
		n2, o2 := w.stmts(cmd.Do, c)
		return addFeeds(n, n2), joinOut(o, o2)
	case *syntax.ForClause:
		var names []string
		if cmd.Loop != nil {
			names = w.substs(cmd.Loop, c)
		}
		if wi, ok := cmd.Loop.(*syntax.WordIter); ok && wi.Name != nil {
			delete(w.sc.vars, wi.Name.Value)
		}
		n, o := w.stmts(cmd.Do, c)
		return addFeeds(names, n), o
	case *syntax.CaseClause:
		var names []string
		if cmd.Word != nil {
			names = w.substs(cmd.Word, c)
		}
		var out *word
		for _, it := range cmd.Items {
			if it == nil {
				continue
			}
			for _, p := range it.Patterns {
				if p != nil {
					names = addFeeds(names, w.substs(p, c))
				}
			}
			n, o := w.stmts(it.Stmts, c)
			names = addFeeds(names, n)
			out = joinOut(out, o)
		}
		return names, out
	case *syntax.FuncDecl:
		// The body is reported where it is defined (it may be called in a
		// later command of the same shell) and again at each call here.
		var fnames []string
		if cmd.Name != nil {
			fnames = append(fnames, cmd.Name.Value)
		}
		for _, n := range cmd.Names {
			if n != nil {
				fnames = append(fnames, n.Value)
			}
		}
		if cmd.Body == nil {
			return nil, nil
		}
		if w.sc.funcs == nil {
			w.sc.funcs = make(map[string]funcDef)
		}
		for _, n := range fnames {
			w.sc.funcs[n] = funcDef{body: cmd.Body}
		}
		c2 := c
		c2.via = with(c.via, "function "+strings.Join(fnames, " "))
		c2.params = nil
		c2.stdin = nil
		names, _ := w.stmt(cmd.Body, c2)
		return names, nil
	case *syntax.DeclClause:
		return w.decl(cmd, c)
	case *syntax.TimeClause:
		return w.stmt(cmd.Stmt, c)
	case *syntax.CoprocClause:
		var names []string
		if cmd.Name != nil {
			names = w.substs(cmd.Name, c)
		}
		n, _ := w.stmt(cmd.Stmt, c)
		return addFeeds(names, n), nil
	case *syntax.TestDecl:
		return w.stmt(cmd.Body, c)
	default:
		// [[ ]], (( )), let and anything newer: only their substitutions run
		// commands.
		return w.substs(cmd, c), nil
	}
}

// plainWord reports whether parts hold no substitution: literals, quotes
// and simple $name expansions only.
func plainWord(parts []syntax.WordPart) bool {
	for _, p := range parts {
		switch p := p.(type) {
		case *syntax.Lit, *syntax.SglQuoted:
		case *syntax.DblQuoted:
			if !plainWord(p.Parts) {
				return false
			}
		case *syntax.ParamExp:
			if !simpleParam(p) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// joinOut returns the output of a then b.
func joinOut(a, b *word) *word {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return &word{text: a.text + b.text, lit: a.lit && b.lit, guessed: a.known() && b.known() && !(a.lit && b.lit)}
}

// substs walks node for command and process substitutions, analyses the
// commands in them and returns their names.
func (w *walker) substs(node syntax.Node, c ctx) []string {
	if node == nil {
		return nil
	}
	if wd, ok := node.(*syntax.Word); ok && plainWord(wd.Parts) {
		return nil
	}
	return w.walkSubsts(node, c)
}

// walkSubsts is substs past its quick check (the closure makes c escape).
func (w *walker) walkSubsts(node syntax.Node, c ctx) []string {
	var names []string
	syntax.Walk(node, func(n syntax.Node) bool {
		if w.full {
			return false
		}
		switch n := n.(type) {
		case *syntax.CmdSubst:
			c2 := c
			c2.via = with(c.via, "$( )")
			c2.feeds, c2.stdin, c2.redirs = nil, nil, nil
			got, out := w.stmts(n.Stmts, c2)
			names = addFeeds(names, got)
			if out != nil && len(w.substOut) < maxVars && len(out.text) <= maxVarLen {
				// What it prints, as the shell substitutes it.
				if w.substOut == nil {
					w.substOut = make(map[*syntax.CmdSubst]word)
				}
				w.substOut[n] = word{text: strings.TrimRight(out.text, "\n"), guessed: out.known()}
			}
			return false
		case *syntax.ProcSubst:
			c2 := c
			c2.via = with(c.via, n.Op.String()+" )")
			c2.feeds, c2.stdin, c2.redirs = nil, nil, nil
			got, _ := w.stmts(n.Stmts, c2)
			names = addFeeds(names, got)
			return false
		}
		return true
	})
	return names
}

func (w *walker) call(ce *syntax.CallExpr, c ctx) ([]string, *word) {
	var names []string
	var assigns []string
	for _, as := range ce.Assigns {
		if as == nil {
			continue
		}
		names = addFeeds(names, w.substs(as, c))
		assigns = append(assigns, w.assignText(as, c))
		names = addFeeds(names, w.special(as, c))
	}
	if len(ce.Args) == 0 {
		// Assignments alone set shell variables.
		for _, as := range ce.Assigns {
			if as != nil {
				w.assign(as, c)
			}
		}
		return names, nil
	}
	var sub []string
	for _, a := range ce.Args {
		if a != nil {
			sub = append(sub, w.substs(a, c)...)
		}
	}
	names = addFeeds(names, sub)
	words := make([]word, 0, len(ce.Args))
	for _, a := range ce.Args {
		if a != nil {
			words = w.expand(words, a, c)
		}
	}
	if len(words) == 0 {
		return names, nil
	}
	c.feeds = addFeeds(c.feeds, sub)
	n, out := w.emit(words, assigns, c)
	return addFeeds(names, n), out
}

// emit records the command argv = words (with the given assignments) and
// analyses what it runs in turn.
func (w *walker) emit(words []word, assigns []string, c ctx) ([]string, *word) {
	if w.full || len(words) == 0 {
		return nil, nil
	}
	cmd := Command{
		Argv0:   words[0].text,
		Dynamic: !words[0].lit,
		Assigns: assigns,
		Redirs:  c.redirs,
		Feeds:   c.feeds,
		Via:     c.via,
		Args:    make([]string, 0, len(words)-1),
	}
	if words[0].known() {
		cmd.Name = base(words[0].text)
	}
	for _, a := range words[1:] {
		cmd.Args = append(cmd.Args, a.text)
		if !a.lit {
			cmd.DynamicArgs = true
		}
	}
	w.add(cmd)
	if cmd.Name == "" {
		return nil, nil
	}
	names := []string{cmd.Name}
	n, out := w.unwrap(cmd, words, c)
	return addFeeds(names, n), out
}

// decl handles declare, local, export, readonly, typeset and nameref.
func (w *walker) decl(d *syntax.DeclClause, c ctx) ([]string, *word) {
	var names []string
	args := []string{}
	for _, as := range d.Args {
		if as == nil {
			continue
		}
		names = addFeeds(names, w.substs(as, c))
		args = append(args, w.assignText(as, c))
		names = addFeeds(names, w.special(as, c))
		w.assign(as, c)
	}
	variant := "declare"
	if d.Variant != nil {
		variant = d.Variant.Value
	}
	w.add(Command{Name: variant, Argv0: variant, Args: args, Redirs: c.redirs, Feeds: c.feeds, Via: c.via})
	return addFeeds(names, []string{variant}), nil
}

// assign records the value a plain assignment gives its variable.
func (w *walker) assign(as *syntax.Assign, c ctx) {
	if as.Name == nil || as.Naked {
		return
	}
	if as.Index != nil || as.Array != nil {
		delete(w.sc.vars, as.Name.Value)
		return
	}
	w.sc.setVar(as.Name.Value, w.render(as.Value, c), as.Append)
}

// assignText renders an assignment as NAME=value.
func (w *walker) assignText(as *syntax.Assign, c ctx) string {
	if as.Array != nil || as.Index != nil {
		return w.print(as)
	}
	var b strings.Builder
	if as.Name != nil {
		b.WriteString(as.Name.Value)
	}
	if as.Naked {
		if as.Value != nil {
			b.WriteString(w.render(as.Value, c).text)
		}
		return b.String()
	}
	if as.Append {
		b.WriteString("+")
	}
	b.WriteString("=")
	if as.Value != nil {
		b.WriteString(w.render(as.Value, c).text)
	}
	return b.String()
}

// special analyses the values of variables that the shell runs as code:
// PROMPT_COMMAND before each prompt, and the command substitutions of the
// prompt strings PS0-PS4 when they are expanded.
func (w *walker) special(as *syntax.Assign, c ctx) []string {
	if as.Name == nil || as.Naked {
		return nil
	}
	var vals []word
	if as.Value != nil {
		vals = append(vals, w.render(as.Value, c))
	}
	if as.Array != nil {
		for _, el := range as.Array.Elems {
			if el != nil && el.Value != nil {
				vals = append(vals, w.render(el.Value, c))
			}
		}
	}
	var names []string
	switch as.Name.Value {
	case "PROMPT_COMMAND":
		for _, v := range vals {
			n, _ := w.code(v, c, "PROMPT_COMMAND", false)
			names = addFeeds(names, n)
		}
	case "PS0", "PS1", "PS2", "PS3", "PS4":
		for _, v := range vals {
			if !strings.ContainsAny(v.text, "$`") {
				continue
			}
			doc, err := w.document(v.text)
			if err != nil {
				w.unparseable(ctx{via: with(c.via, as.Name.Value)}, err.Error())
				continue
			}
			c2 := c
			c2.via = with(c.via, as.Name.Value)
			names = addFeeds(names, w.substs(doc, c2))
		}
	}
	return names
}

func (w *walker) document(text string) (doc *syntax.Word, err error) {
	defer func() {
		if r := recover(); r != nil {
			doc, err = nil, fmt.Errorf("shell parser failed: %v", r)
			w.p.sh = syntax.NewParser(syntax.Variant(syntax.LangBash))
		}
	}()
	w.work -= len(text)
	if w.work < 0 {
		return nil, fmt.Errorf("analysis budget exhausted")
	}
	return w.p.sh.Document(strings.NewReader(text))
}

// print renders a node as shell source on one line.
func (w *walker) print(n syntax.Node) (s string) {
	defer func() {
		if r := recover(); r != nil {
			s = "?"
			w.p.printer = syntax.NewPrinter(syntax.SingleLine(true))
		}
	}()
	var b strings.Builder
	if err := w.p.printer.Print(&b, n); err != nil {
		return "?"
	}
	return b.String()
}
