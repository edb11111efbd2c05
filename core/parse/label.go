package parse

import (
	"strings"
)

// labelKind classifies the info string of a code fence.
type labelKind int

const (
	// labelNone: no word of the info string is a label we know. An
	// unlabelled fence is not labelNone: it is labelShell.
	labelNone labelKind = iota
	// labelShell: the block is a shell command.
	labelShell
	// labelOther: a language we know is not a shell (python, json, diff...).
	labelOther
)

// shellLabels are the info strings that mean "a shell command". The value is
// true for the transcript styles, where lines carry a "$ " prompt and the
// lines without one are the program's output.
var shellLabels = map[string]bool{
	"bash": false, "sh": false, "shell": false, "zsh": false, "ksh": false,
	"dash": false, "ash": false, "csh": false, "tcsh": false, "fish": false,
	"posix": false, "shellscript": false, "shell-script": false,
	"bash-script": false, "command": false, "commandline": false,
	"command-line": false, "cmdline": false, "cli": false,
	"console": true, "terminal": true, "shell-session": true,
	"shellsession": true, "sh-session": true, "bash-session": true,
}

// fuzzyTargets are the shell labels a misspelt label is compared with. Short
// names such as "sh" are in the list but only labels of three letters or more
// are compared, so "ls" or "js" never pass for "sh".
var fuzzyTargets = []string{"bash", "sh", "zsh", "shell", "console", "terminal", "shellscript", "bash-session", "shell-session"}

// otherLabels are languages that are not shell, checked before the fuzzy
// match so that a real language close to a shell name (hs for Haskell, math,
// batch, jshell) is never taken for a command.
var otherLabels = toSet(`
python py py3 python3 python2 ipython pycon jupyter json jsonc json5 jsonl ndjson
yaml yml toml ini xml html htm xhtml svg css scss sass less js javascript mjs cjs
ts typescript jsx tsx vue svelte go golang rust rs c h cpp c++ cc cxx hpp hxx
objc objective-c java kotlin kt kts swift ruby rb php perl pl pm lua r rscript
sql mysql psql postgres postgresql plsql sqlite diff patch udiff text txt
plaintext plain output out log logs stdout stderr result markdown md mdx rst
csv tsv dockerfile docker containerfile makefile make mk cmake hs haskell math
latex tex katex batch bat cmd powershell ps1 psm1 pwsh ps jshell scala sc
clojure clj edn elixir ex exs erlang erl ocaml ml fsharp fs f# csharp cs c# vb
vbnet graphql gql proto protobuf nginx apache env dotenv properties conf config
cfg gitignore gitconfig mermaid plantuml dot graphviz nix hcl terraform tf
groovy gradle dart julia jl zig nim vim viml elisp emacs-lisp lisp scheme
racket asm nasm x86asm wasm wat solidity sol http https regex re awk sed tcl
expect jinja jinja2 django handlebars hbs twig erb ejs liquid xsl xslt sshconfig
ssh-config crontab systemd desktop csp pug haml coffee coffeescript elm
purescript idris agda coq lean prolog fortran f90 cobol pascal delphi ada d
verilog vhdl matlab octave mathematica wolfram sas stata spss abap apex
`)

func toSet(words string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(words) {
		m[w] = true
	}
	return m
}

// labelInfo is the resolved info string of a fence.
type labelInfo struct {
	kind labelKind
	// name is the normalised label word that decided kind ("" if none).
	name string
	// console is true for transcript styles ("console", "terminal"...).
	console bool
	// used is how many leading words of the info string form the label.
	used int
}

// resolveLabel decides what a fence's info string says about its block.
// Words past the label (attributes, a stray command) are left to the caller.
func resolveLabel(words []string) labelInfo {
	if len(words) == 0 {
		return labelInfo{kind: labelShell}
	}
	w0 := normLabel(words[0])
	if console, ok := shellLabels[w0]; ok {
		return labelInfo{kind: labelShell, name: w0, console: console, used: 1}
	}
	if otherLabels[w0] {
		return labelInfo{kind: labelOther, name: w0, used: 1}
	}
	if t, ok := fuzzyShell(w0); ok {
		li := labelInfo{kind: labelShell, name: t, console: shellLabels[t], used: 1}
		// "she bash": a misspelt first word followed by the real name.
		if len(words) > 1 {
			w1 := normLabel(words[1])
			if c, ok := shellLabels[w1]; ok {
				li.name, li.console, li.used = w1, c, 2
			} else if t1, ok := fuzzyShell(w1); ok {
				li.name, li.console, li.used = t1, shellLabels[t1], 2
			}
		}
		return li
	}
	// "my bash", "sample shell session": a short leading word or two, then a
	// shell name. The leading words must look like words, not like a
	// command, so "cd bash" style accidents stay rare.
	for k := 1; k < len(words) && k <= 2; k++ {
		if !isPlainWord(words[k-1]) {
			break
		}
		wk := normLabel(words[k])
		if c, ok := shellLabels[wk]; ok && wk != "command" && wk != "cli" {
			return labelInfo{kind: labelShell, name: wk, console: c, used: k + 1}
		}
	}
	return labelInfo{kind: labelNone, name: w0}
}

// normLabel lower-cases a label word and strips the decorations renderers
// accept around it: "{.bash}", "language-bash", "bash:setup.sh", "bash,".
func normLabel(w string) string {
	w = strings.ToLower(w)
	w = strings.TrimLeft(w, "{.")
	w = strings.TrimPrefix(w, "language-")
	w = strings.TrimPrefix(w, "lang-")
	if i := strings.IndexAny(w, ":,;={}()[]"); i >= 0 {
		w = w[:i]
	}
	return w
}

// isPlainWord reports whether w is a short alphabetic word.
func isPlainWord(w string) bool {
	if len(w) == 0 || len(w) > 10 {
		return false
	}
	for i := 0; i < len(w); i++ {
		c := w[i] | 0x20
		if c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}

// isAttribute reports whether an info-string word after the label is a
// renderer attribute ({.numberLines}, title="x", #id) rather than text the
// model meant to run.
func isAttribute(w string) bool {
	return strings.ContainsAny(w, "={}") || strings.HasPrefix(w, ".") || strings.HasPrefix(w, "#")
}

// fuzzyShell reports the shell label w is a misspelling of, if any: within
// one edit of a name up to four letters long, two edits of a longer one.
// Transposed letters count as one edit ("bsah").
func fuzzyShell(w string) (string, bool) {
	if len(w) < 3 || len(w) > 20 {
		return "", false
	}
	for _, t := range fuzzyTargets {
		max := 1
		if len(t) >= 5 {
			max = 2
		}
		if d := len(w) - len(t); d > max || -d > max {
			continue
		}
		if editDistance(w, t) <= max {
			return t, true
		}
	}
	return "", false
}

// editDistance is the optimal string alignment distance between a and b
// (Levenshtein plus adjacent transpositions), on bytes. Labels are short, so
// the quadratic table is fine; callers bound the lengths.
func editDistance(a, b string) int {
	// Three rolling rows: the transposition step looks two rows back.
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
