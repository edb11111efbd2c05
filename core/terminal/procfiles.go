package terminal

import (
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// procFiles keeps bash's /proc/PID/io, stat and syscall open and reads
// each with one pread: look runs several times per command, and opening
// three files each time (open, fstat, the poller's fcntl, read until EOF,
// close) was half the CPU of a `true` round trip. These files are made
// anew on every read at offset 0, and an open one stays bound to the
// process it was opened for: when bash is gone a read fails (ESRCH), it
// never reads a process that reused the pid.
type procFiles struct {
	mu    sync.Mutex
	pid   int
	fds   [3]int // io, stat, syscall; -1 if it could not be opened
	buf   [4096]byte
	valid bool
}

// The files procFiles keeps, by index, in the order read reads them.
const (
	procStat = iota
	procIO
	procSyscall
)

var procNames = [3]string{"stat", "io", "syscall"}

// read calls fn with the current contents of each file in turn (nil for
// one that cannot be read), under the lock, until fn returns false: the
// slices are only valid within fn.
func (p *procFiles) read(pid int, fn func(which int, b []byte) bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.openLocked(pid)
	for i := range p.fds {
		if !fn(i, p.readLocked(i)) {
			return
		}
	}
}

// readOne is read of one file.
func (p *procFiles) readOne(pid, which int, fn func(b []byte)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.openLocked(pid)
	fn(p.readLocked(which))
}

// openLocked opens pid's files unless they are open already.
func (p *procFiles) openLocked(pid int) {
	if !p.valid || p.pid != pid {
		p.closeLocked()
		p.pid, p.valid = pid, true
		base := "/proc/" + strconv.Itoa(pid) + "/"
		for i, name := range procNames {
			fd, err := unix.Open(base+name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				fd = -1
			}
			p.fds[i] = fd
		}
	}
}

// readLocked reads file which, nil if it cannot be read.
func (p *procFiles) readLocked(which int) []byte {
	fd := p.fds[which]
	if fd < 0 {
		return nil
	}
	n, err := unix.Pread(fd, p.buf[:], 0)
	if err != nil || n <= 0 {
		return nil
	}
	return p.buf[:n]
}

// close closes the files; a later read opens them again.
func (p *procFiles) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closeLocked()
}

func (p *procFiles) closeLocked() {
	if !p.valid {
		return
	}
	for i, fd := range p.fds {
		if fd >= 0 {
			unix.Close(fd)
		}
		p.fds[i] = -1
	}
	p.valid = false
}
