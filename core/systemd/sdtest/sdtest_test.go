package sdtest

import (
	"context"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestPrepare checks what a prepared command sees against what systemd
// gives a service: LISTEN_PID and WATCHDOG_PID equal to its own pid, the
// socket at fd 3, and none of the variables it was given before.
func TestPrepare(t *testing.T) {
	m := New(t)
	sock := m.Listen(t, "")
	const script = `printf '%s\n' "$$" "$LISTEN_PID" "$WATCHDOG_PID" "$LISTEN_FDS" "$LISTEN_FDNAMES" "$WATCHDOG_USEC" "$NOTIFY_SOCKET" "$(readlink /proc/$$/fd/3)" "$0"`
	cmd := exec.Command("/bin/sh", "-c", script, "argv0")
	cmd.Env = []string{"PATH=/usr/bin:/bin", "LISTEN_FDS=9", "NOTIFY_SOCKET=/bogus", "WATCHDOG_PID=1"}
	m.Prepare(cmd, 1500*time.Millisecond)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	got := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(got) != 9 {
		t.Fatalf("child printed %q", out)
	}
	pid := strconv.Itoa(cmd.Process.Pid)
	want := []string{pid, pid, pid, "1", "harnessd.sock", "1500000", m.NotifySocket(), "socket:[…]", "argv0"}
	for i, name := range []string{"$$", "LISTEN_PID", "WATCHDOG_PID", "LISTEN_FDS", "LISTEN_FDNAMES", "WATCHDOG_USEC", "NOTIFY_SOCKET", "fd 3", "$0"} {
		ok := got[i] == want[i]
		if p, isPrefix := strings.CutSuffix(want[i], "[…]"); isPrefix {
			ok = strings.HasPrefix(got[i], p+"[")
		}
		if !ok {
			t.Errorf("%s = %q, want %q", name, got[i], want[i])
		}
	}
	// The manager still owns the socket.
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
}

// TestPrepareNothingToPass: without sockets or a watchdog there is no pid
// to set, so the command runs as it is, with only NOTIFY_SOCKET added.
func TestPrepareNothingToPass(t *testing.T) {
	m := New(t)
	cmd := exec.Command("/bin/sh", "-c", `echo "$NOTIFY_SOCKET|$LISTEN_PID|$WATCHDOG_USEC"`)
	path, args := cmd.Path, cmd.Args
	m.Prepare(cmd, 0)
	if cmd.Path != path || len(cmd.Args) != len(args) || len(cmd.ExtraFiles) != 0 {
		t.Errorf("command changed to %q %q with %d files", cmd.Path, cmd.Args, len(cmd.ExtraFiles))
	}
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.TrimSpace(string(out)), m.NotifySocket()+"||"; got != want {
		t.Errorf("child saw %q, want %q", got, want)
	}
}

func TestWaitFor(t *testing.T) {
	m := New(t)
	send := func(msg string) {
		c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: m.NotifySocket(), Net: "unixgram"})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Write([]byte(msg)); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	send("STATUS=starting\nREADY=1")
	if err := m.WaitFor(ctx, "READY=1"); err != nil {
		t.Fatal(err)
	}
	send("WATCHDOG=1")
	send("WATCHDOG=1")
	if err := m.WaitFor(ctx, "READY=1"); err != nil { // already received
		t.Fatal(err)
	}
	waitCtx, waitCancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer waitCancel()
	err := m.WaitFor(waitCtx, "READY") // a line must match whole
	if err == nil || !strings.Contains(err.Error(), "STATUS=starting") {
		t.Errorf("WaitFor(READY) = %v, want a timeout listing the messages", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for m.Count("WATCHDOG=1") < 2 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if got := m.Messages(); len(got) != 3 || got[0] != "STATUS=starting\nREADY=1" {
		t.Errorf("Messages() = %q", got)
	}
}
