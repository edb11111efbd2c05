package terminal

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// chunkSize is the size of one chunk. The master's line discipline hands
// out at most 4095 bytes per read (strace of a 1 GiB stream: no read of
// the master returned more), so the reader reads again while more is
// there, up to this, before it hands the chunk over: a command printing
// fast then costs one goroutine hand-over (a wake-up, often of a sleeping
// thread) per 16 KiB, not per 4 KiB.
const chunkSize = 16 << 10

// queueDepth bounds how many unread chunks a shell may queue while nobody is
// in Run (at most 512 KiB; 128 KiB where each read came on its own). Past
// that the reader stops reading, the PTY fills and the program blocks on
// write: backpressure, not unbounded memory.
const queueDepth = 32

// chunk is what one readOnce read from the PTY master, numbered in read
// order.
type chunk struct {
	b   []byte
	seq uint64
}

// shell is one bash process on one PTY, with the goroutines that own it.
type shell struct {
	cmd    *exec.Cmd
	master *os.File
	slave  *os.File // held open: termios, input flush, and the terminal's identity for fd checks
	tfd    int      // slave's descriptor (os.File.Fd costs a syscall each call)
	pid    int      // bash's pid: the foreground check, /proc/PID/*, signals
	leader int      // the started process (bash, or the sandbox init over it); its session is killed on close

	chunks   chan chunk    // PTY output, in order
	closing  chan struct{} // closed by close before it closes the master
	stopOnce sync.Once
	exited   chan struct{} // closed when the bash process has been reaped
	exitMu   sync.Mutex
	status   int // bash's exit status, valid once exited is closed

	// rmu orders reads of the master between the reader goroutine and
	// sync, and seq numbers them, so sync can tell when every byte read
	// before a point has been consumed.
	rmu sync.Mutex
	seq uint64

	// shape is what bash looks like at its prompt (promptShape), replaced
	// whole, never changed in place: Interrupt reads it without the
	// terminal's lock while a Run may learn a new one (exec bash).
	shape      atomic.Pointer[promptShape]
	markerOnly bool   // bash cannot be watched at all: its prompt decides
	nofile     uint64 // bash's soft open-files limit at start
	tty        unix.Stat_t
	ttyNr      uint64 // the PTY as /proc/PID/stat's tty_nr names it

	proc procFiles // bash's /proc files, kept open for look

	pool sync.Pool
	wg   sync.WaitGroup
}

// startShell starts bash on a fresh PTY with rc as its --rcfile, and the
// reader and reaper goroutines.
func startShell(opts *Options, rcPath string) (*shell, error) {
	ptmx, tty, err := pty.Open()
	if err != nil {
		return nil, fmt.Errorf("open pty: %w", err)
	}
	master, err := nonblocking(ptmx)
	if err != nil {
		tty.Close()
		return nil, err
	}
	if err := configureTTY(tty, opts.Cols, opts.Rows); err != nil {
		master.Close()
		tty.Close()
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
			tty.Close()
			return nil, fmt.Errorf("prepare shell: %w", err)
		}
	}
	if err := cmd.Start(); err != nil {
		master.Close()
		tty.Close()
		return nil, fmt.Errorf("start %s: %w", opts.Shell, err)
	}
	leader := cmd.Process.Pid
	fail := func(err error) (*shell, error) {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		master.Close()
		tty.Close()
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
		cmd:     cmd,
		master:  master,
		slave:   tty,
		pid:     pid,
		leader:  leader,
		chunks:  make(chan chunk, queueDepth),
		closing: make(chan struct{}),
		exited:  make(chan struct{}),
	}
	sh.tfd = int(tty.Fd())
	if err := unix.Fstat(sh.tfd, &sh.tty); err != nil {
		return fail(fmt.Errorf("stat pty: %w", err))
	}
	sh.ttyNr = ttyNumber(sh.tty.Rdev)
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

