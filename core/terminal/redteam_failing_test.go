//go:build redteam

package terminal

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The red team's successful attacks: each test fails on the code it was
// written against. They build only with the tag redteam, so the default
// test run stays green:
//
//	go test -race -count=1 -tags redteam ./core/terminal -run 'TestRedTeam'
//
// One of them (TestRedTeamInterruptSignalsOwnProcessGroup) makes the
// terminal send SIGINT to the test binary's own process group. So that it
// cannot kill `go test` or a pipe it feeds, this file moves the test
// binary into a process group of its own and catches SIGINT for the whole
// run: selfInt collects what arrives.
var selfInt = make(chan os.Signal, 64)

func init() {
	signal.Notify(selfInt, syscall.SIGINT)
	_ = syscall.Setpgid(0, 0)
}

func drainSelfInt() {
	for {
		select {
		case <-selfInt:
		default:
			return
		}
	}
}

// forgeFromPS1 is shell text that renders a prompt marker from PS1 itself
// (${PS1@P} gives the nonce), with command number n (a shell expression),
// exit code 9 and cwd /fake: what any command can print, no internals
// needed.
func forgeFromPS1(n string) string {
	return `p=${PS1@P}; r=${p#*;p;}; n=${r%%;*}; printf '%s' "${p%%;p;*};p;$((` + n + `));9;;${#PS1};'/fake'"$'\a'`
}

// TestRedTeamStdinNotTheTerminal: `exec 0<>fifo` (or `exec 0< <(…)`)
// leaves bash blocked in its own line reader on fd 0, so the kernel view
// says "at its prompt"; nothing checks that fd 0 is the terminal. The next
// command is typed into a terminal nobody reads (Running until the soft
// timeout, forever after), and whatever line arrives on the fifo later is
// reported as that command's output, exit code and cwd.
func TestRedTeamStdinNotTheTerminal(t *testing.T) {
	dir := t.TempDir()
	term := newTerm(t, Options{SoftTimeout: 2 * time.Second, Dir: dir})
	fifo := filepath.Join(dir, "fifo")
	if res, _ := run(t, term, req{Command: "mkfifo " + shellQuote(fifo) + " && exec 0<>" + shellQuote(fifo)}); res.Running {
		t.Fatalf("exec 0<>fifo: %+v", res)
	}
	res, out := run(t, term, req{Command: "echo ok; pwd", SoftTimeout: time.Second})
	if res.Running || out != "ok\n"+dir+"\n" {
		t.Errorf("echo ok; pwd after exec 0<>fifo: %+v %q, want %q (the shell is no longer usable)", res, out, "ok\n"+dir+"\n")
	}
	f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fmt.Fprintf(f, "echo FROMFIFO; cd /\n")
	time.Sleep(300 * time.Millisecond)
	res, out = run(t, term, req{})
	if strings.Contains(out, "FROMFIFO") && res.Cwd == "/" && !res.Running {
		t.Errorf("a line bash read from the fifo was reported as `echo ok; pwd`'s result: %+v %q", res, out)
	}
}

// TestRedTeamForgedMarkerWhileIdle: drainIdle (terminal.go:959-963)
// takes any marker with N >= last.N that arrives while bash sits at its
// prompt as a prompt bash showed for injected input, and makes it t.last.
// A background job prints one (nonce from ${PS1@P}, N 1000, exit 9, cwd
// /fake): the next read reports exit 9 and cwd /fake, and the next
// command's base is 1000, so its real prompt (N small) is ignored, the
// repair's too, and the shell is rebuilt.
func TestRedTeamForgedMarkerWhileIdle(t *testing.T) {
	term := newTerm(t, Options{SoftTimeout: 2 * time.Second})
	dir := term.Cwd()
	run(t, term, req{Command: "(sleep 0.3; " + forgeFromPS1("1000") + ") &"})
	time.Sleep(600 * time.Millisecond)
	if res, out := run(t, term, req{}); res.Cwd == "/fake" || res.ExitCode == 9 {
		t.Errorf("read after a background job printed a forged marker: %+v %q", res, out)
	}
	res, out := run(t, term, req{Command: "echo ok; pwd"})
	if res.Rebuilt || out != "ok\n"+dir+"\n" || res.ExitCode != 0 {
		t.Errorf("echo ok; pwd after a forged marker while idle: %+v %q", res, out)
	}
}

// TestRedTeamForgedMarkerWhilePromptInvisible: when the real prompt does
// not arrive (exec 2>/dev/null), complete() syncs for 300ms
// (terminal.go:1274) and takes any marker that comes then as the
// command's: a background job prints one 100ms after the command ends.
func TestRedTeamForgedMarkerWhilePromptInvisible(t *testing.T) {
	term := newTerm(t, Options{SoftTimeout: 2 * time.Second})
	dir := term.Cwd()
	res, out := run(t, term, req{Command: "exec 2>/dev/null; (sleep 0.1; " + forgeFromPS1("n+1") + ") &"})
	if res.ExitCode != 0 || res.Cwd != dir {
		t.Errorf("command whose prompt was invisible took a forged marker: %+v %q, want exit 0 cwd %q", res, out, dir)
	}
	res, out = run(t, term, req{Command: "echo ok; pwd"})
	if res.Rebuilt || out != "ok\n"+dir+"\n" {
		t.Errorf("echo ok; pwd after: %+v %q", res, out)
	}
}

