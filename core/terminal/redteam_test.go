package terminal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/harnessd/harnessd/core/event"
)

// The red team's held probes: things a command did to its shell (its
// stdout swapped, odd output, stdin reads, deadlines that move) that the
// terminal handled, and (the TestRedTeam functions) the probes that broke
// it until they were fixed. Each guards that it stays so; those on
// interrupts and timeouts are in redteam_interrupt_test.go.

// step is one call of a probe. When out or code is set the call must end
// (not Running) with that output or exit code; running means it must
// still be running.
type step struct {
	req
	out     string // exact output; "-" for "do not check"
	has     string // output contains this
	code    int
	anyCode bool
	running bool
	note    string // the note contains this
}

// probe is a sequence of calls on a fresh terminal, each checked, then
// `echo ok; pwd`, which must give its own answer.
type probe struct {
	name    string
	steps   []step
	silent  bool // stdout is away at the end: the check gives no output
	rebuilt bool // the shell may be rebuilt on the way
}

func runProbe(t *testing.T, p probe) {
	t.Helper()
	term := newTerm(t, Options{SoftTimeout: 3 * time.Second, MaxWait: 10 * time.Second})
	dir := term.Cwd()
	pid := term.PID()
	for i, s := range p.steps {
		r := s.req
		if r.SoftTimeout == 0 {
			r.SoftTimeout = 3 * time.Second
		}
		res, out := run(t, term, r)
		what := r.Command
		if what == "" {
			what = "(read)"
		}
		switch {
		case s.running:
			if !res.Running {
				t.Errorf("step %d %q: want still running, got %+v %q", i, what, res, out)
			}
		case res.Running:
			t.Errorf("step %d %q: still running: %+v %q", i, what, res, out)
		case !s.anyCode && res.ExitCode != s.code:
			t.Errorf("step %d %q: exit %d, want %d (out %q, note %q)", i, what, res.ExitCode, s.code, out, res.Note)
		}
		if s.out != "-" && out != s.out && s.has == "" && !s.running {
			t.Errorf("step %d %q: output %q, want %q (note %q)", i, what, out, s.out, res.Note)
		}
		if s.has != "" && !strings.Contains(out, s.has) {
			t.Errorf("step %d %q: output %q lacks %q", i, what, out, s.has)
		}
		if s.note != "" && !strings.Contains(res.Note, s.note) {
			t.Errorf("step %d %q: note %q lacks %q", i, what, res.Note, s.note)
		}
		if res.Rebuilt && !p.rebuilt {
			t.Errorf("step %d %q: rebuilt: %q", i, what, res.Note)
		}
		if !res.Rebuilt && res.PID != pid {
			t.Errorf("step %d %q: pid %d -> %d without a rebuild", i, what, pid, res.PID)
		}
		pid = res.PID
		if !res.Running && res.Cwd != dir {
			t.Errorf("step %d %q: cwd %q, want %q", i, what, res.Cwd, dir)
		}
	}
	res, out := run(t, term, req{Command: "echo ok; pwd", SoftTimeout: 3 * time.Second})
	want := "ok\n" + dir + "\n"
	if p.silent {
		want = ""
	}
	if res.Running || res.ExitCode != 0 || res.Cwd != dir || !strings.HasSuffix(out, want) {
		t.Errorf("echo ok; pwd after the probe: %+v %q, want %q", res, out, want)
	}
}

func cmdStep(c string, out string, code int) step {
	return step{req: req{Command: c}, out: out, code: code}
}

