package gitnotify

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Rule says what the init refuses: a new HEAD, or a new .git that is
// not a directory, in a directory on the workspace's filesystems (by
// device, as stat gives it, or by mount) whose owner is not Owner.
type Rule struct {
	// Owner is the sandbox's dedicated uid as the init's user namespace
	// maps it (the daemon maps it at a fixed id: an unmapped uid stats
	// as the overflow uid, as host root's files do).
	Owner  uint32
	Devs   []uint64
	Mounts []uint64
	// GitMounts are the mounts of the git directories of the user's
	// repositories that the init pinned (their .git, bound over itself,
	// and the pins below it): no new symlink is made in them. Git never
	// makes one there, and the user's git writes through any it finds
	// (COMMIT_EDITMSG, logs/HEAD, a ref) to wherever it leads. A rename
	// or link into them from elsewhere is another mount's: EXDEV.
	GitMounts []uint64
}

// The ioctls of a listener and their structures (linux/seccomp.h).
const (
	ioctlRecv    = unix.SECCOMP_IOCTL_NOTIF_RECV
	ioctlSend    = unix.SECCOMP_IOCTL_NOTIF_SEND
	ioctlIDValid = 0x40082102 // _IOW('!', 2, __u64)
	ioctlAddFD   = 0x40182103 // _IOW('!', 3, struct seccomp_notif_addfd)
)

type notif struct {
	id    uint64
	pid   uint32
	flags uint32
	nr    int32
	arch  uint32
	ip    uint64
	args  [6]uint64
}

type notifResp struct {
	id    uint64
	val   int64
	error int32
	flags uint32
}

type notifAddFD struct {
	id         uint64
	flags      uint32
	srcfd      uint32
	newfd      uint32
	newfdFlags uint32
}

// Workers is how many threads serve calls; a call that waits (a FIFO
// with no other end, a lease being broken) is set aside rather than
// hold one (the init runs on two Ps: GOMAXPROCS=2). All but one receive the calls of the first listener served
// (the shell's) themselves, each blocked in SECCOMP_IOCTL_NOTIF_RECV:
// a call then costs no hand-over between threads. The last serves what
// the other listeners' receivers queue (the file service's, spawned
// processes') and the opens set aside.
const Workers = 3

// Server serves the listeners of one init with its workers.
type Server struct {
	rule    Rule
	root    int // the init's root, O_PATH: where absolute paths start
	proc    int // its /proc, O_PATH
	procDev uint64
	work    chan *call
	primary chan *listener // the first listener, for the receiving workers
	served  atomic.Bool    // the first listener has been served
}

// call is one notification being served.
type call struct {
	l     *listener
	n     notif
	tries int
	// since: when an open was set aside, to try again (see parkOpen);
	// held: a FIFO's reader kept meanwhile, or -1.
	since time.Time
	held  int
}

// drop forgets a call whose task is gone.
func (c *call) drop() {
	if c.held >= 0 {
		unix.Close(c.held)
		c.held = -1
	}
}

// listener is one filter's listener and the calls in flight on it.
type listener struct {
	fd       int
	inflight sync.WaitGroup
	failed   sync.Once
}

// fail closes a listener whose receiving failed for good: its tasks'
// calls then fail with ENOSYS (the kernel's answer without a listener),
// rather than wait for an answer that never comes. Closed, not open.
func (l *listener) fail() {
	l.failed.Do(func() { unix.Close(l.fd) })
}

// Start opens the root and /proc and starts the workers. It must run in
// the init before its base seccomp filter, which refuses unshare: each
// worker takes an fs_struct of its own (CLONE_FS), for the umask of the
// task it serves, runs join if not nil (the init has each join the
// sandbox's cgroup v1 groups, which are per thread: what a worker makes
// is charged there), and drops its capabilities but a permitted
// CAP_SYS_PTRACE.
func Start(rule Rule, join func() error) (*Server, error) {
	s := &Server{rule: rule, work: make(chan *call, 256), primary: make(chan *listener, Workers)}
	var err error
	if s.root, err = unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err != nil {
		return nil, &os.PathError{Op: "open", Path: "/", Err: err}
	}
	if s.proc, err = unix.Open("/proc", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err != nil {
		return nil, &os.PathError{Op: "open", Path: "/proc", Err: err}
	}
	var st unix.Statfs_t
	if err := unix.Fstatfs(s.proc, &st); err != nil || st.Type != unix.PROC_SUPER_MAGIC {
		return nil, fmt.Errorf("gitnotify: /proc is not procfs (%v)", err)
	}
	var pst unix.Stat_t
	if err := unix.Fstat(s.proc, &pst); err != nil {
		return nil, os.NewSyscallError("fstat", err)
	}
	s.procDev = pst.Dev
	ready := make(chan error, Workers)
	for i := range Workers {
		go s.worker(join, ready, i < Workers-1)
	}
	for range Workers {
		if err := <-ready; err != nil {
			return nil, err
		}
	}
	return s, nil
}

// capPtrace is CAP_SYS_PTRACE's bit.
const capPtrace = 1 << unix.CAP_SYS_PTRACE

// setCaps sets the calling thread's effective set to eff, within a
// permitted set of CAP_SYS_PTRACE alone.
func setCaps(eff uint32) error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	data := [2]unix.CapUserData{{Effective: eff, Permitted: capPtrace}}
	return unix.Capset(&hdr, &data[0])
}

