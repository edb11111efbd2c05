package terminal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/harnessd/harnessd/core/event"
)

// newTerm starts a terminal for one test and closes it after.
func newTerm(t *testing.T, opts Options) *Terminal {
	t.Helper()
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	if opts.KillGrace == 0 {
		opts.KillGrace = 300 * time.Millisecond
	}
	if opts.SoftTimeout == 0 {
		opts.SoftTimeout = 5 * time.Second
	}
	term, err := New(context.Background(), opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { term.Close() })
	return term
}

// req is one call as the tests write it: the action's fields and the
// call's soft timeout.
type req struct {
	Command     string
	IsInput     bool
	Timeout     time.Duration
	SoftTimeout time.Duration
	Reset       bool
}

func (r req) action() event.CmdRun {
	return event.CmdRun{Command: r.Command, IsInput: r.IsInput, TimeoutS: r.Timeout.Seconds(), Reset: r.Reset}
}

// run runs one request and returns its result and output.
func run(t *testing.T, term *Terminal, r req) (Result, string) {
	t.Helper()
	var out bytes.Buffer
	res, err := term.Run(context.Background(), r.action(), &out, WithSoftTimeout(r.SoftTimeout))
	if err != nil {
		t.Fatalf("Run(%q): %v", r.Command, err)
	}
	return res, out.String()
}

func cmd(t *testing.T, term *Terminal, c string) (Result, string) {
	t.Helper()
	return run(t, term, req{Command: c})
}

func TestExitCodes(t *testing.T) {
	term := newTerm(t, Options{})
	for _, tc := range []struct {
		cmd  string
		want int
	}{
		{"true", 0},
		{"false", 1},
		{"exit_code_7() { return 7; }; exit_code_7", 7},
		{"ls /definitely/not/here", 2},
		{"(exit 42)", 42},
		{"sh -c 'kill -TERM $$'", 143},
	} {
		res, out := cmd(t, term, tc.cmd)
		if res.ExitCode != tc.want || res.Running || res.TimedOut || res.Rebuilt {
			t.Errorf("%q: got %+v (output %q), want exit %d", tc.cmd, res, out, tc.want)
		}
	}
}

func TestPreviousExitStatusVisible(t *testing.T) {
	term := newTerm(t, Options{})
	cmd(t, term, "false")
	if _, out := cmd(t, term, "echo $?"); out != "1\n" {
		t.Fatalf("echo $? after false = %q, want 1", out)
	}
}

func TestStatePersists(t *testing.T) {
	term := newTerm(t, Options{})
	dir := t.TempDir()
	if res, _ := cmd(t, term, "cd "+dir+" && export X=1"); res.ExitCode != 0 || res.Cwd != dir {
		t.Fatalf("cd+export: %+v, want cwd %s", res, dir)
	}
	res, out := cmd(t, term, `pwd; echo "X=$X"`)
	if out != dir+"\nX=1\n" || res.Cwd != dir {
		t.Fatalf("state lost: %q %+v", out, res)
	}
	cmd(t, term, "greet() { echo \"hello $1\"; }\nalias ll='echo aliased'")
	if _, out := cmd(t, term, "greet world; ll"); out != "hello world\naliased\n" {
		t.Fatalf("function/alias lost: %q", out)
	}
	cmd(t, term, "sleep 30 &")
	if _, out := cmd(t, term, "jobs"); !strings.Contains(out, "sleep 30") {
		t.Fatalf("background job lost: %q", out)
	}
	cmd(t, term, "kill %1; wait")
}

func TestPIDStableAcrossCommands(t *testing.T) {
	term := newTerm(t, Options{})
	pid := term.PID()
	for i := range 3 {
		res, out := cmd(t, term, "echo $$")
		if res.PID != pid || strings.TrimSpace(out) != fmt.Sprint(pid) {
			t.Fatalf("run %d: pid %d / %q, want %d", i, res.PID, out, pid)
		}
	}
}

func TestCwdWithStrangeCharacters(t *testing.T) {
	term := newTerm(t, Options{})
	dir := filepath.Join(t.TempDir(), "a \"quoted\" \\dir\twith\nnewline")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	res, _ := cmd(t, term, "cd "+shellQuote(dir))
	if res.Cwd != dir || res.ExitCode != 0 {
		t.Fatalf("cwd = %q, want %q", res.Cwd, dir)
	}
}