// TestRedTeamReopenedTTYNotes: fdOnTTY's stat fallback (shell.go:541-548)
// compares the fd's inode with the slave's, but /dev/tty opened anew is
// /dev/tty's inode (5,0), not /dev/pts/N's: stdout or stderr pointed back
// at the very terminal are reported as away from it.
func TestRedTeamReopenedTTYNotes(t *testing.T) {
	for _, tc := range []struct{ setup, bad string }{
		{"exec >/dev/tty", "stdout does not go to the terminal"},
		{"exec >out.txt; echo hidden; exec >/dev/tty", "stdout does not go to the terminal"},
		{"exec 2>/dev/tty; PS1='$ '", "redirected away from the terminal"},
	} {
		t.Run(tc.setup, func(t *testing.T) {
			term := newTerm(t, Options{SoftTimeout: 2 * time.Second})
			res1, _ := run(t, term, req{Command: tc.setup})
			res2, out := run(t, term, req{Command: "echo ok"})
			if out != "ok\n" {
				t.Fatalf("echo ok: %q", out)
			}
			for _, n := range []string{res1.Note, res2.Note} {
				if strings.Contains(n, tc.bad) {
					t.Errorf("%q: note says %q though the fd is the terminal: %q", tc.setup, tc.bad, n)
				}
			}
		})
	}
}

// TestRedTeamDotFunctionHijacksSourcedCommands: a command that is not
// typed as it is (several lines) is run by typing ` \. '<file>'`
// (terminal.go:845). The backslash defeats aliases, not functions: after
// `.() { …; }` every multi-line command runs the function instead and
// reports its exit code as the command's; after `enable -n .` it reports
// 127 "command not found"; after `set -r` (restricted, which cannot be
// undone) 1 "bash: .: restricted". None is noticed or repaired.
func TestRedTeamDotFunctionHijacksSourcedCommands(t *testing.T) {
	for _, setup := range []string{".() { echo HIJACKED; }", "enable -n . source", "set -r"} {
		t.Run(setup, func(t *testing.T) {
			term := newTerm(t, Options{SoftTimeout: 2 * time.Second})
			run(t, term, req{Command: setup})
			res, out := run(t, term, req{Command: "echo a\necho b"})
			if out != "a\nb\n" || res.ExitCode != 0 {
				t.Errorf("two-line command after %q: %+v %q, want %q", setup, res, out, "a\nb\n")
			}
		})
	}
}

// TestRedTeamAltScreenOutputOfFinishedCommand: a command that ends with
// the alternate screen still on loses everything it printed there:
// route() sends altMode bytes only to the emulator (screen.go:144-146) and
// settled(false) drops the emulator (screen.go:247-248 -> releaseHeld ->
// stopEmu) without writing its text. The doc says a program that ends is
// line output.
func TestRedTeamAltScreenOutputOfFinishedCommand(t *testing.T) {
	term := newTerm(t, Options{SoftTimeout: 2 * time.Second})
	res, out := run(t, term, req{Command: `printf '\033[?1049h'; echo inalt; (exit 3)`})
	if res.Running || res.ExitCode != 3 || !strings.Contains(out, "inalt") {
		t.Errorf("finished command left in the alternate screen: %+v %q, want its output %q", res, out, "inalt")
	}
}

// TestRedTeamSemicolonInCwd: parseMarker splits the marker body with
// strings.SplitN(s, ";", 7) and wants exactly 6 fields (sentinel.go:184-185),
// but the last field, ${PWD@Q}, may itself hold ';'. `cd 'a;b'` makes every
// prompt "bad": the command's exit code is lost, the repair cannot help,
// and the shell is rebuilt. No attacker needed.
func TestRedTeamSemicolonInCwd(t *testing.T) {
	term := newTerm(t, Options{SoftTimeout: 2 * time.Second})
	dir := filepath.Join(term.Cwd(), "a;b")
	res, out := run(t, term, req{Command: "mkdir -p 'a;b' && cd 'a;b' && echo in"})
	if res.Rebuilt || res.ExitCode != 0 || res.Cwd != dir || out != "in\n" {
		t.Errorf("cd into a directory named a;b: %+v %q, want exit 0, cwd %q", res, out, dir)
	}
}

// TestRedTeamDeepCwd: a marker body longer than maxMeta (16 KiB,
// sentinel.go:87) is "not ours", but $PWD has no such bound: after cd
// into a 17 KiB path the prompt's metadata is printed as output, the exit
// code is lost and the shell is rebuilt.
func TestRedTeamDeepCwd(t *testing.T) {
	term := newTerm(t, Options{SoftTimeout: 3 * time.Second})
	res, out := run(t, term, req{Command: `d=$(printf 'x%.0s' {1..250}); for i in $(seq 70); do mkdir $d && cd $d || break; done; echo ${#PWD}`})
	if res.Rebuilt || res.ExitCode != 0 || len(res.Cwd) < 17000 || strings.Contains(out, "braceexpand") {
		t.Errorf("cd into a 17 KiB path: exit %d, rebuilt %v, cwd length %d, output starts %q", res.ExitCode, res.Rebuilt, len(res.Cwd), out[:min(len(out), 120)])
	}
}

// TestRedTeamUnterminatedForgedMarker: a command prints the marker's
// prefix (nonce from ${PS1@P}) and "p;" without a BEL. The scanner holds
// everything after it as a marker body (sentinel.go scan, inMeta) until the
// real prompt's BEL, then rejects the whole as bad: the command's own
// output after it ("after") is lost, and the note blames PS1.
func TestRedTeamUnterminatedForgedMarker(t *testing.T) {
	term := newTerm(t, Options{SoftTimeout: 2 * time.Second})
	res, out := run(t, term, req{Command: `p=${PS1@P}; printf '%s' "${p%%;p;*};p;"; echo after; (exit 5)`})
	if res.ExitCode != 5 || !strings.Contains(out, "after") {
		t.Errorf("output after an unterminated marker: %+v %q, want exit 5 and %q", res, out, "after")
	}
}
