// Package systemd is how harnessd talks to systemd when it runs as a
// service: socket activation, sd_notify readiness and status, and the
// watchdog. It wraps github.com/coreos/go-systemd/v22 so the rest of the
// daemon never imports it, and every function is a harmless no-op when the
// process was not started by systemd.
//
// # Basics
//
// The daemon's start-up order is: open the store, take the activation
// sockets with [Listeners] (or listen itself when it gets none), start
// serving, call [Ready], then run [Watchdog] in a goroutine it owns. On
// SIGTERM it calls [Stopping] before it winds sessions down:
//
//	ls, err := systemd.Listeners() // nil, nil when not socket-activated
//	...
//	systemd.Ready()
//	go func() { defer wg.Done(); systemd.Watchdog(ctx, healthy) }()
//	<-ctx.Done()
//	systemd.Stopping()
//
// The unit files that go with this package are in contrib/systemd.
//
// # Caveats
//
// [Listeners] consumes LISTEN_PID, LISTEN_FDS and LISTEN_FDNAMES: it unsets
// them and marks the descriptors close-on-exec, so sandboxes and other
// children never inherit them, and a second call returns nil. It is an
// error, not a silent "not activated", when LISTEN_PID names another
// process: that means a wrapper forked instead of exec'ing the daemon, and
// clients of the socket unit would otherwise hang.
//
// NOTIFY_SOCKET is left in the environment, because [Notify] is called many
// times over the daemon's life (libsystemd's sd_notify(0, …) does the same).
// Children that must not see it should be given an explicit environment, as
// core/terminal already does; the unit also sets NotifyAccess=main, so
// systemd ignores messages from any process but the daemon.
//
// WATCHDOG_USEC and WATCHDOG_PID are left too: systemd always sets
// WATCHDOG_PID, and no child has the daemon's pid.
//
// For tests that play systemd's part for a child process, see the sdtest
// subpackage.
package systemd