func TestHardTimeoutInterruptsAndKeepsShell(t *testing.T) {
	term := newTerm(t, Options{})
	pid := term.PID()
	start := time.Now()
	res, _ := run(t, term, req{Command: "sleep 5", Timeout: 300 * time.Millisecond})
	if !res.TimedOut || res.Running || res.Rebuilt || res.PID != pid {
		t.Fatalf("sleep 5 under 300ms: %+v", res)
	}
	if res.ExitCode != 130 {
		t.Errorf("exit code after SIGINT = %d, want 130", res.ExitCode)
	}
	if d := time.Since(start); d > 4*time.Second {
		t.Errorf("interrupt took %s", d)
	}
	if !strings.Contains(res.Note, "SIGINT") {
		t.Errorf("note does not say SIGINT: %q", res.Note)
	}
	res, out := cmd(t, term, "echo ok")
	if out != "ok\n" || res.PID != pid {
		t.Fatalf("after timeout: %q %+v", out, res)
	}
}

func TestHardTimeoutEscalatesToSIGKILL(t *testing.T) {
	term := newTerm(t, Options{})
	pid := term.PID()
	res, _ := run(t, term, req{Command: `bash -c "trap '' INT; sleep 30"`, Timeout: 200 * time.Millisecond})
	if !res.TimedOut || res.Rebuilt || res.PID != pid || !strings.Contains(res.Note, "SIGKILL") {
		t.Fatalf("SIGINT-proof child: %+v", res)
	}
	if _, out := cmd(t, term, "echo alive"); out != "alive\n" {
		t.Fatalf("after SIGKILL: %q", out)
	}
}

func TestHungShellIsRebuilt(t *testing.T) {
	term := newTerm(t, Options{})
	old := term.PID()
	cmd(t, term, "export LOST=yes")
	res, _ := run(t, term, req{Command: "trap '' INT; while :; do :; done", Timeout: 200 * time.Millisecond})
	if !res.TimedOut || !res.Rebuilt || res.PID == old {
		t.Fatalf("hung shell: %+v", res)
	}
	if !gone(old) {
		t.Errorf("old shell %d still alive", old)
	}
	if _, out := cmd(t, term, `echo "LOST=$LOST"`); out != "LOST=\n" {
		t.Fatalf("new shell should have fresh state: %q", out)
	}
}

func TestSoftTimeoutThenReadMore(t *testing.T) {
	term := newTerm(t, Options{})
	res, out := run(t, term, req{Command: "echo start; sleep 1; echo end", SoftTimeout: 300 * time.Millisecond})
	if !res.Running || res.ExitCode != -1 || out != "start\n" {
		t.Fatalf("soft timeout: %+v %q", res, out)
	}
	if !strings.Contains(res.Note, "still running") {
		t.Errorf("note: %q", res.Note)
	}
	res, out = run(t, term, req{Command: "echo refused", SoftTimeout: 100 * time.Millisecond})
	if !res.Running || !strings.Contains(res.Note, "NOT run") || strings.Contains(out, "refused") {
		t.Fatalf("command while busy: %+v %q", res, out)
	}
	res, out = run(t, term, req{})
	if res.Running || res.ExitCode != 0 || !strings.Contains(out, "end\n") {
		t.Fatalf("read more: %+v %q", res, out)
	}
}

