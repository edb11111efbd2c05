// Package sdtest lets a test play systemd's part for a child process: it
// owns the notify socket the child reports to and the listening sockets the
// child is socket-activated with, and prepares an exec.Cmd with the
// environment and descriptors systemd would give it.
//
// # Basics
//
//	m := sdtest.New(t)
//	sock := m.Listen(t, filepath.Join(t.TempDir(), "harnessd.sock"))
//	cmd := exec.Command(bin, "serve")
//	m.Prepare(cmd, 2*time.Second) // with WATCHDOG_USEC=2000000
//	cmd.Start()
//	err := m.WaitFor(ctx, "READY=1")
//	// talk to sock, signal cmd, m.WaitFor(ctx, "STOPPING=1") ...
//
// # LISTEN_PID
//
// systemd sets LISTEN_PID (and WATCHDOG_PID) to the pid of the service's
// main process, between fork and exec, and the daemon checks it against
// getpid(). An exec.Cmd cannot know the pid before Start, so Prepare runs
// the command through a one-line /bin/sh shim,
//
//	export LISTEN_PID=$$; exec "$0" "$@"
//
// The shell's pid is the pid the command will have, since exec keeps it,
// and exec keeps the inherited descriptors at 3, 4, …. The command sees
// exactly what systemd would give it, so the code under test needs no
// test-only path. The one visible difference: the command's argv[0] is
// cmd.Path rather than cmd.Args[0].
//
// # Caveats
//
// The manager keeps its listening sockets open until the test ends, as
// systemd does, so a connection made while the child is not running waits
// in the backlog rather than failing. Messages are recorded from any
// sender: unlike NotifyAccess=main, the manager does not check which
// process sent them.
package sdtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// sunPathMax is the longest unix socket path Linux accepts (sun_path is
// 108 bytes, one of them the terminating NUL).
const sunPathMax = 107

// Manager is a stand-in for systemd for one test. Create it with New; it
// closes its sockets when the test ends.
type Manager struct {
	t          testing.TB
	notifyPath string
	conn       *net.UnixConn
	done       chan struct{} // closed when the receiving goroutine ends

	mu      sync.Mutex
	msgs    []string
	changed chan struct{} // closed and replaced on each message

	files []*os.File // listening sockets, passed as fd 3, 4, …
	names []string   // their LISTEN_FDNAMES
}

// New creates a manager with a unixgram notify socket in t.TempDir() and
// starts collecting the messages sent to it.
func New(t testing.TB) *Manager {
	t.Helper()
	path := filepath.Join(t.TempDir(), "notify.sock")
	checkPath(t, path)
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatalf("sdtest: notify socket: %v", err)
	}
	m := &Manager{t: t, notifyPath: path, conn: conn, done: make(chan struct{}), changed: make(chan struct{})}
	go m.receive()
	t.Cleanup(func() {
		m.conn.Close()
		<-m.done
	})
	return m
}

// receive records each datagram until the socket is closed.
func (m *Manager) receive() {
	defer close(m.done)
	buf := make([]byte, 64<<10)
	for {
		n, err := m.conn.Read(buf)
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				m.t.Logf("sdtest: notify socket: %v", err)
			}
			return
		}
		m.mu.Lock()
		m.msgs = append(m.msgs, string(buf[:n]))
		close(m.changed)
		m.changed = make(chan struct{})
		m.mu.Unlock()
	}
}

// NotifySocket returns the path of the notify socket, the NOTIFY_SOCKET
// that Prepare sets.
func (m *Manager) NotifySocket() string { return m.notifyPath }

// Listen creates a listening unix stream socket at path (mode 0660, as the
// unit's SocketMode=) to be passed to the next prepared command as an
// activation descriptor; an empty path means harnessd.sock in a new
// t.TempDir(). Each call adds one descriptor, in order from fd 3, named by
// the base name of its path in LISTEN_FDNAMES. It returns the path.
func (m *Manager) Listen(t testing.TB, path string) string {
	t.Helper()
	if path == "" {
		path = filepath.Join(t.TempDir(), "harnessd.sock")
	}
	checkPath(t, path)
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatalf("sdtest: listen: %v", err)
	}
	if err := os.Chmod(path, 0o660); err != nil {
		l.Close()
		t.Fatalf("sdtest: %v", err)
	}
	f, err := l.File() // a duplicate; the child gets a copy of it
	if err != nil {
		l.Close()
		t.Fatalf("sdtest: listener file: %v", err)
	}
	t.Cleanup(func() {
		f.Close()
		l.Close() // removes the socket file
	})
	m.files = append(m.files, f)
	m.names = append(m.names, filepath.Base(path))
	return path
}