// TestRedTeamStdoutSwaps: a command that moves bash's fd 1 (or 0) mid-way;
// the terminal's stdout check (kcmp, then stat) and the commands after.
func TestRedTeamStdoutSwaps(t *testing.T) {
	ptyOpen := `python3 -c 'import os,time; m,s=os.openpty(); print(os.ttyname(s), flush=True); time.sleep(20)' >pty.txt & for i in $(seq 100); do [ -s pty.txt ] && break; sleep 0.05; done; exec 1>$(cat pty.txt)`
	for _, p := range []probe{
		{name: "exec >file, restore in one command", steps: []step{cmdStep("exec >out.txt; echo hidden; exec >/dev/tty; cat out.txt", "hidden\n", 0)}},
		{name: "exec 1>&2", steps: []step{cmdStep("exec 1>&2", "", 0)}},
		{name: "exec 1>&- then back", steps: []step{
			cmdStep("exec 1>&-", "", 0),
			{req: req{Command: "echo x"}, has: "Bad file descriptor", code: 1, note: "stdout does not go to the terminal"},
			cmdStep("exec 1>/dev/tty", "", 0),
		}},
		{name: "dup away and back", steps: []step{cmdStep("exec 3>&1 >/dev/null; echo hidden; exec 1>&3 3>&-; echo shown", "shown\n", 0)}},
		{name: "another pty", steps: []step{
			{req: req{Command: ptyOpen}, out: "-", code: 0},
			{req: req{Command: "echo lost"}, out: "", code: 0, note: "stdout does not go to the terminal"},
			cmdStep("exec 1>/dev/tty; echo back", "back\n", 0),
		}},
		{name: "another pty, silent at the end", silent: true, steps: []step{{req: req{Command: ptyOpen}, out: "-", code: 0}}},
		{name: "reopened slave by path", steps: []step{cmdStep("exec 1>/proc/self/fd/0", "", 0)}},
		{name: "stdin reopened from /dev/tty", steps: []step{cmdStep("exec 0</dev/tty", "", 0)}},
	} {
		t.Run(strings.ReplaceAll(p.name, " ", "_"), func(t *testing.T) { runProbe(t, p) })
	}
}

// TestRedTeamOutputAndShellState: output shapes, terminal modes and shell
// settings a command leaves behind.
func TestRedTeamOutputAndShellState(t *testing.T) {
	for _, p := range []probe{
		{name: "no trailing newline", steps: []step{cmdStep("printf abc", "abc", 0)}},
		{name: "carriage returns", steps: []step{cmdStep(`for i in $(seq 1 2000); do printf '\r%d' $i; done; echo`, "2000\n", 0)}},
		{name: "clear screen", steps: []step{cmdStep(`printf '\e[2J\e[H\e[3J'; echo after`, "after\n", 0)}},
		{name: "alt screen on and off", steps: []step{cmdStep("tput smcup; echo inalt; tput rmcup; echo out", "out\n", 0)}},
		{name: "huge output", steps: []step{{req: req{Command: "seq 1 200000; echo end"}, has: "\n199999\n200000\nend\n", code: 0}}},
		{name: "stty -icanon", steps: []step{cmdStep("stty -icanon", "", 0)}},
		{name: "stty -echo -isig", steps: []step{cmdStep("stty -echo -isig", "", 0)}},
		{name: "PS0", steps: []step{cmdStep("PS0=", "", 0)}},
		{name: "DEBUG trap renders the prompt", steps: []step{
			cmdStep(`trap 'printf "%s" "${PS1@P}"' DEBUG`, "", 0),
			cmdStep("(exit 5)", "", 5),
			cmdStep("trap - DEBUG", "", 0),
		}},
		{name: "SIGINT ignored, hard timeout", steps: []step{{req: req{Command: "trap '' INT; sleep 5", Timeout: 300 * time.Millisecond}, out: "-", code: 137, note: "SIGKILL"}}},
		{name: "set -t", rebuilt: true, steps: []step{{req: req{Command: "set -t"}, out: "", anyCode: true}}},
		{name: "exec sh, then exit", rebuilt: true, steps: []step{
			{req: req{Command: "exec sh", SoftTimeout: 300 * time.Millisecond}, running: true},
			{req: req{Command: "exit", IsInput: true}, out: "-", anyCode: true},
		}},
		{name: "background writer", steps: []step{
			{req: req{Command: "(for i in 1 2 3; do sleep 0.05; echo bg$i; done) &"}, out: "-", code: 0},
			{req: req{Command: "sleep 0.3; echo mine"}, has: "bg3\n", code: 0},
		}},
		{name: "fork, parent exits", steps: []step{
			cmdStep("sh -c '(sleep 0.2; echo LATE) &'; echo parent", "parent\n", 0),
			{req: req{Command: "sleep 0.4; echo mine"}, has: "LATE\n", code: 0},
		}},
	} {
		t.Run(strings.ReplaceAll(p.name, " ", "_"), func(t *testing.T) { runProbe(t, p) })
	}
}

