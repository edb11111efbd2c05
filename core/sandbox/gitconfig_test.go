package sandbox

import (
	"reflect"
	"strings"
	"testing"
)

func TestConfigPaths(t *testing.T) {
	for _, c := range []struct {
		name, text string
		want       []configRef
	}{
		{"include", "[include]\n\tpath = ../a.gitconfig\n", []configRef{{Path: "../a.gitconfig"}}},
		{"case and spaces", "[InClUdE]\n  PATH=b  \n", []configRef{{Path: "b"}}},
		{"includeIf", "[includeIf \"gitdir:~/work/\"]\n\tpath = w.gitconfig\n", []configRef{{Path: "w.gitconfig"}}},
		{"includeIf old syntax", "[includeif.onbranch:main]\npath = m\n", []configRef{{Path: "m"}}},
		{"hooksPath", "[core]\n\thooksPath = .husky/_\n\tbare = false\n", []configRef{{Path: ".husky/_", Hooks: true}}},
		{"quoted with comment", "[core]\n\thookspath = \"my hooks\" ; not this\n", []configRef{{Path: "my hooks", Hooks: true}}},
		{"escapes", "[include]\n\tpath = a\\\"b\\\\c\n", []configRef{{Path: "a\"b\\c"}}},
		{"continuation", "[include]\n\tpath = ab\\\ncd\n", []configRef{{Path: "abcd"}}},
		{"comment char in quotes", "[include]\n\tpath = \"x#y\" # z\n", []configRef{{Path: "x#y"}}},
		{"header and key on one line", "[include] path = one\n", []configRef{{Path: "one"}}},
		{"subsection with bracket", "[includeIf \"gitdir:/a]b/\"]\npath = q\n", []configRef{{Path: "q"}}},
		{"not in include", "[user]\n\tpath = no\n[core]\n\tfsmonitor = x\n", nil},
		{"section ends", "[include]\npath = a\n[user]\npath = b\n", []configRef{{Path: "a"}}},
		{"crlf", "[include]\r\n\tpath = c\r\n", []configRef{{Path: "c"}}},
		{"broken header", "[include\npath = x\n", nil},
		{"fsmonitor program", "[core]\n\tfsmonitor = ./tools/fsmon.sh\n", []configRef{{Path: "./tools/fsmon.sh", Exec: true}}},
		{"filter through an interpreter", "[filter \"x\"]\n\tclean = python3 -u scripts/clean.py %f\n", []configRef{{Path: "scripts/clean.py", Exec: true}}},
		{"alias in a shell", "[alias]\n\tst = \"!FOO=1 sh -e ./bin/st\"\n", []configRef{{Path: "./bin/st", Exec: true}}},
		{"alias of git", "[alias]\n\tlg = !git log origin/main..HEAD\n", nil},
		{"program on PATH", "[diff \"img\"]\n\ttextconv = exiftool\n", nil},
		{"absolute program", "[core]\n\tsshCommand = /usr/bin/ssh -i k/id\n", []configRef{{Path: "/usr/bin/ssh", Exec: true}}},
		{"expansion", "[core]\n\teditor = $HOME/bin/ed\n", nil},
	} {
		if got := configPaths(c.text); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}

func TestConfigTarget(t *testing.T) {
	const ws = "/home/u/proj"
	for _, c := range []struct {
		ref               configRef
		confDir, worktree string
		want              string
		ok                bool
	}{
		{configRef{Path: "../p.gitconfig"}, ".git", ".", "p.gitconfig", true},
		{configRef{Path: "../../x"}, ".git", ".", "", false},
		{configRef{Path: "/home/u/proj/sub/c"}, ".git", ".", "sub/c", true},
		{configRef{Path: "/home/u/projx/c"}, ".git", ".", "", false},
		{configRef{Path: "/etc/gitconfig"}, ".git", ".", "", false},
		{configRef{Path: "~/.gitconfig"}, ".git", ".", "", false},
		{configRef{Path: "%(prefix)/x"}, ".git", ".", "", false},
		{configRef{Path: ".husky/_", Hooks: true}, "sub/.git", "sub", "sub/.husky/_", true},
		{configRef{Path: "n.gitconfig"}, "sub", ".", "sub/n.gitconfig", true},
		{configRef{Path: "hooks", Hooks: true}, "store.git", "store.git", "store.git/hooks", true},
		{configRef{Path: "./tools/x", Exec: true}, "sub/.git", "sub", "sub/tools/x", true},
		{configRef{Path: "../x", Exec: true}, ".git", ".", "", false},
	} {
		got, ok := configTarget(c.ref, c.confDir, c.worktree, ws)
		if got != c.want || ok != c.ok {
			t.Errorf("%+v in %s: %q %v, want %q %v", c.ref, c.confDir, got, ok, c.want, c.ok)
		}
	}
}

// FuzzConfigPaths: any text (a config the agent may have written, in a
// repository of its own the init walks) is read without a panic, names
// no more than maxConfigRefs paths, and a plain include line appended
// to it under its own header is always found.
func FuzzConfigPaths(f *testing.F) {
	for _, s := range []string{"", "[include]\n\tpath = a\n", "[alias]\n\tx = !sh -e ./a/b\n", "[filter \"f\"]\n\tclean = A=1 python3 t/c.py %f\n", "[core]\nhooksPath=\"x\\\n", "[includeIf \"a\\\"]\"]\npath=\\", "[a.b]\n;c\n#d\nx = \"\\t\\n\\b\"", "\\\n\\"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		refs := configPaths(text)
		if len(refs) > maxConfigRefs {
			t.Fatalf("%d refs", len(refs))
		}
		for _, r := range refs {
			if p, ok := configTarget(r, ".git", ".", "/w"); ok && (strings.HasPrefix(p, "../") || p == "..") {
				t.Fatalf("target %q leaves the workspace", p)
			}
			if r.Exec && (r.Path == "" || strings.ContainsRune(r.Path, '`')) {
				t.Fatalf("program %q is not a path", r.Path)
			}
		}
		if len(refs) == maxConfigRefs || strings.Count(text, "\"")%2 == 1 || strings.HasSuffix(strings.TrimRight(text, "\r"), "\\") {
			// An open quote or a continuation takes the next line, as in git.
			return
		}
		more := configPaths(text + "\n[include]\n\tpath = zz-last\n")
		if len(more) == 0 || more[len(more)-1].Path != "zz-last" {
			t.Fatalf("the appended include is not found: %+v", more)
		}
	})
}

// FuzzCommandPaths: the command tokenizer never fails, names at most
// maxCommandPaths programs, none empty, and none from a word with a
// command substitution.
func FuzzCommandPaths(f *testing.F) {
	for _, s := range []string{"!./lint.sh; git push", `sh -c "./x --y"`, "env A=1 python3.11 -W x t/y.py", `"./my tool" > /dev/null`, "f() { ./x; }; f", "a\\ b/c", "'unterminated"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		ps := commandPaths(v)
		if len(ps) > maxCommandPaths {
			t.Fatalf("%d paths", len(ps))
		}
		for _, p := range ps {
			if p == "" || strings.Contains(p, "`") {
				t.Fatalf("path %q from %q", p, v)
			}
		}
	})
}
