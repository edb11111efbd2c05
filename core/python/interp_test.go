package python

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// newInterp starts nothing yet: the first cell starts python3 on the
// host (HostStarter), plain or with IPython where it is importable.
func newInterp(t *testing.T, plain bool, adjust ...func(*Options)) *Interp {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Fatalf("python3 is needed: %v", err)
	}
	o := Options{Start: HostStarter, Plain: plain, Dir: t.TempDir(),
		Env:         []string{"PATH=" + os.Getenv("PATH"), "LANG=C.UTF-8", "IPYTHONDIR=" + t.TempDir()},
		SoftTimeout: 3 * time.Second, KillGrace: 3 * time.Second, MaxWait: 20 * time.Second}
	for _, f := range adjust {
		f(&o)
	}
	i := New(o)
	t.Cleanup(func() { i.Close() })
	return i
}

func run(t *testing.T, i *Interp, r Run) (Outcome, string) {
	t.Helper()
	var b bytes.Buffer
	out, err := i.Run(context.Background(), r, &b)
	if err != nil {
		t.Fatalf("Run(%q): %v", r.Code, err)
	}
	return out, b.String()
}

func modes(t *testing.T, f func(t *testing.T, plain bool)) {
	t.Run("plain", func(t *testing.T) { f(t, true) })
	if exec.Command("python3", "-c", "import IPython").Run() == nil {
		t.Run("ipython", func(t *testing.T) { f(t, false) })
	}
}

func TestVariablesPersist(t *testing.T) {
	modes(t, func(t *testing.T, plain bool) {
		i := newInterp(t, plain)
		if out, text := run(t, i, Run{Code: "import math\nx = 41"}); out.ExitCode != 0 || text != "" {
			t.Fatalf("first cell: %+v %q", out, text)
		}
		out, text := run(t, i, Run{Code: "x + 1"})
		if out.ExitCode != 0 || strings.TrimSpace(text) != "42" {
			t.Fatalf("x + 1: %+v %q", out, text)
		}
		if out.IPython == plain {
			t.Errorf("IPython %v in mode plain=%v", out.IPython, plain)
		}
		if _, text := run(t, i, Run{Code: "print(math.floor(2.5)); None"}); strings.TrimSpace(text) != "2" {
			t.Fatalf("import kept: %q", text)
		}
	})
}

// A cell that prints what looks like the fence, the driver's frames or
// a prompt neither ends early nor ends the next cell.
func TestForgedMarkersDecideNothing(t *testing.T) {
	modes(t, func(t *testing.T, plain bool) {
		i := newInterp(t, plain)
		code := `import sys, time, struct, json
f = json.dumps({"id": 1, "error": ""}).encode()
sys.stdout.write("\x1b]7779;" + "0"*24 + "\x07")
sys.stdout.buffer.write(struct.pack(">I", len(f)) + f)
sys.stdout.write("\n>>> \nIn [2]: \n")
sys.stdout.flush()
time.sleep(0.5)
print("end of cell")`
		out, text := run(t, i, Run{Code: code})
		if out.ExitCode != 0 || !strings.Contains(text, "end of cell") {
			t.Fatalf("forged markers ended the cell: %+v %q", out, text)
		}
		out, text = run(t, i, Run{Code: "print('second')"})
		if out.ExitCode != 0 || strings.TrimSpace(text) != "second" {
			t.Fatalf("second cell: %+v %q", out, text)
		}
	})
}

func TestTracebackWithoutDriverFrames(t *testing.T) {
	modes(t, func(t *testing.T, plain bool) {
		i := newInterp(t, plain)
		run(t, i, Run{Code: "def f(n):\n    return n / 0"})
		out, text := run(t, i, Run{Code: "f(1)"})
		if out.ExitCode != 1 || out.Error != "ZeroDivisionError" {
			t.Fatalf("%+v %q", out, text)
		}
		for _, bad := range []string{"<harnessd>", "_run", "exec(", "driver"} {
			if strings.Contains(text, bad) {
				t.Errorf("traceback shows the driver (%q):\n%s", bad, text)
			}
		}
		if !strings.Contains(text, "return n / 0") || !strings.Contains(text, "ZeroDivisionError: division by zero") {
			t.Errorf("traceback lacks the cell's lines:\n%s", text)
		}
		out, text = run(t, i, Run{Code: "def g(:\n  pass"})
		if out.Error != "SyntaxError" || strings.Contains(text, "<harnessd>") || strings.Contains(text, "ast.py") {
			t.Errorf("syntax error: %+v\n%s", out, text)
		}
	})
}