// The terminal settings the shell needs: echo off (the command line is
// ours, not output), output post-processing off (a program's "\n" arrives
// as "\n", not "\r\n"), canonical mode and signals on (C-c and C-d mean
// what they mean to programs).
const (
	lflagOff = unix.ECHO | unix.ECHOE | unix.ECHOK | unix.ECHONL | unix.ECHOCTL
	lflagOn  = unix.ICANON | unix.ISIG
	oflagOff = unix.ONLCR | unix.OCRNL
	iflagOn  = unix.IUTF8 | unix.ICRNL
	iflagOff = unix.IXON | unix.INLCR | unix.IGNCR
)

// configureTTY sets the settings above and the window size.
func configureTTY(tty *os.File, cols, rows int) error {
	if _, err := fixTermios(int(tty.Fd())); err != nil {
		return err
	}
	if err := pty.Setsize(tty, &pty.Winsize{Cols: uint16(cols), Rows: uint16(rows)}); err != nil {
		return fmt.Errorf("set window size: %w", err)
	}
	return nil
}

// fixTermios puts back the settings the shell needs and reports whether
// anything had changed (stty echo, stty -isig, reset).
func fixTermios(fd int) (bool, error) {
	t, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return false, fmt.Errorf("get termios: %w", err)
	}
	old := *t
	t.Lflag &^= lflagOff
	t.Lflag |= lflagOn
	t.Oflag &^= oflagOff
	t.Iflag |= iflagOn
	t.Iflag &^= iflagOff
	t.Cc[unix.VINTR] = 0x03
	t.Cc[unix.VEOF] = 0x04
	t.Cc[unix.VSUSP] = 0x1a
	t.Cc[unix.VQUIT] = 0x1c
	t.Cc[unix.VERASE] = 0x7f
	if *t == old {
		return false, nil
	}
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, t); err != nil {
		return false, fmt.Errorf("set termios: %w", err)
	}
	return true, nil
}

// read copies PTY output into chunks until the master is closed. The
// terminal holds the slave open, so bash exiting is seen by the reaper, not
// as EOF here.
//
// It stays in one RawRead: a chunk that ended on an empty master (EAGAIN)
// is handed over and the reader waits for the next edge at once. A new
// RawRead would first read the master again (RawRead forgets an edge that
// came before it), a syscall that found nothing every time, between the
// hand-over and the waiting call's turn on this P.
func (sh *shell) read() {
	defer sh.wg.Done()
	defer close(sh.chunks)
	rc, err := sh.master.SyscallConn()
	if err != nil {
		return
	}
	bp := sh.pool.Get().(*[]byte)
	_ = rc.Read(func(fd uintptr) bool {
		for {
			n, seq, rerr := sh.readOnce(int(fd), *bp)
			if n > 0 {
				select {
				case sh.chunks <- chunk{(*bp)[:n], seq}:
				case <-sh.closing:
					return true // close waits for this RawRead to end
				}
				bp = sh.pool.Get().(*[]byte)
			}
			switch rerr {
			case nil, unix.EINTR: // b filled up, or a signal: more may be there
			case unix.EAGAIN:
				return false // empty: wait for the next edge
			default:
				return true // closed, or an error
			}
		}
	})
	sh.pool.Put(bp)
}

// readOnce reads the master without blocking until b is full or nothing
// more is there, and numbers what it read as one, all under rmu: sync
// reads the master too, and orders its reads against chunks by their
// numbers, so no read of its may fall between two that make one chunk.
// err is what ended the reading (EAGAIN: the master was empty then; io.EOF
// for a read of nothing), nil when b filled up.
func (sh *shell) readOnce(fd int, b []byte) (int, uint64, error) {
	sh.rmu.Lock()
	defer sh.rmu.Unlock()
	n := 0
	var err error
	for n < len(b) {
		var m int
		m, err = unix.Read(fd, b[n:])
		if m <= 0 {
			if err == nil {
				err = io.EOF
			}
			break
		}
		n += m
	}
	if n > 0 {
		sh.seq++
		return n, sh.seq, err
	}
	return 0, sh.seq, err
}

