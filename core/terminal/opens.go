package terminal

import (
	"bytes"
	"fmt"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// opens watches the control directories for bash opening a command file:
// the kernel's word that bash read a command harnessd handed over. One
// inotify instance serves the process, since instances are few per user
// (fs.inotify.max_user_instances, 128 by default) and a daemon runs a
// terminal per session; each directory is one watch on it.
var opens = &openWatch{fd: -1, dirs: map[int32]*watchedDir{}}

type openWatch struct {
	mu   sync.Mutex
	fd   int // -1 until the first watch
	dirs map[int32]*watchedDir
	buf  [4096]byte
}

// watchedDir is one directory's watch: the file whose opens count, and
// whether one came since the last take.
type watchedDir struct {
	name   string
	opened bool
}

// watch starts watching dir for opens of the file name in it.
func (w *openWatch) watch(dir, name string) (int32, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fd < 0 {
		fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
		if err != nil {
			return -1, fmt.Errorf("inotify: %w", err)
		}
		w.fd = fd
	}
	wd, err := unix.InotifyAddWatch(w.fd, dir, unix.IN_OPEN)
	if err != nil {
		return -1, fmt.Errorf("inotify watch %s: %w", dir, err)
	}
	w.readLocked()
	w.dirs[int32(wd)] = &watchedDir{name: name}
	return int32(wd), nil
}

// unwatch stops a watch.
func (w *openWatch) unwatch(wd int32) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.dirs[wd]; !ok {
		return
	}
	delete(w.dirs, wd)
	_, _ = unix.InotifyRmWatch(w.fd, uint32(wd))
}

// take reports whether the watched file of wd was opened since the last
// take. A queue that overflowed counts as opened for every watch: it
// cannot tell.
func (w *openWatch) take(wd int32) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.readLocked()
	d, ok := w.dirs[wd]
	if !ok {
		return true
	}
	o := d.opened
	d.opened = false
	return o
}

// readLocked reads every event that is there and marks the opens.
func (w *openWatch) readLocked() {
	for {
		n, err := unix.Read(w.fd, w.buf[:])
		if n <= 0 || err != nil {
			return
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&w.buf[off]))
			name := w.buf[off+unix.SizeofInotifyEvent : min(n, off+unix.SizeofInotifyEvent+int(ev.Len))]
			off += unix.SizeofInotifyEvent + int(ev.Len)
			if ev.Mask&unix.IN_Q_OVERFLOW != 0 {
				for _, d := range w.dirs {
					d.opened = true
				}
				continue
			}
			if ev.Mask&unix.IN_IGNORED != 0 {
				delete(w.dirs, ev.Wd) // the directory is gone; its number may be given again
				continue
			}
			if d, ok := w.dirs[ev.Wd]; ok && ev.Mask&unix.IN_OPEN != 0 && string(bytes.TrimRight(name, "\x00")) == d.name {
				d.opened = true
			}
		}
	}
}
