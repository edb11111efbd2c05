package python

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/core/terminal"
	"github.com/harnessd/harnessd/core/terminal/clean"
)

// Command is the interpreter a Starter starts: Path looked up in the
// PATH of Env where it runs (the sandbox's filesystem), with Args.
type Command struct {
	Path string
	Args []string
	Env  []string
	Dir  string
}

// Process is an interpreter a Starter started.
type Process interface {
	// Signal sends sig to the interpreter's process group: the
	// interpreter and what its cell started.
	Signal(sig syscall.Signal) error
	// Close kills the process group, if anything is left of it, and
	// releases the process. Safe to call more than once.
	Close() error
	// Exited reports whether the interpreter itself has exited (a
	// process it forked may still hold its terminal and fd 3).
	Exited() bool
}

// Starter starts cmd with tty (a PTY's slave) as its stdin, stdout,
// stderr and controlling terminal, in a session of its own, and ctl as
// its fd 3. The caller closes its own tty and ctl once it returns.
type Starter func(ctx context.Context, cmd Command, tty, ctl *os.File) (Process, error)

// Options configures an Interp. Zero fields take their defaults.
type Options struct {
	Start  Starter  // required
	Python string   // the interpreter; default "python3"
	Dir    string   // where it starts (the shell's directory)
	Env    []string // its environment; PATH should be the sandbox's
	// Plain runs cells without IPython even where it is importable.
	Plain bool

	SoftTimeout time.Duration // no new output for this long returns; default 10s
	HardTimeout time.Duration // a cell running this long is interrupted; default 30m
	KillGrace   time.Duration // SIGINT -> kill, waits this; default 2s
	MaxWait     time.Duration // bounds one call whatever is printed; default 30s
	Settle      time.Duration // quiet after input before a call returns; default 300ms
	StartWait   time.Duration // how long the driver may take to start (IPython's import); default 30s
	Logger      *slog.Logger
}