// TestRedTeamStdinReaders: the typing path reads bash's read count and
// its line reader's buffer; reads by the read builtin, mapfile or source
// must never look like bash's prompt.
func TestRedTeamStdinReaders(t *testing.T) {
	soft := 250 * time.Millisecond
	stuck := func(c string) []step {
		return []step{
			{req: req{Command: c, SoftTimeout: soft}, running: true},
			{req: req{Command: "C-c", IsInput: true}, out: "-", code: 130},
		}
	}
	for _, p := range []probe{
		{name: "read", steps: []step{
			{req: req{Command: "read x", SoftTimeout: soft}, running: true},
			{req: req{Command: "hello", IsInput: true}, out: "", code: 0},
			cmdStep(`echo "$x"`, "hello\n", 0),
		}},
		{name: "reads later", steps: []step{
			{req: req{Command: "sleep 0.1; read x; echo got:$x", SoftTimeout: 20 * time.Millisecond}, running: true},
			{req: req{Command: "early", IsInput: true}, out: "got:early\n", code: 0},
		}},
		{name: "cat and C-d", steps: []step{
			{req: req{Command: "cat", SoftTimeout: soft}, running: true},
			{req: req{Command: "abc", IsInput: true, SoftTimeout: soft}, running: true},
			{req: req{Command: "<C-d>", IsInput: true}, out: "", code: 0},
		}},
		{name: "read -N 1024", steps: stuck("read -N 1024 x")},
		{name: "read -d ''", steps: stuck("read -d '' x")},
		{name: "mapfile", steps: stuck("mapfile -n 1 a")},
		{name: "source /dev/stdin", steps: stuck("source /dev/stdin")},
		{name: "forked child reads after parent exits", steps: []step{
			cmdStep("python3 -c 'import os,sys,time\nif os.fork()==0:\n  time.sleep(0.2); sys.stdin.readline()\n' 2>/dev/null", "", 0),
			cmdStep("sleep 0.4; echo mine", "mine\n", 0),
		}},
	} {
		t.Run(strings.ReplaceAll(p.name, " ", "_"), func(t *testing.T) { runProbe(t, p) })
	}
}