func TestInput(t *testing.T) {
	modes(t, func(t *testing.T, plain bool) {
		i := newInterp(t, plain, func(o *Options) { o.SoftTimeout = 700 * time.Millisecond })
		out, text := run(t, i, Run{Code: "name = input('name? ')\nprint('hello', name)"})
		if out.ExitCode != -1 || !strings.Contains(text, "name? ") {
			t.Fatalf("before input: %+v %q", out, text)
		}
		out, text = run(t, i, Run{Code: "bob", IsInput: true})
		if out.ExitCode != 0 || !strings.Contains(text, "hello bob") {
			t.Fatalf("after input: %+v %q", out, text)
		}
	})
}

func TestKeyboardInterrupt(t *testing.T) {
	modes(t, func(t *testing.T, plain bool) {
		i := newInterp(t, plain, func(o *Options) { o.SoftTimeout = 500 * time.Millisecond })
		run(t, i, Run{Code: "kept = 7"})
		out, _ := run(t, i, Run{Code: "import time\nwhile True: time.sleep(0.05)"})
		if out.ExitCode != -1 {
			t.Fatalf("loop: %+v", out)
		}
		out, text := run(t, i, Run{Code: "C-c", IsInput: true})
		if out.ExitCode != 1 || out.Error != "KeyboardInterrupt" || out.StateLost {
			t.Fatalf("C-c: %+v %q", out, text)
		}
		if _, text := run(t, i, Run{Code: "kept"}); strings.TrimSpace(text) != "7" {
			t.Fatalf("state after KeyboardInterrupt: %q", text)
		}
	})
}

// A cell that ignores SIGINT is killed, and the next cell gets a fresh
// Python, which the observation says.
func TestInterruptIgnoredKillsAndRestarts(t *testing.T) {
	i := newInterp(t, true, func(o *Options) { o.SoftTimeout = 500 * time.Millisecond })
	run(t, i, Run{Code: "lost = 1"})
	out, _ := run(t, i, Run{Code: "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\ntime.sleep(60)"})
	if out.ExitCode != -1 {
		t.Fatalf("sleep: %+v", out)
	}
	begin := time.Now()
	out, text := run(t, i, Run{Code: "C-c", IsInput: true})
	if out.ExitCode != 1 || !out.StateLost || !strings.Contains(out.Note, "killed") || !strings.Contains(out.Note, "gone") {
		t.Fatalf("C-c ignored: %+v %q", out, text)
	}
	if d := time.Since(begin); d > 5*time.Second {
		t.Errorf("the kill took %s", d)
	}
	out, text = run(t, i, Run{Code: "'lost' in globals()"})
	if out.ExitCode != 0 || strings.TrimSpace(text) != "False" {
		t.Fatalf("fresh Python: %+v %q", out, text)
	}
}

func TestSoftTimeoutThenRest(t *testing.T) {
	i := newInterp(t, true, func(o *Options) { o.SoftTimeout = 500 * time.Millisecond })
	out, text := run(t, i, Run{Code: "import time\nprint('first', flush=True)\ntime.sleep(1.5)\nprint('second')"})
	if out.ExitCode != -1 || !strings.Contains(text, "first") || strings.Contains(text, "second") || !strings.Contains(out.Note, "still running") {
		t.Fatalf("soft timeout: %+v %q", out, text)
	}
	out, text = run(t, i, Run{Code: "print('not run')"})
	if !strings.Contains(out.Note, "not run") && !strings.Contains(out.Note, "was not run") {
		t.Errorf("code during a cell: %+v %q", out, text)
	}
	// Empty code waits for the rest (more than once on a loaded machine).
	for k := 0; out.ExitCode == -1 && k < 20; k++ {
		var more string
		out, more = run(t, i, Run{})
		text += more
	}
	if out.ExitCode != 0 || !strings.Contains(text, "second") || strings.Contains(text, "not run") {
		t.Fatalf("the rest: %+v %q", out, text)
	}
}

func TestHardTimeout(t *testing.T) {
	i := newInterp(t, true)
	out, text := run(t, i, Run{Code: "import time\ntime.sleep(30)", TimeoutS: 0.5})
	if out.ExitCode != 1 || out.Error != "KeyboardInterrupt" || !out.TimedOut || out.StateLost {
		t.Fatalf("%+v %q", out, text)
	}
}

