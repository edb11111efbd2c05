package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/harnessd/harnessd/core/config"
	"github.com/harnessd/harnessd/core/event"
	"github.com/harnessd/harnessd/core/files"
)

// filesLines is the size of the file the files section edits.
const filesLines = 10000

// files is the file actions' section: file_str_replace of one line of a
// 10,000-line file through the daemon's API, performed by the sandbox's
// init, beside the same edit as `sed -i` through cmd_run in the same
// session (the shell forks sed, which rewrites the file), taking turns
// so that load lands on both.
func (b *bench) files(ctx context.Context, s *Section) error {
	d, driver, err := b.actionDaemon(ctx, s, "files-", "in the daemon's process")
	if err != nil {
		return err
	}
	defer d.stop()
	var body strings.Builder
	for i := 1; i <= filesLines; i++ {
		fmt.Fprintf(&body, "line %d of the file, with some text after it\n", i)
	}
	res, err := d.fileAct(ctx, files.Create{Path: "big.txt", Content: body.String()})
	if err != nil {
		return err
	}
	if !res.OK {
		return fmt.Errorf("create: %s", res.Output)
	}
	n := max(20, b.opts.n/20)
	if b.opts.quick {
		n = 20
	}
	s.Notes = append(s.Notes,
		fmt.Sprintf("driver %s; a %d-line file (%d bytes); the edit changes line 5000 and the next one changes it back; %d of each, alternating in rounds.", driver, filesLines, body.Len(), n),
		"str_replace: POST /actions {file_str_replace} -> pipeline -> the init reads, the daemon matches and diffs, the init writes a temporary file and renames it; the observation and its diff are committed.",
		"sed: POST /actions {cmd_run: sed -i 's/^line 5000 of/LINE 5000 of/' big.txt} -> the shell forks sed; the output is committed.")
	flip := []struct{ from, to string }{{"line 5000 of", "LINE 5000 of"}, {"LINE 5000 of", "line 5000 of"}}
	var edit, sed []time.Duration
	k := 0
	for done := 0; done < n; done += 10 {
		for range min(10, n-done) {
			f := flip[k%2]
			k++
			t0 := time.Now()
			r, err := d.fileAct(ctx, files.StrReplace{Path: "big.txt", Old: "\n" + f.from, New: "\n" + f.to})
			if err != nil {
				return err
			}
			if !r.OK {
				return fmt.Errorf("str_replace: %s", r.Output)
			}
			edit = append(edit, time.Since(t0))
		}
		for range min(10, n-done) {
			f := flip[k%2]
			k++
			t0 := time.Now()
			obs, err := d.cl.Act(ctx, d.id, event.SourceUser, event.CmdRun{Command: "sed -i 's/^" + f.from + "/" + f.to + "/' big.txt"})
			if err != nil {
				return err
			}
			if o, ok := obs.Payload.(event.CmdOutput); !ok || o.ExitCode != 0 {
				return fmt.Errorf("sed: %+v", obs.Payload)
			}
			sed = append(sed, time.Since(t0))
		}
	}
	e, sd := summarize(edit), summarize(sed)
	s.Rows = append(s.Rows,
		Row{Name: "file_str_replace p50", Figure: dur(e.p50), Baseline: labelled("sed -i via cmd_run", dur(sd.p50)),
			Ratio: ratio(sd.p50.Seconds(), e.p50.Seconds()), RatioOf: "sed/str_replace"},
		Row{Name: "file_str_replace p99", Figure: dur(e.p99), Baseline: labelled("sed -i via cmd_run", dur(sd.p99)),
			Ratio: ratio(sd.p99.Seconds(), e.p99.Seconds()), RatioOf: "sed/str_replace"},
	)
	return nil
}

// startFilesDaemon serves a daemon in this process with the given
// sandbox driver (no warm pool) and one session.
// actionDaemon starts the daemon an action's section measures: with the
// native sandbox where this host can make one, else with the driver
// none, which the notes say, with where the action is then done.
func (b *bench) actionDaemon(ctx context.Context, s *Section, name, where string) (*inProcess, string, error) {
	dir, err := os.MkdirTemp(b.tmp, name)
	if err != nil {
		return nil, "", err
	}
	d, err := startFilesDaemon(ctx, dir, config.DriverNative)
	if err == nil {
		return d, config.DriverNative, nil
	}
	s.Notes = append(s.Notes, fmt.Sprintf("no native sandbox here (%v): measured with the driver none, %s", err, where))
	d, err = startFilesDaemon(ctx, filepath.Join(dir, "none"), config.DriverNone)
	return d, config.DriverNone, err
}

func startFilesDaemon(ctx context.Context, dir, driver string) (*inProcess, error) {
	p, err := startDaemon(ctx, dir, func(c *config.Config) {
		c.Sandbox.Driver = driver
		c.Sandbox.PoolSize = 0
	})
	if err != nil {
		return nil, fmt.Errorf("daemon: %w", err)
	}
	return p, nil
}

func (p *inProcess) fileAct(ctx context.Context, a event.Payload) (files.Result, error) {
	obs, err := p.cl.Act(ctx, p.id, event.SourceUser, a)
	if err != nil {
		return files.Result{}, err
	}
	r, ok := obs.Payload.(files.Result)
	if !ok {
		return r, fmt.Errorf("%s answered with %s", a.Kind(), obs.Kind())
	}
	return r, nil
}
