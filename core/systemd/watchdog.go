package systemd

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
)

// Watchdog keeps systemd's watchdog (WatchdogSec= in the unit) fed while
// the daemon is healthy. It checks healthy at once and then every half of
// WATCHDOG_USEC, and sends WATCHDOG=1 after each check that succeeds. A
// failing check is logged (log/slog, default logger) and sends nothing, so
// if the daemon stays unhealthy for the whole interval systemd kills it
// (SIGABRT by default, which makes Go print every goroutine's stack to the
// journal) and, with Restart=on-failure, starts it again.
//
// Each check gets a context whose deadline is a quarter of the interval; a
// check that returns after its deadline counts as failed even if it
// returned nil. healthy must return when its context is done. One that
// hangs anyway blocks Watchdog, and the missing pings then let systemd
// catch the hang, which is what the watchdog is for. A nil healthy is
// always healthy.
//
// Watchdog returns nil at once when the watchdog is off: WATCHDOG_USEC
// unset, WATCHDOG_PID naming another process, or NOTIFY_SOCKET unset. It
// returns an error wrapping [ErrEnv] when the variables do not parse, and
// nil when ctx ends. It runs on the caller's goroutine; the caller starts
// it and waits for it.
func Watchdog(ctx context.Context, healthy func(context.Context) error) error {
	interval, err := daemon.SdWatchdogEnabled(false)
	if err != nil {
		return fmt.Errorf("watchdog: %w: %w", ErrEnv, err)
	}
	if interval == 0 || os.Getenv("NOTIFY_SOCKET") == "" {
		return nil
	}
	ping := func() error {
		_, err := Notify(daemon.SdNotifyWatchdog)
		return err
	}
	watch(ctx, interval, healthy, ping, slog.Default())
	return nil
}

// watch is Watchdog's loop, with the interval, the ping and the logger
// given, so tests can drive it without the environment.
func watch(ctx context.Context, interval time.Duration, healthy func(context.Context) error, ping func() error, log *slog.Logger) {
	period, timeout := interval/2, interval/4
	tick := time.NewTicker(period)
	defer tick.Stop()
	failing := false
	lastPing := time.Now() // systemd's timer starts about when we did
	for {
		err := check(ctx, timeout, healthy)
		if ctx.Err() != nil {
			return
		}
		switch {
		case err != nil:
			log.Error("systemd watchdog: unhealthy, not pinging",
				"err", err, "since_last_ping", time.Since(lastPing).Round(time.Millisecond), "watchdog_sec", interval.Seconds())
			failing = true
		default:
			if failing {
				log.Info("systemd watchdog: healthy again, pinging")
				failing = false
			}
			if err := ping(); err != nil {
				log.Warn("systemd watchdog: ping failed", "err", err)
			} else {
				lastPing = time.Now()
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// check runs one health check under a deadline of timeout.
func check(ctx context.Context, timeout time.Duration, healthy func(context.Context) error) error {
	if healthy == nil {
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	if err := healthy(cctx); err != nil {
		return err
	}
	if took := time.Since(start); took > timeout {
		return fmt.Errorf("health check took %v, longer than its %v deadline", took.Round(time.Millisecond), timeout)
	}
	return nil
}
