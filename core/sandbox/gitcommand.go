package sandbox

import (
	"path"
	"strings"
)

// A config's command (core.fsmonitor, a filter, an alias's "!...") runs
// through the shell from the top of the worktree when it is more than a
// word, so any program in it named by a relative path, and any script an
// interpreter in it reads, is a file of the worktree's, which the agent
// writes. commandPaths finds those in a command's text, as far as that
// can be known without running it.

// maxCommandPaths bounds what one command value names.
const maxCommandPaths = 8

// commandPaths returns the programs the command v (a config value; a
// leading '!' is an alias's or a helper's mark of a shell command) runs
// from a path, and the scripts the interpreters in it read: in each
// simple command (split at ; & | ( ) and newlines), the first word past
// assignments, reserved words and wrappers (env, exec, timeout, nice,
// xargs, ..., and their options), when it holds a '/'; or, when that
// word is an interpreter (sh, python3.11, node, ., source, ...), its
// first operand past its options, with or without a '/', a file it
// reads on its input (sh <x.sh), and what a shell's -c runs; and the
// same in command substitutions. A `cd DIR` before them moves where
// relative ones are. A word with an expansion ($, `, a glob, a leading
// ~) cannot be known and is passed over.
func commandPaths(v string) []string {
	var out []string
	commandPathsInto(strings.TrimPrefix(strings.TrimSpace(v), "!"), &out, 0)
	return out
}

func commandPathsInto(v string, out *[]string, depth int) {
	if depth > 3 {
		return
	}
	cmds, subs := shellCommands(v)
	for _, sub := range subs {
		commandPathsInto(sub, out, depth+1)
	}
	dir := "" // where a cd before has moved to
	at := func(p string) string {
		if dir == "" || path.IsAbs(p) {
			return p
		}
		return path.Join(dir, p)
	}
	for _, words := range cmds {
		var in string // a file on the command's input
		args := words[:0:0]
		for _, w := range words {
			if w.redirIn {
				if !w.unknown {
					in = w.text
				}
				continue
			}
			args = append(args, w)
		}
		for j := 1; j+1 < len(args); j++ {
			if args[j].text == "-S" && path.Base(args[j-1].text) == "env" && !args[j+1].unknown {
				commandPathsInto(args[j+1].text, out, depth+1) // env -S 'prog args'
			}
		}
		// env -C DIR, env --chdir=DIR: the program runs from DIR.
		env := false
		for j := 0; j < len(args); j++ {
			w := args[j].text
			switch {
			case path.Base(w) == "env":
				env = true
			case env && (w == "-C" || w == "--chdir") && j+1 < len(args) && !args[j+1].unknown:
				dir = at(args[j+1].text)
			case env && strings.HasPrefix(w, "--chdir=") && !args[j].unknown:
				dir = at(strings.TrimPrefix(w, "--chdir="))
			}
		}
		i := skipWrappers(args)
		if i == len(args) || args[i].unknown {
			continue
		}
		prog := args[i].text
		if prog == "cd" || prog == "pushd" {
			if i+1 < len(args) && !args[i+1].unknown && !strings.HasPrefix(args[i+1].text, "-") {
				dir = at(args[i+1].text)
			} else {
				dir = "" // cd alone, cd -: not known; take the top
			}
			continue
		}
		if !interpreter(path.Base(prog)) {
			if strings.ContainsRune(prog, '/') {
				add(out, at(prog))
			}
			continue
		}
		if in != "" {
			add(out, at(in)) // sh <x.sh
		}
		shell := shells[trimVersion(path.Base(prog))]
		for i++; i < len(args); i++ {
			w := args[i].text
			switch {
			case args[i].unknown:
			case w == "--":
				continue
			case shell && strings.HasPrefix(w, "-") && !strings.HasPrefix(w, "--") && strings.ContainsRune(w, 'c'):
				// sh -c, sh -ec, bash -lc: the next word is a command.
				if i+1 < len(args) && !args[i+1].unknown {
					commandPathsInto(args[i+1].text, out, depth+1)
				}
			case codeOption[w] && !shell:
			case argOption[w] && (!shell || strings.ContainsAny(w, "oO")):
				// An option's argument may be a file too (node -r ./x).
				if i+1 < len(args) && !args[i+1].unknown && strings.ContainsRune(args[i+1].text, '/') {
					add(out, at(args[i+1].text))
				}
				i++
				continue
			case strings.HasPrefix(w, "-") || strings.HasPrefix(w, "+"):
				continue
			default:
				add(out, at(w)) // the script, read from the working directory
			}
			break
		}
	}
}