// TestRedTeamDeadlines: the hard-timeout watcher is woken only when a
// deadline moves earlier; later deadlines, earlier ones after a finished
// command, a stream of them, concurrent calls, an Interrupt racing the
// deadline, and Close during the unattended ladder.
func TestRedTeamDeadlines(t *testing.T) {
	term := newTerm(t, Options{SoftTimeout: 3 * time.Second})
	waitIdle := func(what string, within time.Duration) {
		t.Helper()
		t0 := time.Now()
		for term.Running() && time.Since(t0) < within {
			time.Sleep(10 * time.Millisecond)
		}
		if term.Running() {
			t.Fatalf("%s: still running after %s", what, within)
		}
	}

	// A late deadline armed, then an earlier one: the watcher must wake.
	run(t, term, req{Command: "sleep 0.1", Timeout: 10 * time.Second, SoftTimeout: 20 * time.Millisecond})
	time.Sleep(300 * time.Millisecond)
	run(t, term, req{Command: "sleep 30", Timeout: 400 * time.Millisecond, SoftTimeout: 20 * time.Millisecond})
	waitIdle("earlier deadline", 3*time.Second)
	if res, _ := run(t, term, req{}); !res.TimedOut || res.ExitCode != 130 {
		t.Errorf("earlier deadline: %+v", res)
	}

	// An early deadline armed, then a later one: the first timer's wake
	// must not interrupt the second command.
	run(t, term, req{Command: "sleep 0.05", Timeout: 400 * time.Millisecond, SoftTimeout: 10 * time.Millisecond})
	time.Sleep(100 * time.Millisecond)
	run(t, term, req{Command: "sleep 0.5; echo fine", Timeout: 5 * time.Second, SoftTimeout: 20 * time.Millisecond})
	time.Sleep(700 * time.Millisecond)
	if res, out := run(t, term, req{}); res.TimedOut || res.ExitCode != 0 || out != "fine\n" {
		t.Errorf("later deadline: %+v %q", res, out)
	}

	// A stream of shrinking deadlines, then a short one.
	for i := range 10 {
		res, _ := run(t, term, req{Command: "sleep 0.02", Timeout: time.Duration(3000-250*i) * time.Millisecond, SoftTimeout: time.Second})
		if res.Running || res.TimedOut {
			t.Fatalf("stream %d: %+v", i, res)
		}
	}
	run(t, term, req{Command: "sleep 30", Timeout: 300 * time.Millisecond, SoftTimeout: 20 * time.Millisecond})
	waitIdle("after the stream", 3*time.Second)
	run(t, term, req{})

	// Concurrent calls are serialised, each with its own answer.
	var wg sync.WaitGroup
	type want struct{ cmd, out string }
	for _, w := range []want{{"sleep 0.2; echo A", "A\n"}, {"echo B", "B\n"}, {"(exit 4)", ""}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var b syncBuffer
			res, err := term.Run(context.Background(), event.CmdRun{Command: w.cmd}, &b)
			if err != nil || res.Running || b.String() != w.out || (w.cmd == "(exit 4)") != (res.ExitCode == 4) {
				t.Errorf("concurrent %q: %+v %v %q", w.cmd, res, err, b.String())
			}
		}()
		time.Sleep(20 * time.Millisecond)
	}
	wg.Wait()

	// Interrupt racing the hard timeout.
	done := make(chan Result, 1)
	go func() {
		res, _ := term.Run(context.Background(), event.CmdRun{Command: "sleep 5", TimeoutS: 0.3}, &syncBuffer{})
		done <- res
	}()
	time.Sleep(290 * time.Millisecond)
	for range 5 {
		_ = term.Interrupt(context.Background())
		time.Sleep(5 * time.Millisecond)
	}
	select {
	case res := <-done:
		if res.Running || res.ExitCode != 130 {
			t.Errorf("interrupt vs deadline: %+v", res)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("interrupt vs deadline: Run did not return")
	}
	if res, out := cmd(t, term, "echo ok"); out != "ok\n" || res.ExitCode != 0 {
		t.Errorf("after interrupt vs deadline: %+v %q", res, out)
	}

	// Close while the watcher runs the ladder on a command that ignores
	// SIGINT.
	run(t, term, req{Command: "trap '' INT; sleep 10", Timeout: 100 * time.Millisecond, SoftTimeout: 20 * time.Millisecond})
	time.Sleep(200 * time.Millisecond)
	closed := make(chan struct{})
	go func() { term.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close during the unattended ladder did not return")
	}
}

// syncBuffer is a writer safe for the test's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b = append(s.b, p...)
	return len(p), nil
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return string(s.b)
}

// TestRedTeamSemicolonInCwd: parseMarker split the marker body with
// strings.SplitN(s, ";", 7) and wanted exactly 6 fields, but the last
// field, ${PWD@Q}, may itself hold ';'. `cd 'a;b'` made every prompt
// "bad": the command's exit code was lost, the repair could not help, and
// the shell was rebuilt. No attacker needed.
func TestRedTeamSemicolonInCwd(t *testing.T) {
	term := newTerm(t, Options{SoftTimeout: 2 * time.Second})
	dir := filepath.Join(term.Cwd(), "a;b")
	res, out := run(t, term, req{Command: "mkdir -p 'a;b' && cd 'a;b' && echo in"})
	if res.Rebuilt || res.ExitCode != 0 || res.Cwd != dir || out != "in\n" {
		t.Errorf("cd into a directory named a;b: %+v %q, want exit 0, cwd %q", res, out, dir)
	}
}

