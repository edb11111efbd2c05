package terminal

import (
	"strings"
	"testing"
	"time"
)

// TestQueriesAnsweredInLineMode: with TERM=xterm-256color programs ask the
// terminal where the cursor is or what it is, and wait for the answer;
// before a screen is drawn (line mode) the display must answer too, as
// the screen model does after.
func TestQueriesAnsweredInLineMode(t *testing.T) {
	term := newTerm(t, Options{})
	for _, tc := range []struct{ ask, delim, want string }{
		{`\e[6n`, "R", `\e[50;4R`}, // after "abc"
		{`\e[c`, "c", `\e[?62;1;6;22c`},
		{`\e[>c`, "c", `\e[>1;10;0c`},
		{`\e[5n`, "n", `\e[0n`},
	} {
		c := `bash -c 'printf "abc` + tc.ask + `"; IFS= read -rs -d ` + tc.delim + ` -t 3 x; echo; printf "%q\n" "${x}` + tc.delim + `"'`
		start := time.Now()
		res, out := run(t, term, req{Command: c, SoftTimeout: 5 * time.Second})
		want := "$'" + strings.ReplaceAll(tc.want, `\e`, `\E`) + "'"
		if res.ExitCode != 0 || !strings.Contains(out, want) || time.Since(start) > 2*time.Second {
			t.Errorf("%s: %+v after %s, output %q, want the answer %s", tc.ask, res, time.Since(start), out, want)
		}
	}
	// Nothing of the answers is left for bash to read as a command.
	if res, out := cmd(t, term, "echo ok"); res.ExitCode != 0 || out != "ok\n" {
		t.Fatalf("echo ok: %+v %q", res, out)
	}
}
