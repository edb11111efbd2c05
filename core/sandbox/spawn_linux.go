package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/core/sandbox/seccomp"

	"github.com/harnessd/harnessd/core/files"
)

// This file is the control channel's second request kind (see
// files_protocol.go): start a process beside the shell. The daemon opens
// the process's PTY and control socket and passes their descriptors,
// with the sandbox's cgroup v1 tasks files, to the init with SCM_RIGHTS
// on the first byte of the request's frame; the init starts the process
// and answers with its pid and a pidfd, passed back the same way.

var _ Spawner = (*nativeSandbox)(nil)

// ctlRequest is a request on the init's control channel: a file
// primitive, or with Spawn set, a process to start. Its JSON for a file
// primitive is files.Request's, as before.
type ctlRequest struct {
	files.Request
	Spawn *spawnRequest `json:",omitempty"`
}

// spawnRequest is SpawnSpec as the init gets it, with what the shell's
// start applies too. Its descriptors come with the frame: the tty, the
// control socket, then Cgroups tasks files.
type spawnRequest struct {
	Path    string
	Args    []string
	Env     []string
	Dir     string
	Rlimits []Rlimit
	Cgroups int
}

// ctlResponse answers a ctlRequest; a spawn's pidfd comes with it.
type ctlResponse struct {
	files.Response
	Pid int `json:",omitempty"` // in the sandbox's pid namespace
}

// fdReader reads a unix socket with recvmsg, keeping the descriptors
// that come with the bytes (close-on-exec) for take.
type fdReader struct {
	read func(p, oob []byte) (n, oobn int, err error)
	fds  []int
}

func (r *fdReader) Read(p []byte) (int, error) {
	var oob [256]byte
	n, oobn, err := r.read(p, oob[:])
	if oobn > 0 {
		if msgs, perr := unix.ParseSocketControlMessage(oob[:oobn]); perr == nil {
			for i := range msgs {
				if fds, ferr := unix.ParseUnixRights(&msgs[i]); ferr == nil {
					r.fds = append(r.fds, fds...)
				}
			}
		}
	}
	if n == 0 && err == nil {
		return 0, io.EOF
	}
	return n, err
}

// take returns the descriptors received so far and forgets them.
func (r *fdReader) take() []int {
	fds := r.fds
	r.fds = nil
	return fds
}

func closeFDs(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}

// initReader is the init's fdReader on its socket.
func initReader(fd int) *fdReader {
	return &fdReader{read: func(p, oob []byte) (int, int, error) {
		for {
			n, oobn, _, _, err := unix.Recvmsg(fd, p, oob, unix.MSG_CMSG_CLOEXEC)
			if err == unix.EINTR {
				continue
			}
			return n, oobn, err
		}
	}}
}

// connReader is the daemon's fdReader on its end (ReadMsgUnix sets
// MSG_CMSG_CLOEXEC on Linux).
func connReader(c *net.UnixConn) *fdReader {
	return &fdReader{read: func(p, oob []byte) (int, int, error) {
		n, oobn, _, _, err := c.ReadMsgUnix(p, oob)
		return n, oobn, err
	}}
}

