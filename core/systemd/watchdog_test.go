package systemd

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/harnessd/harnessd/core/systemd/sdtest"
)

func TestWatchdogOff(t *testing.T) {
	m := sdtest.New(t)
	self := strconv.Itoa(os.Getpid())
	tests := []struct {
		name                  string
		usec, pid, notifySock string // "-" means unset
	}{
		{"WATCHDOG_USEC unset", "-", self, m.NotifySocket()},
		{"WATCHDOG_PID another process", "100000", strconv.Itoa(os.Getpid() + 1), m.NotifySocket()},
		{"NOTIFY_SOCKET unset", "100000", self, "-"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			setenv(t, "WATCHDOG_USEC", tt.usec)
			setenv(t, "WATCHDOG_PID", tt.pid)
			setenv(t, "NOTIFY_SOCKET", tt.notifySock)
			done := make(chan error, 1)
			go func() { done <- Watchdog(context.Background(), nil) }()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Watchdog() = %v, want nil", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("Watchdog did not return at once with the watchdog off")
			}
		})
	}
	if n := len(m.Messages()); n != 0 {
		t.Errorf("%d messages sent with the watchdog off", n)
	}
}

func TestWatchdogBadEnv(t *testing.T) {
	for _, usec := range []string{"soon", "0", "-5"} {
		t.Run(usec, func(t *testing.T) {
			t.Setenv("WATCHDOG_USEC", usec)
			t.Setenv("WATCHDOG_PID", strconv.Itoa(os.Getpid()))
			t.Setenv("NOTIFY_SOCKET", "/nonexistent")
			if err := Watchdog(context.Background(), nil); !errors.Is(err, ErrEnv) {
				t.Errorf("Watchdog() = %v, want ErrEnv", err)
			}
		})
	}
}

// TestWatchdogPings runs Watchdog itself against a real notify socket.
func TestWatchdogPings(t *testing.T) {
	m := sdtest.New(t)
	t.Setenv("NOTIFY_SOCKET", m.NotifySocket())
	t.Setenv("WATCHDOG_USEC", "100000") // pings every 50ms
	t.Setenv("WATCHDOG_PID", strconv.Itoa(os.Getpid()))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Watchdog(ctx, func(context.Context) error { return nil }) }()
	deadline := time.Now().Add(10 * time.Second)
	for m.Count("WATCHDOG=1") < 3 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Watchdog() = %v after ctx ended, want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Watchdog did not return when ctx ended")
	}
	if n := m.Count("WATCHDOG=1"); n < 3 {
		t.Errorf("%d pings, want at least 3; messages %q", n, m.Messages())
	}
}

// TestWatchdogUnhealthy: no pings while the check fails, pings again when
// it passes, and the log says so both times.
func TestWatchdogUnhealthy(t *testing.T) {
	const interval = 80 * time.Millisecond // checks every 40ms
	var pings atomic.Int64
	var sick atomic.Bool
	log, logs := testLogger()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		watch(ctx, interval, func(context.Context) error {
			if sick.Load() {
				return errors.New("store does not answer")
			}
			return nil
		}, func() error { pings.Add(1); return nil }, log)
	})
	defer func() { cancel(); wg.Wait() }()

	waitUntil(t, "2 pings while healthy", func() bool { return pings.Load() >= 2 })
	sick.Store(true)
	time.Sleep(2 * interval / 2) // let a check that began before finish
	before := pings.Load()
	time.Sleep(5 * interval / 2)
	if after := pings.Load(); after != before {
		t.Errorf("%d pings while unhealthy", after-before)
	}
	if !strings.Contains(logs.String(), "unhealthy, not pinging") || !strings.Contains(logs.String(), "store does not answer") {
		t.Errorf("log does not say the check failed:\n%s", logs)
	}
	sick.Store(false)
	waitUntil(t, "a ping once healthy again", func() bool { return pings.Load() > before })
	if !strings.Contains(logs.String(), "healthy again") {
		t.Errorf("log does not say the daemon recovered:\n%s", logs)
	}
}

// TestWatchdogCheckDeadline: the check's deadline is well inside the
// interval, and a check that returns nil only after it counts as failed.
func TestWatchdogCheckDeadline(t *testing.T) {
	const interval = 80 * time.Millisecond
	var pings atomic.Int64
	var slow atomic.Bool
	var mu sync.Mutex
	var budgets []time.Duration
	log, logs := testLogger()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		watch(ctx, interval, func(ctx context.Context) error {
			d, ok := ctx.Deadline()
			if !ok {
				return errors.New("no deadline")
			}
			mu.Lock()
			budgets = append(budgets, time.Until(d))
			mu.Unlock()
			if slow.Load() {
				time.Sleep(interval / 4 * 3 / 2) // ignores ctx, returns nil late
			}
			return nil
		}, func() error { pings.Add(1); return nil }, log)
	})
	defer func() { cancel(); wg.Wait() }()

	waitUntil(t, "a ping", func() bool { return pings.Load() >= 1 })
	mu.Lock()
	for _, b := range budgets {
		if b <= 0 || b > interval/4 {
			t.Errorf("check deadline %v away, want within (0, %v]", b, interval/4)
		}
	}
	mu.Unlock()
	slow.Store(true)
	time.Sleep(interval)
	before := pings.Load()
	time.Sleep(3 * interval)
	if after := pings.Load(); after != before {
		t.Errorf("%d pings after checks that overran their deadline", after-before)
	}
	if !strings.Contains(logs.String(), "longer than its") {
		t.Errorf("log does not say the check overran:\n%s", logs)
	}
}

// testLogger returns a logger that writes to a buffer safe to read while
// the watchdog writes.
func testLogger() (*slog.Logger, *syncBuffer) {
	b := &syncBuffer{}
	return slog.New(slog.NewTextHandler(b, nil)), b
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// setenv is t.Setenv, with "-" meaning unset for the test's duration.
func setenv(t *testing.T, k, v string) {
	t.Setenv(k, "")
	if v == "-" {
		os.Unsetenv(k)
		return
	}
	os.Setenv(k, v)
}
