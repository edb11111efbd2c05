package terminal

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// chunkSize is the size of one PTY read. The kernel's PTY buffer hands out
// at most a few KiB per read anyway; a bigger buffer only helps bursts.
const chunkSize = 32 << 10

// queueDepth bounds how many unread chunks a shell may queue while nobody is
// in Run (about 2 MiB). Past that the reader stops reading, the PTY fills
// and the program blocks on write: backpressure, not unbounded memory.
const queueDepth = 64

// shell is one bash process on one PTY, with the goroutines that own it.
type shell struct {
	cmd    *exec.Cmd
	master *os.File
	pid    int // bash's pid: the foreground check, /proc/PID/syscall, signals
	leader int // the started process (bash, or the sandbox init over it); its session is killed on close

	chunks chan []byte   // PTY output; closed when the master hits EOF/EIO
	exited chan struct{} // closed when the bash process has been reaped
	exitMu sync.Mutex
	status int // bash's exit status, valid once exited is closed

	pool sync.Pool
	wg   sync.WaitGroup
}

// initScript is bash's --rcfile: it installs the prompt protocol and a
// predictable, non-interactive environment. Placeholders: nonce markers.
const initScript = `set +o history
unset HISTFILE MAILCHECK
shopt -s expand_aliases checkwinsize
__h_ec=0
__h_n=0
__h_ret() { return "$1"; }
__h_prompt() {
  local ec=$? c=$PWD
  __h_ec=$ec
  c=${c//\\/\\\\}; c=${c//\"/\\\"}; c=${c//$'\n'/\\n}; c=${c//$'\r'/\\r}; c=${c//$'\t'/\\t}
  __h_n=$((__h_n+1))
  __h_ps="@BEGIN@{\"n\":$__h_n,\"exit_code\":$ec,\"pid\":$$,\"cwd\":\"$c\"}@END@"
  PS1='${__h_ps}'
  PS2='@PS2@'
  PS0=
  return $ec
}
PROMPT_COMMAND=__h_prompt
PS1='${__h_ps}'
PS2='@PS2@'
`

// startShell starts bash on a fresh PTY and the reader and reaper goroutines.
func startShell(opts *Options, m markers, ctlDir string) (*shell, error) {
	rc := initScript
	rc = string(bytes.ReplaceAll([]byte(rc), []byte("@BEGIN@"), m.begin))
	rc = string(bytes.ReplaceAll([]byte(rc), []byte("@END@"), m.end))
	rc = string(bytes.ReplaceAll([]byte(rc), []byte("@PS2@"), m.ps2))
	rcPath := filepath.Join(ctlDir, "rc")
	if err := os.WriteFile(rcPath, []byte(rc), 0o600); err != nil {
		return nil, fmt.Errorf("write shell rc: %w", err)
	}

	ptmx, tty, err := pty.Open()
	if err != nil {
		return nil, fmt.Errorf("open pty: %w", err)
	}
	defer tty.Close()
	master, err := nonblocking(ptmx)
	if err != nil {
		return nil, err
	}
	if err := configureTTY(tty, opts.Cols, opts.Rows); err != nil {
		master.Close()
		return nil, err
	}

	cmd := exec.Command(opts.Shell, "--noprofile", "--rcfile", rcPath, "--noediting", "-i")
	cmd.Dir = opts.Dir
	cmd.Env = opts.environ()
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if opts.Prepare != nil {
		if err := opts.Prepare(cmd); err != nil {
			master.Close()
			return nil, fmt.Errorf("prepare shell: %w", err)
		}
	}
	if err := cmd.Start(); err != nil {
		master.Close()
		return nil, fmt.Errorf("start %s: %w", opts.Shell, err)
	}
	leader := cmd.Process.Pid
	fail := func(err error) (*shell, error) {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		master.Close()
		return nil, err
	}
	if opts.Started != nil {
		if err := opts.Started(leader); err != nil {
			return fail(fmt.Errorf("start %s: %w", opts.Shell, err))
		}
	}
	pid := leader
	if opts.InitWrapped {
		p, err := initChild(leader, opts.StartWait)
		if err != nil {
			return fail(fmt.Errorf("%w: %w", ErrShellStart, err))
		}
		pid = p
	}
	sh := &shell{
		cmd:    cmd,
		master: master,
		pid:    pid,
		leader: leader,
		chunks: make(chan []byte, queueDepth),
		exited: make(chan struct{}),
	}
	sh.pool.New = func() any { b := make([]byte, chunkSize); return &b }
	sh.wg.Add(2)
	go sh.read()
	go sh.reap()
	return sh, nil
}