// release returns a chunk's buffer once its bytes have been consumed.
func (sh *shell) release(b []byte) {
	b = b[:cap(b)]
	sh.pool.Put(&b)
}

// reap waits for bash to exit, then kills whatever it left in its session.
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

// procView is the kernel's view of bash at one moment: the facts a command
// cannot forge by printing, whatever it did to the shell's variables.
type procView struct {
	ok        bool  // /proc/PID/syscall and io could be read
	fg        bool  // the PTY's foreground process group is bash's own
	state     byte  // R, S, T, Z... from /proc/PID/stat
	nr        int64 // the syscall bash is blocked in; -1 when running
	args      [3]uint64
	syscr     uint64 // read syscalls bash has made
	startcode uint64 // where bash's code is mapped: exec changes it
}

// look reads the view. /proc/PID/stat comes first: its tpgid is the
// foreground process group of bash's controlling terminal, which is the
// PTY's own group (TIOCGPGRP) when tty_nr names the PTY, so the check
// costs no ioctl of its own; where stat cannot be read or names another
// terminal, the ioctl decides. While a job holds the terminal nothing else
// is read (the poll of a long command costs one pread). syscr is read
// before the syscall: if it shows bash has read past a point, a prompt
// read seen after it is a later one.
func (sh *shell) look() procView {
	v := procView{nr: -2}
	sh.proc.read(sh.pid, func(which int, b []byte) bool {
		switch which {
		case procStat:
			pg, ok := sh.statForeground(b, &v)
			if !ok {
				p, err := sh.foreground()
				if err != nil {
					return false
				}
				pg = p
			}
			if v.fg = pg == sh.pid; !v.fg {
				v.state, v.startcode = 0, 0 // as before: nothing is read of a bash in the background
			}
			return v.fg
		case procIO:
			v.syscr, v.ok = parseSyscr(b)
		case procSyscall:
			if b == nil {
				v.ok = false
				return false
			}
			f := fields(b, 4)
			switch {
			case len(f) > 0 && string(f[0]) == "running":
				v.nr = -1
			case len(f) >= 4:
				v.nr, _ = strconv.ParseInt(string(f[0]), 10, 64)
				for i := range 3 {
					v.args[i], _ = strconv.ParseUint(string(bytes.TrimPrefix(f[i+1], []byte("0x"))), 16, 64)
				}
			}
		}
		return true
	})
	return v
}

// statForeground takes bash's state and image from its /proc/PID/stat
// line b into v, and returns the foreground group of its controlling
// terminal; ok is false unless that terminal is the PTY (or b is nil).
func (sh *shell) statForeground(b []byte, v *procView) (int, bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	// state, ppid, pgrp, session, tty_nr, tpgid, ... startcode (f[23])
	f := fields(b[i+1:], 25)
	if len(f) > 0 && len(f[0]) == 1 {
		v.state = f[0][0]
	}
	if len(f) > 23 {
		v.startcode, _ = strconv.ParseUint(string(f[23]), 10, 64)
	}
	if len(f) < 6 {
		return 0, false
	}
	nr, err := strconv.ParseUint(string(f[4]), 10, 32)
	if err != nil || nr != sh.ttyNr {
		return 0, false
	}
	pg, err := strconv.Atoi(string(f[5]))
	if err != nil {
		return 0, false
	}
	return pg, true
}

// ttyNumber is dev as /proc/PID/stat's tty_nr spells it (the kernel's
// new_encode_dev): minor's low 8 bits, major, minor's rest.
func ttyNumber(dev uint64) uint64 {
	major, minor := uint64(unix.Major(dev)), uint64(unix.Minor(dev))
	return minor&0xff | major<<8 | (minor&^0xff)<<12
}

