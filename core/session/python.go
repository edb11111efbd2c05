package session

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/harnessd/harnessd/core/python"
	"github.com/harnessd/harnessd/core/sandbox"
	"github.com/harnessd/harnessd/core/trim"
)

// PythonFor runs r in the session's persistent Python (started by the
// first cell, by the sandbox's init where there is one) and returns the
// python_result that answers it, with the trimmer's counts. Its output
// is kept, trimmed and published live as a command's is (CommandFor).
// It records nothing: the pipeline does.
func (s *Session) PythonFor(ctx context.Context, cause uint64, r python.Run) (python.Result, trim.Result, error) {
	py, unsandboxed, err := s.python()
	if err != nil {
		return python.Result{ExitCode: 1, Error: "StartError", Note: err.Error()}, trim.Result{}, nil
	}
	w, finish := s.capture(ctx, cause)
	o, runErr := py.Run(ctx, r, w)
	tres, trimmed, notes := finish()
	res := python.Result{
		ExitCode: o.ExitCode, Output: tres.Text, Error: o.Error, Trimmed: trimmed,
		DurationMS: o.Duration.Milliseconds(), TimedOut: o.TimedOut, StateLost: o.StateLost,
		IPython: o.IPython, Note: joinNote(o.Note, notes), Unsandboxed: unsandboxed,
	}
	if runErr != nil {
		res.Note = joinNote(res.Note, "the harness stopped waiting: "+runErr.Error())
		return res, tres, fmt.Errorf("session %s: %w", s.id, runErr)
	}
	return res, tres, nil
}

// python returns the session's Interp, made on first use: started in
// the sandbox through its init (sandbox.Spawner), else on the host as
// the shell is with the driver "none".
func (s *Session) python() (*python.Interp, bool, error) {
	s.pyMu.Lock()
	defer s.pyMu.Unlock()
	if s.pyClosed {
		return nil, false, python.ErrClosed
	}
	sp, inSandbox := s.sb.(sandbox.Spawner)
	if s.py != nil {
		return s.py, !inSandbox, nil
	}
	t := s.timing
	opts := python.Options{
		Start:       python.HostStarter,
		Dir:         s.Cwd(),
		SoftTimeout: t.SoftTimeout, HardTimeout: t.HardTimeout, KillGrace: t.KillGrace, MaxWait: t.MaxWait, Settle: t.Settle,
		Logger: s.log,
		// What a terminal's programs get, and for Python: no pager, no
		// display for matplotlib, IPython's files in /tmp, not the
		// workspace.
		Env: append([]string{"LANG=C.UTF-8", "TERM=dumb", "PAGER=cat", "PYTHONIOENCODING=utf-8", "MPLBACKEND=Agg",
			"PYTHONDONTWRITEBYTECODE=1"}, t.Env...),
	}
	if inSandbox {
		opts.Env = append(opts.Env, "IPYTHONDIR=/tmp/.harnessd-ipython") // the sandbox's own /tmp
		opts.Start = func(ctx context.Context, c python.Command, tty, ctl *os.File) (python.Process, error) {
			return sp.Spawn(ctx, sandbox.SpawnSpec{Path: c.Path, Args: c.Args, Env: c.Env, Dir: c.Dir}, tty, ctl)
		}
	} else {
		opts.Env = append(opts.Env, "PATH="+os.Getenv("PATH"), "HOME="+os.Getenv("HOME"),
			"IPYTHONDIR="+filepath.Join(os.TempDir(), "harnessd-ipython-"+fmt.Sprint(os.Getuid())))
	}
	s.py = python.New(opts)
	return s.py, !inSandbox, nil
}

// closePython ends the session's Python, if it started one.
func (s *Session) closePython() {
	s.pyMu.Lock()
	py := s.py
	s.pyClosed = true
	s.pyMu.Unlock()
	if py != nil {
		py.Close()
	}
}
