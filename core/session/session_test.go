package session

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/harnessd/harnessd/core/event"
	"github.com/harnessd/harnessd/core/parse"
	"github.com/harnessd/harnessd/core/terminal"
	"github.com/harnessd/harnessd/core/trim"
	"github.com/harnessd/harnessd/store"
)

func newSession(t *testing.T) (*Session, trim.OutputStore) {
	return newSessionWith(t, Config{})
}

// newSessionWith starts a session with cfg's caps over a real store.
func newSessionWith(t *testing.T, cfg Config) (*Session, trim.OutputStore) {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "harnessd.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := st.CreateSession(context.Background(), store.Session{ID: "test"}); err != nil {
		t.Fatal(err)
	}
	outputs := st.Outputs()
	cfg.Terminal = terminal.Options{Dir: t.TempDir(), KillGrace: 300 * time.Millisecond}
	cfg.Outputs = outputs
	s, err := New(context.Background(), "test", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background(), "test over") })
	return s, outputs
}

// obs is what the tests look at of one command.
type obs struct {
	event.CmdOutput
	Trim trim.Result
}

func runCmd(t *testing.T, s *Session, c event.CmdRun) obs {
	t.Helper()
	out, tr, err := s.Command(context.Background(), c)
	if err != nil {
		t.Fatalf("Command(%q): %v", c.Command, err)
	}
	return obs{out, tr}
}

// TestReferenceParity redoes the reference harness's 28-assertion demo
// against the real PTY: exit codes, inherited state, the 100,001-line trim,
// the parser's three outcomes, the 300 ms timeout, and a stable shell pid.
func TestReferenceParity(t *testing.T) {
	s, outputs := newSession(t)
	pid := s.PID()
	dir := t.TempDir()

	if o := runCmd(t, s, event.CmdRun{Command: "false"}); o.ExitCode != 1 {
		t.Errorf("false: exit %d", o.ExitCode)
	}
	if o := runCmd(t, s, event.CmdRun{Command: "true"}); o.ExitCode != 0 {
		t.Errorf("true: exit %d", o.ExitCode)
	}
	if o := runCmd(t, s, event.CmdRun{Command: "ls /nope"}); o.ExitCode != 2 || !strings.Contains(o.Output, "No such file") {
		t.Errorf("ls /nope: %+v", o)
	}

	runCmd(t, s, event.CmdRun{Command: "cd " + dir + " && export X=1"})
	if o := runCmd(t, s, event.CmdRun{Command: `pwd; echo "X=$X"`}); o.Output != dir+"\nX=1\n" || o.Cwd != dir {
		t.Errorf("state not inherited: %+v", o)
	}

	big := `for i in $(seq 1 100000); do echo "log line $i"; if [ "$i" = 50000 ]; then echo 'Traceback (most recent call last): boom'; fi; done`
	o := runCmd(t, s, event.CmdRun{Command: big})
	tr := o.Trim
	if tr.LinesTotal != 100001 || !tr.Trimmed || tr.KeptKeyword < 1 || tr.LinesOmitted < 99000 {
		t.Fatalf("100,001 lines: %+v", tr)
	}
	if !strings.HasPrefix(o.Output, "log line 1\n") || !strings.HasSuffix(o.Output, "log line 100000\n") {
		t.Errorf("head/tail wrong:\n%s", o.Output)
	}
	if !strings.Contains(o.Output, "line 50001: Traceback (most recent call last): boom\n") {
		t.Errorf("Traceback line (number 50001) not kept:\n%s", o.Output)
	}
	omitted := fmt.Sprintf("%d,%03d of 100,001 lines", tr.LinesOmitted/1000, tr.LinesOmitted%1000)
	if !strings.Contains(o.Output, omitted) || !strings.Contains(o.Output, "harnessd output "+tr.OutputID+" --lines ") {
		t.Errorf("placeholder does not state the omitted count (%s) and how to read them:\n%s", omitted, o.Output)
	}
	if n := utf8.RuneCountInString(o.Output); n > trim.DefaultMaxChars {
		t.Errorf("trimmed view has %d characters", n)
	}
	page, err := outputs.ReadLines(context.Background(), tr.OutputID, 50000, 50002)
	if err != nil {
		t.Fatal(err)
	}
	if page.Text != "log line 50000\nTraceback (most recent call last): boom\nlog line 50001\n" || page.Total != 100001 {
		t.Errorf("full output page: %+v", page)
	}

	// The parser's three outcomes.
	if a, ok := parse.Text("```bash\nls -la\n```").(event.CmdRun); !ok || a.Command != "ls -la" {
		t.Errorf("closed fence: %#v", a)
	}
	if _, ok := parse.Text("Okay, let me check:\n```bash\nls -la /tmp").(event.InvalidAction); !ok {
		t.Error("unclosed fence is not an InvalidAction")
	}
	if _, ok := parse.Text("All done, the tests pass.").(event.Message); !ok {
		t.Error("plain text is not a Message")
	}
	if a, ok := parse.Text("```she bash\necho hi\n```").(event.CmdRun); !ok || a.Command != "echo hi" {
		t.Errorf("```she bash: %#v", a)
	}

	start := time.Now()
	o = runCmd(t, s, event.CmdRun{Command: "sleep 5", TimeoutS: 0.3})
	if !o.TimedOut || o.ShellRebuilt || o.PID != pid || time.Since(start) > 4*time.Second {
		t.Errorf("sleep 5 under 300ms: %+v", o)
	}
	for range 3 {
		if o := runCmd(t, s, event.CmdRun{Command: "echo $$"}); o.PID != pid || o.Output != fmt.Sprintf("%d\n", pid) {
			t.Errorf("pid changed: %+v, want %d", o, pid)
		}
	}
}