func TestInputToRunningProgram(t *testing.T) {
	term := newTerm(t, Options{})
	res, out := run(t, term, req{Command: `read -p "name? " x; echo "hi $x"`, SoftTimeout: 300 * time.Millisecond})
	if !res.Running || !strings.Contains(out, "name? ") {
		t.Fatalf("read: %+v %q", res, out)
	}
	res, out = run(t, term, req{Command: "bob", IsInput: true})
	if res.Running || out != "hi bob\n" {
		t.Fatalf("answer: %+v %q", res, out)
	}

	res, _ = run(t, term, req{Command: "cat", SoftTimeout: 200 * time.Millisecond})
	if !res.Running {
		t.Fatalf("cat: %+v", res)
	}
	res, out = run(t, term, req{Command: "hello", IsInput: true, SoftTimeout: 200 * time.Millisecond})
	if out != "hello\n" || !res.Running {
		t.Fatalf("cat echo: %+v %q", res, out)
	}
	res, _ = run(t, term, req{Command: "C-d", IsInput: true})
	if res.Running || res.ExitCode != 0 {
		t.Fatalf("C-d: %+v", res)
	}

	res, _ = run(t, term, req{Command: "sleep 30", SoftTimeout: 200 * time.Millisecond})
	if !res.Running {
		t.Fatalf("sleep: %+v", res)
	}
	res, _ = run(t, term, req{Command: "C-c", IsInput: true})
	if res.Running || res.ExitCode != 130 {
		t.Fatalf("C-c: %+v", res)
	}

	res, _ = run(t, term, req{Command: "x", IsInput: true})
	if res.Running || !strings.Contains(res.Note, "no command is running") {
		t.Fatalf("input with nothing running: %+v", res)
	}
}

func TestPythonREPL(t *testing.T) {
	term := newTerm(t, Options{})
	// Python can take seconds to start on a loaded 2-core machine: keep
	// reading in short steps until the prompt shows.
	res, out := run(t, term, req{Command: "python3 -q", SoftTimeout: 300 * time.Millisecond})
	out += readUntil(t, term, out, ">>> ")
	if !strings.Contains(out, ">>> ") {
		t.Fatalf("python3: %+v %q", res, out)
	}
	_, out = run(t, term, req{Command: "print(6*7)", IsInput: true, SoftTimeout: 300 * time.Millisecond})
	out += readUntil(t, term, out, ">>> ")
	if !strings.Contains(out, "42\n") {
		t.Fatalf("REPL output %q", out)
	}
	res, _ = run(t, term, req{Command: "C-d", IsInput: true})
	if res.Running || res.ExitCode != 0 {
		t.Fatalf("exit REPL: %+v", res)
	}
}

// readUntil sends empty reads until the output so far contains want, for up
// to 30 s, and returns what they read.
func readUntil(t *testing.T, term *Terminal, have, want string) string {
	t.Helper()
	var more strings.Builder
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(have+more.String(), want) && time.Now().Before(deadline); {
		_, out := run(t, term, req{SoftTimeout: 300 * time.Millisecond})
		more.WriteString(out)
	}
	return more.String()
}

func TestUnclosedQuoteIsAnErrorNotAHang(t *testing.T) {
	term := newTerm(t, Options{SoftTimeout: 10 * time.Second})
	for _, c := range []string{`echo "abc`, "echo 'abc", "if true; then echo x", "echo $(ls"} {
		start := time.Now()
		res, out := cmd(t, term, c)
		if res.Running || res.ExitCode == 0 || time.Since(start) > 5*time.Second {
			t.Errorf("%q: %+v %q", c, res, out)
		}
		if !strings.Contains(out, "unexpected") || !strings.Contains(res.Note, "could not parse") {
			t.Errorf("%q: output does not explain: %q", c, out)
		}
	}
	res, out := cmd(t, term, "cat <<EOF\nunterminated\n")
	if res.Running || !strings.Contains(out, "here-document") || !strings.Contains(out, "unterminated") || !strings.Contains(res.Note, "could not parse") {
		t.Errorf("heredoc: %+v %q", res, out)
	}
	if _, out := cmd(t, term, "echo fine"); out != "fine\n" {
		t.Fatalf("shell unusable after syntax errors: %q", out)
	}
}

func TestLongCommandsAndHeredocs(t *testing.T) {
	term := newTerm(t, Options{})
	var b strings.Builder
	b.WriteString("cat <<'EOF' | wc -l\n")
	for i := range 500 {
		fmt.Fprintf(&b, "line %d %s\n", i, strings.Repeat("x", 100))
	}
	b.WriteString("EOF\n")
	if res, out := cmd(t, term, b.String()); strings.TrimSpace(out) != "500" || res.ExitCode != 0 {
		t.Fatalf("500-line heredoc: %q %+v", out, res)
	}
	long := "echo " + strings.Repeat("y", 10000)
	if _, out := cmd(t, term, long); len(out) != 10001 {
		t.Fatalf("10 kB single line: got %d bytes", len(out))
	}
	multi := "a=1\nb=2\nfor i in 1 2 3; do\n  a=$((a+i))\ndone\necho $a $b"
	if _, out := cmd(t, term, multi); out != "7 2\n" {
		t.Fatalf("multi-line: %q", out)
	}
}