// lookReads is look for telling injected lines from bash's own prompt
// while it idles: only bash's read count (/proc/PID/stat and syscall are
// not needed), and only while bash holds the terminal.
func (sh *shell) lookReads() procView {
	v := procView{nr: -2}
	if pg, err := sh.foreground(); err != nil || pg != sh.pid {
		return v
	}
	v.fg = true
	v.syscr, v.ok = sh.reads()
	return v
}

// reads is bash's read count (/proc/PID/io), whoever holds the terminal:
// typing a command takes it as the baseline that later looks compare
// with, and bash is at its prompt then.
func (sh *shell) reads() (syscr uint64, ok bool) {
	sh.proc.readOne(sh.pid, procIO, func(b []byte) { syscr, ok = parseSyscr(b) })
	return syscr, ok
}

// parseSyscr finds the read count in /proc/PID/io.
func parseSyscr(b []byte) (uint64, bool) {
	i := bytes.Index(b, []byte("syscr: "))
	if i < 0 {
		return 0, false
	}
	rest := b[i+7:]
	j := bytes.IndexByte(rest, '\n')
	if j < 0 {
		return 0, false
	}
	n, _ := strconv.ParseUint(string(rest[:j]), 10, 64)
	return n, true
}

// fields returns the first n space-separated fields of b: look needs 25
// of a stat line's 52, and splitting them all was a visible cost.
func fields(b []byte, n int) [][]byte {
	out := make([][]byte, 0, n)
	for len(out) < n {
		for len(b) > 0 && (b[0] == ' ' || b[0] == '\n') {
			b = b[1:]
		}
		if len(b) == 0 {
			break
		}
		i := 0
		for i < len(b) && b[i] != ' ' && b[i] != '\n' {
			i++
		}
		out = append(out, b[:i])
		b = b[i:]
	}
	return out
}

// learn records what bash looks like at its prompt; v must be taken while
// bash is known to be there. It reports whether bash was reading fd 0.
func (sh *shell) learn(v procView) bool {
	if !v.ok {
		return false
	}
	if v.nr != unix.SYS_READ || v.args[0] != 0 {
		return false
	}
	sh.shape.Store(&promptShape{buf: v.args[1], len: v.args[2], image: v.startcode, procOK: true})
	return true
}

// promptShape is what bash looks like at its prompt, learned at the first
// prompt: read(0, buf, len) is bash's own line reader, which the read
// builtin (a different buffer and size) never is.
type promptShape struct {
	buf, len uint64
	image    uint64 // startcode of bash's image; exec changes it
	procOK   bool   // /proc/PID/syscall could be read
}

// prompt is the shape learned last (zero before the first prompt).
func (sh *shell) prompt() promptShape {
	if p := sh.shape.Load(); p != nil {
		return *p
	}
	return promptShape{}
}

// forgetImage keeps what was learned but the image: a command replaced
// bash (exec bash), and the new one's is learned at its prompt.
func (sh *shell) forgetImage() {
	p := sh.prompt()
	p.image = 0
	sh.shape.Store(&p)
}

// atPrompt reports whether v shows bash blocked in its own line reader, in
// the foreground, and not stopped.
func (sh *shell) atPrompt(v procView) bool {
	p := sh.prompt()
	return v.fg && v.state != 'T' && v.nr == unix.SYS_READ && v.args[0] == 0 &&
		v.args[1] == p.buf && v.args[2] == p.len && v.startcode == p.image
}

// otherPrompt reports whether v shows a different bash image (the command
// ran exec bash) waiting for a line: its line reader, or readline's select.
func (sh *shell) otherPrompt(v procView) bool {
	p := sh.prompt()
	if !v.fg || v.state == 'T' || v.startcode == p.image {
		return false
	}
	if v.nr == unix.SYS_READ && v.args[0] == 0 && v.args[2] == p.len {
		return true
	}
	return v.nr == unix.SYS_PSELECT6 && v.args[0] == 1
}

