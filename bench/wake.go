package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"time"

	"golang.org/x/sys/unix"
)

// envWakeEcho makes this binary, re-executed, the echo end of the wake-up
// probe: it answers each byte on descriptor 3 with the same byte.
const envWakeEcho = "HARNESSD_BENCH_WAKE_ECHO"

// wakeChild runs the echo end of the wake-up probe when this process was
// started as one.
func wakeChild() (int, bool) {
	if os.Getenv(envWakeEcho) != "1" {
		return 0, false
	}
	c, err := net.FileConn(os.NewFile(3, "wake"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "wake echo:", err)
		return 1, true
	}
	var b [1]byte
	for {
		if _, err := io.ReadFull(c, b[:]); err != nil {
			return 0, true // the bench closed its end
		}
		if _, err := c.Write(b[:]); err != nil {
			return 1, true
		}
	}
}

// wakeStep is one of the wake-up probe's sleeps, and how many round trips
// are timed after it.
type wakeStep struct {
	asleep time.Duration
	n      int
}

// wakeUps times a one-byte round trip to a child process (this binary
// re-executed) over a unix socketpair, both ends Go and waiting in the
// netpoller as the daemon and its clients do, each after this process
// has slept as long as step says, so that both ends' threads have gone
// idle by then. On a VM an idle vCPU is halted, and waking it is what a
// request pays when its client or its daemon has been waiting: an API
// call makes that hop twice (client to daemon, and back).
func wakeUps(ctx context.Context, steps []wakeStep) ([]latencies, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("socketpair: %w", err)
	}
	mine, theirs := os.NewFile(uintptr(fds[0]), "wake"), os.NewFile(uintptr(fds[1]), "wake-echo")
	cmd := exec.CommandContext(ctx, exe)
	cmd.Env = append(os.Environ(), envWakeEcho+"=1")
	cmd.ExtraFiles = []*os.File{theirs}
	cmd.Stderr = os.Stderr
	err = cmd.Start()
	theirs.Close()
	if err != nil {
		mine.Close()
		return nil, fmt.Errorf("wake echo: %w", err)
	}
	c, err := net.FileConn(mine)
	mine.Close() // FileConn holds its own copy
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, err
	}
	defer func() {
		c.Close() // the child reads EOF and exits
		_ = cmd.Wait()
	}()

	var b [1]byte
	once := func() (time.Duration, error) {
		t0 := time.Now()
		if _, err := c.Write(b[:]); err != nil {
			return 0, err
		}
		if _, err := io.ReadFull(c, b[:]); err != nil {
			return 0, err
		}
		return time.Since(t0), nil
	}
	for range warmUp {
		if _, err := once(); err != nil {
			return nil, fmt.Errorf("wake echo: %w", err)
		}
	}
	out := make([]latencies, len(steps))
	for i, st := range steps {
		d := make([]time.Duration, 0, st.n)
		for range st.n {
			if st.asleep > 0 {
				if err := sleep(ctx, st.asleep); err != nil {
					return nil, err
				}
			}
			rt, err := once()
			if err != nil {
				return nil, fmt.Errorf("wake echo: %w", err)
			}
			d = append(d, rt)
		}
		out[i] = summarize(d)
	}
	return out, ctx.Err()
}
