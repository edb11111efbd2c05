package systemd

import (
	"fmt"
	"strings"

	"github.com/coreos/go-systemd/v22/daemon"
)

// Notify sends states to the service manager as one sd_notify message, for
// example Notify("READY=1", "STATUS=serving"). It returns sent=false and no
// error when NOTIFY_SOCKET is unset (not running under systemd, or a unit
// without Type=notify), and sent=false with an error when the socket is set
// but the message could not be delivered. Notify with no states sends
// nothing.
func Notify(state ...string) (sent bool, err error) {
	if len(state) == 0 {
		return false, nil
	}
	sent, err = daemon.SdNotify(false, strings.Join(state, "\n"))
	if err != nil {
		return false, fmt.Errorf("sd_notify %q: %w", state, err)
	}
	return sent, nil
}

// Ready tells systemd that start-up is complete: with Type=notify the
// service counts as started, and units ordered after it start, only once
// this is sent. Send it after the store is open and the API socket is
// being served.
func Ready() (sent bool, err error) {
	return Notify(daemon.SdNotifyReady)
}

// Stopping tells systemd that a graceful shutdown has begun, so
// `systemctl status` shows "deactivating" rather than a service that
// stopped answering.
func Stopping() (sent bool, err error) {
	return Notify(daemon.SdNotifyStopping)
}

// Reloading tells systemd that the daemon is reloading its configuration;
// call Ready when the reload is done. It carries MONOTONIC_USEC, which
// Type=notify-reload units (systemd 253 and later) require.
func Reloading() (sent bool, err error) {
	states := []string{daemon.SdNotifyReloading}
	if mono := strings.TrimSuffix(daemon.SdNotifyMonotonicUsec(), "\n"); mono != "" {
		states = append(states, mono)
	}
	return Notify(states...)
}

// Status sets the one-line status text `systemctl status` shows. Newlines
// are replaced by spaces, since each line of a message is one assignment.
func Status(format string, args ...any) (sent bool, err error) {
	text := strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(fmt.Sprintf(format, args...))
	return Notify("STATUS=" + text)
}