// TestRedTeamDeepCwd: a marker body longer than maxMeta (then 16 KiB) was
// "not ours", but $PWD has no such bound: after cd into a 17 KiB path the
// prompt's metadata was printed as output, the exit code lost and the
// shell rebuilt. Past maxMeta (now 64 KiB) the cwd is reported unknown,
// with a note, and the exit code still counts.
func TestRedTeamDeepCwd(t *testing.T) {
	term := newTerm(t, Options{SoftTimeout: 3 * time.Second, MaxWait: time.Minute})
	res, out := run(t, term, req{SoftTimeout: 30 * time.Second, Command: `d=$(printf 'x%.0s' {1..250}); for i in $(seq 70); do mkdir $d && cd $d || break; done; echo ${#PWD}`})
	if res.Rebuilt || res.ExitCode != 0 || len(res.Cwd) < 17000 || strings.Contains(out, "braceexpand") {
		t.Errorf("cd into a 17 KiB path: exit %d, rebuilt %v, cwd length %d, output starts %q", res.ExitCode, res.Rebuilt, len(res.Cwd), out[:min(len(out), 120)])
	}
	// 200 mkdirs take seconds on a loaded machine.
	res, out = run(t, term, req{Command: `for i in $(seq 200); do mkdir $d && cd $d || break; done; (exit 4)`, SoftTimeout: 30 * time.Second})
	if res.Rebuilt || res.ExitCode != 4 || res.Cwd != "" || !strings.Contains(res.Note, "`pwd` prints it") || strings.Contains(out, "braceexpand") {
		t.Errorf("cd into a 67 KiB path: %+v, output starts %q", res, out[:min(len(out), 120)])
	}
	if term.Cwd() != "" {
		t.Errorf("Cwd() after cd into a 67 KiB path: %d bytes, want empty (unknown)", len(term.Cwd()))
	}
	res, out = run(t, term, req{Command: "cd / && pwd"})
	if res.Rebuilt || res.ExitCode != 0 || res.Cwd != "/" || out != "/\n" || res.Note != "" {
		t.Errorf("cd / after: %+v %q", res, out)
	}
}

// TestRedTeamUnterminatedForgedMarker: a command prints the marker's
// prefix (nonce from ${PS1@P}) and "p;" without a BEL. The scanner held
// everything after it as a marker body until the real prompt's BEL, then
// rejected the whole as bad: the command's own output after it ("after")
// was lost, and the note blamed PS1. Now a body is checked as it arrives
// and released at its first byte no marker has there.
func TestRedTeamUnterminatedForgedMarker(t *testing.T) {
	term := newTerm(t, Options{SoftTimeout: 2 * time.Second})
	res, out := run(t, term, req{Command: `p=${PS1@P}; printf '%s' "${p%%;p;*};p;"; echo after; (exit 5)`})
	if res.ExitCode != 5 || !strings.Contains(out, "after") {
		t.Errorf("output after an unterminated marker: %+v %q, want exit 5 and %q", res, out, "after")
	}
}

