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
// assignments, reserved words and wrappers (env, exec, command, nice,
// nohup), when it holds a '/'; or, when that word is an interpreter
// (sh, python3.11, node, ...), its first operand past its options,
// with or without a '/', and what a shell's -c runs. A word with an
// expansion ($, `, a glob, a leading ~) cannot be known and is passed
// over.
func commandPaths(v string) []string {
	var out []string
	commandPathsInto(strings.TrimPrefix(strings.TrimSpace(v), "!"), &out, 0)
	return out
}

func commandPathsInto(v string, out *[]string, depth int) {
	if depth > 2 {
		return
	}
	for _, words := range shellCommands(v) {
		i := 0
		for i < len(words) && (assignment(words[i].text) || wrappers[path.Base(words[i].text)] || words[i].text == "") {
			i++
		}
		if i == len(words) || words[i].unknown {
			continue
		}
		prog := words[i].text
		if !interpreter(path.Base(prog)) {
			if strings.ContainsRune(prog, '/') {
				add(out, prog)
			}
			continue
		}
		shell := shells[trimVersion(path.Base(prog))]
		for i++; i < len(words); i++ {
			w := words[i]
			switch {
			case w.unknown:
			case w.text == "--":
				continue
			case w.text == "-c" && shell && i+1 < len(words):
				commandPathsInto(words[i+1].text, out, depth+1)
			case codeOption[w.text] && !shell:
			case argOption[w.text] && (!shell || strings.ContainsAny(w.text, "oO")):
				i++
				continue
			case strings.HasPrefix(w.text, "-") || strings.HasPrefix(w.text, "+"):
				continue
			default:
				add(out, w.text) // the script, read from the working directory
			}
			break
		}
	}
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

// wrappers run the command that follows them.
var wrappers = map[string]bool{"env": true, "exec": true, "command": true, "nice": true, "nohup": true, "time": true,
	"{": true, "!": true, "if": true, "then": true, "else": true, "elif": true, "do": true, "while": true, "until": true}

// shells run a -c option's text as a command.
var shells = map[string]bool{"sh": true, "bash": true, "dash": true, "zsh": true, "ksh": true, "mksh": true, "ash": true, "busybox": true}

// interpreters read the script their first operand names, or run a -c's
// text; by name, any version suffix dropped (python3.11, perl5.36).
var interpreters = map[string]bool{"python": true, "pypy": true, "perl": true, "ruby": true, "node": true, "nodejs": true,
	"deno": true, "bun": true, "php": true, "lua": true, "luajit": true, "tclsh": true, "wish": true, "rscript": true, "pwsh": true, "fish": true}

func interpreter(name string) bool {
	n := strings.ToLower(trimVersion(name))
	return shells[n] || interpreters[n]
}

// trimVersion drops a version suffix: python3.11 -> python.
func trimVersion(name string) string {
	return strings.TrimRight(name, "0123456789.-")
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
}

// shellCommands splits a command's text into simple commands and their
// words, after sh's quoting: '...', "...", backslash escapes; the words
// of a redirection (> file) are dropped.
func shellCommands(s string) [][]shellWord {
	var cmds [][]shellWord
	var cur []shellWord
	var b strings.Builder
	inWord, unknown, redirect := false, false, false
	endWord := func() {
		if !inWord {
			return
		}
		w := shellWord{text: b.String(), unknown: unknown}
		if !redirect {
			cur = append(cur, w)
		}
		b.Reset()
		inWord, unknown, redirect = false, false, false
	}
	endCmd := func() {
		endWord()
		if len(cur) > 0 {
			cmds = append(cmds, cur)
		}
		cur = nil
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
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("$`\"\\\n", s[i+1]) >= 0 {
					i++
				} else if s[i] == '$' || s[i] == '`' {
					unknown = true
				}
				b.WriteByte(s[i])
			}
			inWord = true
		case c == ' ' || c == '\t':
			endWord()
		case strings.IndexByte(";&|()\n", c) >= 0:
			endCmd()
		case c == '<' || c == '>':
			endWord()
			redirect = true // the next word is a file, not an argument
			for i+1 < len(s) && strings.IndexByte("<>&|", s[i+1]) >= 0 {
				i++
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
	return cmds
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
