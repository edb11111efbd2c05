package sandbox

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/core/python"
	"github.com/harnessd/harnessd/core/sandbox/cgroup"
)

// pythonIn is a session's Python as the session wires it: started by
// the sandbox's init through Spawn.
func pythonIn(t *testing.T, sb Sandbox) *python.Interp {
	t.Helper()
	sp, ok := sb.(Spawner)
	if !ok {
		t.Fatalf("%T is not a Spawner", sb)
	}
	i := python.New(python.Options{
		Start: func(ctx context.Context, c python.Command, tty, ctl *os.File) (python.Process, error) {
			return sp.Spawn(ctx, SpawnSpec{Path: c.Path, Args: c.Args, Env: c.Env, Dir: c.Dir}, tty, ctl)
		},
		Env: []string{"LANG=C.UTF-8"}, SoftTimeout: 500 * time.Millisecond, KillGrace: 300 * time.Millisecond,
	})
	t.Cleanup(func() { i.Close() })
	return i
}

func cell(t *testing.T, i *python.Interp, r python.Run) (python.Outcome, string) {
	t.Helper()
	var b bytes.Buffer
	out, err := i.Run(context.Background(), r, &b)
	if err != nil {
		t.Fatalf("Run(%q): %v", r.Code, err)
	}
	return out, b.String()
}

// TestPythonInSandbox: the init starts Python in the sandbox as it
// starts the shell: its mount and pid namespaces, its cgroups, its
// user, no capabilities, seccomp, and no descriptor of the daemon's.
func TestPythonInSandbox(t *testing.T) {
	requireRoot(t)
	opts := NativeOptions{}
	m, err := cgroup.Detect(cgroup.Options{Parent: "harnessd-sandbox-test", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if !m.Report().RlimitsOnly() {
		opts.Cgroups = Cgroups(m)
	}
	b := newBox(t, newDriver(t, opts), Spec{Limits: Limits{Pids: 60, MemoryBytes: 256 << 20}})
	_, shellCgroup := b.run("cat /proc/self/cgroup")
	i := pythonIn(t, b.sb)

	out, text := cell(t, i, python.Run{Code: "import os\nx = 5\nprint(os.getcwd(), os.getuid())"})
	if out.ExitCode != 0 || strings.TrimSpace(text) != "/workspace 0" {
		t.Fatalf("cwd and uid: %+v %q", out, text)
	}
	_, text = cell(t, i, python.Run{Code: "print(open('/proc/1/cmdline','rb').read().split(b'\\0')[1].decode())"})
	if strings.TrimSpace(text) != InitCommand {
		t.Errorf("/proc/1 is not the sandbox's init: %q", text)
	}
	_, text = cell(t, i, python.Run{Code: "print(os.path.exists(" + pyString(b.ws) + "), os.path.exists('/proc/1/fd/3'))"})
	if strings.TrimSpace(text) != "False False" && b.ws != "/workspace" {
		t.Errorf("host workspace path or the init's socket visible: %q", text)
	}
	_, text = cell(t, i, python.Run{Code: "print(' '.join(sorted(f for f in os.listdir('/proc/self/fd'))))"})
	if fds := strings.Fields(text); len(fds) != 5 || fds[0] != "0" || fds[3] != "3" {
		t.Errorf("Python holds descriptors besides its terminal and fd 3: %q", text)
	}
	_, text = cell(t, i, python.Run{Code: "print(os.readlink('/proc/self/fd/3').startswith('socket:'))"})
	if strings.TrimSpace(text) != "True" {
		t.Errorf("fd 3: %q", text)
	}
	_, text = cell(t, i, python.Run{Code: "print(''.join(l for l in open('/proc/self/status') if l.split(':')[0] in ('CapEff','CapBnd','CapPrm','NoNewPrivs','Seccomp')))"})
	for _, want := range []string{"CapPrm:\t0000000000000000", "CapEff:\t0000000000000000", "CapBnd:\t0000000000000000", "NoNewPrivs:\t1", "Seccomp:\t2"} {
		if !strings.Contains(text, want) {
			t.Errorf("Python's status lacks %q:\n%s", want, text)
		}
	}
	_, text = cell(t, i, python.Run{Code: "print(open('/proc/self/cgroup').read(), end='')"})
	// The same groups as the shell's; v1 paths are shown from the
	// init's first cgroup namespace (the thread that forks Python could
	// not unshare one: seccomp), so as the group's own path there.
	pl, sl := strings.Split(text, "\n"), strings.Split(shellCgroup, "\n")
	if len(pl) != len(sl) {
		t.Fatalf("Python's cgroups:\n%s\nshell's:\n%s", text, shellCgroup)
	}
	for k := range pl {
		if pl[k] != sl[k] && !strings.HasSuffix(pl[k], "/"+b.sb.ID()) {
			t.Errorf("Python's cgroup %q, the shell's %q", pl[k], sl[k])
		}
	}
	if _, text = cell(t, i, python.Run{Code: "x"}); strings.TrimSpace(text) != "5" {
		t.Errorf("x: %q", text)
	}

	// C-c: KeyboardInterrupt, state kept; ignored: killed, a fresh one.
	cell(t, i, python.Run{Code: "import time\ntime.sleep(30)"})
	if out, text := cell(t, i, python.Run{Code: "C-c", IsInput: true}); out.Error != "KeyboardInterrupt" || out.StateLost {
		t.Fatalf("C-c: %+v %q", out, text)
	}
	cell(t, i, python.Run{Code: "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\ntime.sleep(30)"})
	if out, text := cell(t, i, python.Run{Code: "C-c", IsInput: true}); !out.StateLost {
		t.Fatalf("C-c ignored: %+v %q", out, text)
	}
	if out, text := cell(t, i, python.Run{Code: "'x' in globals()"}); out.ExitCode != 0 || strings.TrimSpace(text) != "False" {
		t.Fatalf("after the restart: %+v %q", out, text)
	}
	// Nothing of the killed one is left in the sandbox.
	if _, ps := b.run("ls /proc | grep -c '^[0-9]'"); strings.TrimSpace(ps) != "5" {
		t.Errorf("processes in the sandbox (init, bash, python, ls, grep): %s", ps)
	}
}

func pyString(s string) string { return "'" + strings.ReplaceAll(s, "'", "\\'") + "'" }