// initChild finds the one child of a sandbox init (bash), waiting up to d
// for it to appear. The init forks bash once; anything else that later
// becomes its child (orphans it reaps) comes after the terminal has looked.
func initChild(init int, d time.Duration) (int, error) {
	dir := "/proc/" + strconv.Itoa(init) + "/task"
	for end := time.Now().Add(d); ; time.Sleep(time.Millisecond) {
		tasks, err := os.ReadDir(dir)
		if err != nil {
			return 0, fmt.Errorf("sandbox init %d: %w", init, err)
		}
		for _, task := range tasks {
			b, err := os.ReadFile(filepath.Join(dir, task.Name(), "children"))
			if err != nil {
				continue
			}
			if f := bytes.Fields(b); len(f) > 0 {
				if pid, err := strconv.Atoi(string(f[0])); err == nil {
					return pid, nil
				}
			}
		}
		if time.Now().After(end) {
			return 0, fmt.Errorf("sandbox init %d started no shell within %s", init, d)
		}
	}
}

// nonblocking returns the PTY master as a pollable file. creack/pty's Open
// puts the fd in blocking mode (it calls Fd for its ioctls), and a read
// blocked in the kernel would survive Close; a dup set non-blocking is
// registered with Go's poller, so Close wakes a pending Read.
func nonblocking(f *os.File) (*os.File, error) {
	defer f.Close()
	fd, err := unix.Dup(int(f.Fd()))
	if err != nil {
		return nil, fmt.Errorf("dup pty master: %w", err)
	}
	unix.CloseOnExec(fd)
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("pty master non-blocking: %w", err)
	}
	return os.NewFile(uintptr(fd), "/dev/ptmx"), nil
}

// configureTTY turns echo off (the command line is ours, not output) and
// output post-processing off (so a program's "\n" arrives as "\n", not
// "\r\n"), keeps canonical mode and signals (so C-c and C-d mean what they
// mean to programs), and sets the window size.
func configureTTY(tty *os.File, cols, rows int) error {
	fd := int(tty.Fd())
	t, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return fmt.Errorf("get termios: %w", err)
	}
	t.Lflag &^= unix.ECHO | unix.ECHOE | unix.ECHOK | unix.ECHONL | unix.ECHOCTL
	t.Lflag |= unix.ICANON | unix.ISIG
	t.Oflag &^= unix.ONLCR | unix.OCRNL
	t.Iflag |= unix.IUTF8
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, t); err != nil {
		return fmt.Errorf("set termios: %w", err)
	}
	if err := pty.Setsize(tty, &pty.Winsize{Cols: uint16(cols), Rows: uint16(rows)}); err != nil {
		return fmt.Errorf("set window size: %w", err)
	}
	return nil
}

// read copies PTY output into chunks until the master reports EOF or EIO
// (every holder of the slave side is gone) or is closed.
func (sh *shell) read() {
	defer sh.wg.Done()
	defer close(sh.chunks)
	for {
		bp := sh.pool.Get().(*[]byte)
		n, err := sh.master.Read(*bp)
		if n > 0 {
			sh.chunks <- (*bp)[:n]
		} else {
			sh.pool.Put(bp)
		}
		if err != nil {
			return
		}
	}
}

// release returns a chunk's buffer once its bytes have been consumed.
func (sh *shell) release(b []byte) {
	b = b[:cap(b)]
	sh.pool.Put(&b)
}