func (o *Options) setDefaults() {
	if o.Python == "" {
		o.Python = "python3"
	}
	if o.SoftTimeout <= 0 {
		o.SoftTimeout = terminal.DefaultSoftTimeout
	}
	if o.HardTimeout <= 0 {
		o.HardTimeout = terminal.DefaultHardTimeout
	}
	if o.KillGrace <= 0 {
		o.KillGrace = terminal.DefaultKillGrace
	}
	if o.MaxWait <= 0 {
		o.MaxWait = terminal.DefaultMaxWait
	}
	if o.Settle <= 0 {
		o.Settle = terminal.DefaultSettle
	}
	if o.StartWait <= 0 {
		o.StartWait = 30 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// Outcome is what became of one call of Run; the session turns it into
// a Result with the output's trimming.
type Outcome struct {
	ExitCode  int // 0, 1 (an exception, or the interpreter died), -1 still running
	Error     string
	TimedOut  bool
	StateLost bool
	IPython   bool
	Note      string
	Duration  time.Duration
}

// Interp is one session's persistent Python. Run calls are serialised;
// Close may be called at any time.
type Interp struct {
	opts Options

	run    sync.Mutex // one call at a time
	mu     sync.Mutex // p, cells, started, closed
	p      *proc
	cells  uint64
	starts int
	closed bool
	lost   string // why the last interpreter went, for the next call's note
}

// New returns an Interp; nothing starts before the first cell.
func New(opts Options) *Interp {
	opts.setDefaults()
	return &Interp{opts: opts}
}

// proc is one running interpreter and its goroutines.
type proc struct {
	ps      Process
	master  *os.File
	ctl     *net.UnixConn
	ipython bool
	chunks  chan []byte   // PTY output; closed when the PTY reads end
	notify  chan struct{} // a cell's end arrived (cap 1)
	gone    chan struct{} // closed when the status channel ends: the interpreter is gone
	ready   chan status
	wg      sync.WaitGroup
	carry   []byte // raw output after the last fence: the next call's first bytes

	// Guarded by Interp.mu.
	cell   *cell
	killed string // why the harness killed it, if it did
	closed bool
}

// cell is one running cell.
type cell struct {
	id       uint64
	token    string // random, echoed by the driver in the cell's end
	begin    time.Time
	done     bool
	err      string
	timedOut bool
	hard     *time.Timer
}

// ErrClosed is returned by Run after Close.
var ErrClosed = errors.New("python: closed")

// Close kills the interpreter, if one runs. Safe to call more than once.
func (i *Interp) Close() error {
	i.mu.Lock()
	i.closed = true
	p := i.p
	i.p = nil
	i.mu.Unlock()
	if p != nil {
		p.close()
	}
	return nil
}

// Run carries out r and streams the cell's cleaned output to w.
// An error means the call could not wait (ctx ended) or Close was
// called; the Outcome is filled in as far as it got.
func (i *Interp) Run(ctx context.Context, r Run, w io.Writer) (Outcome, error) {
	i.run.Lock()
	defer i.run.Unlock()
	begin := time.Now()
	var out Outcome
	note := func(s string) { out.Note = joinNote(out.Note, s) }

	i.mu.Lock()
	if i.closed {
		i.mu.Unlock()
		return out, ErrClosed
	}
	p := i.p
	if r.Reset && p != nil {
		i.p = nil
		p.closeLocked(i)
		p = nil
		i.lost = "it was reset as asked"
	}
	if p != nil && p.dead() {
		// It went between calls (a cell's thread called os._exit, the
		// hard timeout's kill): say so once, as the next call's note.
		i.lost = p.killed
		if i.lost == "" {
			i.lost = "it exited after the last call"
		}
		if p.cell != nil {
			p.cell.hard.Stop()
		}
		i.p = nil
		go p.close()
		p = nil
	}
	if p == nil && i.lost != "" {
		out.StateLost = true
		note("Python was restarted (" + i.lost + "): variables and imports of earlier cells are gone.")
		i.lost = ""
	}
	var c *cell
	if p != nil {
		c = p.cell
	}
	running := c != nil && !c.done
	i.mu.Unlock()

	cw := clean.NewWriter(w)
	defer cw.Flush()

	switch {
	case running && r.IsInput:
		if err := i.sendKeys(p, r.Code); err != nil {
			note("The input was not sent: " + err.Error())
		}
		b, _ := terminal.KeyBytes(r.Code)
		return i.wait(ctx, p, c, cw, begin, out, true, string(b) == "\x03")
	case running && r.Code != "":
		out.ExitCode = -1
		note("The previous cell is still running, so this code was not run. Send empty code to wait for it, " +
			`is_input with a line for its input(), or is_input "C-c" to interrupt it; then send this code again.`)
		return i.wait(ctx, p, c, cw, begin, out, false, false)
	case running:
		return i.wait(ctx, p, c, cw, begin, out, false, false)
	}
	if c != nil && c.done && p.cell == c {
		// It ended after the last call returned: its last output first.
		if err := i.finish(p, c, cw); err != nil {
			return out, err
		}
		i.mu.Lock()
		p.cell = nil
		i.mu.Unlock()
	}
	switch {
	case r.IsInput:
		note("No cell is running: the input was not sent.")
		out.Duration = time.Since(begin)
		return out, nil
	case strings.TrimSpace(r.Code) == "":
		if !r.Reset {
			note("No cell is running; give code to run one.")
		}
		out.Duration = time.Since(begin)
		return out, nil
	}
	if p == nil {
		var err error
		if p, err = i.start(ctx); err != nil {
			out.ExitCode, out.Error = 1, "StartError"
			note("Python could not be started: " + err.Error())
			out.Duration = time.Since(begin)
			if ctx.Err() != nil {
				return out, ctx.Err()
			}
			return out, nil
		}
	}
	out.IPython = p.ipython
	if len(p.carry) > 0 {
		cw.Write(p.carry)
		p.carry = nil
	}
	// Input typed ahead for no one is not the new cell's.
	_ = unix.IoctlSetInt(int(p.master.Fd()), unix.TCFLSH, unix.TCIFLUSH)
	i.mu.Lock()
	i.cells++
	var tb [12]byte
	_, _ = rand.Read(tb[:])
	c = &cell{id: i.cells, token: hex.EncodeToString(tb[:]), begin: time.Now()}
	p.cell = c
	hard := i.opts.HardTimeout
	if d := terminal.Timeout(r.TimeoutS); d > 0 {
		hard = d
	}
	c.hard = time.AfterFunc(hard, func() { i.expire(p, c) })
	i.mu.Unlock()
	if err := writeRequest(p.ctl, request{Op: "run", ID: c.id, Token: c.token, Code: r.Code}); err != nil {
		i.kill(p, "its control channel failed: "+err.Error())
	}
	return i.wait(ctx, p, c, cw, begin, out, false, false)
}

// start starts a fresh interpreter and waits for its driver's ready.
func (i *Interp) start(ctx context.Context) (*proc, error) {
	master, tty, err := openPTY()
	if err != nil {
		return nil, err
	}
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		master.Close()
		tty.Close()
		return nil, os.NewSyscallError("socketpair", err)
	}
	mine, theirs := os.NewFile(uintptr(pair[0]), "python-ctl"), os.NewFile(uintptr(pair[1]), "python-ctl-child")
	cmd := Command{Path: i.opts.Python, Args: append([]string{i.opts.Python}, driverArgs(i.opts.Plain)...), Env: i.opts.Env, Dir: i.opts.Dir}
	ps, err := i.opts.Start(ctx, cmd, tty, theirs)
	tty.Close()
	theirs.Close()
	if err != nil {
		master.Close()
		mine.Close()
		return nil, err
	}
	fc, err := net.FileConn(mine)
	mine.Close()
	if err != nil {
		ps.Close()
		master.Close()
		return nil, err
	}
	p := &proc{ps: ps, master: master, ctl: fc.(*net.UnixConn), chunks: make(chan []byte, 64),
		notify: make(chan struct{}, 1), gone: make(chan struct{}), ready: make(chan status, 1)}
	p.wg.Add(3)
	go p.readPTY()
	go i.readStatus(p)
	go p.watchExit()
	t := time.NewTimer(i.opts.StartWait)
	defer t.Stop()
	select {
	case st := <-p.ready:
		p.ipython = st.IPython
	case <-p.gone:
		// What it printed (python3 missing, a crash) says why.
		var b bytes.Buffer
		for c := range p.chunks {
			b.Write(c)
		}
		p.close()
		msg := strings.TrimSpace(clean.String(b.String()))
		if len(msg) > 2000 {
			msg = msg[len(msg)-2000:]
		}
		if msg == "" {
			msg = "it exited at once"
		}
		return nil, errors.New(msg)
	case <-t.C:
		p.close()
		return nil, fmt.Errorf("its driver did not start within %s", i.opts.StartWait)
	case <-ctx.Done():
		p.close()
		return nil, ctx.Err()
	}
	i.mu.Lock()
	if i.closed {
		i.mu.Unlock()
		p.close()
		return nil, ErrClosed
	}
	i.p = p
	i.starts++
	i.mu.Unlock()
	return p, nil
}

// openPTY opens a PTY pair: the master pollable (Close wakes a Read),
// the slave with echo on (input() shows what was typed, as on a
// terminal) and no output post-processing ("\n" stays "\n").
func openPTY() (master, tty *os.File, err error) {
	m, t, err := pty.Open()
	if err != nil {
		return nil, nil, fmt.Errorf("open pty: %w", err)
	}
	defer m.Close()
	fd, err := unix.Dup(int(m.Fd()))
	if err != nil {
		t.Close()
		return nil, nil, os.NewSyscallError("dup", err)
	}
	unix.CloseOnExec(fd)
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		t.Close()
		return nil, nil, os.NewSyscallError("set nonblock", err)
	}
	master = os.NewFile(uintptr(fd), "/dev/ptmx")
	if tio, err := unix.IoctlGetTermios(int(t.Fd()), unix.TCGETS); err == nil {
		tio.Oflag &^= unix.ONLCR | unix.OCRNL
		tio.Lflag |= unix.ICANON | unix.ISIG | unix.ECHO
		tio.Iflag |= unix.IUTF8 | unix.ICRNL
		_ = unix.IoctlSetTermios(int(t.Fd()), unix.TCSETS, tio)
	}
	_ = pty.Setsize(t, &pty.Winsize{Cols: 200, Rows: 50})
	return master, t, nil
}

