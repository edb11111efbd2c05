package terminal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harnessd/harnessd/core/event"
)

// TestMaxWaitBoundsChattyCommands: a command that never stops printing
// never reaches the soft timeout; every call still returns by max wait.
func TestMaxWaitBoundsChattyCommands(t *testing.T) {
	term := newTerm(t, Options{SoftTimeout: 5 * time.Second, MaxWait: time.Second})
	for _, c := range []string{
		"while :; do date; sleep 0.1; done",
		"yes | head -c 100000000 | while read -r l; do echo $l; done",
		"top -b -d 0.2",
	} {
		start := time.Now()
		res, out := run(t, term, req{Command: c})
		if took := time.Since(start); took > 3*time.Second {
			t.Errorf("%q: call took %s with max wait 1s", c, took)
		}
		if !res.Running || res.ExitCode != -1 || out == "" || !strings.Contains(res.Note, "max wait") {
			t.Errorf("%q: %+v (%d bytes)", c, res, len(out))
		}
		start = time.Now()
		res, _ = run(t, term, req{})
		if took := time.Since(start); !res.Running || took > 3*time.Second {
			t.Errorf("%q: read more took %s: %+v", c, took, res)
		}
		res, _ = run(t, term, req{Command: "C-c", IsInput: true})
		if res.Running {
			// bash sometimes goes on with a loop whose job was already
			// exiting when SIGINT came, as a person pressing C-c sees.
			res, _ = run(t, term, req{Command: "C-c", IsInput: true})
		}
		if res.Running || res.ExitCode != 130 && !strings.HasPrefix(c, "top") { // top exits 0 on SIGINT
			t.Errorf("%q: C-c: %+v", c, res)
		}
	}
}

// TestHardTimeoutWithNoCaller: the deadline is the command's, not the
// caller's: it is enforced while no call waits, and the next call says so.
func TestHardTimeoutWithNoCaller(t *testing.T) {
	term := newTerm(t, Options{})
	res, _ := run(t, term, req{Command: "echo begun; sleep 30", Timeout: 500 * time.Millisecond, SoftTimeout: 100 * time.Millisecond})
	if !res.Running {
		t.Fatalf("sleep 30: %+v", res)
	}
	deadline := time.Now().Add(5 * time.Second)
	for term.Running() && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if term.Running() {
		t.Fatal("the command was not interrupted at its deadline while no call waited")
	}
	res, out := run(t, term, req{})
	if !res.TimedOut || res.ExitCode != 130 || res.Running || !strings.Contains(res.Note, "no call was waiting") {
		t.Fatalf("next read: %+v %q", res, out)
	}

	// A new command after one that timed out alone runs, and says what
	// became of the other.
	run(t, term, req{Command: "sleep 30", Timeout: 300 * time.Millisecond, SoftTimeout: 50 * time.Millisecond})
	time.Sleep(1500 * time.Millisecond)
	res, out = run(t, term, req{Command: "echo next"})
	if out != "next\n" || res.ExitCode != 0 || !strings.Contains(res.Note, "hard timeout") {
		t.Fatalf("command after an unattended timeout: %+v %q", res, out)
	}
}

// TestFinishedBetweenCalls: a command that ends after the call returned
// does not block the next command; its end is reported in a note.
func TestFinishedBetweenCalls(t *testing.T) {
	term := newTerm(t, Options{})
	res, _ := run(t, term, req{Command: "sleep 0.3; echo late; (exit 4)", SoftTimeout: 50 * time.Millisecond})
	if !res.Running {
		t.Fatalf("%+v", res)
	}
	time.Sleep(700 * time.Millisecond)
	res, out := run(t, term, req{Command: "echo now"})
	if out != "now\n" || res.ExitCode != 0 || !strings.Contains(res.Note, "exit code 4") || !strings.Contains(res.Note, "late") {
		t.Fatalf("%+v %q", res, out)
	}
}