// reap waits for bash to exit, then kills whatever it left in its session
// (background jobs that still hold the PTY) so the master sees EIO.
func (sh *shell) reap() {
	defer sh.wg.Done()
	err := sh.cmd.Wait()
	status := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		status = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			status = 128 + int(ws.Signal())
		}
	}
	sh.exitMu.Lock()
	sh.status = status
	sh.exitMu.Unlock()
	close(sh.exited)
	killSession(sh.leader)
}

func (sh *shell) exitStatus() int {
	sh.exitMu.Lock()
	defer sh.exitMu.Unlock()
	return sh.status
}

func (sh *shell) alive() bool {
	select {
	case <-sh.exited:
		return false
	default:
		return true
	}
}

// idle reports whether bash is waiting at its prompt: it is the terminal's
// foreground process group and is blocked reading the terminal. A builtin
// read (read x) looks the same, so callers only ask after bash has shown a
// prompt.
func (sh *shell) idle() bool {
	pgrp, err := sh.foreground()
	if err != nil || pgrp != sh.pid {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(sh.pid) + "/syscall")
	if err != nil {
		return true // cannot look closer: the process group is the best evidence
	}
	f := bytes.Fields(b)
	return len(f) >= 2 && string(f[0]) == strconv.Itoa(unix.SYS_READ) && string(f[1]) == "0x0"
}

// waitIdle polls idle for up to d: bash writes its prompt a moment before
// it blocks in read.
func (sh *shell) waitIdle(d time.Duration) bool {
	for end := time.Now().Add(d); ; time.Sleep(time.Millisecond) {
		if sh.idle() {
			return true
		}
		if time.Now().After(end) {
			return false
		}
	}
}

// foreground reports the PTY's foreground process group.
func (sh *shell) foreground() (int, error) {
	sc, err := sh.master.SyscallConn()
	if err != nil {
		return 0, err
	}
	var pgrp int
	var ierr error
	if err := sc.Control(func(fd uintptr) {
		pgrp, ierr = unix.IoctlGetInt(int(fd), unix.TIOCGPGRP)
	}); err != nil {
		return 0, err
	}
	if ierr != nil {
		return 0, fmt.Errorf("TIOCGPGRP: %w", ierr)
	}
	return pgrp, nil
}

// signalForeground sends sig to the foreground process group, or to the
// shell itself when the shell is in the foreground (a builtin loop).
func (sh *shell) signalForeground(sig syscall.Signal) (int, error) {
	pgrp, err := sh.foreground()
	if err != nil || pgrp <= 0 {
		return 0, unix.Kill(sh.pid, sig)
	}
	if pgrp == sh.pid {
		return pgrp, unix.Kill(sh.pid, sig)
	}
	return pgrp, unix.Kill(-pgrp, sig)
}

// close kills bash and everything in its session and waits for the
// goroutines. Bash gets SIGHUP first (it passes it on to its jobs); what is
// left after the grace period is killed, the started process last (a
// sandbox init, whose death ends its pid namespace). Safe to call more than
// once.
func (sh *shell) close(grace time.Duration) {
	if sh.alive() {
		_ = unix.Kill(sh.pid, unix.SIGHUP)
		select {
		case <-sh.exited:
		case <-time.After(grace):
		}
		killSession(sh.leader)
		_ = unix.Kill(sh.leader, unix.SIGKILL)
		<-sh.exited
	}
	killSession(sh.leader)
	sh.master.Close()
	// Drain so the reader can finish its last send.
	for b := range sh.chunks {
		sh.release(b)
	}
	sh.wg.Wait()
}

// killSession SIGKILLs every process whose session id is sid. Background
// jobs and their children stay in the shell's session (job control gives
// them their own process groups, not sessions), so this leaves no strays
// unless a program called setsid itself; the sandbox's pid namespace is
// the stronger guarantee.
func killSession(sid int) {
	for range 3 {
		ents, err := os.ReadDir("/proc")
		if err != nil {
			return
		}
		found := false
		for _, e := range ents {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || pid == sid {
				continue
			}
			if s, err := unix.Getsid(pid); err == nil && s == sid {
				_ = unix.Kill(pid, unix.SIGKILL)
				found = true
			}
		}
		if !found {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}
