package sandbox

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/core/event"
	"github.com/harnessd/harnessd/core/terminal"
)

// TestMain is also the sandbox init and the rootless helper: the driver
// re-executes this test binary as `sandbox.test sandbox-init`, as it
// re-executes harnessd.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == InitCommand {
		InitMain()
	}
	if os.Getenv(rootlessEnv) != "" {
		os.Exit(rootlessChild())
	}
	if os.Getenv(probeEnv) != "" {
		os.Exit(headRuleProbe())
	}
	os.Exit(m.Run())
}

// requireRoot skips a test that needs root; CI runs as root, so there it
// runs.
func requireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (CI runs as root)")
	}
}

// newDriver returns a native driver whose state lives in the test's temp
// directory.
func newDriver(t testing.TB, opts NativeOptions) *Native {
	t.Helper()
	if opts.StateDir == "" {
		opts.StateDir = stateDir(t)
	}
	if opts.Exe == "" {
		// This test binary's init (TestMain), built from the sources
		// under test; TestCarriedInit runs the program harnessd carries.
		opts.Exe = "/proc/self/exe"
	}
	d, err := NewNative(&opts)
	if err != nil {
		t.Fatalf("NewNative: %v", err)
	}
	if err := d.CheckHost(); err != nil {
		// Only a kernel without user namespaces may excuse this, and
		// CheckHost names it; anything else is a failure to see.
		if errors.Is(err, ErrUserNamespaces) {
			t.Skipf("the kernel does not allow user namespaces here: %v", err)
		}
		t.Fatalf("host cannot run sandboxes: %v", err)
	}
	return d
}

// stateDir is a fresh state directory on a tmpfs (/dev/shm) when there is
// one, as /run is on a systemd host, else under the test's temp dir. (The
// disk here takes about 2 ms to create a directory and a file.)
func stateDir(t testing.TB) string {
	var st unix.Statfs_t
	if unix.Statfs("/dev/shm", &st) == nil && st.Type == unix.TMPFS_MAGIC {
		if d, err := os.MkdirTemp("/dev/shm", "harnessd-sandbox-test-"); err == nil {
			t.Cleanup(func() { os.RemoveAll(d) })
			return d
		}
	}
	return filepath.Join(t.TempDir(), "state")
}

// box is a sandbox with a terminal in it, both closed when the test ends.
type box struct {
	t    testing.TB
	sb   Sandbox
	term *terminal.Terminal
	ws   string // the workspace on the host
}

// newBox creates a sandbox over a fresh workspace (unless spec names one)
// and starts a terminal in it.
func newBox(t testing.TB, d *Native, spec Spec) *box {
	t.Helper()
	if spec.Workspace == "" {
		spec.Workspace = t.TempDir()
	}
	ctx := context.Background()
	sb, err := d.Create(ctx, spec)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	t.Cleanup(func() {
		if err := sb.Destroy(context.Background()); err != nil {
			t.Errorf("Destroy: %v", err)
		}
	})
	term, err := terminal.New(ctx, termOptions(sb))
	if err != nil {
		t.Fatalf("terminal.New in sandbox: %v", err)
	}
	t.Cleanup(func() { term.Close() })
	return &box{t: t, sb: sb, term: term, ws: spec.Workspace}
}

func termOptions(sb Sandbox) terminal.Options {
	return terminal.Options{
		Prepare:          sb.Prepare,
		Started:          sb.Started,
		InitWrapped:      sb.InitWrapped(),
		ControlDir:       sb.ControlDir(),
		ControlDirInside: sb.ControlDirInside(),
		Dir:              sb.Workdir(),
		KillGrace:        300 * time.Millisecond,
		// No test here waits for a soft timeout or MaxWait to hand a
		// command back; they only turn a slow command on a loaded CI
		// machine into a failure (runTimeout fails on Running).
		SoftTimeout: time.Minute,
		MaxWait:     2 * time.Minute,
	}
}

// end ends the box's session as the daemon does: its terminal closed,
// then its sandbox destroyed (the git guard's end-of-session rules run
// there), failing the test if Destroy does.
func (b *box) end() {
	b.t.Helper()
	b.term.Close()
	if err := b.sb.Destroy(context.Background()); err != nil {
		b.t.Fatal(err)
	}
}

// run runs a command in the box and returns its exit code and output.
func (b *box) run(command string) (int, string) {
	b.t.Helper()
	return b.runTimeout(command, 0)
}

func (b *box) runTimeout(command string, timeout time.Duration, opts ...terminal.RunOption) (int, string) {
	b.t.Helper()
	var out bytes.Buffer
	res, err := b.term.Run(context.Background(), event.CmdRun{Command: command, TimeoutS: timeout.Seconds()}, &out, opts...)
	if err != nil {
		b.t.Fatalf("Run(%q): %v", command, err)
	}
	if res.Running {
		b.t.Fatalf("Run(%q) still running: %+v %q", command, res, out.String())
	}
	return res.ExitCode, out.String()
}

// must runs a command that has to succeed and returns its trimmed output.
func (b *box) must(command string) string {
	b.t.Helper()
	return b.mustOK(command, 0)
}

// mustSlow is must for a command that stays silent for long: filling a
// directory with 100,000 files takes 5 s of system time on an idle VM of
// CI's kind, and passed the box's soft timeout (20 s then) while CI ran
// the other packages beside it. It waits up to 5 minutes of silence.
func (b *box) mustSlow(command string) string {
	b.t.Helper()
	return b.mustOK(command, 5*time.Minute)
}

// mustOK runs a command that has to succeed, waiting up to silent (0: the
// box's soft timeout) for its next output.
func (b *box) mustOK(command string, silent time.Duration) string {
	b.t.Helper()
	code, out := b.runTimeout(command, 0, terminal.WithSoftTimeout(silent), terminal.WithMaxWait(silent))
	if code != 0 {
		b.t.Fatalf("%q: exit %d, output %q", command, code, out)
	}
	return strings.TrimSpace(out)
}

func termReq(command string, timeout time.Duration) event.CmdRun {
	return event.CmdRun{Command: command, TimeoutS: timeout.Seconds()}
}