// readPTY copies the PTY's output into chunks until it ends (every
// holder of the slave is gone) or the master is closed. A full queue
// blocks the interpreter's writes: backpressure while nobody reads.
func (p *proc) readPTY() {
	defer p.wg.Done()
	defer close(p.chunks)
	for {
		b := make([]byte, 32<<10)
		n, err := p.master.Read(b)
		if n > 0 {
			select {
			case p.chunks <- b[:n]:
			case <-p.gone:
				// Nobody will read it, once the interpreter is gone and
				// the queue is full: drop rather than hang.
				select {
				case p.chunks <- b[:n]:
				case <-time.After(time.Second):
					return
				}
			}
		}
		if err != nil {
			return
		}
	}
}

// readStatus reads the driver's frames until its socket ends or says
// something it should not; either way the interpreter is then gone
// (a driver that lies about framing is killed).
func (i *Interp) readStatus(p *proc) {
	defer p.wg.Done()
	defer close(p.gone)
	for {
		st, err := readStatus(p.ctl)
		if err != nil {
			if errors.Is(err, errBadFrame) {
				i.kill(p, err.Error())
			}
			return
		}
		if st.Ready {
			select {
			case p.ready <- st:
			default:
			}
			continue
		}
		i.mu.Lock()
		if c := p.cell; c != nil && c.id == st.ID && c.token == st.Token && !c.done {
			c.done, c.err = true, st.Error
			c.hard.Stop()
		}
		i.mu.Unlock()
		select {
		case p.notify <- struct{}{}:
		default:
		}
	}
}

