package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"
)

// tmux is section 1(c): `true` through a tmux pane, driven as OpenHands'
// runtime drives it. Each command is typed with send-keys (the text, then
// Enter, as libtmux does), and completion is found by sleeping one poll
// interval and running capture-pane until the marker's exit line shows.
// Every tmux call is a new tmux client process, as it is there.
func (b *bench) tmux(ctx context.Context, s *Section) error {
	bin, err := exec.LookPath("tmux")
	if err != nil {
		s.Skipped = "skipped: tmux not installed"
		return nil
	}
	warm, err := b.warmLatency(ctx)
	if err != nil {
		return err
	}
	slowN, fastN := max(2, b.opts.n/100), max(10, b.opts.n/10)

	pane, err := startTmux(ctx, bin, b.tmp)
	if err != nil {
		return err
	}
	defer pane.close()
	if v, err := pane.cmd(ctx, "-V"); err == nil {
		s.Notes = append(s.Notes, string(bytes.TrimSpace(v))+", private socket "+pane.sock+", bash --norc in a 200x50 pane.")
	}
	s.Notes = append(s.Notes,
		"per command: send-keys -l 'true; echo <marker> $?', send-keys Enter, then sleep(poll) + capture-pane -p until the marker line appears.",
		fmt.Sprintf("%d commands at 10 ms polling, %d at 500 ms (OpenHands' interval); -n scales both.", fastN, slowN),
	)

	fast, err := pane.latency(ctx, 10*time.Millisecond, fastN)
	if err != nil {
		return err
	}
	slow, err := pane.latency(ctx, 500*time.Millisecond, slowN)
	if err != nil {
		return err
	}
	w50, w99 := warm.p50.Seconds(), warm.p99.Seconds()
	s.Rows = append(s.Rows,
		Row{
			Name: "vs tmux 10 ms poll p50", Figure: dur(warm.p50),
			Baseline: labelled("tmux@10ms", dur(fast.p50)),
			Ratio:    ratio(fast.p50.Seconds(), w50), RatioOf: "tmux10ms/warm",
			Target: ">= 20x", Status: passIf(ratio(fast.p50.Seconds(), w50) >= 20),
		},
		Row{
			Name: "vs tmux 10 ms poll p99", Figure: dur(warm.p99),
			Baseline: labelled("tmux@10ms", dur(fast.p99)),
			Ratio:    ratio(fast.p99.Seconds(), w99), RatioOf: "tmux10ms/warm",
		},
		Row{
			Name: "vs tmux 500 ms poll p50", Figure: dur(warm.p50),
			Baseline: labelled("tmux@500ms", dur(slow.p50)),
			Ratio:    ratio(slow.p50.Seconds(), w50), RatioOf: "tmux500ms/warm",
		},
		Row{
			Name: "vs tmux 500 ms poll p99", Figure: dur(warm.p99),
			Baseline: labelled("tmux@500ms", dur(slow.p99)),
			Ratio:    ratio(slow.p99.Seconds(), w99), RatioOf: "tmux500ms/warm",
		},
	)
	return nil
}

// tmuxPane is one private tmux server with one session running bash.
type tmuxPane struct {
	bin  string
	dir  string // holds the socket; removed by close
	sock string
	seq  int // numbers the markers, so an old one is never taken for new
}

const tmuxTarget = "hb"

// startTmux starts a tmux server on a socket of its own in a new directory
// under tmp, so the user's tmux (and its config) are never touched.
func startTmux(ctx context.Context, bin, tmp string) (*tmuxPane, error) {
	dir, err := os.MkdirTemp(tmp, "tmux-")
	if err != nil {
		return nil, fmt.Errorf("tmux: socket dir: %w", err)
	}
	p := &tmuxPane{bin: bin, dir: dir, sock: filepath.Join(dir, "sock")}
	_, err = p.cmd(ctx, "-f", "/dev/null", "new-session", "-d", "-s", tmuxTarget, "-x", "200", "-y", "50",
		"env", "PS1=$ ", "bash", "--norc", "--noprofile")
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return p, nil
}

// cmd runs one tmux client command against the private server.
func (p *tmuxPane) cmd(ctx context.Context, args ...string) ([]byte, error) {
	c := exec.CommandContext(ctx, p.bin, append([]string{"-S", p.sock}, args...)...)
	c.Env = append(os.Environ(), "TERM=xterm")
	out, err := c.Output()
	if err != nil && ctx.Err() != nil {
		return out, fmt.Errorf("tmux %s: %w", args[0], ctx.Err())
	}
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && len(ee.Stderr) > 0 {
			return out, fmt.Errorf("tmux %s: %w: %s", args[0], err, bytes.TrimSpace(ee.Stderr))
		}
		return out, fmt.Errorf("tmux %s: %w", args[0], err)
	}
	return out, nil
}

// latency times n round trips of `true` at one poll interval, after two
// untimed ones (which also wait out bash's start).
func (p *tmuxPane) latency(ctx context.Context, poll time.Duration, n int) (latencies, error) {
	lat := make([]time.Duration, 0, n)
	for i := range 2 + n {
		d, err := p.roundTrip(ctx, poll)
		if err != nil {
			return latencies{}, fmt.Errorf("tmux at %s polling: %w", poll, err)
		}
		if i >= 2 {
			lat = append(lat, d)
		}
	}
	return summarize(lat), nil
}

// roundTrip types one command and polls the pane until its marker line
// (the marker, a space, the exit status) is on screen. The typed command
// line starts with the prompt, so it never matches.
func (p *tmuxPane) roundTrip(ctx context.Context, poll time.Duration) (time.Duration, error) {
	p.seq++
	marker := "__hb_" + strconv.Itoa(p.seq) + "_ "
	t0 := time.Now()
	if _, err := p.cmd(ctx, "send-keys", "-t", tmuxTarget, "-l", "true; echo "+marker+"$?"); err != nil {
		return 0, err
	}
	if _, err := p.cmd(ctx, "send-keys", "-t", tmuxTarget, "Enter"); err != nil {
		return 0, err
	}
	deadline := t0.Add(10*time.Second + poll)
	timer := time.NewTimer(poll)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-timer.C:
		}
		screen, err := p.cmd(ctx, "capture-pane", "-p", "-J", "-t", tmuxTarget)
		if err != nil {
			return 0, err
		}
		for _, line := range bytes.Split(screen, []byte("\n")) {
			rest, ok := bytes.CutPrefix(line, []byte(marker))
			if !ok {
				continue
			}
			if code := string(bytes.TrimSpace(rest)); code != "0" {
				return 0, fmt.Errorf("command %d: true exited %q", p.seq, code)
			}
			return time.Since(t0), nil
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("command %d: marker not on screen after %s:\n%s", p.seq, time.Since(t0).Round(time.Millisecond), screen)
		}
		timer.Reset(poll)
	}
}

// close kills the private server (with its own short deadline: the run's
// context may already be done) and removes the socket directory.
func (p *tmuxPane) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _ = p.cmd(ctx, "kill-server")
	os.RemoveAll(p.dir)
}