// TestRedTeamStdinNotTheTerminal: `exec 0<>fifo` (or `exec 0< <(…)`)
// leaves bash blocked in its own line reader on fd 0, so the kernel view
// says "at its prompt"; nothing checked that fd 0 is the terminal. The next
// command was typed into a terminal nobody reads (Running until the soft
// timeout, forever after), and whatever line arrived on the fifo later was
// reported as that command's output, exit code and cwd. Now the shell is
// rebuilt, with a note, before the command is typed; the fifo then has no
// reader left.
func TestRedTeamStdinNotTheTerminal(t *testing.T) {
	for _, redirect := range []string{"exec 0<>fifo", "exec 0< <(sleep 600)"} {
		t.Run(redirect, func(t *testing.T) {
			dir := t.TempDir()
			term := newTerm(t, Options{SoftTimeout: 2 * time.Second, Dir: dir})
			fifo := filepath.Join(dir, "fifo")
			if res, _ := run(t, term, req{Command: "mkfifo fifo && " + redirect}); res.Running || !strings.Contains(res.Note, "stdin is no longer the terminal") {
				t.Fatalf("%s: %+v", redirect, res)
			}
			res, out := run(t, term, req{Command: "echo ok; pwd", SoftTimeout: time.Second})
			if res.Running || out != "ok\n"+dir+"\n" || !res.Rebuilt || !strings.Contains(res.Note, "stdin no longer came from the terminal") {
				t.Errorf("echo ok; pwd after %s: %+v %q, want %q (the shell is no longer usable)", redirect, res, out, "ok\n"+dir+"\n")
			}
			// O_NONBLOCK: with no reader left the open fails (ENXIO)
			// instead of waiting for one, and then nothing can be misread.
			f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0)
			if errors.Is(err, syscall.ENXIO) {
				return
			}
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
		})
	}
}

// TestRedTeamReopenedTTYNotes: fdOnTTY's stat fallback compared the fd's
// inode with the slave's, but /dev/tty opened anew is /dev/tty's inode
// (5,0), not /dev/pts/N's: stdout or stderr pointed back at the very
// terminal were reported as away from it. Now /dev/tty counts when it is
// bash's controlling terminal, which is this one.
func TestRedTeamReopenedTTYNotes(t *testing.T) {
	for _, tc := range []struct{ setup, bad string }{
		{"exec >/dev/tty", "stdout does not go to the terminal"},
		{"exec >out.txt; echo hidden; exec >/dev/tty", "stdout does not go to the terminal"},
		{"exec 2>/dev/tty; PS1='$ '", "redirected away from the terminal"},
		{"exec >$(tty)", "stdout does not go to the terminal"},
		{"exec >/proc/self/fd/2", "stdout does not go to the terminal"},
		{"exec 0</dev/tty", "stdin no longer came from the terminal"},
		{"exec 0<$(tty)", "stdin no longer came from the terminal"},
	} {
		t.Run(tc.setup, func(t *testing.T) {
			term := newTerm(t, Options{SoftTimeout: 2 * time.Second})
			res1, _ := run(t, term, req{Command: tc.setup})
			res2, out := run(t, term, req{Command: "echo ok"})
			if out != "ok\n" || res2.Rebuilt {
				t.Fatalf("echo ok: %q %+v", out, res2)
			}
			for _, n := range []string{res1.Note, res2.Note} {
				if strings.Contains(n, tc.bad) {
					t.Errorf("%q: note says %q though the fd is the terminal: %q", tc.setup, tc.bad, n)
				}
			}
		})
	}
	// Away from the terminal is still noticed.
	term := newTerm(t, Options{SoftTimeout: 2 * time.Second})
	run(t, term, req{Command: "exec >/dev/null"})
	if res, _ := run(t, term, req{Command: "echo ok"}); !strings.Contains(res.Note, "stdout does not go to the terminal") {
		t.Errorf("exec >/dev/null: no note: %+v", res)
	}
}

// TestRedTeamAltScreenOutputOfFinishedCommand: a command that ended with
// the alternate screen still on lost everything it printed there: route()
// sends altMode bytes only to the emulator, and settled(false) dropped the
// emulator without writing its text. The doc says a program that ends is
// line output; now its screen's text ends the output, with a note.
func TestRedTeamAltScreenOutputOfFinishedCommand(t *testing.T) {
	term := newTerm(t, Options{SoftTimeout: 2 * time.Second})
	res, out := run(t, term, req{Command: `printf '\033[?1049h'; echo inalt; (exit 3)`})
	if res.Running || res.ExitCode != 3 || !strings.Contains(out, "inalt") || !strings.Contains(res.Note, "alternate screen") {
		t.Errorf("finished command left in the alternate screen: %+v %q, want its output %q", res, out, "inalt")
	}
	// The next command's output is line output again.
	if res, out := run(t, term, req{Command: "echo next"}); out != "next\n" || res.Note != "" {
		t.Errorf("echo next after: %+v %q", res, out)
	}
}