// watchExit ends the status channel once the interpreter has exited:
// its end is the channel's end, even while a process it forked (a
// daemon of a cell's, say) keeps fd 3 open. Frames already sent are
// read first; the deadline only ends the wait for more.
func (p *proc) watchExit() {
	defer p.wg.Done()
	t := time.NewTicker(exitPoll)
	defer t.Stop()
	for {
		select {
		case <-p.gone:
			return
		case <-t.C:
			if p.ps.Exited() {
				// Again at every tick: a frame's read may clear it.
				p.ctl.SetReadDeadline(time.Now().Add(exitPoll))
			}
		}
	}
}

// exitPoll is how often watchExit looks.
const exitPoll = 200 * time.Millisecond

func (p *proc) dead() bool {
	select {
	case <-p.gone:
		return true
	default:
		return false
	}
}

// kill kills p's process group, saying why for the next call's note.
func (i *Interp) kill(p *proc, why string) {
	i.mu.Lock()
	if p.killed == "" {
		p.killed = why
	}
	i.mu.Unlock()
	_ = p.ps.Signal(syscall.SIGKILL)
}

// closeLocked ends p with i.mu held (a reset); the goroutines end on
// their own once the process and its channels are closed.
func (p *proc) closeLocked(i *Interp) {
	if p.cell != nil && p.cell.hard != nil {
		p.cell.hard.Stop()
	}
	go p.close()
}

// close kills the interpreter, closes its channels and waits for its
// goroutines.
func (p *proc) close() {
	_ = p.ps.Close()
	p.ctl.Close()
	p.master.Close()
	p.wg.Wait()
}

// expire is the hard timeout of cell c: SIGINT to the interpreter's
// group, then, if the cell has not ended after KillGrace, the kill.
func (i *Interp) expire(p *proc, c *cell) {
	i.mu.Lock()
	if c.done || p.cell != c {
		i.mu.Unlock()
		return
	}
	c.timedOut = true
	i.mu.Unlock()
	_ = p.ps.Signal(syscall.SIGINT)
	time.AfterFunc(i.opts.KillGrace, func() {
		i.mu.Lock()
		done := c.done
		i.mu.Unlock()
		if !done {
			i.kill(p, fmt.Sprintf("the cell passed its timeout and did not stop on KeyboardInterrupt within %s", i.opts.KillGrace))
		}
	})
}

// sendKeys types keys into the running cell's terminal; C-c is SIGINT
// to the interpreter's group (a cell may have turned ISIG off), and the
// cell has KillGrace to end before it is killed.
func (i *Interp) sendKeys(p *proc, keys string) error {
	b, line := terminal.KeyBytes(keys)
	if string(b) == "\x03" {
		if err := p.ps.Signal(syscall.SIGINT); err != nil {
			return err
		}
		i.mu.Lock()
		c := p.cell
		i.mu.Unlock()
		time.AfterFunc(i.opts.KillGrace, func() {
			i.mu.Lock()
			done := c == nil || c.done
			i.mu.Unlock()
			if !done {
				i.kill(p, fmt.Sprintf("the cell did not stop on KeyboardInterrupt (C-c) within %s", i.opts.KillGrace))
			}
		})
		return nil
	}
	if line {
		b = append(b, '\r')
	}
	_, err := p.master.Write(b)
	return err
}