// TestInterruptIsNotQueued: Interrupt and the state readers work while a
// Run waits, and the Run returns with the command's end.
func TestInterruptIsNotQueued(t *testing.T) {
	term := newTerm(t, Options{SoftTimeout: time.Minute, MaxWait: time.Minute})
	if err := term.Interrupt(context.Background()); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("Interrupt at the prompt: %v", err)
	}
	type result struct {
		res Result
		out string
		err error
	}
	done := make(chan result, 1)
	go func() {
		var out bytes.Buffer
		res, err := term.Run(context.Background(), event.CmdRun{Command: "echo go; while :; do echo tick; sleep 0.05; done"}, &out)
		done <- result{res, out.String(), err}
	}()
	for !term.Running() {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)
	start := time.Now()
	if pid := term.PID(); pid == 0 || time.Since(start) > 50*time.Millisecond {
		t.Errorf("PID() = %d took %s while a command runs", pid, time.Since(start))
	}
	if err := term.Interrupt(context.Background()); err != nil {
		t.Fatalf("Interrupt: %v", err)
	}
	select {
	case r := <-done:
		if r.err != nil || r.res.Running || r.res.ExitCode != 130 || !strings.Contains(r.out, "tick") {
			t.Fatalf("after Interrupt: %+v %v %q", r.res, r.err, r.out)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after Interrupt")
	}

	// SendKeys while a Run waits.
	go func() {
		var out bytes.Buffer
		res, err := term.Run(context.Background(), event.CmdRun{Command: `read -r x; echo "got $x"`}, &out)
		done <- result{res, out.String(), err}
	}()
	for !term.Running() {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	if err := term.SendKeys(context.Background(), "hello<Enter>"); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		if r.err != nil || r.res.Running || r.out != "got hello\n" {
			t.Fatalf("after SendKeys: %+v %v %q", r.res, r.err, r.out)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after SendKeys")
	}
	if err := term.SendKeys(context.Background(), "echo no<Enter>"); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("SendKeys at the prompt: %v", err)
	}
}

func TestParseInput(t *testing.T) {
	for _, tc := range []struct {
		in     string
		app    bool
		want   string
		hasKey bool
	}{
		{"hello", false, "hello", false},
		{"C-c", false, "\x03", true},
		{"c-D", false, "\x04", true},
		{"^Z", false, "\x1a", true},
		{"ctrl+a", false, "\x01", true},
		{"ESC", false, "\x1b", true},
		{"Enter", false, "\r", true},
		{"Up", false, "Up", false},
		{"<Up><Down><Left><Right>", false, "\x1b[A\x1b[B\x1b[D\x1b[C", true},
		{"<Up>", true, "\x1bOA", true},
		{"ihello<Esc>", false, "ihello\x1b", true},
		{":wq<Enter>", false, ":wq\r", true},
		{"<C-x><C-s>", false, "\x18\x13", true},
		{"<Tab><BS><Del><Space>", false, "\t\x7f\x1b[3~ ", true},
		{"<Home><End><PageUp><PgDn>", false, "\x1b[H\x1b[F\x1b[5~\x1b[6~", true},
		{"<F1><F5><F12>", false, "\x1bOP\x1b[15~\x1b[24~", true},
		{"<M-x><A-b>", false, "\x1bx\x1bb", true},
		{"a<lt>b>", false, "a<b>", true},
		{"<div>x</div>", false, "<div>x</div>", false},
		{"cat <<EOF", false, "cat <<EOF", false},
		{"x<", false, "x<", false},
	} {
		p := parseInput(tc.in, tc.app)
		if string(p.bytes) != tc.want || p.hasKey != tc.hasKey {
			t.Errorf("parseInput(%q) = %q key=%v, want %q key=%v", tc.in, p.bytes, p.hasKey, tc.want, tc.hasKey)
		}
	}
}