// waitingInput reports whether v shows bash itself waiting on the
// terminal in any way (its line reader, readline's select, a read
// builtin): only with a fresh prompt marker does that mean "at a prompt".
func (sh *shell) waitingInput(v procView) bool {
	if !v.fg || v.state == 'T' {
		return false
	}
	return v.nr == unix.SYS_READ && v.args[0] == 0 || v.nr == unix.SYS_PSELECT6 && v.args[0] == 1
}

// interactiveBash reports whether bash's pid now runs an interactive bash:
// the same executable, with no script or -c command on its command line.
func (sh *shell) interactiveBash() bool {
	base := "/proc/" + strconv.Itoa(sh.pid) + "/"
	b, err := os.ReadFile(base + "cmdline")
	if err != nil {
		return false
	}
	args := bytes.Split(bytes.TrimRight(b, "\x00"), []byte{0})
	if len(args) == 0 || filepath.Base(string(args[0])) != "bash" && filepath.Base(string(args[0])) != "-bash" {
		exe, err := os.Readlink(base + "exe")
		if err != nil || filepath.Base(exe) != "bash" {
			return false
		}
	}
	for i := 1; i < len(args); i++ {
		a := string(args[i])
		switch {
		case a == "--rcfile" || a == "--init-file" || a == "-o" || a == "-O" || a == "+O" || a == "+o":
			i++ // takes an argument
		case a == "--":
			return i+1 == len(args)
		case len(a) > 1 && a[0] == '-' && a[1] == '-':
		case len(a) > 1 && (a[0] == '-' || a[0] == '+'):
			if strings.ContainsRune(a, 'c') {
				return false // bash -c: a command, not a prompt
			}
		default:
			return false // a script
		}
	}
	return true
}

// sameSession reports whether pid is in the session that leader leads.
func sameSession(pid, leader int) bool {
	sid, err := unix.Getsid(pid)
	return err == nil && sid == leader
}

// selfPID is this process's pid, for kcmp.
var selfPID = os.Getpid()

// kcmpFile is kcmp(2)'s KCMP_FILE (linux/kcmp.h), which x/sys/unix does
// not name.
const kcmpFile = 0

// nofileLimit reads bash's soft RLIMIT_NOFILE (0 if unknown).
func (sh *shell) nofileLimit() uint64 {
	var lim unix.Rlimit
	if err := unix.Prlimit(sh.pid, unix.RLIMIT_NOFILE, nil, &lim); err != nil {
		return 0
	}
	return lim.Cur
}

// fdOnTTY reports whether bash's descriptor fd is the terminal, by any
// route: the file it was started with, /dev/pts/N or /proc/self/fd/0
// opened anew, or /dev/tty.
func (sh *shell) fdOnTTY(fd int) bool {
	// Almost always it is the very file bash was started with, which the
	// terminal holds as the slave: kcmp says so in one cheap call, where
	// the stat below resolves a /proc magic link (6 µs, every command).
	if r, _, errno := unix.Syscall6(unix.SYS_KCMP, uintptr(sh.pid), uintptr(selfPID), kcmpFile, uintptr(fd), uintptr(sh.tfd), 0); errno == 0 && r == 0 {
		return true
	}
	st, err := sh.statFD(fd)
	if err != nil {
		// Closed (exec 2>&-) is not the terminal; anything else cannot
		// be told, so assume it is rather than repair blindly.
		return !errors.Is(err, unix.ENOENT)
	}
	if st.Dev == sh.tty.Dev && st.Ino == sh.tty.Ino && st.Rdev == sh.tty.Rdev {
		return true
	}
	// /dev/tty is one device (5,0) for every terminal: an open file of it
	// is the controlling terminal of the process that opened it, which for
	// bash (exec >/dev/tty) is bash's own. Any other character device, a
	// file or a pipe is not the terminal.
	if st.Mode&unix.S_IFMT != unix.S_IFCHR || unix.Major(st.Rdev) != 5 || unix.Minor(st.Rdev) != 0 {
		return false
	}
	ctty, ok := sh.ctty()
	return !ok || ctty == sh.tty.Rdev
}