// wait reads the cell's output until it ends, the interpreter dies, or
// the call's time is up.
func (i *Interp) wait(ctx context.Context, p *proc, c *cell, cw *clean.Writer, begin time.Time, out Outcome, input, interrupt bool) (Outcome, error) {
	note := func(s string) { out.Note = joinNote(out.Note, s) }
	out.IPython = p.ipython
	quiet := i.opts.SoftTimeout
	if input {
		quiet = i.opts.Settle
	}
	if interrupt {
		// Long enough to see the kill of a cell that ignores it.
		quiet = i.opts.KillGrace + i.opts.Settle
	}
	soft := time.NewTimer(quiet)
	defer soft.Stop()
	maxw := time.NewTimer(i.opts.MaxWait)
	defer maxw.Stop()
	still := func(why string) (Outcome, error) {
		i.mu.Lock()
		out.TimedOut = c.timedOut
		i.mu.Unlock()
		out.ExitCode = -1
		note(fmt.Sprintf("The cell is still running (%s, %s so far). Send empty code to wait for more of its output, "+
			`is_input with a line for its input(), or is_input "C-c" to interrupt it.`, why, time.Since(c.begin).Round(time.Millisecond)))
		out.Duration = time.Since(begin)
		return out, nil
	}
	for {
		i.mu.Lock()
		done := c.done
		i.mu.Unlock()
		if done {
			if err := i.finish(p, c, cw); err != nil {
				return out, err
			}
			i.mu.Lock()
			if p.cell == c {
				p.cell = nil
			}
			out.Error, out.TimedOut = c.err, c.timedOut
			i.mu.Unlock()
			if c.err != "" {
				out.ExitCode = 1
			}
			if c.timedOut {
				note("The cell passed its timeout and was interrupted (KeyboardInterrupt); the variables it set before stay.")
			}
			out.Duration = time.Since(begin)
			return out, nil
		}
		select {
		case b, ok := <-p.chunks:
			if !ok {
				return i.died(p, c, cw, begin, out)
			}
			cw.Write(b)
			if !soft.Stop() {
				select {
				case <-soft.C:
				default:
				}
			}
			soft.Reset(quiet)
		case <-p.notify:
		case <-p.gone:
			return i.died(p, c, cw, begin, out)
		case <-soft.C:
			if input {
				return still("its output settled after the input")
			}
			return still(fmt.Sprintf("no new output for %s", quiet))
		case <-maxw.C:
			return still(fmt.Sprintf("this call waited %s", i.opts.MaxWait))
		case <-ctx.Done():
			o, _ := still("the caller stopped waiting")
			return o, ctx.Err()
		}
	}
}

// finish reads the rest of a finished cell's output: up to the fence it
// asks the driver to write now.
func (i *Interp) finish(p *proc, c *cell, cw *clean.Writer) error {
	var nb [12]byte
	if _, err := rand.Read(nb[:]); err != nil {
		return err
	}
	fence := []byte("\x1b]7779;" + hex.EncodeToString(nb[:]) + "\x07")
	if err := writeRequest(p.ctl, request{Op: "fence", Nonce: hex.EncodeToString(nb[:])}); err != nil {
		return nil // the interpreter is going; what was read is all
	}
	var pending []byte
	t := time.NewTimer(5 * time.Second)
	defer t.Stop()
	for {
		select {
		case b, ok := <-p.chunks:
			if !ok {
				cw.Write(pending)
				return nil
			}
			pending = append(pending, b...)
			if k := bytes.Index(pending, fence); k >= 0 {
				cw.Write(pending[:k])
				if rest := pending[k+len(fence):]; len(rest) > 0 {
					p.carry = append(p.carry[:0], rest...)
				}
				return nil
			}
			if keep := len(fence) - 1; len(pending) > keep {
				cw.Write(pending[:len(pending)-keep])
				pending = append(pending[:0], pending[len(pending)-keep:]...)
			}
		case <-p.gone:
			// Drain what is there without waiting.
		drain:
			for {
				select {
				case b, ok := <-p.chunks:
					if !ok {
						break drain
					}
					pending = append(pending, b...)
				default:
					break drain
				}
			}
			cw.Write(pending)
			return nil
		case <-t.C:
			cw.Write(pending)
			return nil
		}
	}
}

// died reports an interpreter that went away during a cell: what it
// printed last, and why, if the harness killed it.
func (i *Interp) died(p *proc, c *cell, cw *clean.Writer, begin time.Time, out Outcome) (Outcome, error) {
	// The last output (a fatal error's message) is on its way; a
	// process the cell left holding the terminal is not waited for.
	t := time.NewTimer(500 * time.Millisecond)
	defer t.Stop()
drain:
	for {
		select {
		case b, ok := <-p.chunks:
			if !ok {
				break drain
			}
			cw.Write(b)
		case <-t.C:
			break drain
		}
	}
	i.mu.Lock()
	why := p.killed
	out.TimedOut = c.timedOut
	if i.p == p {
		i.p = nil
	}
	c.hard.Stop()
	i.mu.Unlock()
	go p.close()
	if why == "" {
		why = "Python exited during the cell (os._exit, a crash, the memory limit, or its fd 3 closed)"
	} else {
		why = "Python was killed: " + why
	}
	out.ExitCode, out.StateLost = 1, true
	if out.Error == "" {
		out.Error = "PythonExited"
	}
	out.Note = joinNote(out.Note, why+". Its variables and imports are gone; the next cell starts a fresh Python.")
	out.Duration = time.Since(begin)
	return out, nil
}

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + " " + b
}
