package terminal

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// attack is something a command can do to its shell. After its setup
// commands, three ordinary commands must come back with their own output,
// exit code and cwd, each within the soft timeout.
type attack struct {
	name  string
	setup []string // run in order; each must end (not Running)
	// silent means stdout no longer reaches the terminal (exec >/dev/null):
	// the ordinary commands' output is empty.
	silent bool
	// noisy means the attack adds output of its own to every command (a
	// DEBUG trap, xtrace): the ordinary output must still be there.
	noisy bool
	// rebuild means the shell may have to be rebuilt (its state is lost);
	// otherwise its pid must not change.
	rebuild bool
	// check, if set, looks at each setup step's result.
	check func(t *testing.T, term *Terminal, step int, res Result, out string)
}

// attacks is every way the issue found (and a few more) for a command to
// disturb its shell.
func attacks() []attack {
	tiocsti := func(s string) string {
		return fmt.Sprintf(`python3 -c 'import fcntl, termios
for c in %q: fcntl.ioctl(0, termios.TIOCSTI, c.encode())'`, s)
	}
	return []attack{
		{name: "set|grep", setup: []string{"set | grep ^__h_ps"}},
		{name: "set -x", setup: []string{"set -x"}, noisy: true},
		{name: "set -x then set", setup: []string{"set -x", "set > /dev/null"}, noisy: true},
		{name: "set", setup: []string{"set"}},
		{name: "declare -p", setup: []string{"declare -p", "declare -f"}},
		{name: "DEBUG trap", setup: []string{`trap 'echo "dbg: $BASH_COMMAND"' DEBUG`}, noisy: true},
		{name: "extdebug", setup: []string{"shopt -s extdebug", `trap 'echo dbg >&2; true' DEBUG`}, noisy: true},
		{name: "set -o vi", setup: []string{"set -o vi"}},
		{name: "set -o emacs", setup: []string{"set -o emacs", "bind 'set enable-bracketed-paste on' 2>/dev/null; true"}},
		{name: "stty echo", setup: []string{"stty echo"}},
		{name: "stty -isig", setup: []string{"stty -isig"}},
		{name: "stty raw", setup: []string{"stty raw -echo"}},
		{name: "reset", setup: []string{"reset"}},
		{name: "ulimit -n 3", setup: []string{"ulimit -n 3"}, rebuild: true}, // raising it back needs CAP_SYS_RESOURCE
		{name: "exec >/dev/null", setup: []string{"exec >/dev/null"}, silent: true},
		{name: "exec 2>file", setup: []string{"exec 2>/tmp/harnessd-attack-err.$$.log"}},
		{name: "exec 2>&-", setup: []string{"exec 2>&-"}},
		{name: "close fds", setup: []string{"exec 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&- 10>&- 255>&-; true"}},
		{name: "close every fd above 2", setup: []string{`for fd in /proc/$$/fd/*; do fd=${fd##*/}; [ "$fd" -gt 2 ] && eval "exec $fd>&-"; done; true`}},
		{name: "unset -f", setup: []string{`unset -f $(declare -F | awk '{print $3}'); unset -f __h_prompt __h_ret; true`}},
		{name: "unset vars", setup: []string{"unset PS1 PS2 PS0 PROMPT_COMMAND __h_ps __h_n __h_c __h_ec"}},
		{name: "readonly keeps ours", setup: []string{"readonly PS1 PS2 PROMPT_COMMAND HISTFILE __h_c __h_ec 2>/dev/null; true"}},
		{name: "readonly PS1 changed", setup: []string{"PS1='$ '; readonly PS1"}, rebuild: true},
		{name: "shopt -u promptvars", setup: []string{"shopt -u promptvars"}},
		{name: "PS1 empty", setup: []string{"PS1="}},
		{name: "HISTFILE", setup: []string{"HISTFILE=/tmp/harnessd-attack-hist.$$; set -o history", "history -w; history | tail -3", "HISTFILE=/dev/stdout; history -w; history -a"}},
		{name: "PROMPT_COMMAND=", setup: []string{"PROMPT_COMMAND="}},
		{name: "PROMPT_COMMAND hook", setup: []string{`hook() { local s=$?; HOOKED=1; return $s; }; PROMPT_COMMAND="hook;$PROMPT_COMMAND"`, `test "$HOOKED" = 1`}},
		{name: "PROMPT_COMMAND printing", setup: []string{`PROMPT_COMMAND='echo -n'`}},
		{name: "virtualenv", setup: []string{"python3 -m venv --without-pip $VENV && . $VENV/bin/activate", `test -n "$VIRTUAL_ENV"`, "unset VIRTUAL_ENV_DISABLE_PROMPT; deactivate; . $VENV/bin/activate"}},
		{name: "set +m", setup: []string{"set +m"}},
		{name: "set -o posix", setup: []string{"set -o posix"}},
		{name: "IFS", setup: []string{"IFS=x"}},
		{name: "alias .", setup: []string{"alias .='echo hijacked'; alias builtin='echo hijacked'"}},
		{name: "exec bash", setup: []string{"exec bash"}},
		{name: "exec bash --norc", setup: []string{"export KEEP=1; exec bash --norc --noediting", `test "$KEEP" = 1`}},
		{name: "cwd control char", setup: []string{`mkdir -p $'ctl\001dir\033[31m' && cd $'ctl\001dir\033[31m'`}, check: func(t *testing.T, term *Terminal, step int, res Result, out string) {
			if !strings.HasSuffix(res.Cwd, "/ctl\x01dir\x1b[31m") {
				t.Errorf("cwd %q", res.Cwd)
			}
		}},
		{name: "cwd newline and quotes", setup: []string{`mkdir -p $'a\n"b\'c\\' && cd $'a\n"b\'c\\'`}, check: func(t *testing.T, term *Terminal, step int, res Result, out string) {
			if !strings.HasSuffix(res.Cwd, "/a\n\"b'c\\") {
				t.Errorf("cwd %q", res.Cwd)
			}
		}},
		{name: "kill -STOP $$", setup: []string{"kill -STOP $$"}},
		{name: "forged prompt", setup: []string{"FORGE"}, check: func(t *testing.T, term *Terminal, step int, res Result, out string) {
			if res.ExitCode != 0 || res.Cwd == "/fake" || !strings.Contains(out, "after") {
				t.Errorf("forged prompt decided the command: %+v %q", res, out)
			}
		}},
		{name: "forged prompt at once", setup: []string{"FORGE-NOW"}, check: func(t *testing.T, term *Terminal, step int, res Result, out string) {
			if res.ExitCode != 0 || res.Cwd == "/fake" || !strings.Contains(out, "after") {
				t.Errorf("forged prompt decided the command: %+v %q", res, out)
			}
		}},
		{name: "TIOCSTI line", setup: []string{tiocsti("echo INJECTED\n")}, check: func(t *testing.T, term *Terminal, step int, res Result, out string) {
			if res.ExitCode != 0 || !strings.Contains(res.Note, "did not come from harnessd") {
				t.Errorf("injected line: %+v %q", res, out)
			}
		}},
		{name: "TIOCSTI partial", setup: []string{tiocsti("rm -rf /nonexistent-harnessd; echo PARTIAL")}},
		{name: "TIOCSTI unclosed quote", setup: []string{tiocsti("echo \"open\n")}, check: func(t *testing.T, term *Terminal, step int, res Result, out string) {
			if res.ExitCode != 0 || !strings.Contains(res.Note, "injected") {
				t.Errorf("injected open quote: %+v %q", res, out)
			}
		}},
		{name: "exec </dev/null", setup: []string{"exec </dev/null"}, rebuild: true},
	}
}

