package shcmd

import (
	"encoding/base64"
	"encoding/hex"
	"strings"
	"unicode/utf8"

	"mvdan.cc/sh/v3/syntax"
)

// spec says how a wrapper's own options are laid out, so that the command
// it runs can be found after them.
type spec struct {
	short    string   // short options that take a value: "u" for sudo -u root
	long     []string // long options that take a value when not written --opt=value
	pos      int      // operands before the command: timeout's duration, chroot's root
	assigns  bool     // NAME=value words before the command set its environment
	numeric  bool     // -N is an option (nice -10)
	stop     string   // short options that mean no command is run (command -v)
	splitOpt byte     // short option whose value is split into words and run (env -S)
}

// wrappers run the command given after their own options and operands.
var wrappers = map[string]spec{
	"sudo": {short: "CDghpRrtTUu", long: []string{"--close-from", "--chdir", "--group", "--host",
		"--prompt", "--chroot", "--role", "--type", "--command-timeout", "--other-user", "--user"},
		assigns: true, stop: "elvK"},
	"doas":             {short: "uC"},
	"run0":             {short: "uDgU", long: []string{"--user", "--group", "--chdir", "--unit", "--description", "--property", "--setenv", "--nice", "--slice"}},
	"pkexec":           {long: []string{"--user"}},
	"env":              {short: "uCPS", long: []string{"--unset", "--chdir", "--split-string"}, assigns: true, splitOpt: 'S'},
	"command":          {stop: "vV"},
	"builtin":          {},
	"exec":             {short: "a"},
	"nice":             {short: "n", long: []string{"--adjustment"}, numeric: true},
	"nohup":            {},
	"setsid":           {},
	"timeout":          {short: "sk", long: []string{"--signal", "--kill-after"}, pos: 1},
	"stdbuf":           {short: "ioe", long: []string{"--input", "--output", "--error"}},
	"time":             {short: "fo", long: []string{"--format", "--output"}},
	"xargs":            {short: "adEILnPs", long: []string{"--arg-file", "--delimiter", "--max-args", "--max-procs", "--max-chars", "--process-slot-var"}},
	"ionice":           {short: "cnpPu", stop: "pPu"},
	"chrt":             {short: "T", pos: 1, stop: "p"},
	"taskset":          {pos: 1, stop: "p"},
	"chroot":           {long: []string{"--userspec", "--groups"}, pos: 1},
	"unshare":          {short: "SGRw", long: []string{"--setuid", "--setgid", "--root", "--wd", "--map-user", "--map-group"}},
	"nsenter":          {short: "tSG", long: []string{"--target", "--setuid", "--setgid"}},
	"strace":           {short: "abeEIoOpPsSuUX"},
	"ltrace":           {short: "aAeDnoOpsSuwx"},
	"valgrind":         {},
	"proxychains":      {short: "f"},
	"proxychains4":     {short: "f"},
	"torsocks":         {short: "upaP"},
	"firejail":         {},
	"systemd-run":      {short: "pEuMHC", long: []string{"--property", "--setenv", "--unit", "--uid", "--gid", "--nice", "--working-directory", "--description", "--slice", "--machine", "--host"}},
	"xvfb-run":         {short: "nsfepw"},
	"fakeroot":         {short: "lsi", long: []string{"--lib", "--faked"}},
	"faketime":         {pos: 1},
	"sshpass":          {short: "pfd"},
	"unbuffer":         {},
	"catchsegv":        {},
	"eatmydata":        {},
	"nocache":          {},
	"ccache":           {},
	"numactl":          {short: "CmNnpiP"},
	"cgexec":           {short: "g"},
	"dbus-run-session": {long: []string{"--config-file", "--dbus-daemon"}},
	"caffeinate":       {short: "tw"},
	"then":             {},
}

// shells run their -c string, their script operand, or the script on
// their standard input.
var shells = map[string]bool{
	"sh": true, "bash": true, "rbash": true, "zsh": true, "dash": true, "ksh": true, "mksh": true,
	"oksh": true, "pdksh": true, "ash": true, "yash": true, "posh": true, "fish": true,
}