// encodeFrame is writeFrame's bytes for a message without data.
func encodeFrame(v any) ([]byte, error) {
	var b bytes.Buffer
	if err := writeFrame(&b, v, nil); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// sendFrameFDs writes a frame without data on the init's socket with
// fds on its first byte.
func sendFrameFDs(fd int, v any, fds []int) error {
	b, err := encodeFrame(v)
	if err != nil {
		return err
	}
	var oob []byte
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	for len(b) > 0 {
		n, err := unix.SendmsgN(fd, b, oob, nil, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		b, oob = b[n:], nil
	}
	return nil
}

// spawnOp starts a process for the daemon (the init's side). fds are
// the request's descriptors, which it closes; the answer's pidfd is
// the caller's to send and close (-1 if none).
func spawnOp(sp *spawnRequest, fds []int) (*ctlResponse, int) {
	defer closeFDs(fds)
	if len(fds) != 2+sp.Cgroups || sp.Cgroups < 0 {
		return &ctlResponse{Response: files.Response{Code: files.CodeBadRequest, Err: fmt.Sprintf("spawn: %d descriptors, want %d", len(fds), 2+sp.Cgroups)}}, -1
	}
	type result struct {
		pid, pidfd int
		err        error
	}
	ch := make(chan result, 1)
	go func() {
		// A thread of its own, never unlocked, so it ends with this
		// goroutine: it joins the sandbox's v1 groups and drops its
		// privileges for good, which no other goroutine may inherit.
		runtime.LockOSThread()
		pid, pidfd, err := spawnLocked(sp, fds[0], fds[1], fds[2:])
		ch <- result{pid, pidfd, err}
	}()
	r := <-ch
	if r.err != nil {
		return &ctlResponse{Response: files.Response{Code: files.CodeIO, Err: r.err.Error()}}, -1
	}
	return &ctlResponse{Pid: r.pid}, r.pidfd
}

// spawnLocked runs on a locked thread that still has the init's
// capabilities in the sandbox's user namespace (the thread serving
// files dropped its own, and could not drop the bounding set without
// them). It becomes what the shell's thread became in lockdown (the
// seccomp filter is every thread's already), then forks.
func spawnLocked(sp *spawnRequest, tty, ctl int, cgroups []int) (int, int, error) {
	// cgroup v1 is per thread: the process is born in this thread's
	// groups, so the thread joins the sandbox's first (v2 is per
	// process, and the init is in its group).
	for _, fd := range cgroups {
		if _, err := unix.Write(fd, []byte("0")); err != nil {
			return 0, -1, fmt.Errorf("join cgroup: %w", err)
		}
	}
	if err := dropThread(); err != nil {
		return 0, -1, err
	}
	if err := seccomp.InstallAgent(); err != nil {
		return 0, -1, fmt.Errorf("seccomp (agent): %w", err)
	}
	if err := installHeadRule(); err != nil {
		return 0, -1, err
	}
	path := sp.Path
	if !strings.Contains(path, "/") {
		path = lookPath(path, sp.Env)
	}
	if _, err := os.Stat(path); err != nil {
		return 0, -1, fmt.Errorf("%s: not found in the sandbox's PATH", sp.Path)
	}
	pidfd := -1
	attr := &syscall.ProcAttr{Dir: sp.Dir, Env: sp.Env, Files: []uintptr{uintptr(tty), uintptr(tty), uintptr(tty), uintptr(ctl)},
		Sys: &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0, PidFD: &pidfd}}
	pid, err := syscall.ForkExec(path, sp.Args, attr)
	if errors.Is(err, unix.ENOENT) && sp.Dir != "" {
		attr.Dir = "/" // the shell's directory was removed since
		pid, err = syscall.ForkExec(path, sp.Args, attr)
	}
	if err != nil {
		return 0, -1, fmt.Errorf("exec %s: %w", path, err)
	}
	for _, r := range sp.Rlimits {
		lim := unix.Rlimit{Cur: r.Value, Max: r.Value}
		if err := unix.Prlimit(pid, r.Resource, &lim, nil); err != nil {
			_ = unix.Kill(pid, unix.SIGKILL)
			if pidfd >= 0 {
				unix.Close(pidfd)
			}
			return 0, -1, fmt.Errorf("prlimit %s: %w", r.Name, err)
		}
	}
	if pidfd < 0 {
		_ = unix.Kill(pid, unix.SIGKILL)
		return 0, -1, errors.New("no pidfd for the process (CLONE_PIDFD)")
	}
	return pid, pidfd, nil
}

// Spawn starts a process beside the shell, by the running shell's init
// (see Spawner). A shell rebuild starts a new init; what the old one
// started dies with its pid namespace.
func (s *nativeSandbox) Spawn(ctx context.Context, spec SpawnSpec, tty, ctl *os.File) (Spawned, error) {
	s.mu.Lock()
	fc := s.files
	s.mu.Unlock()
	if fc == nil {
		return nil, fmt.Errorf("%w: no shell is running in sandbox %s", files.ErrUnavailable, s.spec.ID)
	}
	var cg []*os.File
	if s.group != nil {
		var err error
		if cg, err = s.group.JoinFiles(); err != nil {
			return nil, fmt.Errorf("sandbox %s: %w", s.spec.ID, err)
		}
		defer closeAll(cg)
	}
	req := &ctlRequest{Spawn: &spawnRequest{Path: spec.Path, Args: spec.Args, Env: s.shellEnv(spec.Env), Dir: spec.Dir,
		Rlimits: s.cfg.Rlimits, Cgroups: len(cg)}}
	if req.Spawn.Dir == "" {
		req.Spawn.Dir = s.spec.Workdir
	}
	fds := []int{int(tty.Fd()), int(ctl.Fd())}
	for _, f := range cg {
		fds = append(fds, int(f.Fd()))
	}
	resp, got, err := fc.doFDs(ctx, req, fds)
	if err != nil {
		return nil, err
	}
	if resp.Err != "" {
		closeFDs(got)
		return nil, fmt.Errorf("sandbox %s: spawn %s: %s", s.spec.ID, spec.Path, resp.Err)
	}
	if len(got) != 1 {
		closeFDs(got)
		return nil, fmt.Errorf("sandbox %s: spawn %s: %d descriptors in the answer, want its pidfd", s.spec.ID, spec.Path, len(got))
	}
	pid, err := pidfdPid(got[0])
	if err != nil {
		unix.Close(got[0])
		return nil, err
	}
	return &spawned{pidfd: got[0], pid: pid}, nil
}

// pidfdPid is the host pid of the process behind pidfd.
func pidfdPid(pidfd int) (int, error) {
	b, err := os.ReadFile("/proc/self/fdinfo/" + strconv.Itoa(pidfd))
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "Pid:"); ok {
			pid, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || pid <= 0 {
				return 0, fmt.Errorf("pidfd %d: the process has exited", pidfd)
			}
			return pid, nil
		}
	}
	return 0, fmt.Errorf("pidfd %d: no Pid in its fdinfo", pidfd)
}