// TestKeysReachTheProgram: named keys arrive as the bytes a terminal sends,
// and a call that sent input returns when the output settles.
func TestKeysReachTheProgram(t *testing.T) {
	term := newTerm(t, Options{SoftTimeout: 10 * time.Second})
	res, out := run(t, term, req{Command: `python3 -c 'import sys, tty; tty.setraw(0); print("ready", flush=True); print(repr(sys.stdin.buffer.read(9)), end="\r\n")'`})
	out += readUntil(t, term, out, "ready")
	if !res.Running && !strings.Contains(out, "ready") {
		t.Fatalf("start: %+v %q", res, out)
	}
	start := time.Now()
	res, out = run(t, term, req{Command: "<Up><C-a>x<Esc><F1>", IsInput: true})
	if !strings.Contains(out, `b'\x1b[A\x01x\x1b\x1bOP'`) {
		out += readUntil(t, term, out, "'")
	}
	if !strings.Contains(out, `b'\x1b[A\x01x\x1b\x1bOP'`) || time.Since(start) > 5*time.Second {
		t.Fatalf("keys: %+v %q after %s", res, out, time.Since(start))
	}

	// Input to a program that answers: back after the settle period, not
	// the soft timeout.
	run(t, term, req{Command: "cat", SoftTimeout: 200 * time.Millisecond})
	start = time.Now()
	res, out = run(t, term, req{Command: "hello", IsInput: true})
	if took := time.Since(start); took > 3*time.Second || !res.Running || out != "hello\n" {
		t.Fatalf("input to cat: %+v %q after %s", res, out, took)
	}
	res, _ = run(t, term, req{Command: "C-d", IsInput: true})
	if res.Running || res.ExitCode != 0 {
		t.Fatalf("C-d: %+v", res)
	}
}

// TestScreenOfFullScreenPrograms: vi and less show as the screen they draw,
// not as their redraws; keys drive them; after they quit, line output is
// as before.
func TestScreenOfFullScreenPrograms(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	for i := 1; i <= 200; i++ {
		fmt.Fprintf(&b, "line %03d of the file\n", i)
	}
	file := filepath.Join(dir, "f.txt")
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	term := newTerm(t, Options{Dir: dir, Cols: 80, Rows: 24, SoftTimeout: 10 * time.Second})
	for _, tc := range []struct {
		name, cmd, quit string
	}{
		{"vi", "vi -u NONE -n f.txt", ":q!<Enter>"},
		{"less", "LESS= less f.txt", "q"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, out := run(t, term, req{Command: tc.cmd})
			for i := 0; i < 20 && res.Screen == nil && res.Running; i++ {
				var more string
				res, more = run(t, term, req{SoftTimeout: 300 * time.Millisecond})
				out += more
			}
			if res.Screen == nil || !res.Running {
				run(t, term, req{Command: "C-c", IsInput: true})
				t.Fatalf("no screen: %+v %q", res, out)
			}
			s := res.Screen
			if s.Cols != 80 || s.Rows != 24 || len(s.Lines) != 24 {
				t.Errorf("screen %dx%d with %d lines", s.Cols, s.Rows, len(s.Lines))
			}
			if s.Lines[0] != "line 001 of the file" || !strings.Contains(s.Text(), "line 020 of the file") {
				t.Errorf("screen does not show the file:\n%s", s.Text())
			}
			if !strings.HasSuffix(out, s.Text()) || strings.Count(out, "line 001") != 1 || len(out) > 4000 {
				t.Errorf("output should end with the screen once, not redraws: %q", out)
			}
			if tc.name == "vi" {
				res, out = run(t, term, req{Command: "G", IsInput: true})
				if res.Screen == nil || !strings.Contains(res.Screen.Text(), "line 200 of the file") {
					t.Errorf("after G: %+v %q", res, out)
				}
			}
			res, out = run(t, term, req{Command: tc.quit, IsInput: true})
			if res.Running || res.ExitCode != 0 || res.Screen != nil {
				run(t, term, req{Command: "C-c", IsInput: true})
				t.Fatalf("quit: %+v %q", res, out)
			}
			if _, out := cmd(t, term, "echo after"); out != "after\n" {
				t.Fatalf("line output after the screen: %q", out)
			}
		})
	}
}

