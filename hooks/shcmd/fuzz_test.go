package shcmd

import (
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