// split finds the command a wrapper runs: the words after its options,
// operands and (for sudo and env) NAME=value assignments. ok is false when
// the options say no command is run.
func (s spec) split(w *walker, args []word) (cmd []word, assigns []string, ok bool) {
	i := 0
	var pre []word
	for i < len(args) {
		a := args[i].text
		if a == "--" {
			i++
			break
		}
		if len(a) < 2 || a[0] != '-' {
			break
		}
		if s.numeric && isDigits(a[1:]) {
			i++
			continue
		}
		if strings.HasPrefix(a, "--") {
			name, val, hasVal := strings.Cut(a, "=")
			takes := false
			for _, l := range s.long {
				if l == name {
					takes = true
				}
			}
			if s.splitOpt != 0 && name == "--split-string" {
				if !hasVal && i+1 < len(args) {
					val = args[i+1].text
				}
				pre = append(pre, w.splitWords(val)...)
			}
			i++
			if takes && !hasVal {
				i++
			}
			continue
		}
		i++
		for k := 1; k < len(a); k++ {
			if strings.IndexByte(s.stop, a[k]) >= 0 {
				return nil, nil, false
			}
			if strings.IndexByte(s.short, a[k]) >= 0 {
				val := a[k+1:]
				if val == "" && i < len(args) {
					val = args[i].text
					i++
				}
				if s.splitOpt != 0 && a[k] == s.splitOpt {
					pre = append(pre, w.splitWords(val)...)
				}
				break
			}
		}
	}
	i += s.pos
	if i > len(args) {
		return nil, nil, false
	}
	if s.assigns {
		for i < len(args) && isAssign(args[i].text) {
			assigns = append(assigns, args[i].text)
			i++
		}
	}
	if len(pre) > 0 {
		return append(pre, args[i:]...), assigns, true
	}
	return args[i:], assigns, true
}

// splitWords splits s into words as env -S does, near enough: as a shell
// would split a simple command.
func (w *walker) splitWords(s string) []word {
	f, err := w.parseFile(s, false)
	if err != nil || f == nil || len(f.Stmts) == 0 {
		return []word{{text: s}}
	}
	var out []word
	for _, st := range f.Stmts {
		if st == nil {
			continue
		}
		if ce, ok := st.Cmd.(*syntax.CallExpr); ok {
			for _, a := range ce.Args {
				out = w.expand(out, a, ctx{})
			}
		}
	}
	if len(out) == 0 {
		return []word{{text: s}}
	}
	return out
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// isAssign reports whether s is NAME=value.
func isAssign(s string) bool {
	eq := strings.IndexByte(s, '=')
	if eq <= 0 {
		return false
	}
	for i := 0; i < eq; i++ {
		ch := s[i]
		if ch == '_' || (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (i > 0 && ch >= '0' && ch <= '9') {
			continue
		}
		return false
	}
	return true
}

func texts(ws []word) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = w.text
	}
	return out
}

// joinWords joins words with spaces, as eval and watch do.
func joinWords(ws []word) word {
	r := word{lit: true, guessed: true}
	parts := make([]string, len(ws))
	for i, x := range ws {
		parts[i] = x.text
		r.lit = r.lit && x.lit
		r.guessed = r.guessed && x.known()
	}
	r.text = strings.Join(parts, " ")
	if r.lit {
		r.guessed = false
	}
	return r
}