func TestOutputIsCleaned(t *testing.T) {
	term := newTerm(t, Options{})
	_, out := cmd(t, term, `printf '\033[31mred\033[0m\n'; printf 'a\rb\rprogress 100%%\n'; printf 'dos\r\n'; printf '\xff\n'`)
	want := "red\nprogress 100%\ndos\n\uFFFD\n"
	if out != want {
		t.Fatalf("got %q, want %q", out, want)
	}
}

func TestMegabytesWithoutNewline(t *testing.T) {
	term := newTerm(t, Options{})
	res, out := cmd(t, term, "head -c 5000000 /dev/zero | tr '\\0' a")
	if res.ExitCode != 0 || len(out) != 5000000 || strings.Trim(out, "a") != "" {
		t.Fatalf("5 MB line: exit %d, %d bytes", res.ExitCode, len(out))
	}
}

func TestForgedMarkersDoNotEndTheCommand(t *testing.T) {
	term := newTerm(t, Options{})
	// A marker with a wrong nonce is ordinary output.
	fake := `__HARNESS_0123456789abcdef01234567_B__{"n":99,"exit_code":0,"pid":1,"cwd":"/"}__HARNESS_0123456789abcdef01234567_E__`
	res, out := cmd(t, term, "echo '"+fake+"'; sleep 0.2; echo after")
	if !strings.HasSuffix(out, "after\n") || res.ExitCode != 0 {
		t.Fatalf("fake marker: %+v %q", res, out)
	}
	// Replaying the real (stale) prompt is dropped: the command goes on and
	// the nonce never shows.
	res, out = cmd(t, term, `printf '%s\n' "$__h_ps"; sleep 0.2; echo after; exit_7() { return 7; }; exit_7`)
	if res.ExitCode != 7 || !strings.Contains(out, "after") || strings.Contains(out, string(term.m.prefix)) {
		t.Fatalf("stale marker: %+v %q", res, out)
	}
}

func TestShellExitIsRebuilt(t *testing.T) {
	term := newTerm(t, Options{})
	old := term.PID()
	res, _ := cmd(t, term, "exit 3")
	if !res.Rebuilt || res.ExitCode != 3 || res.PID == old || !strings.Contains(res.Note, "exited") {
		t.Fatalf("exit 3: %+v", res)
	}
	res, _ = cmd(t, term, "set -e; false")
	if !res.Rebuilt || res.ExitCode != 1 {
		t.Fatalf("set -e; false: %+v", res)
	}
	if _, out := cmd(t, term, "echo back"); out != "back\n" {
		t.Fatalf("after rebuild: %q", out)
	}
}

func TestReset(t *testing.T) {
	term := newTerm(t, Options{})
	old := term.PID()
	cmd(t, term, "export GONE=1")
	res, out := run(t, term, req{Reset: true, Command: `echo "GONE=$GONE"`})
	if !res.Rebuilt || res.PID == old || out != "GONE=\n" || !strings.Contains(res.Note, "reset requested") {
		t.Fatalf("reset: %+v %q", res, out)
	}
}

func TestPagersNeverTakeOver(t *testing.T) {
	term := newTerm(t, Options{})
	dir := t.TempDir()
	script := "cd " + dir + " && git init -q && git -c user.email=a@b -c user.name=n commit -q --allow-empty -m first && git log --oneline | wc -l && git log"
	res, out := run(t, term, req{Command: script, SoftTimeout: 3 * time.Second})
	if res.Running || res.ExitCode != 0 || !strings.Contains(out, "first") {
		t.Fatalf("git log: %+v %q", res, out)
	}
	if _, out := cmd(t, term, `echo "$PAGER $GIT_PAGER $MANPAGER $TERM"`); out != "cat cat cat xterm-256color\n" {
		t.Fatalf("env: %q", out)
	}
}