// fdMayDetour reports whether bash's descriptor fd is a pipe or a socket,
// whose reader may pass what bash writes on to the terminal later (exec
// 2> >(tee log)); also when that cannot be told.
func (sh *shell) fdMayDetour(fd int) bool {
	st, err := sh.statFD(fd)
	if err != nil {
		return !errors.Is(err, unix.ENOENT)
	}
	m := st.Mode & unix.S_IFMT
	return m == unix.S_IFIFO || m == unix.S_IFSOCK
}

// statFD stats what bash's descriptor fd is open on, through /proc.
func (sh *shell) statFD(fd int) (unix.Stat_t, error) {
	var st unix.Stat_t
	err := unix.Stat("/proc/"+strconv.Itoa(sh.pid)+"/fd/"+strconv.Itoa(fd), &st)
	return st, err
}

// ctty reads bash's controlling terminal (tty_nr, /proc/PID/stat's 7th
// field) as a device number comparable with a stat's Rdev.
func (sh *shell) ctty() (uint64, bool) {
	var dev uint64
	var ok bool
	sh.proc.readOne(sh.pid, procStat, func(b []byte) {
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			return
		}
		f := fields(b[i+1:], 5) // state, ppid, pgrp, session, tty_nr
		if len(f) < 5 {
			return
		}
		n, err := strconv.ParseUint(string(f[4]), 10, 32)
		if err != nil {
			return
		}
		// The kernel's encoding: minor's low 8 bits, major, minor's rest.
		dev, ok = unix.Mkdev(uint32(n>>8)&0xfff, uint32(n&0xff)|uint32(n>>12)&^0xff), true
	})
	return dev, ok
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

// signalForeground sends sig to the foreground process group (bash's own
// when bash runs a builtin loop), or to bash when the group is unknown.
func (sh *shell) signalForeground(sig syscall.Signal) (int, error) {
	pgrp, err := sh.foreground()
	if err != nil || pgrp <= 0 {
		return 0, unix.Kill(sh.pid, sig)
	}
	return pgrp, killGroup(pgrp, sig)
}

// killGroup signals process group pg. TIOCGPGRP answers 0, without an
// error, once nobody holds the terminal's foreground (bash gone, its
// session's last job exited), and kill(-0) would signal harnessd's own
// group: a command that ends the shell (`exec sleep 30`) and is then
// interrupted would have had the daemon SIGINT itself. So pg must name a
// group, and not init's.
func killGroup(pg int, sig unix.Signal) error {
	if pg <= 1 {
		return fmt.Errorf("signal %v: no process group to signal (%d)", sig, pg)
	}
	return unix.Kill(-pg, sig)
}

// interrupt sends SIGINT to the foreground job as C-c would. bash ignores
// a SIGINT that reaches it in the moment between forking a command and
// handing it the terminal, so interrupt waits a moment for a command to
// hold the terminal and signals that command's group; a builtin loop that
// never forks gets it after the moment. A job that was already exiting
// when the signal came (a loop's short command: `while true; do date;
// done`) lets bash go on with the loop's next job, so every new job that
// takes the terminal is signalled too, for as long as new ones keep
// coming (each within 200ms of the last, up to a second and 25 of them):
// under load three tries missed about one loop in 80. It returns once
// bash is back at its prompt, or no new job came for 200ms (a program
// that handles SIGINT itself, like a REPL, is signalled once).
func (sh *shell) interrupt() error {
	pg, first, firstOK, err := sh.sigint()
	if err != nil {
		return err
	}
	// Also when bash itself got it (no job held the terminal yet): under
	// load bash may fork the command only now, past the moment it ignores
	// SIGINT in, and the command's job is then signalled.
	resent := 0
	begin, last := time.Now(), time.Now()
	for resent < 25 && time.Since(last) < 200*time.Millisecond && time.Since(begin) < time.Second {
		time.Sleep(2 * time.Millisecond)
		cur, err := sh.foreground()
		if err != nil || cur <= 0 {
			return nil // nobody holds the terminal: nothing more to signal
		}
		switch {
		case cur == sh.pid:
			if sh.prompt().procOK && sh.atPrompt(sh.look()) {
				return nil
			}
		case cur != pg:
			if s, ok := startTime(cur); firstOK && ok && s < first {
				// A group older than the one signalled is not a new
				// job: a nested interactive shell taking its terminal
				// back after its job died (its traps would run, its
				// line be lost). Jobs it starts later are signalled.
				pg = cur
				continue
			}
			_ = killGroup(cur, unix.SIGINT)
			pg, last = cur, time.Now()
			resent++
		}
	}
	return nil
}