// skipWrappers returns the index of the command's name in words, past
// assignments and wrappers (env, exec, timeout, nice, ...) with their
// options and the numbers they take (nice -n 10, timeout -k 5 60).
func skipWrappers(words []shellWord) int {
	i := 0
	for i < len(words) {
		w := words[i].text
		switch {
		case w == "" || assignment(w):
			i++
		case w == "function":
			i += 2 // function NAME { ...
		case wrappers[path.Base(w)]:
			i++
			for i < len(words) {
				o := words[i].text
				switch {
				case o == "--":
					i++
				case strings.HasPrefix(o, "-") && len(o) > 1:
					i++
					if wrapperArg[o] && i < len(words) {
						i++ // its argument: exec -a NAME, env -u VAR
					}
					continue
				case numeric(o) || w == "flock" && !strings.HasPrefix(o, "-") && i+1 < len(words):
					i++ // timeout's duration, flock's lock file
					continue
				}
				break
			}
		default:
			return i
		}
	}
	return i
}

// numeric reports whether w is a number or a duration (60, 1.5, 10s).
func numeric(w string) bool {
	w = strings.TrimRight(w, "smhd")
	if w == "" {
		return false
	}
	for _, c := range w {
		if (c < '0' || c > '9') && c != '.' {
			return false
		}
	}
	return true
}

func add(out *[]string, p string) {
	if p != "" && len(*out) < maxCommandPaths {
		*out = append(*out, p)
	}
}

// commandPath is the first of commandPaths, if any.
func commandPath(v string) (string, bool) {
	if ps := commandPaths(v); len(ps) > 0 {
		return ps[0], true
	}
	return "", false
}

// wrappers run the command that follows them (and reserved words that
// precede one).
var wrappers = map[string]bool{"env": true, "exec": true, "command": true, "builtin": true, "nice": true, "nohup": true,
	"time": true, "timeout": true, "xargs": true, "stdbuf": true, "setsid": true, "flock": true, "ionice": true,
	"chrt": true, "taskset": true, "unbuffer": true, "busybox": true, "sudo": true, "doas": true, "eval": true, "coproc": true,
	"{": true, "!": true, "if": true, "then": true, "else": true, "elif": true, "do": true, "while": true, "until": true}

// wrapperArg are wrapper options that take an argument.
var wrapperArg = map[string]bool{"-a": true, "-n": true, "-k": true, "-s": true, "-u": true, "-C": true,
	"-c": true, "-I": true, "-d": true, "-L": true, "-P": true, "-E": true, "-w": true}

// shells run a -c option's text as a command.
var shells = map[string]bool{"sh": true, "bash": true, "dash": true, "zsh": true, "ksh": true, "mksh": true, "ash": true}

// interpreters read the script their first operand names, or run a -c's
// text; by name, any version suffix dropped (python3.11, perl5.36).
var interpreters = map[string]bool{"python": true, "pypy": true, "perl": true, "ruby": true, "node": true, "nodejs": true,
	"deno": true, "bun": true, "php": true, "lua": true, "luajit": true, "tclsh": true, "wish": true, "rscript": true,
	"pwsh": true, "fish": true, ".": true, "source": true}

func interpreter(name string) bool {
	n := strings.ToLower(trimVersion(name))
	return shells[n] || interpreters[n]
}

// trimVersion drops a version suffix: python3.11 -> python.
func trimVersion(name string) string {
	if t := strings.TrimRight(name, "0123456789.-"); t != "" {
		return t
	}
	return name
}

// codeOption options (of interpreters other than shells) take a
// program's text or a module, not a script: no file follows. argOption
// options take an argument before the script (a shell's: -o, -O).
var (
	codeOption = map[string]bool{"-c": true, "-e": true, "-E": true, "-m": true, "-p": true}
	argOption  = map[string]bool{"-o": true, "-O": true, "+o": true, "+O": true, "-W": true, "-X": true, "-I": true, "-M": true, "-r": true, "-d": true}
)