// worker is one serving thread: locked for good (the thread ends with
// the goroutine, never handed back to the runtime).
func (s *Server) worker(join func() error, ready chan<- error, receives bool) {
	runtime.LockOSThread()
	if err := unix.Unshare(unix.CLONE_FS); err != nil {
		ready <- os.NewSyscallError("unshare(CLONE_FS)", err)
		return
	}
	if join != nil {
		if err := join(); err != nil {
			ready <- err
			return
		}
	}
	if err := setCaps(0); err != nil {
		ready <- os.NewSyscallError("capset", err)
		return
	}
	ready <- nil
	if receives {
		l := <-s.primary
		for {
			c := &call{l: l, held: -1}
			if err := ioctl(l.fd, ioctlRecv, unsafe.Pointer(&c.n)); err != nil {
				if err == unix.EINTR || err == unix.ENOENT {
					continue // ENOENT: the task went away meanwhile
				}
				l.fail()
				return
			}
			l.inflight.Add(1)
			s.serve(c)
		}
	}
	for c := range s.work {
		s.serve(c)
	}
}

// Serve receives the calls of listener fd (which it owns) until no task
// uses its filter any more, then closes it; it returns at once. The
// first listener it gets is received by the workers themselves, and
// kept open for the init's life (the init's main thread is among its
// tasks).
func (s *Server) Serve(fd int) {
	l := &listener{fd: fd}
	if s.served.CompareAndSwap(false, true) {
		for range Workers - 1 {
			s.primary <- l
		}
		return
	}
	go func() {
		defer func() {
			l.inflight.Wait()
			unix.Close(fd)
		}()
		for {
			pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			if _, err := unix.Poll(pfd, -1); err != nil {
				if err == unix.EINTR {
					continue
				}
				return
			}
			if pfd[0].Revents&unix.POLLIN == 0 {
				if pfd[0].Revents&(unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) != 0 {
					return // the filter's last task is gone
				}
				continue
			}
			c := &call{l: l, held: -1}
			if err := ioctl(fd, ioctlRecv, unsafe.Pointer(&c.n)); err != nil {
				if err == unix.EINTR || err == unix.ENOENT {
					continue // ENOENT: the task went away meanwhile
				}
				return
			}
			l.inflight.Add(1)
			s.work <- c
		}
	}()
}

func ioctl(fd int, req uintptr, p unsafe.Pointer) error {
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), req, uintptr(p))
	if errno != 0 {
		return errno
	}
	return nil
}

// valid reports whether the call's task still waits for it: then its pid
// was not reused for what was read through /proc.
func (c *call) valid() bool {
	id := c.n.id
	return ioctl(c.l.fd, ioctlIDValid, unsafe.Pointer(&id)) == nil
}

// reply answers the call with val or, if err is not nil, its errno.
func (c *call) reply(val int64, err error) {
	r := notifResp{id: c.n.id, val: val}
	if err != nil {
		var errno unix.Errno
		if !errors.As(err, &errno) {
			errno = unix.EPERM // fail closed
		}
		r.val, r.error = 0, -int32(errno)
	}
	_ = ioctl(c.l.fd, ioctlSend, unsafe.Pointer(&r))
}

// replyFD installs fd in the task and answers its call with the number
// it got there (SECCOMP_ADDFD_FLAG_SEND, Linux 5.14). fd stays ours.
func (c *call) replyFD(fd int, cloexec bool) {
	a := notifAddFD{id: c.n.id, flags: unix.SECCOMP_ADDFD_FLAG_SEND, srcfd: uint32(fd)}
	if cloexec {
		a.newfdFlags = unix.O_CLOEXEC
	}
	if err := ioctl(c.l.fd, ioctlAddFD, unsafe.Pointer(&a)); err != nil && err != unix.ENOENT {
		c.reply(0, err) // EMFILE and the like: the task's own limits
	}
}

// serve performs one call and answers it, unless it is set aside.
func (s *Server) serve(c *call) {
	done := true
	defer func() {
		if v := recover(); v != nil {
			c.reply(0, unix.EPERM) // fail closed; the init must live on
			c.drop()
			done = true
		}
		if done {
			c.l.inflight.Done()
		}
	}()
	t, err := s.task(c)
	if err != nil {
		if err != errGone || c.valid() {
			c.reply(0, unix.EPERM) // the task is there, and cannot be read: closed
		}
		c.drop()
		return
	}
	defer t.close()
	done = s.dispatch(c, t)
}