// TestLessAsAgentsRunIt: `less FILE` with harnessd's own environment
// shows the file's first page, and q quits; under the TERM=dumb of old it
// stopped at "terminal is not fully functional, press RETURN", and with
// TERM=dumb set in Options.Env (LESS has -d) it still must not.
func TestLessAsAgentsRunIt(t *testing.T) {
	for _, env := range [][]string{nil, {"TERM=dumb"}} {
		t.Run(fmt.Sprint(env), func(t *testing.T) { lessOnce(t, env) })
	}
}

func lessOnce(t *testing.T, env []string) {
	dir := t.TempDir()
	var b strings.Builder
	for i := 1; i <= 200; i++ {
		fmt.Fprintf(&b, "line %03d\n", i)
	}
	if err := os.WriteFile(filepath.Join(dir, "f.txt"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	term := newTerm(t, Options{Dir: dir, Cols: 80, Rows: 24, Env: env})
	res, out := run(t, term, req{Command: "less f.txt", SoftTimeout: 2 * time.Second})
	if !res.Running || strings.Contains(out, "not fully functional") || !strings.Contains(out, "line 001\nline 002\n") || strings.Contains(out, "line 100") {
		run(t, term, req{Command: "C-c", IsInput: true})
		t.Fatalf("less: %+v %q", res, out)
	}
	if res, out = run(t, term, req{Command: "q", IsInput: true}); res.Running || res.ExitCode != 0 {
		run(t, term, req{Command: "C-c", IsInput: true})
		t.Fatalf("q: %+v %q", res, out)
	}
	if _, out := cmd(t, term, "echo after"); out != "after\n" {
		t.Fatalf("after less: %q", out)
	}
}

// TestScreenOfRedrawingPrograms: top and watch redraw forever; a call
// returns the current screen soon after a redraw, not at max wait.
func TestScreenOfRedrawingPrograms(t *testing.T) {
	term := newTerm(t, Options{Cols: 100, Rows: 30, SoftTimeout: 10 * time.Second, MaxWait: 20 * time.Second})
	for _, tc := range []struct{ cmd, want, quit string }{
		{"top -d 0.5", "PID", "q"},
		{"watch -n 0.5 echo watched", "watched", "C-c"},
	} {
		start := time.Now()
		res, out := run(t, term, req{Command: tc.cmd})
		for i := 0; i < 20 && (res.Screen == nil || !strings.Contains(res.Screen.Text(), tc.want)) && res.Running; i++ {
			res, out = run(t, term, req{})
		}
		if res.Screen == nil || !strings.Contains(res.Screen.Text(), tc.want) || time.Since(start) > 15*time.Second {
			run(t, term, req{Command: "C-c", IsInput: true})
			t.Fatalf("%q: %+v %q", tc.cmd, res, out)
		}
		res, out = run(t, term, req{Command: tc.quit, IsInput: true})
		if res.Running {
			run(t, term, req{Command: "C-c", IsInput: true})
			t.Fatalf("%q: quit: %+v %q", tc.cmd, res, out)
		}
	}
}

// TestClearThenLinesStaysLines: clearing the screen and then printing
// lines is line output, not a screen.
func TestClearThenLinesStaysLines(t *testing.T) {
	term := newTerm(t, Options{Rows: 10})
	res, out := cmd(t, term, `printf '\033[H\033[2J'; seq 1 30`)
	if res.Screen != nil || !strings.HasPrefix(out, "1\n2\n") || !strings.HasSuffix(out, "29\n30\n") {
		t.Fatalf("%+v %q", res, out)
	}
	res, out = cmd(t, term, `printf '\033[H\033[2Jtitle\n'`)
	if res.Screen != nil || out != "title\n" {
		t.Fatalf("%+v %q", res, out)
	}
}

// timedWriter records when each write arrived.
type timedWriter struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	firsts map[string]time.Time
}

func (w *timedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	for _, l := range strings.Split(string(p), "\n") {
		if _, ok := w.firsts[l]; !ok && l != "" {
			w.firsts[l] = time.Now()
		}
	}
	return len(p), nil
}

// TestOutputIsLive: each line reaches the writer as the command prints it,
// not when the command ends.
func TestOutputIsLive(t *testing.T) {
	term := newTerm(t, Options{})
	w := &timedWriter{firsts: map[string]time.Time{}}
	start := time.Now()
	res, err := term.Run(context.Background(), event.CmdRun{Command: "echo one; sleep 1; echo two"}, w)
	end := time.Now()
	if err != nil || res.ExitCode != 0 || w.buf.String() != "one\ntwo\n" {
		t.Fatalf("%+v %v %q", res, err, w.buf.String())
	}
	if got := w.firsts["one"].Sub(start); got > end.Sub(start)-500*time.Millisecond {
		t.Fatalf("the first line arrived %s after the start, the call ended after %s", got, end.Sub(start))
	}
}

// TestTimeoutConversion: timeout_s becomes a duration; nonsense is the default.
func TestTimeoutConversion(t *testing.T) {
	for in, want := range map[float64]time.Duration{
		0: 0, -1: 0, 1.5: 1500 * time.Millisecond, 1e300: 0,
	} {
		if got := Timeout(in); got != want {
			t.Errorf("Timeout(%v) = %s, want %s", in, got, want)
		}
	}
	if got := Timeout(nan()); got != 0 {
		t.Errorf("Timeout(NaN) = %s", got)
	}
}

func nan() float64 { z := 0.0; return z / z }

// TestXtraceShowsOnlyTheCommand: under set -x, a command that goes through
// the control file traces as itself, and $? still comes through.
func TestXtraceShowsOnlyTheCommand(t *testing.T) {
	term := newTerm(t, Options{})
	cmd(t, term, "set -x")
	cmd(t, term, "false")
	res, out := cmd(t, term, "echo \"was $?\"\necho two")
	if res.ExitCode != 0 || !strings.Contains(out, "+ echo 'was 1'\nwas 1\n") || !strings.Contains(out, "+ echo two\ntwo\n") {
		t.Fatalf("%+v %q", res, out)
	}
	for _, s := range []string{term.ctlDir, "set -x", "status", "\\."} {
		if strings.Contains(out, s) {
			t.Errorf("trace shows harnessd's own line (%q): %q", s, out)
		}
	}
	if res, out := cmd(t, term, "set +x\nexit_5() { return 5; }; exit_5"); res.ExitCode != 5 || strings.Contains(out, term.ctlDir) {
		t.Fatalf("set +x: %+v %q", res, out)
	}
}

// TestSyntaxErrorNamesNoFile: bash's message about a command from the
// control file reads as a typed command's would.
func TestSyntaxErrorNamesNoFile(t *testing.T) {
	term := newTerm(t, Options{})
	res, out := cmd(t, term, "echo ok\nif true; then")
	if res.ExitCode == 0 || strings.Contains(out, term.ctlDir) || !strings.Contains(out, "bash: line ") || !strings.Contains(res.Note, "could not parse") {
		t.Fatalf("%+v %q", res, out)
	}
}

// TestBackgroundOutputBetweenCommands: what a background job prints while
// bash waits at its prompt is read by the next call, and said to be so.
func TestBackgroundOutputBetweenCommands(t *testing.T) {
	term := newTerm(t, Options{})
	if res, out := cmd(t, term, "(sleep 0.2; echo late) &"); res.ExitCode != 0 || strings.Contains(out, "late") {
		t.Fatalf("%+v %q", res, out)
	}
	time.Sleep(600 * time.Millisecond)
	res, out := run(t, term, req{})
	if res.Running || !strings.Contains(out, "late\n") || !strings.Contains(res.Note, "background") {
		t.Fatalf("%+v %q", res, out)
	}
}