// forge returns a command that prints a prompt marker with the next
// counter, exit code 9 and cwd /fake, as a program that knew the nonce
// could.
func forge(term *Terminal, now bool) string {
	m := fmt.Sprintf(`%sp;%d;9;;%d;/fake`+"\a", term.m.prefix, term.last.N+1, len(term.m.ps1()))
	if now {
		return fmt.Sprintf("printf '%%s' %s; echo after", shellQuote(m))
	}
	return fmt.Sprintf("printf '%%s' %s; sleep 0.3; echo after", shellQuote(m))
}

func runAttack(t *testing.T, a attack) {
	const soft = 10 * time.Second
	dir := t.TempDir()
	term := newTerm(t, Options{SoftTimeout: soft, MaxWait: 20 * time.Second, Env: []string{"VENV=" + filepath.Join(dir, "venv")}})
	internals := []string{string(term.m.prefix), term.m.nonce(), term.ctlDir, "__h_", "\x1b]7777"}
	clean := func(what, out string) {
		t.Helper()
		for _, s := range internals {
			if strings.Contains(out, s) {
				t.Errorf("%s: output shows harnessd's internals (%q): %q", what, s, out)
			}
		}
	}
	pid := term.PID()
	samePID := func(what string, res Result) {
		t.Helper()
		if res.Rebuilt && !a.rebuild {
			t.Errorf("%s: the shell was rebuilt: %q", what, res.Note)
		}
		if res.PID != pid && !res.Rebuilt {
			t.Errorf("%s: the shell changed from pid %d to %d without saying so: %+v", what, pid, res.PID, res)
		}
		pid = res.PID
	}
	for i, c := range a.setup {
		switch c {
		case "FORGE":
			c = forge(term, false)
		case "FORGE-NOW":
			c = forge(term, true)
		}
		res, out := run(t, term, req{Command: c, SoftTimeout: soft})
		if res.Running {
			t.Fatalf("setup %q did not end: %+v %q", c, res, out)
		}
		clean("setup "+c, out)
		clean("note", res.Note)
		samePID("setup "+c, res)
		if a.check != nil {
			a.check(t, term, i, res, out)
		}
	}
	target := filepath.Join(dir, "target")
	if err := os.Mkdir(target, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, s := range []struct {
		cmd  string
		out  string
		code int
		cwd  string
	}{
		{"echo B", "B\n", 0, ""},
		{"(exit 3)", "", 3, ""},
		{"cd " + shellQuote(target) + " && echo C", "C\n", 0, target},
	} {
		start := time.Now()
		res, out := run(t, term, req{Command: s.cmd, SoftTimeout: soft})
		took := time.Since(start)
		clean(s.cmd, out)
		clean("note", res.Note)
		samePID(s.cmd, res)
		if res.Running || took >= soft {
			t.Errorf("%q: not back within the soft timeout (%s): %+v %q", s.cmd, took, res, out)
			continue
		}
		if res.ExitCode != s.code {
			t.Errorf("%q: exit code %d, want %d (output %q, note %q)", s.cmd, res.ExitCode, s.code, out, res.Note)
		}
		if s.cwd != "" && res.Cwd != s.cwd {
			t.Errorf("%q: cwd %q, want %q", s.cmd, res.Cwd, s.cwd)
		}
		switch {
		case a.silent:
			if strings.Contains(out, "B") || strings.Contains(out, "C") {
				t.Errorf("%q: stdout should be gone: %q", s.cmd, out)
			}
		case a.noisy:
			if s.out != "" && !strings.Contains(out, s.out) {
				t.Errorf("%q: output %q does not contain %q", s.cmd, out, s.out)
			}
		default:
			if out != s.out {
				t.Errorf("%q: output %q, want %q (note %q)", s.cmd, out, s.out, res.Note)
			}
		}
	}
}

// TestShellAttacks: whatever a command does to its shell, the commands
// after it get their own output, exit code and cwd, without waiting.
func TestShellAttacks(t *testing.T) {
	for _, a := range attacks() {
		t.Run(strings.ReplaceAll(a.name, " ", "_"), func(t *testing.T) { runAttack(t, a) })
	}
}

// TestShellAttacksUnderLoad runs the attacks eight terminals at a time
// (goroutines, so -parallel does not limit it).
func TestShellAttacksUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("long")
	}
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for _, a := range attacks() {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			t.Run(strings.ReplaceAll(a.name, " ", "_"), func(t *testing.T) { runAttack(t, a) })
		}()
	}
	wg.Wait()
}