// unwrap analyses what the command cmd (argv words) runs in turn, and
// returns the names found and, for commands that print text we can know
// (echo, printf, cat of a here-document), that text.
func (w *walker) unwrap(cmd Command, words []word, c ctx) ([]string, *word) {
	name := cmd.Name
	args := words[1:]
	inner := func(ws []word, via string, extra []string, open bool) ([]string, *word) {
		if len(ws) == 0 {
			return nil, nil
		}
		c2 := c
		c2.via = with(cmd.Via, via)
		c2.open = c.open || open
		return w.emit(ws, with(cmd.Assigns, extra...), c2)
	}

	// A function defined earlier in this text runs its body here.
	if def, ok := w.sc.funcs[name]; ok && !strings.Contains(cmd.Argv0, "/") {
		if w.active == nil {
			w.active = make(map[*syntax.Stmt]bool)
		}
		if w.active[def.body] || w.calls >= maxFuncCalls {
			return nil, nil
		}
		w.calls++
		w.active[def.body] = true
		c2 := c
		c2.via = with(cmd.Via, name+"()")
		c2.params = &params{zero: words[0], words: args}
		names, out := w.stmt(def.body, c2)
		delete(w.active, def.body)
		return names, out
	}

	if s, ok := wrappers[name]; ok {
		ws, extra, ok := s.split(w, args)
		if !ok {
			return nil, nil
		}
		open := name == "xargs"
		return inner(ws, name, extra, open)
	}
	if shells[name] {
		return w.shell(name, args, c, cmd.Via)
	}
	switch name {
	case "echo":
		return nil, echoText(args)
	case "printf":
		return nil, printfText(args)
	case "cat", "tee":
		for _, a := range args {
			if name == "cat" && a.text != "-" {
				return nil, nil
			}
		}
		return nil, c.stdin
	case "base64", "base32", "xxd", "rev":
		return nil, decode(name, args, c.stdin)
	case "eval":
		if len(args) == 0 {
			return nil, nil
		}
		c2 := c
		c2.via = cmd.Via
		return w.code(joinWords(args), c2, "eval", true)
	case "busybox", "toybox":
		if len(args) > 0 && !strings.HasPrefix(args[0].text, "-") {
			return inner(args, name, nil, false)
		}
	case "find":
		return w.find(cmd, args, c)
	case "parallel":
		return w.parallel(cmd, args, c)
	case "su", "runuser", "script", "nix-shell":
		for i, a := range args {
			t := a.text
			var str *word
			switch {
			case (t == "-c" || t == "--command" || t == "--session-command" || t == "--run") && i+1 < len(args):
				str = &args[i+1]
			case strings.HasPrefix(t, "--command="), strings.HasPrefix(t, "--session-command="), strings.HasPrefix(t, "--run="):
				_, v, _ := strings.Cut(t, "=")
				str = &word{text: v, lit: a.lit, guessed: a.guessed}
			}
			if str != nil {
				c2 := c
				c2.via = cmd.Via
				c2.params = nil
				return w.code(*str, c2, name+" -c", false)
			}
		}
	case "flock":
		ws, _, ok := spec{short: "wEn", long: []string{"--timeout", "--conflict-exit-code"}, pos: 1}.split(w, args)
		if !ok || len(ws) == 0 {
			return nil, nil
		}
		if (ws[0].text == "-c" || ws[0].text == "--command") && len(ws) > 1 {
			c2 := c
			c2.via = cmd.Via
			c2.params = nil
			return w.code(ws[1], c2, "flock -c", false)
		}
		return inner(ws, name, nil, false)
	case "watch":
		ws, _, ok := spec{short: "ndq", long: []string{"--interval", "--differences", "--equexit"}}.split(w, args)
		if !ok || len(ws) == 0 {
			return nil, nil
		}
		for _, a := range args {
			if a.text == "-x" || a.text == "--exec" {
				return inner(ws, name, nil, false)
			}
		}
		c2 := c
		c2.via = cmd.Via
		c2.params = nil
		return w.code(joinWords(ws), c2, "watch", false)
	case "trap":
		if len(args) >= 2 && args[0].text != "-" && args[0].text != "-p" && args[0].text != "-l" && args[0].text != "--" {
			c2 := c
			c2.via = cmd.Via
			return w.code(args[0], c2, "trap", true)
		}
	case "alias":
		var names []string
		for _, a := range args {
			k, v, ok := strings.Cut(a.text, "=")
			if !ok {
				continue
			}
			c2 := c
			c2.via = cmd.Via
			n, _ := w.code(word{text: v, lit: a.lit, guessed: a.guessed}, c2, "alias "+k, false)
			names = addFeeds(names, n)
		}
		return names, nil
	case "tmux":
		return w.tmux(cmd, args, c)
	case "screen":
		return w.screen(cmd, args, c)
	}
	return nil, nil
}

// shell analyses sh/bash/… with their -c string, or the script on their
// standard input when it is known.
func (w *walker) shell(name string, args []word, c ctx, via []string) ([]string, *word) {
	cflag := false
	i := 0
	for ; i < len(args); i++ {
		a := args[i].text
		if a == "--" || a == "-" {
			i++
			break
		}
		if len(a) < 2 || (a[0] != '-' && a[0] != '+') {
			break
		}
		if strings.HasPrefix(a, "--") {
			if a == "--rcfile" || a == "--init-file" || a == "--init-command" {
				i++
			}
			continue
		}
		if a == "-o" || a == "+o" || a == "-O" || a == "+O" {
			i++
			continue
		}
		if a[0] == '-' && strings.IndexByte(a[1:], 'c') >= 0 {
			cflag = true
		}
	}
	if i > len(args) {
		i = len(args)
	}
	rest := args[i:]
	c2 := c
	c2.via = via
	if cflag {
		if len(rest) == 0 {
			return nil, nil
		}
		c2.params = nil
		if !c.open {
			p := &params{words: []word{}}
			if len(rest) > 1 {
				p.zero = rest[1]
				p.words = rest[2:]
			}
			c2.params = p
		}
		return w.code(rest[0], c2, name+" -c", false)
	}
	if len(rest) > 0 || c.stdin == nil {
		return nil, nil // a script file, or a script we cannot see
	}
	c2.params = nil
	in := *c.stdin
	c2.stdin = nil
	return w.code(in, c2, name+" stdin", false)
}