func TestNoOutputKeepsNothing(t *testing.T) {
	s, _ := newSession(t)
	o := runCmd(t, s, event.CmdRun{Command: "true"})
	if o.Trim.OutputID != "" || o.Output != "" || o.Trim.LinesTotal != 0 {
		t.Fatalf("true: %+v", o)
	}
	o = runCmd(t, s, event.CmdRun{Command: "echo one"})
	if o.Trim.OutputID == "" || o.Output != "one\n" || o.Trim.Trimmed {
		t.Fatalf("echo one: %+v", o)
	}
}

func TestSpillIsByteIdenticalAfterCleaning(t *testing.T) {
	s, outputs := newSession(t)
	o := runCmd(t, s, event.CmdRun{Command: `for i in $(seq 1 300); do printf '\033[32mline %d\033[0m\r\n' $i; done; printf 'last without newline'`})
	got, err := outputs.ReadLines(context.Background(), o.Trim.OutputID, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	for i := 1; i <= 300; i++ {
		fmt.Fprintf(&want, "line %d\n", i)
	}
	want.WriteString("last without newline")
	if got.Text != want.String() || got.Total != 301 {
		t.Fatalf("spilled output differs: total %d, %q…", got.Total, got.Text[:min(80, len(got.Text))])
	}
}

// TestOutputCaps: the full output kept stops at the per-command cap and at
// what is left of the per-session one, the observation says so, and the
// model's view still shows the end.
func TestOutputCaps(t *testing.T) {
	s, outputs := newSessionWith(t, Config{MaxOutput: 100 << 10, MaxSessionOutput: 150 << 10})
	ctx := context.Background()
	stored := func(o obs) int {
		t.Helper()
		if o.Trimmed == nil || o.Trimmed.OutputID == "" {
			return 0
		}
		var n int
		for from := 1; ; {
			p, err := outputs.ReadLines(ctx, o.Trimmed.OutputID, from, from+999)
			if err != nil {
				t.Fatal(err)
			}
			n += len(p.Text)
			if p.To >= p.Total || p.To < from {
				return n
			}
			from = p.To + 1
		}
	}
	// 588,895 bytes: capped at 100 KiB.
	o := runCmd(t, s, event.CmdRun{Command: "seq 1 100000"})
	if got := stored(o); got != 100<<10 {
		t.Fatalf("stored %d bytes, want %d", got, 100<<10)
	}
	if !strings.Contains(o.Note, "Only the first 102400 bytes") || !strings.Contains(o.Note, "store.max_output_mb") ||
		!strings.Contains(o.Note, "100 KiB per command") ||
		!strings.Contains(o.Note, "last 486495 bytes") || !strings.HasSuffix(o.Output, "\n100000\n") {
		t.Fatalf("note %q, output ends %q", o.Note, o.Output[max(0, len(o.Output)-20):])
	}
	// 50 KiB of the session's 150 are left.
	o = runCmd(t, s, event.CmdRun{Command: "seq 1 100000"})
	if got := stored(o); got != 50<<10 || !strings.Contains(o.Note, "max_session_output_mb") {
		t.Fatalf("second: stored %d bytes, note %q", got, o.Note)
	}
	o = runCmd(t, s, event.CmdRun{Command: "seq 1 10"})
	if got := stored(o); got != 0 || !strings.Contains(o.Note, "None of the full output (21 bytes) was stored") || o.Output != "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n" {
		t.Fatalf("third: stored %d, note %q, output %q", got, o.Note, o.Output)
	}
	// A command that prints nothing says nothing about caps.
	if o = runCmd(t, s, event.CmdRun{Command: "true"}); o.Note != "" {
		t.Fatalf("true: note %q", o.Note)
	}
}