// Prepare sets up cmd, before it is started, as systemd would start the
// service: the sockets from Listen as ExtraFiles (fd 3, 4, …) with
// LISTEN_FDS, LISTEN_FDNAMES and LISTEN_PID; NOTIFY_SOCKET; and, when
// watchdog is positive, WATCHDOG_USEC and WATCHDOG_PID. Any of these
// variables already in cmd.Env (or, when cmd.Env is nil, in this process's
// environment) are replaced. The pids are set by a /bin/sh shim; see the
// package comment. cmd must not have ExtraFiles of its own, since the
// activation descriptors must start at 3.
func (m *Manager) Prepare(cmd *exec.Cmd, watchdog time.Duration) {
	m.t.Helper()
	switch {
	case cmd.Process != nil:
		m.t.Fatal("sdtest: Prepare after Start")
	case len(cmd.ExtraFiles) > 0:
		m.t.Fatal("sdtest: Prepare with ExtraFiles already set: activation descriptors must start at fd 3")
	case cmd.Err != nil:
		return // Start will report it
	}
	env := cmd.Env
	if env == nil {
		env = os.Environ()
	}
	env = slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES", "NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID":
			return true
		}
		return false
	})
	env = append(env, "NOTIFY_SOCKET="+m.notifyPath)
	var pids []string
	if len(m.files) > 0 {
		env = append(env,
			"LISTEN_FDS="+strconv.Itoa(len(m.files)),
			"LISTEN_FDNAMES="+strings.Join(m.names, ":"))
		cmd.ExtraFiles = slices.Clone(m.files)
		pids = append(pids, "LISTEN_PID")
	}
	if watchdog > 0 {
		env = append(env, "WATCHDOG_USEC="+strconv.FormatInt(watchdog.Microseconds(), 10))
		pids = append(pids, "WATCHDOG_PID")
	}
	cmd.Env = env
	if len(pids) == 0 {
		return
	}
	var script strings.Builder
	for _, k := range pids {
		fmt.Fprintf(&script, "export %s=$$; ", k)
	}
	script.WriteString(`exec "$0" "$@"`)
	args := append([]string{"/bin/sh", "-c", script.String(), cmd.Path}, cmd.Args[1:]...)
	cmd.Path, cmd.Args = "/bin/sh", args
}

// WaitFor waits until a message with a line equal to state (for example
// "READY=1") has arrived, counting those received before the call, or
// until ctx ends. On timeout the error lists the messages received.
func (m *Manager) WaitFor(ctx context.Context, state string) error {
	for {
		m.mu.Lock()
		found := slices.ContainsFunc(m.msgs, func(msg string) bool {
			return slices.Contains(strings.Split(msg, "\n"), state)
		})
		changed := m.changed
		m.mu.Unlock()
		if found {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("sdtest: waiting for %q: %w (received %q)", state, ctx.Err(), m.Messages())
		case <-changed:
		}
	}
}

// Messages returns every message received so far, in order, one string per
// datagram (a datagram may hold several newline-separated assignments).
func (m *Manager) Messages() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.msgs)
}

// Count returns how many received messages have a line equal to state.
func (m *Manager) Count(state string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, msg := range m.msgs {
		if slices.Contains(strings.Split(msg, "\n"), state) {
			n++
		}
	}
	return n
}

func checkPath(t testing.TB, path string) {
	t.Helper()
	if len(path) > sunPathMax {
		t.Fatalf("sdtest: socket path %q is %d bytes, more than the %d a unix socket allows: use a shorter TMPDIR", path, len(path), sunPathMax)
	}
}