func TestCloseLeavesNoStrays(t *testing.T) {
	term := newTerm(t, Options{})
	_, out := cmd(t, term, "sleep 1000 & echo PID:$!; (sleep 1001 &); nohup sleep 1002 >/dev/null 2>&1 & echo PID:$!")
	var pids []int
	for _, f := range strings.Fields(out) {
		var p int
		if _, err := fmt.Sscanf(f, "PID:%d", &p); err == nil {
			pids = append(pids, p)
		}
	}
	if len(pids) != 2 {
		t.Fatalf("pids %q", out)
	}
	shell := term.PID()
	term.Close()
	for _, p := range append(pids, shell) {
		if !gone(p) {
			t.Errorf("pid %d survived Close", p)
		}
	}
	if _, err := term.Run(context.Background(), event.CmdRun{Command: "true"}, &bytes.Buffer{}); err != ErrClosed {
		t.Errorf("Run after Close: %v", err)
	}
}

func TestEnvironmentIsNotInherited(t *testing.T) {
	t.Setenv("HARNESSD_SECRET_TEST", "leak")
	term := newTerm(t, Options{Env: []string{"MINE=1"}})
	if _, out := cmd(t, term, `echo "[$HARNESSD_SECRET_TEST][$MINE]"`); out != "[][1]\n" {
		t.Fatalf("env: %q", out)
	}
}

func TestConcurrentTerminalsDoNotCrossTalk(t *testing.T) {
	const n = 8
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			term, err := New(context.Background(), Options{Dir: t.TempDir()})
			if err != nil {
				errs <- err
				return
			}
			defer term.Close()
			for j := range 20 {
				var out bytes.Buffer
				if _, err := term.Run(context.Background(), event.CmdRun{Command: fmt.Sprintf("export V=%d-%d; echo $V", i, j)}, &out); err != nil {
					errs <- err
					return
				}
				if want := fmt.Sprintf("%d-%d\n", i, j); out.String() != want {
					errs <- fmt.Errorf("terminal %d: got %q want %q", i, out.String(), want)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestConcurrentRunsOnOneTerminalAreSerialised(t *testing.T) {
	term := newTerm(t, Options{})
	var wg sync.WaitGroup
	for i := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var out bytes.Buffer
			res, err := term.Run(context.Background(), event.CmdRun{Command: fmt.Sprintf("echo %d", i)}, &out)
			if err != nil || res.ExitCode != 0 || out.String() != fmt.Sprintf("%d\n", i) {
				t.Errorf("run %d: %v %+v %q", i, err, res, out.String())
			}
		}()
	}
	wg.Wait()
}

func TestContextCancelLeavesCommandRunning(t *testing.T) {
	term := newTerm(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	res, err := term.Run(ctx, event.CmdRun{Command: "sleep 0.6; echo done"}, &bytes.Buffer{})
	if err == nil || !res.Running {
		t.Fatalf("cancel: %v %+v", err, res)
	}
	res, out := run(t, term, req{})
	if res.Running || !strings.Contains(out, "done") {
		t.Fatalf("after cancel: %+v %q", res, out)
	}
}

// gone reports whether pid has exited (or is a zombie waiting for the host's
// init to reap it), waiting up to two seconds.
func gone(pid int) bool {
	for range 200 {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return true
		}
		if i := bytes.LastIndexByte(b, ')'); i > 0 && len(b) > i+2 && b[i+2] == 'Z' {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

// TestCloseDuringRun: Close does not wait for a running command: Run
// returns with ErrClosed and the command dies with the shell.
func TestCloseDuringRun(t *testing.T) {
	term := newTerm(t, Options{SoftTimeout: time.Minute, HardTimeout: time.Hour})
	type result struct {
		res Result
		err error
	}
	done := make(chan result, 1)
	pid := term.PID()
	go func() {
		res, err := term.Run(context.Background(), event.CmdRun{Command: "echo started; sleep 600"}, io.Discard)
		done <- result{res, err}
	}()
	time.Sleep(300 * time.Millisecond)
	closed := make(chan error, 1)
	go func() { closed <- term.Close() }()
	select {
	case r := <-done:
		if !errors.Is(r.err, ErrClosed) || r.res.ExitCode != -1 {
			t.Fatalf("Run after Close: %+v %v", r.res, r.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after Close")
	}
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close waited for the command")
	}
	if err := syscall.Kill(pid, 0); err == nil {
		t.Fatalf("shell %d alive after Close", pid)
	}
}