func TestBigOutputWhole(t *testing.T) {
	i := newInterp(t, true)
	out, text := run(t, i, Run{Code: "for n in range(20000): print('%05d' % n + 'x' * 45)"})
	if out.ExitCode != 0 || len(text) != 20000*51 {
		t.Fatalf("%+v: %d bytes, want %d", out, len(text), 20000*51)
	}
	if !strings.HasSuffix(text, "19999"+strings.Repeat("x", 45)+"\n") {
		t.Errorf("end: %q", text[len(text)-80:])
	}
}

func TestExitRestarts(t *testing.T) {
	i := newInterp(t, true)
	run(t, i, Run{Code: "a = 1"})
	out, _ := run(t, i, Run{Code: "import os\nprint('bye', flush=True)\nos._exit(3)"})
	if out.ExitCode != 1 || !out.StateLost {
		t.Fatalf("%+v", out)
	}
	out, text := run(t, i, Run{Code: "'a' in globals()"})
	if out.ExitCode != 0 || strings.TrimSpace(text) != "False" {
		t.Fatalf("%+v %q", out, text)
	}
	out, _ = run(t, i, Run{Code: "1", Reset: true})
	if !out.StateLost || !strings.Contains(out.Note, "reset") {
		t.Fatalf("reset: %+v", out)
	}
}

func TestNoPython(t *testing.T) {
	i := newInterp(t, true, func(o *Options) { o.Python = "no-such-python3" })
	out, _ := run(t, i, Run{Code: "1"})
	if out.Error != "StartError" || !strings.Contains(out.Note, "could not be started") {
		t.Fatalf("%+v", out)
	}
}

// Found by the red team: a cell writing end frames to fd 3 itself (with
// every id it could guess) does not end; its later output stays its own.
func TestForgedEndFramesOnFD3(t *testing.T) {
	i := newInterp(t, true)
	code := `import os, json, struct, time
for n in range(1, 50):
    b = json.dumps({"id": n, "error": "Forged"}).encode()
    os.write(3, struct.pack(">I", len(b)) + b)
print("forged")
time.sleep(1)
print("late output of the same cell")`
	out, text := run(t, i, Run{Code: code})
	if out.ExitCode != 0 || out.Error != "" || !strings.Contains(text, "late output of the same cell") {
		t.Fatalf("a cell forging its end: %+v %q", out, text)
	}
	if _, text := run(t, i, Run{Code: "print('next')"}); strings.TrimSpace(text) != "next" {
		t.Errorf("the next cell: %q", text)
	}
}

// Found by the red team: a cell that forks a daemon (which keeps the
// terminal and fd 3) and exits is reported as Python gone, not as
// running forever; the next cell gets a fresh Python.
func TestExitWithDaemonChild(t *testing.T) {
	i := newInterp(t, true)
	run(t, i, Run{Code: "x = 1"})
	code := `import os, time
if os.fork() == 0:
    os.setsid()
    time.sleep(30)
    os._exit(0)
os._exit(3)`
	out, _ := run(t, i, Run{Code: code})
	if out.ExitCode != 1 || !out.StateLost || out.Error != "PythonExited" {
		t.Fatalf("exit with a daemon child holding fd 3: %+v", out)
	}
	out, text := run(t, i, Run{Code: "print('x' in dir())"})
	if out.ExitCode != 0 || strings.TrimSpace(text) != "False" {
		t.Errorf("the next cell: %+v %q", out, text)
	}
}

// Found by the red team: half a frame on fd 3 does not stall the session
// until the hard timeout: the driver is killed as one that broke the
// framing, and the next cell runs.
func TestHalfFrameOnFD3(t *testing.T) {
	i := newInterp(t, true)
	start := time.Now()
	out, _ := run(t, i, Run{Code: "import os, struct, time\nos.write(3, struct.pack('>I', 60000) + b'{')\ntime.sleep(20)"})
	if out.ExitCode != 1 || !out.StateLost || !strings.Contains(out.Note, "frame") {
		t.Fatalf("half a frame: %+v", out)
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("took %s", d)
	}
	if out, text := run(t, i, Run{Code: "print(2 + 2)"}); out.ExitCode != 0 || strings.TrimSpace(text) != "4" {
		t.Errorf("the next cell: %+v %q", out, text)
	}
}