// find analyses the commands of -exec, -execdir, -ok and -okdir.
func (w *walker) find(cmd Command, args []word, c ctx) ([]string, *word) {
	var names []string
	for i := 0; i < len(args); i++ {
		switch op := args[i].text; op {
		case "-exec", "-execdir", "-ok", "-okdir":
			j := i + 1
			for j < len(args) && args[j].text != ";" && args[j].text != "+" {
				j++
			}
			c2 := c
			c2.via = with(cmd.Via, "find "+op)
			c2.open = true
			n, _ := w.emit(args[i+1:j], cmd.Assigns, c2)
			names = addFeeds(names, n)
			i = j
		}
	}
	return names, nil
}

// parallel analyses GNU parallel: it builds each command line from the
// command and one input (replacing {} or appended) and runs it through a
// shell; with no command, each input is a command line.
func (w *walker) parallel(cmd Command, args []word, c ctx) ([]string, *word) {
	takes := map[string]bool{"-j": true, "-S": true, "-a": true, "-d": true, "-I": true, "-n": true, "-N": true,
		"-L": true, "-E": true, "-C": true, "-P": true, "--jobs": true, "--arg-file": true, "--delimiter": true,
		"--joblog": true, "--results": true, "--tmpdir": true, "--workdir": true, "--wd": true, "--timeout": true,
		"--delay": true, "--colsep": true, "--sshlogin": true, "--max-args": true, "--max-procs": true, "--env": true}
	i := 0
	for i < len(args) {
		a := args[i].text
		if a == "--" {
			i++
			break
		}
		if len(a) < 2 || a[0] != '-' || strings.HasPrefix(a, ":::") {
			break
		}
		i++
		if takes[a] {
			i++
		}
	}
	if i > len(args) {
		return nil, nil
	}
	var command, inputs []word
	seen := false
	for _, a := range args[i:] {
		if strings.HasPrefix(a.text, ":::") {
			seen = true
			continue
		}
		if seen {
			inputs = append(inputs, a)
		} else {
			command = append(command, a)
		}
	}
	c2 := c
	c2.via = cmd.Via
	c2.params = nil
	var names []string
	if !seen {
		if len(command) > 0 {
			c3 := c2
			c3.via = with(cmd.Via, "parallel")
			c3.open = true
			n, _ := w.emit(command, cmd.Assigns, c3)
			names = addFeeds(names, n)
		}
		return names, nil
	}
	for k, in := range inputs {
		if k >= maxParallelArg {
			w.unparseable(c2, "parallel: too many inputs to analyse")
			break
		}
		line := in
		if len(command) > 0 {
			ws := make([]word, 0, len(command)+1)
			replaced := false
			for _, x := range command {
				if strings.Contains(x.text, "{}") {
					replaced = true
					x.text = strings.ReplaceAll(x.text, "{}", in.text)
					x.lit = x.lit && in.lit
				}
				ws = append(ws, x)
			}
			if !replaced {
				ws = append(ws, in)
			}
			line = joinWords(ws)
		}
		n, _ := w.code(line, c2, "parallel", false)
		names = addFeeds(names, n)
	}
	return names, nil
}

// tmux analyses the shell commands tmux runs (new-session, new-window,
// split-window, respawn-pane, run-shell) and the keys send-keys types.
func (w *walker) tmux(cmd Command, args []word, c ctx) ([]string, *word) {
	sub := -1
	for i, a := range args {
		switch a.text {
		case "new-session", "new", "new-window", "neww", "split-window", "splitw",
			"respawn-pane", "respawnp", "respawn-window", "respawnw", "run-shell", "run", "send-keys", "send":
			sub = i
		}
		if sub >= 0 {
			break
		}
	}
	if sub < 0 {
		return nil, nil
	}
	ws, _, ok := spec{short: "cetnsxyFfN"}.split(w, args[sub+1:])
	if !ok || len(ws) == 0 {
		return nil, nil
	}
	text := joinWords(ws)
	if a := args[sub].text; a == "send-keys" || a == "send" {
		text.text = strings.NewReplacer(" Enter", "\n", " C-m", "\n", "Enter", "\n").Replace(text.text)
	}
	c2 := c
	c2.via = cmd.Via
	c2.params = nil
	return w.code(text, c2, "tmux "+args[sub].text, false)
}