// TestRedTeamForgedMarkerWhileIdle: drainIdle took any marker with N >=
// last.N that arrived while bash sat at its prompt as a prompt bash showed
// for injected input, and made it t.last. A background job prints one
// (nonce from ${PS1@P}, N 1000, exit 9, cwd /fake): the next read reported
// exit 9 and cwd /fake, and the next command's base was 1000, so its real
// prompt (N small) was ignored, the repair's too, and the shell rebuilt.
// Now an idle marker counts only if bash read a line since (syscr). The
// job is disowned so that bash's "Done" line does not join the output.
func TestRedTeamForgedMarkerWhileIdle(t *testing.T) {
	term := newTerm(t, Options{SoftTimeout: 2 * time.Second})
	dir := term.Cwd()
	run(t, term, req{Command: "(sleep 0.3; " + forgeFromPS1("1000") + ") & disown"})
	time.Sleep(600 * time.Millisecond)
	if res, out := run(t, term, req{}); res.Cwd == "/fake" || res.ExitCode == 9 {
		t.Errorf("read after a background job printed a forged marker: %+v %q", res, out)
	}
	res, out := run(t, term, req{Command: "echo ok; pwd"})
	if res.Rebuilt || out != "ok\n"+dir+"\n" || res.ExitCode != 0 {
		t.Errorf("echo ok; pwd after a forged marker while idle: %+v %q", res, out)
	}
}

// TestRedTeamForgedMarkerWhilePromptInvisible: when the real prompt did
// not arrive (exec 2>/dev/null), complete() synced for 300ms and took any
// marker that came then as the command's: a background job prints one
// 100ms after the command ends. Now complete waits only where stderr is a
// pipe or socket, through which a prompt may come late; otherwise the
// repair at once gets the exit code ("$?") and the forged marker comes
// while bash is idle, where it does not count.
func TestRedTeamForgedMarkerWhilePromptInvisible(t *testing.T) {
	term := newTerm(t, Options{SoftTimeout: 2 * time.Second})
	dir := term.Cwd()
	res, out := run(t, term, req{Command: "exec 2>/dev/null; (sleep 0.1; " + forgeFromPS1("n+1") + ") & disown"})
	if res.ExitCode != 0 || res.Cwd != dir {
		t.Errorf("command whose prompt was invisible took a forged marker: %+v %q, want exit 0 cwd %q", res, out, dir)
	}
	res, out = run(t, term, req{Command: "echo ok; pwd"})
	if res.Rebuilt || out != "ok\n"+dir+"\n" {
		t.Errorf("echo ok; pwd after: %+v %q", res, out)
	}
}

// forgeFromPS1 is shell text that renders a prompt marker from PS1 itself
// (${PS1@P} gives the nonce), with command number n (a shell expression),
// exit code 9 and cwd /fake: what any command can print, no internals
// needed.
func forgeFromPS1(n string) string {
	return `p=${PS1@P}; r=${p#*;p;}; n=${r%%;*}; printf '%s' "${p%%;p;*};p;$((` + n + `));9;;${#PS1};'/fake'"$'\a'`
}

// TestPromptThroughPipeStillCounts: complete waits for a late prompt only
// where stderr is a pipe or socket (TestRedTeamForgedMarkerWhilePromptInvisible);
// a prompt that comes that way, through exec 2> >(cat), still ends each
// command with its exit code.
func TestPromptThroughPipeStillCounts(t *testing.T) {
	term := newTerm(t, Options{SoftTimeout: 2 * time.Second})
	run(t, term, req{Command: "exec 2> >(cat)"})
	for code, c := range []string{"true", "echo ok; (exit 1)", "(exit 2)"} {
		res, out := run(t, term, req{Command: c})
		if res.Running || res.Rebuilt || res.ExitCode != code || res.Note != "" {
			t.Errorf("%q with stderr through a pipe: %+v %q, want exit %d", c, res, out, code)
		}
	}
}

