package systemd

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"syscall"

	"github.com/coreos/go-systemd/v22/activation"
)

// The socket-activation protocol (sd_listen_fds(3)): descriptors start at
// fd 3, LISTEN_FDS says how many, LISTEN_PID which process they are for,
// LISTEN_FDNAMES (colon-separated) what each is called.
const (
	envListenPID     = "LISTEN_PID"
	envListenFDs     = "LISTEN_FDS"
	envListenFDNames = "LISTEN_FDNAMES"
	listenFDsStart   = 3
)

// Listeners returns the listening sockets systemd passed to this process,
// in the order of the socket unit's Listen*= lines. It returns nil and no
// error when the process was not socket-activated, so the caller then
// listens itself.
//
// Listeners unsets LISTEN_PID, LISTEN_FDS and LISTEN_FDNAMES whatever the
// outcome and marks the descriptors close-on-exec, so no child inherits
// them; a second call returns nil. It returns an error wrapping
// [ErrListenPID] when LISTEN_PID names another process, [ErrEnv] when a
// variable does not parse, and [ErrNotListener] when a descriptor is not a
// listening stream socket; on error it closes every descriptor it took.
func Listeners() ([]net.Listener, error) {
	pidEnv, fdsEnv := os.Getenv(envListenPID), os.Getenv(envListenFDs)
	if pidEnv == "" && fdsEnv == "" {
		unsetListenEnv()
		return nil, nil
	}
	pid, err := strconv.Atoi(pidEnv)
	if err != nil {
		unsetListenEnv()
		return nil, fmt.Errorf("socket activation: %s=%q: %w", envListenPID, pidEnv, ErrEnv)
	}
	if pid != os.Getpid() {
		// The descriptors are not ours to close: leave them alone.
		unsetListenEnv()
		return nil, fmt.Errorf("socket activation: %s=%d, but this process is %d: %w", envListenPID, pid, os.Getpid(), ErrListenPID)
	}
	n, err := strconv.Atoi(fdsEnv)
	if err != nil || n < 0 {
		unsetListenEnv()
		return nil, fmt.Errorf("socket activation: %s=%q: %w", envListenFDs, fdsEnv, ErrEnv)
	}
	if n == 0 {
		unsetListenEnv()
		return nil, nil
	}
	// Files re-reads the variables we just checked, unsets them, and sets
	// close-on-exec on each descriptor.
	files := activation.Files(true)
	ls := make([]net.Listener, 0, len(files))
	for i, f := range files {
		l, err := fileListener(listenFDsStart+i, f)
		if err != nil {
			for _, l := range ls {
				l.Close()
			}
			for _, f := range files[i+1:] {
				f.Close()
			}
			return nil, err
		}
		ls = append(ls, l)
	}
	return ls, nil
}

func unsetListenEnv() {
	os.Unsetenv(envListenPID)
	os.Unsetenv(envListenFDs)
	os.Unsetenv(envListenFDNames)
}

// fileListener checks that f (descriptor fd) is a listening stream socket
// and turns it into a net.Listener. It always closes f: the listener holds
// its own duplicate.
func fileListener(fd int, f *os.File) (net.Listener, error) {
	defer f.Close()
	fail := func(what string, err error) error {
		if err != nil {
			return fmt.Errorf("socket activation: fd %d (%s): %s: %w: %w", fd, f.Name(), what, ErrNotListener, err)
		}
		return fmt.Errorf("socket activation: fd %d (%s): %s: %w", fd, f.Name(), what, ErrNotListener)
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, fail("syscall conn", err)
	}
	var typ, accepting int
	var serr error
	if err := rc.Control(func(s uintptr) {
		typ, serr = syscall.GetsockoptInt(int(s), syscall.SOL_SOCKET, syscall.SO_TYPE)
		if serr == nil {
			accepting, serr = syscall.GetsockoptInt(int(s), syscall.SOL_SOCKET, syscall.SO_ACCEPTCONN)
		}
	}); err != nil {
		return nil, fail("syscall conn", err)
	}
	switch {
	case serr != nil:
		return nil, fail("getsockopt", serr)
	case typ != syscall.SOCK_STREAM:
		return nil, fail(fmt.Sprintf("socket type %d, want SOCK_STREAM", typ), nil)
	case accepting == 0:
		return nil, fail("stream socket is not listening (a connection from Accept=yes?)", nil)
	}
	l, err := net.FileListener(f)
	if err != nil {
		return nil, fmt.Errorf("socket activation: fd %d (%s): %w", fd, f.Name(), err)
	}
	return l, nil
}
