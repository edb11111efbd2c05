package terminal

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// wrapInSh makes the started process a plain sh whose one child is bash,
// the shape a sandbox init has: sh is the session leader, bash its child.
func wrapInSh(cmd *exec.Cmd) error {
	sh, err := exec.LookPath("sh")
	if err != nil {
		return err
	}
	cmd.Args = append([]string{"sh", "-c", `"$@"; exit $?`, "sh", cmd.Path}, cmd.Args[1:]...)
	cmd.Path = sh
	return nil
}

func ppid(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatalf("stat %d: %v", pid, err)
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	p, _ := strconv.Atoi(f[1])
	return p
}

// TestInitWrapped runs bash under a wrapper process, as a sandbox does:
// the terminal reports bash's pid, not the wrapper's, interrupts the
// foreground job through bash's job control, and Close kills the wrapper.
func TestInitWrapped(t *testing.T) {
	var leader atomic.Int64
	term := newTerm(t, Options{
		Prepare:     wrapInSh,
		Started:     func(pid int) error { leader.Store(int64(pid)); return nil },
		InitWrapped: true,
	})
	init := int(leader.Load())
	pid := term.PID()
	if init == 0 || pid == init {
		t.Fatalf("PID() = %d, wrapper %d: want bash's pid, not the wrapper's", pid, init)
	}
	if comm, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm"); string(comm) != "bash\n" {
		t.Fatalf("pid %d is %q, want bash", pid, comm)
	}
	if p := ppid(t, pid); p != init {
		t.Fatalf("bash's parent is %d, want the wrapper %d", p, init)
	}
	if res, out := cmd(t, term, "echo $$ $PPID"); res.PID != pid || out != strconv.Itoa(pid)+" "+strconv.Itoa(init)+"\n" {
		t.Fatalf("echo $$ $PPID: %q %+v", out, res)
	}
	res, _ := run(t, term, req{Command: "sleep 5", Timeout: 300 * time.Millisecond})
	if !res.TimedOut || res.Rebuilt || res.ExitCode != 130 || res.PID != pid {
		t.Fatalf("hard timeout through the wrapper: %+v", res)
	}
	if res, out := cmd(t, term, "echo ok"); out != "ok\n" || res.PID != pid {
		t.Fatalf("after timeout: %q %+v", out, res)
	}
	term.Close()
	for _, p := range []int{pid, init} {
		if !gone(p) {
			t.Errorf("pid %d survived Close", p)
		}
	}
}

// TestInitWrappedRebuild: a shell that exits is replaced by a new wrapper
// and a new bash, and Started is called again.
func TestInitWrappedRebuild(t *testing.T) {
	var starts atomic.Int64
	term := newTerm(t, Options{
		Prepare:     wrapInSh,
		Started:     func(int) error { starts.Add(1); return nil },
		InitWrapped: true,
	})
	old := term.PID()
	res, _ := cmd(t, term, "exit 3")
	if !res.Rebuilt || res.PID == old || starts.Load() != 2 {
		t.Fatalf("exit 3: %+v, %d starts", res, starts.Load())
	}
	if !strings.Contains(res.Note, "status 3") {
		t.Errorf("note %q does not carry bash's status", res.Note)
	}
	if _, out := cmd(t, term, "echo again"); out != "again\n" {
		t.Fatalf("after rebuild: %q", out)
	}
}

// TestStartedErrorFailsStart: an error from Started kills the process and
// New returns it.
func TestStartedErrorFailsStart(t *testing.T) {
	boom := errors.New("cgroup join refused")
	var pid int
	_, err := New(context.Background(), Options{
		Dir:     t.TempDir(),
		Started: func(p int) error { pid = p; return boom },
	})
	if !errors.Is(err, boom) {
		t.Fatalf("New: %v, want %v", err, boom)
	}
	if pid == 0 || !gone(pid) {
		t.Fatalf("started process %d survived the failed start", pid)
	}
}

// TestWrappedUndeclared: a wrapper the terminal was not told about (bwrap
// without InitWrapped) is seen through: bash is the foreground job of the
// wrapper's session at the first prompt, and the terminal watches it.
func TestWrappedUndeclared(t *testing.T) {
	term := newTerm(t, Options{Prepare: wrapInSh})
	pid := term.PID()
	if comm, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm"); string(comm) != "bash\n" {
		t.Fatalf("PID() = %d is %q, want bash", pid, comm)
	}
	if res, out := cmd(t, term, "echo $$"); out != strconv.Itoa(pid)+"\n" || res.ExitCode != 0 {
		t.Fatalf("echo $$: %q %+v", out, res)
	}
	res, _ := run(t, term, req{Command: "sleep 5", Timeout: 300 * time.Millisecond})
	if !res.TimedOut || res.ExitCode != 130 || res.Rebuilt {
		t.Fatalf("hard timeout: %+v", res)
	}
	if res, out := cmd(t, term, "PS1=; echo x"); out != "x\n" || res.ExitCode != 0 || !strings.Contains(res.Note, "repaired") {
		t.Fatalf("repair through the wrapper: %q %+v", out, res)
	}
}