// TestRedTeamDotFunctionHijacksSourcedCommands: a command that is not
// typed as it is (several lines) was run by typing ` \. '<file>'`. The
// backslash defeats aliases, not functions: after `.() { …; }` every
// multi-line command ran the function instead and reported its exit code
// as the command's; after `enable -n .` it reported 127 "command not
// found"; after `set -r` (restricted, which cannot be undone) 1 "bash: .:
// restricted". Now the line is ` \builtin . '<file>'`; whether bash read
// the file is seen by inotify, and one that was not read is handed over
// again after `builtin enable . source`, or with eval in a restricted
// shell, or the shell is rebuilt with a note that the command did not run.
func TestRedTeamDotFunctionHijacksSourcedCommands(t *testing.T) {
	for _, tc := range []struct{ setup, note string }{
		{".() { echo HIJACKED; }", ""},
		{"source() { echo HIJACKED; }", ""},
		{"enable -n . source", "builtin enable . source"},
		{"set -r", "restricted (set -r)"},
	} {
		t.Run(tc.setup, func(t *testing.T) {
			term := newTerm(t, Options{SoftTimeout: 2 * time.Second})
			run(t, term, req{Command: tc.setup})
			res, out := run(t, term, req{Command: "echo a\necho b"})
			if out != "a\nb\n" || res.ExitCode != 0 || res.Rebuilt || !strings.Contains(res.Note, tc.note) {
				t.Errorf("two-line command after %q: %+v %q, want %q", tc.setup, res, out, "a\nb\n")
			}
			// $? still reaches the command, and the next one needs no repair.
			run(t, term, req{Command: "(exit 3)"})
			res, out = run(t, term, req{Command: "echo $?\n(exit 4)"})
			if out != "3\n" || res.ExitCode != 4 || res.Rebuilt || res.Note != "" {
				t.Errorf("$? after %q: %+v %q, want %q and exit 4", tc.setup, res, out, "3\n")
			}
		})
	}
	// What cannot be repaired is reported as not run.
	term := newTerm(t, Options{SoftTimeout: 2 * time.Second})
	run(t, term, req{Command: "builtin() { echo HIJACKED; }"})
	res, out := run(t, term, req{Command: "echo a\necho b"})
	if strings.Contains(out, "HIJACKED") || !res.Rebuilt || res.ExitCode != -1 || !strings.Contains(res.Note, "NOT run") || !strings.Contains(res.Note, "HIJACKED") {
		t.Errorf("two-line command after builtin() was redefined: %+v %q, want a rebuild and a note that it did not run", res, out)
	}
	if res, out := run(t, term, req{Command: "echo a\necho b"}); out != "a\nb\n" || res.ExitCode != 0 {
		t.Errorf("two-line command after the rebuild: %+v %q", res, out)
	}
}

// TestRestrictedShellRepairs: in a restricted shell (set -r) . sources no
// path with a slash, so the repairs that sourced a file failed and the
// shell was rebuilt; the prompt's repair is one typed eval now.
func TestRestrictedShellRepairs(t *testing.T) {
	term := newTerm(t, Options{SoftTimeout: 2 * time.Second})
	run(t, term, req{Command: "set -r"})
	res, out := run(t, term, req{Command: "PS1='$ '; (exit 3)"})
	if res.Rebuilt || res.ExitCode != 3 || !strings.Contains(res.Note, "repaired") {
		t.Errorf("PS1 changed in a restricted shell: %+v %q, want exit 3, repaired", res, out)
	}
	res, out = run(t, term, req{Command: "echo a\necho b"})
	if res.Rebuilt || res.ExitCode != 0 || out != "a\nb\n" {
		t.Errorf("two lines in a restricted shell after: %+v %q", res, out)
	}
}