// spawned is a process an init started, held by pidfd: its host pid
// is signalled (as a group) only while the pidfd says it runs, so a
// recycled pid is never.
type spawned struct {
	pidfd, pid int
	mu         sync.Mutex
	closed     bool
}

func (p *spawned) Signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || exited(p.pidfd, 0) {
		return os.ErrProcessDone
	}
	if err := unix.Kill(-p.pid, sig); err != nil {
		return unix.PidfdSendSignal(p.pidfd, sig, nil, 0)
	}
	return nil
}

// Exited reports whether the process has exited (its pidfd is readable).
func (p *spawned) Exited() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed || exited(p.pidfd, 0)
}

func (p *spawned) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	if !exited(p.pidfd, 0) {
		_ = unix.Kill(-p.pid, unix.SIGKILL)
		_ = unix.PidfdSendSignal(p.pidfd, unix.SIGKILL, nil, 0)
	}
	return unix.Close(p.pidfd)
}

// doFDs sends a request with descriptors and returns the answer and
// the descriptors that came with it.
func (fc *fileConn) doFDs(ctx context.Context, req *ctlRequest, fds []int) (*ctlResponse, []int, error) {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	uc, ok := fc.c.(*net.UnixConn)
	if !ok {
		return nil, nil, fmt.Errorf("%w: the control channel is not a unix socket", files.ErrUnavailable)
	}
	b, err := encodeFrame(req)
	if err != nil {
		return nil, nil, err
	}
	var resp ctlResponse
	err = fc.exchange(ctx, func() error {
		if _, _, err := uc.WriteMsgUnix(b, unix.UnixRights(fds...), nil); err != nil {
			return err
		}
		_, err := readFrame(fc.r, &resp)
		return err
	})
	got := fc.fr.take()
	if err != nil {
		closeFDs(got)
		return nil, nil, err
	}
	return &resp, got, nil
}

// newFileConn makes c, the daemon's end of an init's socket, a control
// channel that can receive descriptors; r holds what Started read ahead.
func newFileConn(c net.Conn, r *bufio.Reader) *fileConn {
	fc := &fileConn{c: c, r: r}
	if uc, ok := c.(*net.UnixConn); ok {
		fc.fr = connReader(uc)
		var ahead []byte
		if n := r.Buffered(); n > 0 {
			ahead, _ = r.Peek(n)
			ahead = bytes.Clone(ahead)
		}
		fc.r = bufio.NewReader(io.MultiReader(bytes.NewReader(ahead), fc.fr))
	}
	return fc
}