var errGone = errors.New("the task is gone")

// task is what the serving thread knows of the calling task.
type task struct {
	s         *Server
	c         *call
	tid, tgid int
	umask     int
	mem       int // its /proc/TID/mem, or -1
	fds       []int
}

func (t *task) close() {
	if t.mem >= 0 {
		unix.Close(t.mem)
	}
	for _, fd := range t.fds {
		unix.Close(fd)
	}
}

// keep has fd closed with the task.
func (t *task) keep(fd int) int {
	t.fds = append(t.fds, fd)
	return fd
}

// task reads the calling task's status (its thread group and umask)
// and opens its memory.
func (s *Server) task(c *call) (*task, error) {
	t := &task{s: s, c: c, tid: int(c.n.pid), mem: -1}
	if t.tid <= 0 {
		return nil, unix.EPERM // not in the init's pid namespace: cannot be
	}
	b, err := t.procRead(strconv.Itoa(t.tid) + "/status")
	if err != nil {
		return nil, errGone
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(line, ":")
		v = strings.TrimSpace(v)
		switch k {
		case "Tgid":
			t.tgid, _ = strconv.Atoi(v)
		case "Umask":
			u, _ := strconv.ParseInt(v, 8, 32)
			t.umask = int(u)
		}
	}
	if t.tgid == 0 {
		return nil, errGone
	}
	fd, err := t.asTask(func() (int, error) {
		return unix.Openat(s.proc, strconv.Itoa(t.tid)+"/mem", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	})
	if err != nil {
		return nil, errGone
	}
	t.mem = fd
	return t, nil
}

func (t *task) procRead(name string) ([]byte, error) {
	fd, err := unix.Openat(t.s.proc, name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	b := make([]byte, 4096)
	n, err := unix.Read(fd, b)
	if err != nil {
		return nil, err
	}
	return b[:n], nil
}

// asTask runs open, which opens something of the calling task's own
// through /proc (its memory, a descriptor, its cwd), and if that is
// refused (a task that made itself non-dumpable: ssh-agent, gpg-agent),
// runs it again with CAP_SYS_PTRACE in effect: the task may reach its
// own, and this thread acts for it.
func (t *task) asTask(open func() (int, error)) (int, error) {
	fd, err := open()
	if err != unix.EACCES && err != unix.EPERM {
		return fd, err
	}
	if err := setCaps(capPtrace); err != nil {
		return -1, err
	}
	fd, err = open()
	if cerr := setCaps(0); cerr != nil {
		// A thread that cannot lower its capabilities again must serve
		// nothing more: end it (it is locked: the runtime discards it).
		if fd >= 0 {
			unix.Close(fd)
		}
		runtime.Goexit()
	}
	return fd, err
}

// str reads the NUL-terminated string at addr in the task's memory.
func (t *task) str(addr uint64) (string, error) {
	if addr == 0 {
		return "", unix.EFAULT
	}
	const max = unix.PathMax
	var out []byte
	buf := make([]byte, max)
	for len(out) < max {
		n := 4096 - int(addr%4096) // to the page's end: the next may be unmapped
		if n > max-len(out) {
			n = max - len(out)
		}
		got, err := unix.Pread(t.mem, buf[:n], int64(addr))
		if err != nil || got <= 0 {
			return "", unix.EFAULT
		}
		if i := indexNUL(buf[:got]); i >= 0 {
			out = append(out, buf[:i]...)
			return string(out), nil
		}
		out = append(out, buf[:got]...)
		addr += uint64(got)
	}
	return "", unix.ENAMETOOLONG
}

func indexNUL(b []byte) int {
	for i, c := range b {
		if c == 0 {
			return i
		}
	}
	return -1
}

// dirFD opens, O_PATH, where a relative path of the task's starts: its
// working directory (AT_FDCWD) or its descriptor dirfd, as the kernel
// would take it for path p. The caller checks valid afterwards.
func (t *task) dirFD(dirfd int32, p string) (int, error) {
	if strings.HasPrefix(p, "/") {
		return t.s.root, nil
	}
	name := strconv.Itoa(t.tid) + "/cwd"
	if dirfd != unix.AT_FDCWD {
		if dirfd < 0 {
			return -1, unix.EBADF
		}
		name = strconv.Itoa(t.tid) + "/fd/" + strconv.Itoa(int(dirfd))
	}
	fd, err := t.asTask(func() (int, error) {
		return unix.Openat(t.s.proc, name, unix.O_PATH|unix.O_CLOEXEC, 0)
	})
	if err != nil {
		if err == unix.ENOENT && dirfd != unix.AT_FDCWD {
			return -1, unix.EBADF
		}
		return -1, err
	}
	t.keep(fd)
	if p == "" {
		return fd, nil // AT_EMPTY_PATH: the descriptor itself
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return -1, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return -1, unix.ENOTDIR
	}
	return fd, nil
}
