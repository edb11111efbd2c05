package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/harnessd/harnessd/core/event"
	"github.com/harnessd/harnessd/core/python"
)

// python is python_run's section: a cell of `1+1` in the session's
// persistent Python through the daemon's API (started once, by the
// sandbox's init), beside `python3 -c 'print(1+1)'` through cmd_run in
// the same session (the shell forks a fresh interpreter each time),
// taking turns so that load lands on both. The first cell, which starts
// Python, is reported apart.
func (b *bench) python(ctx context.Context, s *Section) error {
	d, driver, err := b.actionDaemon(ctx, s, "python-", "on the host")
	if err != nil {
		return err
	}
	defer d.stop()
	t0 := time.Now()
	first, err := d.pyAct(ctx, "1+1")
	if err != nil {
		return err
	}
	start := time.Since(t0)
	n := max(20, b.opts.n/20)
	if b.opts.quick {
		n = 20
	}
	mode := "plain"
	if first.IPython {
		mode = "IPython"
	}
	s.Notes = append(s.Notes,
		fmt.Sprintf("driver %s; Python in %s mode; %d of each, alternating in rounds of 10.", driver, mode, n),
		"python_run: POST /actions {python_run: 1+1} -> pipeline -> the cell down Python's control socket, its output up its PTY, its end on the socket, the fence; the observation committed.",
		"cmd_run: POST /actions {cmd_run: python3 -c 'print(1+1)'} -> the shell forks and execs a fresh python3; the output committed.")
	var cell, fork []time.Duration
	for done := 0; done < n; done += 10 {
		for range min(10, n-done) {
			t0 := time.Now()
			r, err := d.pyAct(ctx, "1+1")
			if err != nil {
				return err
			}
			if r.ExitCode != 0 || strings.TrimSpace(r.Output) != "2" {
				return fmt.Errorf("python_run 1+1: %+v", r)
			}
			cell = append(cell, time.Since(t0))
		}
		for range min(10, n-done) {
			t0 := time.Now()
			obs, err := d.cl.Act(ctx, d.id, event.SourceUser, event.CmdRun{Command: "python3 -c 'print(1+1)'"})
			if err != nil {
				return err
			}
			if o, ok := obs.Payload.(event.CmdOutput); !ok || o.ExitCode != 0 || strings.TrimSpace(o.Output) != "2" {
				return fmt.Errorf("python3 -c: %+v", obs.Payload)
			}
			fork = append(fork, time.Since(t0))
		}
	}
	c, f := summarize(cell), summarize(fork)
	s.Rows = append(s.Rows,
		Row{Name: "python_run first cell (starts Python)", Figure: dur(start)},
		Row{Name: "python_run 1+1 p50", Figure: dur(c.p50), Baseline: labelled("python3 -c via cmd_run", dur(f.p50)),
			Ratio: ratio(f.p50.Seconds(), c.p50.Seconds()), RatioOf: "python3 -c/python_run"},
		Row{Name: "python_run 1+1 p99", Figure: dur(c.p99), Baseline: labelled("python3 -c via cmd_run", dur(f.p99)),
			Ratio: ratio(f.p99.Seconds(), c.p99.Seconds()), RatioOf: "python3 -c/python_run"},
	)
	return nil
}

func (p *inProcess) pyAct(ctx context.Context, code string) (python.Result, error) {
	obs, err := p.cl.Act(ctx, p.id, event.SourceUser, python.Run{Code: code})
	if err != nil {
		return python.Result{}, err
	}
	r, ok := obs.Payload.(python.Result)
	if !ok {
		return r, fmt.Errorf("python_run answered with %s", obs.Kind())
	}
	return r, nil
}