// shellWord is a word of a command as the shell would see it.
type shellWord struct {
	text    string // quotes and escapes removed
	unknown bool   // holds an expansion: what it is cannot be known
	redirIn bool   // the file of an input redirection (<x)
}

// shellCommands splits a command's text into simple commands and their
// words, after sh's quoting: '...', "...", backslash escapes; the words
// of an output redirection (> file, 2>&1) are dropped, an input's kept
// as such. It also returns the text of the command substitutions in it
// ($(...), `...`), which run too.
func shellCommands(s string) (cmds [][]shellWord, subs []string) {
	var cur []shellWord
	var b strings.Builder
	inWord, unknown := false, false
	redirect := byte(0)
	endWord := func() {
		if !inWord {
			return
		}
		w := shellWord{text: b.String(), unknown: unknown, redirIn: redirect == '<'}
		if redirect != '>' {
			cur = append(cur, w)
		}
		b.Reset()
		inWord, unknown, redirect = false, false, 0
	}
	endCmd := func() {
		endWord()
		if len(cur) > 0 {
			cmds = append(cmds, cur)
		}
		cur = nil
	}
	// substitution reads the $(...) or `...` at s[i] (i at '$' or '`'),
	// keeps its text, and returns where it ends.
	substitution := func(i int) int {
		unknown, inWord = true, true
		if s[i] == '`' {
			j := strings.IndexByte(s[i+1:], '`')
			if j < 0 {
				return len(s) - 1
			}
			subs = append(subs, s[i+1:i+1+j])
			return i + 1 + j
		}
		arith := i+2 < len(s) && s[i+2] == '('
		depth := 0
		for k := i + 1; k < len(s); k++ {
			switch s[k] {
			case '(':
				depth++
			case ')':
				if depth--; depth == 0 {
					if !arith {
						subs = append(subs, s[i+2:k])
					}
					return k
				}
			}
		}
		return len(s) - 1
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s):
			i++
			if s[i] == '`' {
				unknown = true
			}
			if s[i] != '\n' {
				b.WriteByte(s[i])
				inWord = true
			}
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				j = len(s) - i - 1
			}
			if strings.ContainsRune(s[i+1:i+1+j], '`') {
				unknown = true // a literal one, but no program's path
			}
			b.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			for i++; i < len(s) && s[i] != '"'; i++ {
				switch {
				case s[i] == '\\' && i+1 < len(s) && strings.IndexByte("$`\"\\\n", s[i+1]) >= 0:
					i++
					if s[i] == '`' {
						unknown = true
					}
					b.WriteByte(s[i])
				case s[i] == '`' || s[i] == '$' && i+1 < len(s) && s[i+1] == '(':
					i = substitution(i)
				case s[i] == '$':
					unknown = true
					b.WriteByte(s[i])
				default:
					b.WriteByte(s[i])
				}
			}
			inWord = true
		case c == '`' || c == '$' && i+1 < len(s) && s[i+1] == '(':
			i = substitution(i)
		case c == ' ' || c == '\t':
			endWord()
		case strings.IndexByte(";&|()\n", c) >= 0:
			endCmd()
		case (c == '<' || c == '>') && i+1 < len(s) && s[i+1] == '(':
			i = substitution(i) // <(cmd), >(cmd): a process substitution runs cmd
		case c == '<' || c == '>':
			if inWord && redirect == 0 && numeric(b.String()) {
				b.Reset() // 2>file: the descriptor, no word
				inWord, unknown = false, false
			}
			endWord()
			redirect = c // the next word is a file, not an argument
			for i+1 < len(s) && strings.IndexByte("<>&|", s[i+1]) >= 0 {
				i++
			}
			if c == '<' && i+1 < len(s) && s[i] == '&' {
				redirect = '>' // <&3: a descriptor
			}
		default:
			if strings.IndexByte("$`*?[", c) >= 0 || c == '~' && !inWord {
				unknown = true
			}
			b.WriteByte(c)
			inWord = true
		}
	}
	endCmd()
	return cmds, subs
}

// assignment reports whether w is a shell variable assignment (NAME=...),
// which a command's program follows.
func assignment(w string) bool {
	name, _, ok := strings.Cut(w, "=")
	if !ok || name == "" {
		return false
	}
	for i, c := range name {
		if c != '_' && !(c >= 'a' && c <= 'z') && !(c >= 'A' && c <= 'Z') && !(i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}
