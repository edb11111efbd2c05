package systemd

import "errors"

var (
	// ErrListenPID is returned by Listeners when LISTEN_PID names a process
	// other than this one: the descriptors were meant for someone else
	// (typically a wrapper that forked instead of exec'ing the daemon).
	ErrListenPID = errors.New("LISTEN_PID is not this process")

	// ErrNotListener is returned by Listeners when a passed descriptor is
	// not a listening stream socket (a datagram socket, an Accept=yes
	// connection, a regular file).
	ErrNotListener = errors.New("not a listening stream socket")

	// ErrEnv is returned when a variable systemd sets (LISTEN_PID,
	// LISTEN_FDS, WATCHDOG_USEC, WATCHDOG_PID) does not parse.
	ErrEnv = errors.New("malformed systemd environment")
)