// startTime is when process pid started, in clock ticks since boot, from
// /proc/PID/stat; ok is false when it cannot be read.
func startTime(pid int) (uint64, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := bytes.Fields(b[i+1:]) // from field 3 (state): starttime, field 22, is f[19]
	if len(f) < 20 {
		return 0, false
	}
	v, err := strconv.ParseUint(string(f[19]), 10, 64)
	return v, err == nil
}

// sigint signals the foreground group once and reports which.
//
// It also returns when the signalled group's leader started (ok false if
// that could not be read), read before the signal: a job that dies of it
// at once leaves no /proc entry to read after, and interrupt needs it to
// tell a newer job from an older group taking the terminal back (found
// when a nested shell got a SIGINT of its own on a loaded machine).
func (sh *shell) sigint() (pg int, start uint64, ok bool, err error) {
	for try := 0; ; try++ {
		pg, err = sh.foreground()
		for end := time.Now().Add(50 * time.Millisecond); err == nil && pg == sh.pid && time.Now().Before(end); {
			time.Sleep(time.Millisecond)
			pg, err = sh.foreground()
		}
		if err != nil || pg <= 0 {
			start, ok = startTime(sh.pid)
			return sh.pid, start, ok, unix.Kill(sh.pid, unix.SIGINT)
		}
		start, ok = startTime(pg)
		err = killGroup(pg, unix.SIGINT)
		if !errors.Is(err, unix.ESRCH) || try == 3 {
			return pg, start, ok, err
		}
	}
}

// isig reports whether the terminal turns C-c into SIGINT now (a program
// in raw mode, such as vi, reads it as a key instead).
func (sh *shell) isig() bool {
	t, err := unix.IoctlGetTermios(sh.tfd, unix.TCGETS)
	return err == nil && t.Lflag&unix.ISIG != 0
}

// write types b into the terminal.
func (sh *shell) write(b []byte) error {
	_, err := sh.master.Write(b)
	return err
}

// flushInput discards input waiting in the terminal that bash has not read:
// half a line a program injected or typed keys left behind, which would
// otherwise be glued to the front of the next command line.
func (sh *shell) flushInput() {
	_ = unix.IoctlSetInt(sh.tfd, unix.TCFLSH, unix.TCIFLUSH)
}

// close kills bash and everything in its session and waits for the
// goroutines. Bash gets SIGHUP first (it passes it on to its jobs); what is
// left after the grace period is killed, the started process last (a
// sandbox init, whose death ends its pid namespace). Safe to call more than
// once.
func (sh *shell) close(grace time.Duration) {
	if sh.alive() {
		_ = unix.Kill(sh.pid, unix.SIGCONT)
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
	sh.stopOnce.Do(func() { close(sh.closing) }) // the reader's hand-over no longer waits: Close waits for its RawRead
	sh.master.Close()
	sh.slave.Close()
	for c := range sh.chunks {
		sh.release(c.b)
	}
	sh.wg.Wait()
	sh.proc.close()
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