// screen analyses screen CMD… and the text of screen -X stuff.
func (w *walker) screen(cmd Command, args []word, c ctx) ([]string, *word) {
	c2 := c
	c2.via = cmd.Via
	c2.params = nil
	for i, a := range args {
		if a.text == "-X" {
			if i+2 < len(args) && args[i+1].text == "stuff" {
				t := args[i+2]
				t.text = escapes(t.text, printfFm)
				return w.code(t, c2, "screen stuff", false)
			}
			return nil, nil
		}
	}
	ws, _, ok := spec{short: "SceEhpT"}.split(w, args)
	if !ok || len(ws) == 0 {
		return nil, nil
	}
	c2.via = with(cmd.Via, "screen")
	return w.emit(ws, cmd.Assigns, c2)
}

// echoText returns what echo prints.
func echoText(args []word) *word {
	nl, esc := true, false
	i := 0
	for ; i < len(args); i++ {
		a := args[i].text
		if len(a) < 2 || a[0] != '-' || strings.Trim(a[1:], "neE") != "" {
			break
		}
		for _, f := range a[1:] {
			switch f {
			case 'n':
				nl = false
			case 'e':
				esc = true
			case 'E':
				esc = false
			}
		}
	}
	r := joinWords(args[i:])
	if esc {
		r.text = escapes(r.text, echoE)
	}
	if nl {
		r.text += "\n"
	}
	return &r
}

// printfText returns what printf prints, for the common conversions.
func printfText(args []word) *word {
	if len(args) > 0 && args[0].text == "--" {
		args = args[1:]
	}
	if len(args) == 0 || args[0].text == "-v" {
		return nil
	}
	r := joinWords(args)
	format := args[0].text
	vals := args[1:]
	var b strings.Builder
	next := 0
	for round := 0; round < 64; round++ {
		for i := 0; i < len(format); i++ {
			ch := format[i]
			if ch == '\\' {
				j := i + 1
				for j < len(format) && j < i+4 && format[j] >= '0' && format[j] <= '7' {
					j++
				}
				if j == i+1 {
					j = i + 2
				}
				if j > len(format) {
					j = len(format)
				}
				b.WriteString(escapes(format[i:j], printfFm))
				i = j - 1
				continue
			}
			if ch != '%' {
				b.WriteByte(ch)
				continue
			}
			j := i + 1
			for j < len(format) && strings.IndexByte("-+ #0123456789.", format[j]) >= 0 {
				j++
			}
			if j >= len(format) {
				b.WriteString(format[i:])
				break
			}
			verb := format[j]
			i = j
			if verb == '%' {
				b.WriteByte('%')
				continue
			}
			v := ""
			if next < len(vals) {
				v = vals[next].text
			}
			next++
			if verb == 'b' {
				v = escapes(v, printfFm)
			}
			b.WriteString(v)
		}
		if next == 0 || next >= len(vals) {
			break
		}
	}
	r.text = b.String()
	return &r
}

// decode returns what base64 -d, base32 -d, xxd -r -p and rev make of the
// known text on their standard input.
func decode(name string, args []word, in *word) *word {
	if in == nil {
		return nil
	}
	flags := ""
	for _, a := range args {
		if !strings.HasPrefix(a.text, "-") {
			return nil // reads a file
		}
		flags += " " + a.text
	}
	clean := strings.Map(func(r rune) rune {
		if r == ' ' || r == '\n' || r == '\r' || r == '\t' {
			return -1
		}
		return r
	}, in.text)
	var out []byte
	var err error
	switch name {
	case "base64":
		if !strings.Contains(flags, "-d") && !strings.Contains(flags, "-D") && !strings.Contains(flags, "--decode") {
			return nil
		}
		out, err = base64.StdEncoding.DecodeString(clean)
		if err != nil {
			out, err = base64.RawStdEncoding.DecodeString(strings.TrimRight(clean, "="))
		}
	case "base32":
		return nil
	case "xxd":
		if !strings.Contains(flags, "r") || !strings.Contains(flags, "p") {
			return nil
		}
		out, err = hex.DecodeString(clean)
	case "rev":
		lines := strings.Split(in.text, "\n")
		for i, l := range lines {
			rs := []rune(l)
			for a, b := 0, len(rs)-1; a < b; a, b = a+1, b-1 {
				rs[a], rs[b] = rs[b], rs[a]
			}
			lines[i] = string(rs)
		}
		out = []byte(strings.Join(lines, "\n"))
	}
	if err != nil || !utf8.Valid(out) {
		return nil
	}
	return &word{text: string(out), lit: in.lit, guessed: in.guessed}
}
