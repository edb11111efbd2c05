package sandbox

import (
	"bytes"
	"context"
	"encoding/binary"
	"log/slog"
	"math"
	"os"
	"slices"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// The git guards' fanotify groups: one per filesystem, shared by every
// guard watching a workspace on it. A group marks the whole filesystem
// (FAN_MARK_FILESYSTEM), so it sees every entry the host creates there,
// not only the workspaces': a group per guard made the kernel queue, and
// the daemon read and filter, every create on the host once per guarded
// session (issue 16: 5 sessions cost 33 s of the daemon's CPU for 300k
// creates elsewhere). One group reads each event once, drops it by its
// name unless it could make a repository, opens its directory once per
// mount the guards see the filesystem through, and hands it to every
// guard whose workspace holds that directory (all of them, not only the
// innermost: nested workspaces may be different users', and each guard
// knows its own user and own repositories). The first guard on a
// filesystem makes its group; the last one to stop closes it.

// fanGroups are the daemon's groups, by filesystem.
var fanGroups = fanHub{groups: map[uint64]*fanGroup{}}

// fanHub finds or makes the group of a filesystem, and closes it with
// its last watch.
type fanHub struct {
	mu     sync.Mutex
	groups map[uint64]*fanGroup // by st_dev
}

// fanGroup is one filesystem's fanotify group and the goroutine that
// reads it (loop).
type fanGroup struct {
	dev     uint64
	fan     int
	wake    [2]int // a byte in wake[1] makes the loop look at flushes and closing
	log     *slog.Logger
	closing atomic.Bool
	done    chan struct{} // closed when the loop has ended

	mu      sync.Mutex  // held by the loop while it delivers a read's events
	watches []*fanWatch // sorted by mount
	refs    int         // watches, counted under fanHub.mu
	flushes []chan struct{}
	ended   bool // the loop has ended: flushes are done at once
}

// fanWatch is a guard's watch through one group: the guard and a
// descriptor of the mount its workspace (or a submount of it) is seen
// through, where the group opens events' directories.
type fanWatch struct {
	g     *gitGuard
	fd    int // the guard's: its workspace's, or a submount's
	mnt   int // fd's mount id
	group *fanGroup
}

// Every group's flags, and the events it asks for.
const (
	fanInitFlags  = unix.FAN_CLASS_NOTIF | unix.FAN_CLOEXEC | unix.FAN_NONBLOCK | unix.FAN_UNLIMITED_QUEUE | unix.FAN_REPORT_DFID_NAME
	fanEventFlags = unix.O_RDONLY | unix.O_CLOEXEC | unix.O_LARGEFILE
	fanMask       = unix.FAN_CREATE | unix.FAN_MOVED_TO | unix.FAN_ONDIR
)

// watch adds a watch of g through fd, a descriptor of path (the
// workspace, or a mount below it), to the group of path's filesystem,
// making that group if it is the first.
func (h *fanHub) watch(g *gitGuard, path string, fd int) (*fanWatch, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, &os.PathError{Op: "fstat", Path: path, Err: err}
	}
	_, mnt, err := unix.NameToHandleAt(fd, "", unix.AT_EMPTY_PATH)
	if err != nil {
		return nil, &os.PathError{Op: "name_to_handle_at", Path: path, Err: err}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	fg := h.groups[st.Dev]
	if fg == nil {
		if fg, err = newFanGroup(st.Dev, fd, path, g.log); err != nil {
			return nil, err
		}
		h.groups[st.Dev] = fg
	}
	w := &fanWatch{g: g, fd: fd, mnt: mnt, group: fg}
	fg.refs++
	fg.mu.Lock()
	fg.watches = append(fg.watches, w)
	slices.SortStableFunc(fg.watches, func(a, b *fanWatch) int { return a.mnt - b.mnt })
	fg.mu.Unlock()
	return w, nil
}

// unwatch removes w from its group, so that the group hands it nothing
// more once unwatch returns; if w was the group's last watch, it closes
// the group, waiting for its loop to end. w.fd stays open.
func (h *fanHub) unwatch(w *fanWatch) {
	fg := w.group
	fg.mu.Lock()
	fg.watches = slices.DeleteFunc(fg.watches, func(x *fanWatch) bool { return x == w })
	fg.mu.Unlock()
	h.mu.Lock()
	fg.refs--
	last := fg.refs == 0
	if last {
		delete(h.groups, fg.dev)
	}
	h.mu.Unlock()
	if last {
		fg.close()
	}
}

// newFanGroup makes the group of the filesystem fd (path) is on, st_dev
// dev, and starts its loop.
func newFanGroup(dev uint64, fd int, path string, log *slog.Logger) (*fanGroup, error) {
	fg := &fanGroup{dev: dev, fan: -1, wake: [2]int{-1, -1}, log: log, done: make(chan struct{})}
	var err error
	if fg.fan, err = unix.FanotifyInit(fanInitFlags, fanEventFlags); err != nil {
		return nil, os.NewSyscallError("fanotify_init", err)
	}
	// Through fd, not path: the filesystem fstat named.
	if err := unix.FanotifyMark(fg.fan, unix.FAN_MARK_ADD|unix.FAN_MARK_FILESYSTEM, fanMask, fd, ""); err != nil {
		unix.Close(fg.fan)
		return nil, &os.PathError{Op: "fanotify_mark", Path: path, Err: err}
	}
	if err := unix.Pipe2(fg.wake[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		unix.Close(fg.fan)
		return nil, os.NewSyscallError("pipe2", err)
	}
	go fg.loop()
	return fg, nil
}

// flush returns a channel closed once the loop has handled every event
// the group had queued when flush was called.
func (fg *fanGroup) flush() <-chan struct{} {
	c := make(chan struct{})
	fg.mu.Lock()
	if fg.ended {
		close(c)
	} else {
		fg.flushes = append(fg.flushes, c)
	}
	fg.mu.Unlock()
	unix.Write(fg.wake[1], []byte{0})
	return c
}

// close ends the loop, waits for it, and closes the group's descriptors
// (and with them its mark). Its last watch is gone.
func (fg *fanGroup) close() {
	fg.closing.Store(true)
	unix.Write(fg.wake[1], []byte{0})
	<-fg.done
	for _, fd := range []int{fg.fan, fg.wake[0], fg.wake[1]} {
		unix.Close(fd)
	}
}

// fanBufSize is what the loop reads at once; a read that leaves more
// than fanEventMax of it unused emptied the queue (fanotify returns as
// many whole events as fit).
const (
	fanBufSize  = 64 << 10
	fanEventMax = 4096 // metadata, fsid, a handle of at most MAX_HANDLE_SZ, a name
)

// loop reads the group's events and hands them to the watches until
// close. A flush is done once the loop has handled as many events as
// the queue held when it saw the flush (FIONREAD), or emptied the queue:
// a host that never stops creating files delays it by one queue's worth.
func (fg *fanGroup) loop() {
	defer func() {
		fg.mu.Lock()
		fg.ended = true
		for _, c := range fg.flushes {
			close(c)
		}
		fg.flushes = nil
		fg.mu.Unlock()
		close(fg.done)
	}()
	buf := make([]byte, fanBufSize)
	var pipe [64]byte
	fds := []unix.PollFd{{Fd: int32(fg.fan), Events: unix.POLLIN}, {Fd: int32(fg.wake[0]), Events: unix.POLLIN}}
	for {
		if _, err := unix.Poll(fds, -1); err != nil && err != unix.EINTR {
			fg.log.Error("sandbox git guard: poll; the guards of this filesystem only sweep from now on", "err", err)
			return
		}
		if fds[1].Revents != 0 {
			for {
				if n, _ := unix.Read(fg.wake[0], pipe[:]); n <= 0 {
					break
				}
			}
		}
		fg.mu.Lock()
		flushes := fg.flushes
		fg.flushes = nil
		fg.mu.Unlock()
		queued := math.MaxInt // events to handle before flushes are done
		if len(flushes) > 0 {
			// FIONREAD on fanotify: the queued events times the
			// metadata's length (TIOCINQ is FIONREAD's number).
			if n, err := unix.IoctlGetInt(fg.fan, unix.TIOCINQ); err == nil {
				queued = n / fanMetaLen
			}
		}
		for !fg.closing.Load() {
			n, err := unix.Read(fg.fan, buf)
			if err == unix.EINTR {
				continue
			}
			if err != nil || n <= 0 {
				break // EAGAIN: drained
			}
			fg.mu.Lock()
			queued -= fg.events(buf[:n])
			fg.mu.Unlock()
			if queued <= 0 {
				for _, c := range flushes {
					close(c)
				}
				flushes = nil
			}
			if n <= len(buf)-fanEventMax {
				break // drained: no need to be told so by EAGAIN
			}
		}
		for _, c := range flushes {
			close(c)
		}
		if fg.closing.Load() {
			return
		}
	}
}

// fanMetaLen is the length of struct fanotify_event_metadata.
const fanMetaLen = 24

// events hands one read's worth of events to the watches, and returns
// how many there were; fg.mu held.
func (fg *fanGroup) events(b []byte) (n int) {
	for len(b) >= fanMetaLen {
		evLen := int(binary.NativeEndian.Uint32(b[0:4]))
		mlen := int(binary.NativeEndian.Uint16(b[6:8]))
		mask := binary.NativeEndian.Uint64(b[8:16])
		if evLen < fanMetaLen || evLen > len(b) {
			return n
		}
		ev := b[:evLen]
		b = b[evLen:]
		n++
		if mlen < fanMetaLen || mlen > evLen {
			continue
		}
		if mask&unix.FAN_Q_OVERFLOW != 0 {
			for _, w := range fg.watches {
				w.g.log.Warn("sandbox git guard: events lost; sweeping the workspace", "workspace", w.g.ws)
				w.g.sweepAll()
			}
			continue
		}
		for info := ev[mlen:]; len(info) >= 4; {
			typ, ilen := info[0], int(binary.NativeEndian.Uint16(info[2:4]))
			if ilen < 4 || ilen > len(info) {
				break
			}
			rec := info[:ilen]
			info = info[ilen:]
			if typ != unix.FAN_EVENT_INFO_TYPE_DFID_NAME || len(rec) < 4+8+8 {
				continue
			}
			hb := int(binary.NativeEndian.Uint32(rec[12:16]))
			ht := int32(binary.NativeEndian.Uint32(rec[16:20]))
			if 20+hb > len(rec) {
				continue
			}
			name, _, _ := bytes.Cut(rec[20+hb:], []byte{0})
			fg.entry(rec[20:20+hb], ht, name)
		}
	}
	return n
}

// entry hands the entry named nameB, created in the directory behind
// the handle, to the watches whose workspace holds that directory;
// fg.mu held. Most entries are dropped here, by name, before any system
// call or allocation.
func (fg *fanGroup) entry(handle []byte, typ int32, nameB []byte) {
	gitName := bytes.EqualFold(nameB, []byte(".git"))
	if !gitName && !quarantineNames[string(nameB)] && !bytes.HasSuffix(nameB, []byte(".git")) {
		return
	}
	name := string(nameB)
	h := unix.NewFileHandle(typ, handle)
	dir, mnt, where := -1, 0, ""
	defer func() {
		if dir >= 0 {
			unix.Close(dir)
		}
	}()
	for i, w := range fg.watches {
		if i == 0 || w.mnt != mnt {
			// The directory as this mount shows it: once per mount.
			if dir >= 0 {
				unix.Close(dir)
			}
			mnt, where = w.mnt, ""
			var err error
			dir, err = unix.OpenByHandleAt(w.fd, h, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC)
			if err != nil {
				dir = -1
				if err != unix.ESTALE && err != unix.ENOENT {
					w.g.log.Warn("sandbox git guard: open by handle", "workspace", w.g.ws, "name", name, "err", err)
				}
				continue // gone already
			}
			where, _ = os.Readlink(fdPath(dir)) // "" if no longer linked
		}
		if dir >= 0 && where != "" && within(where, w.g.ws) {
			w.g.entry(dir, name, where, gitName)
		}
	}
}

// unwatchAll ends a guard's watches: once each group has handled what
// it had queued (or ctx is done), the guard gets nothing more from it.
// The groups of which they were the last watches are closed.
func (h *fanHub) unwatchAll(ctx context.Context, watches []*fanWatch) {
	var flushed []<-chan struct{}
	for _, w := range watches {
		flushed = append(flushed, w.group.flush())
	}
	for _, c := range flushed {
		select {
		case <-c:
		case <-ctx.Done():
		}
	}
	for _, w := range watches {
		h.unwatch(w)
	}
}
