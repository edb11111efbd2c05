package python

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// HostStarter starts the interpreter on the host, as the daemon's user,
// with no isolation: the driver "none", as its shell is.
func HostStarter(ctx context.Context, cmd Command, tty, ctl *os.File) (Process, error) {
	path := cmd.Path
	if p, err := lookPath(cmd.Path, cmd.Env); err == nil {
		path = p
	}
	c := exec.Command(path, cmd.Args[1:]...)
	c.Args[0] = cmd.Args[0]
	c.Env, c.Dir = cmd.Env, cmd.Dir
	c.Stdin, c.Stdout, c.Stderr = tty, tty, tty
	c.ExtraFiles = []*os.File{ctl}
	c.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := c.Start(); err != nil {
		return nil, err
	}
	hp := &hostProc{cmd: c, done: make(chan struct{})}
	go func() { _ = c.Wait(); close(hp.done) }()
	return hp, nil
}

// lookPath finds name in the PATH of env (the interpreter's own), else
// the daemon's.
func lookPath(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			for _, dir := range filepath.SplitList(v) {
				p := filepath.Join(dir, name)
				if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
					return p, nil
				}
			}
		}
	}
	return exec.LookPath(name)
}

type hostProc struct {
	cmd  *exec.Cmd
	done chan struct{}
	once sync.Once
}

// Signal signals the interpreter's process group (it leads its session).
func (h *hostProc) Signal(sig syscall.Signal) error {
	select {
	case <-h.done:
		return os.ErrProcessDone
	default:
	}
	return unix.Kill(-h.cmd.Process.Pid, sig)
}

// Exited reports whether the interpreter has exited.
func (h *hostProc) Exited() bool {
	select {
	case <-h.done:
		return true
	default:
		return false
	}
}

// Close kills the group and waits for the interpreter.
func (h *hostProc) Close() error {
	h.once.Do(func() {
		select {
		case <-h.done:
		default:
			_ = unix.Kill(-h.cmd.Process.Pid, unix.SIGKILL)
			<-h.done
		}
	})
	return nil
}
