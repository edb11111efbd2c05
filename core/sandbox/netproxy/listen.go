package netproxy

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"syscall"
	"time"
)

// ListenUnix listens on a unix socket at path for a Proxy to Serve on, with
// mode 0600: only the daemon's user (root) may connect, which is what the
// namespace driver's sandbox init, running as root on the host side, needs.
// A socket left at path by a process that died is removed first; a socket
// something still answers on, or any other kind of file, is an error and is
// left alone. The socket file is removed when the listener is closed.
//
// The mode is set after the socket is bound, so for a moment it has the
// process umask's mode: put path in a directory only the daemon can enter
// (the session's runtime directory, 0700). If the sandbox side connects as
// another user, os.Chown the path after ListenUnix.
func ListenUnix(path string) (*net.UnixListener, error) {
	if err := removeStale(path); err != nil {
		return nil, err
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("netproxy: listen %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("netproxy: listen %s: %w", path, err)
	}
	return ln, nil
}

// removeStale removes a dead socket at path. It dials it to tell a dead one
// from a live one: removing a live socket would cut off whoever serves on
// it (another session's proxy, if paths were ever reused by mistake).
func removeStale(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("netproxy: listen %s: %w", path, err)
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("netproxy: listen %s: exists and is not a socket", path)
	}
	c, err := net.DialTimeout("unix", path, time.Second)
	if err == nil {
		_ = c.Close()
		return fmt.Errorf("netproxy: listen %s: a live socket is already there", path)
	}
	// Only "connection refused" proves nobody listens: a full backlog
	// (EAGAIN) or a permission error says nothing about that.
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("netproxy: listen %s: cannot tell whether the socket there is stale: %w", path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("netproxy: listen %s: remove stale socket: %w", path, err)
	}
	return nil
}
