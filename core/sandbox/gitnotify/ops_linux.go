package gitnotify

import (
	"errors"
	"time"

	"golang.org/x/sys/unix"
)

// dispatch performs c's call and answers it; false means it was set
// aside (parkOpen), to be answered later.
func (s *Server) dispatch(c *call, t *task) bool {
	a := c.n.args
	i32 := func(i int) int32 { return int32(uint32(a[i])) }
	switch uint32(c.n.nr) {
	case sysOpen:
		return t.open(unix.AT_FDCWD, a[0], int(uint32(a[1])), uint32(a[2]))
	case sysCreat:
		return t.open(unix.AT_FDCWD, a[0], unix.O_CREAT|unix.O_WRONLY|unix.O_TRUNC, uint32(a[1]))
	case unix.SYS_OPENAT:
		return t.open(i32(0), a[1], int(uint32(a[2])), uint32(a[3]))
	case sysMknod:
		t.mknod(unix.AT_FDCWD, a[0], uint32(a[1]), a[2])
	case unix.SYS_MKNODAT:
		t.mknod(i32(0), a[1], uint32(a[2]), a[3])
	case sysMkdir:
		t.mkdir(unix.AT_FDCWD, a[0], uint32(a[1]))
	case unix.SYS_MKDIRAT:
		t.mkdir(i32(0), a[1], uint32(a[2]))
	case sysSymlink:
		t.symlink(a[0], unix.AT_FDCWD, a[1])
	case unix.SYS_SYMLINKAT:
		t.symlink(a[0], i32(1), a[2])
	case sysLink:
		t.link2(unix.AT_FDCWD, a[0], unix.AT_FDCWD, a[1], 0)
	case unix.SYS_LINKAT:
		t.link2(i32(0), a[1], i32(2), a[3], int(uint32(a[4])))
	case sysRename:
		t.rename(unix.AT_FDCWD, a[0], unix.AT_FDCWD, a[1], 0)
	case sysRenameat:
		t.rename(i32(0), a[1], i32(2), a[3], 0)
	case unix.SYS_RENAMEAT2:
		t.rename(i32(0), a[1], i32(2), a[3], uint(uint32(a[4])))
	default:
		c.reply(0, unix.ENOSYS)
	}
	return true
}

// refused reports whether the rule refuses a new entry name (trailing
// slashes aside) in dir, which makes a directory if isDir.
func (s *Server) refused(dir int, name string, isDir bool) (bool, error) {
	name = baseName(name)
	if name != "HEAD" && (name != ".git" || isDir) {
		return false, nil
	}
	return s.guarded(dir)
}

// guarded reports whether dir is a directory the rule guards: on the
// workspace's filesystems, and not the dedicated uid's.
func (s *Server) guarded(dir int) (bool, error) {
	var st unix.Statx_t
	if err := unix.Statx(dir, "", unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW, unix.STATX_UID|unix.STATX_MNT_ID, &st); err != nil {
		return true, err
	}
	if st.Uid == s.rule.Owner {
		return false, nil
	}
	dev := unix.Mkdev(st.Dev_major, st.Dev_minor)
	for _, d := range s.rule.Devs {
		if d == dev {
			return true, nil
		}
	}
	if st.Mask&unix.STATX_MNT_ID != 0 {
		for _, m := range s.rule.Mounts {
			if m == st.Mnt_id {
				return true, nil
			}
		}
	}
	return false, nil
}

// inGitDir reports whether dir is in one of the rule's GitMounts.
func (s *Server) inGitDir(dir int) (bool, error) {
	if len(s.rule.GitMounts) == 0 {
		return false, nil
	}
	var st unix.Statx_t
	if err := unix.Statx(dir, "", unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW, unix.STATX_MNT_ID, &st); err != nil {
		return true, err
	}
	if st.Mask&unix.STATX_MNT_ID == 0 {
		return true, nil // cannot tell: refused
	}
	for _, m := range s.rule.GitMounts {
		if m == st.Mnt_id {
			return true, nil
		}
	}
	return false, nil
}

// start is where the task's path p (read from addr) starts, checked
// valid after: the task's pid is its own still.
func (t *task) start(dirfd int32, addr uint64) (p string, dir int, err error) {
	if p, err = t.str(addr); err != nil {
		return "", -1, err
	}
	if dir, err = t.dirFD(dirfd, p); err != nil {
		return "", -1, err
	}
	if !t.c.valid() {
		return "", -1, errGone
	}
	return p, dir, nil
}

// answer replies err unless the task is gone.
func (t *task) answer(val int64, err error) {
	if err == errGone {
		return
	}
	t.c.reply(val, err)
}

func (t *task) mkdir(dirfd int32, addr uint64, mode uint32) {
	t.answer(0, t.mkdirErr(dirfd, addr, mode))
}

func (t *task) mkdirErr(dirfd int32, addr uint64, mode uint32) error {
	dir, name, err := t.entry(dirfd, addr, true)
	if err != nil {
		return err
	}
	unix.Umask(t.umask)
	return unix.Mkdirat(dir, name, mode)
}

// entry is where a call that makes one entry (a directory if isDir) at
// the task's path (dirfd, addr) makes it: the directory, resolved, and
// the last name; the rule's refusal as an error.
func (t *task) entry(dirfd int32, addr uint64, isDir bool) (int, string, error) {
	p, start, err := t.start(dirfd, addr)
	if err != nil {
		return -1, "", err
	}
	hops := 0
	dir, name, err := t.parent(start, p, &hops)
	if err != nil {
		return -1, "", err
	}
	if no, err := t.s.refused(dir, name, isDir); no || err != nil {
		return -1, "", refusal(err)
	}
	return dir, name, nil
}

// refusal is the error for a refused entry: EPERM, as the LSM gives.
func refusal(err error) error {
	if err != nil {
		return err
	}
	return unix.EPERM
}

func (t *task) mknod(dirfd int32, addr uint64, mode uint32, dev uint64) {
	t.answer(0, func() error {
		dir, name, err := t.entry(dirfd, addr, false)
		if err != nil {
			return err
		}
		unix.Umask(t.umask)
		return unix.Mknodat(dir, name, mode, int(dev))
	}())
}

func (t *task) symlink(target uint64, dirfd int32, addr uint64) {
	t.answer(0, func() error {
		text, err := t.str(target)
		if err != nil {
			return err
		}
		dir, name, err := t.entry(dirfd, addr, false)
		if err != nil {
			return err
		}
		if no, err := t.s.inGitDir(dir); no || err != nil {
			return refusal(err)
		}
		return unix.Symlinkat(text, dir, name)
	}())
}

// link2 is link and linkat.
func (t *task) link2(olddirfd int32, oldaddr uint64, newdirfd int32, newaddr uint64, flags int) {
	t.answer(0, func() error {
		if flags&^(unix.AT_SYMLINK_FOLLOW|unix.AT_EMPTY_PATH) != 0 {
			return unix.EINVAL
		}
		op, ostart, err := t.start(olddirfd, oldaddr)
		if err != nil {
			return err
		}
		np, nstart, err := t.start(newdirfd, newaddr)
		if err != nil {
			return err
		}
		hops := 0
		ndir, nname, err := t.parent(nstart, np, &hops)
		if err != nil {
			return err
		}
		if no, err := t.s.refused(ndir, nname, false); no || err != nil {
			return refusal(err)
		}
		if op == "" && flags&unix.AT_EMPTY_PATH != 0 {
			// The descriptor itself: linked through this thread's
			// /proc/thread-self/fd, as the task could through its own
			// /proc/self/fd with AT_SYMLINK_FOLLOW.
			return unix.Linkat(unix.AT_FDCWD, "/proc/thread-self/fd/"+itoa(ostart), ndir, nname, unix.AT_SYMLINK_FOLLOW)
		}
		hops = 0
		for {
			odir, oname, err := t.parent(ostart, op, &hops)
			if err != nil {
				return err
			}
			if flags&unix.AT_SYMLINK_FOLLOW == 0 {
				return unix.Linkat(odir, oname, ndir, nname, 0)
			}
			var st unix.Stat_t
			if err := unix.Fstatat(odir, oname, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil || st.Mode&unix.S_IFMT != unix.S_IFLNK {
				// Not a link (or gone): linked as it is, never followed
				// by the kernel past what was looked at.
				return unix.Linkat(odir, oname, ndir, nname, 0)
			}
			if hops++; hops > maxHops {
				return unix.ELOOP
			}
			next, text, err := t.link(odir, baseName(oname))
			if err != nil {
				return err
			}
			if next >= 0 {
				// A magic link (an O_TMPFILE's /proc/self/fd/N): what
				// it leads to, opened as the task may.
				return unix.Linkat(unix.AT_FDCWD, "/proc/thread-self/fd/"+itoa(next), ndir, nname, unix.AT_SYMLINK_FOLLOW)
			}
			ostart, op = odir, text
		}
	}())
}

// rename is rename, renameat and renameat2.
func (t *task) rename(olddirfd int32, oldaddr uint64, newdirfd int32, newaddr uint64, flags uint) {
	t.answer(0, func() error {
		op, ostart, err := t.start(olddirfd, oldaddr)
		if err != nil {
			return err
		}
		np, nstart, err := t.start(newdirfd, newaddr)
		if err != nil {
			return err
		}
		hops := 0
		odir, oname, err := t.parent(ostart, op, &hops)
		if err != nil {
			return err
		}
		hops = 0
		ndir, nname, err := t.parent(nstart, np, &hops)
		if err != nil {
			return err
		}
		return t.s.renameChecked(odir, oname, ndir, nname, flags)
	}())
}

// renameChecked renames with the rule. A .git that must be a directory
// is made one by the kernel: a trailing slash on a name makes rename
// refuse (ENOTDIR) anything but a directory there, at the moment of the
// rename. A HEAD may only replace a HEAD: RENAME_EXCHANGE, which needs
// both, and then the old HEAD, now at the source's name, is removed.
func (s *Server) renameChecked(odir int, oname string, ndir int, nname string, flags uint) error {
	exchange := flags&unix.RENAME_EXCHANGE != 0
	ob, nb := baseName(oname), baseName(nname)
	slash := func(n string) string { return n + "/" }
	dirOnly := false
	if nb == ".git" {
		g, err := s.guarded(ndir)
		if err != nil {
			return err
		}
		if g {
			oname, dirOnly = slash(oname), true
		}
	}
	if exchange && ob == ".git" {
		g, err := s.guarded(odir)
		if err != nil {
			return err
		}
		if g {
			nname, dirOnly = slash(nname), true
		}
	}
	if nb == "HEAD" && !exchange {
		g, err := s.guarded(ndir)
		if err != nil {
			return err
		}
		if g {
			return replaceHEAD(odir, oname, ndir, nname, flags)
		}
	}
	// An exchange makes no new name, but may swap a file into the place
	// of a HEAD: only of one that is a file or symlink already (headLike:
	// not a socket bind(2) made), checked again after, and undone.
	type side struct {
		dir   int
		name  string
		other func() (int, string) // where what was there is after
	}
	var heads []side
	if exchange {
		for _, sd := range []side{
			{ndir, nb, func() (int, string) { return odir, ob }},
			{odir, ob, func() (int, string) { return ndir, nb }},
		} {
			if sd.name != "HEAD" {
				continue
			}
			g, err := s.guarded(sd.dir)
			if err != nil {
				return err
			}
			if !g {
				continue
			}
			var st unix.Stat_t
			if err := unix.Fstatat(sd.dir, sd.name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				return err
			}
			if !headLike(st.Mode) {
				return unix.EPERM
			}
			heads = append(heads, sd)
		}
	}
	err := unix.Renameat2(odir, oname, ndir, nname, flags)
	if err == unix.ENOTDIR && dirOnly {
		return unix.EPERM // a .git that is not a directory, refused
	}
	if err == nil {
		for _, sd := range heads {
			d, n := sd.other()
			var st unix.Stat_t
			if unix.Fstatat(d, n, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && !headLike(st.Mode) {
				unix.Renameat2(odir, oname, ndir, nname, flags) // swapped back
				return unix.EPERM
			}
		}
	}
	return err
}

// replaceHEAD renames oname over the existing HEAD nname in a guarded
// directory, which may not get a new one.
func replaceHEAD(odir int, oname string, ndir int, nname string, flags uint) error {
	var ost, nst unix.Stat_t
	if err := unix.Fstatat(odir, baseName(oname), &ost, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return err
	}
	if err := unix.Fstatat(ndir, baseName(nname), &nst, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if err == unix.ENOENT {
			return unix.EPERM // a new HEAD
		}
		return err
	}
	if flags&unix.RENAME_NOREPLACE != 0 {
		return unix.EEXIST
	}
	if flags != 0 || ost.Mode&unix.S_IFMT == unix.S_IFDIR || !headLike(nst.Mode) {
		// Stricter than the kernel rule: git renames a file over a file
		// (or an old symlink HEAD). And a socket named HEAD, which
		// bind(2) makes untrapped (git cannot read one), must never
		// become a HEAD git can read.
		return unix.EPERM
	}
	if ost.Dev == nst.Dev && ost.Ino == nst.Ino {
		return nil // rename(2) leaves two links of one file alone
	}
	if err := unix.Renameat2(odir, oname, ndir, nname, unix.RENAME_EXCHANGE); err != nil {
		if err == unix.ENOENT {
			if unix.Fstatat(odir, baseName(oname), &ost, unix.AT_SYMLINK_NOFOLLOW) == nil {
				return unix.EPERM // HEAD went away meanwhile: a new one
			}
		}
		if err == unix.EINVAL {
			return unix.EPERM // no RENAME_EXCHANGE on this filesystem
		}
		return err
	}
	var st unix.Stat_t
	if err := unix.Fstatat(odir, baseName(oname), &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return nil // the old HEAD, moved away meanwhile
	}
	if !headLike(st.Mode) {
		// HEAD was replaced by something else (a socket) between the
		// look and the exchange: put it back.
		unix.Renameat2(odir, oname, ndir, nname, unix.RENAME_EXCHANGE)
		return unix.EPERM
	}
	return unix.Unlinkat(odir, baseName(oname), 0)
}

// headLike reports whether mode is a file a HEAD may be replaced from:
// a regular file or a symlink.
func headLike(mode uint32) bool {
	return mode&unix.S_IFMT == unix.S_IFREG || mode&unix.S_IFMT == unix.S_IFLNK
}

// open is open, openat and creat with O_CREAT; false: set aside.
func (t *task) open(dirfd int32, addr uint64, flags int, mode uint32) bool {
	c := t.c
	if c.held >= 0 {
		// A FIFO's reader set aside: its open is done once a writer
		// has come (see opened).
		if !c.valid() {
			c.drop()
			return true
		}
		fd, err := t.opened(c.held, flags, nil, nil)
		if err == errWait {
			return t.s.parkOpen(c)
		}
		c.held = -1
		if err != nil {
			t.answer(0, err)
			return true
		}
		c.replyFD(fd, flags&unix.O_CLOEXEC != 0)
		unix.Close(fd)
		return true
	}
	p, start, err := t.start(dirfd, addr)
	if err != nil {
		t.answer(0, err)
		return true
	}
	fd, err := t.openAt(start, p, flags, mode)
	if err == errWait {
		return t.s.parkOpen(c)
	}
	if err != nil {
		t.answer(0, err)
		return true
	}
	c.replyFD(fd, flags&unix.O_CLOEXEC != 0)
	unix.Close(fd)
	return true
}

// errWait: the open would wait (a FIFO's other end, a lease's break).
var errWait = errors.New("the open would wait")

// openAt opens p from start as the task's open(2) with flags would,
// refusing what the rule refuses. The open is O_NONBLOCK (cleared after,
// unless asked for) and O_NOCTTY: a FIFO or a lease that would make it
// wait is errWait, and a tty is never the init's.
func (t *task) openAt(start int, p string, flags int, mode uint32) (int, error) {
	if flags&unix.O_PATH != 0 {
		flags &^= unix.O_CREAT | unix.O_EXCL // O_PATH ignores them: nothing is made
	}
	hops := 0
	for {
		dir, name, err := t.parent(start, p, &hops)
		if err != nil {
			return -1, err
		}
		f := flags | unix.O_NOFOLLOW | unix.O_NOCTTY | unix.O_NONBLOCK | unix.O_CLOEXEC
		isFIFO := func() bool {
			var st unix.Stat_t
			return unix.Fstatat(dir, baseName(name), &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFIFO
		}
		no := false
		if flags&unix.O_CREAT != 0 {
			if no, err = t.s.refused(dir, name, false); err != nil {
				return -1, err
			}
		}
		if no {
			// Only an existing entry may be opened, and not made.
			var st unix.Stat_t
			if flags&unix.O_EXCL != 0 {
				if unix.Fstatat(dir, baseName(name), &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
					return -1, unix.EEXIST
				}
				return -1, unix.EPERM
			}
			fd, err := unix.Openat(dir, name, f&^unix.O_CREAT, 0)
			if err == unix.ENOENT {
				return -1, unix.EPERM
			}
			if err == nil && unix.Fstat(fd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
				unix.Close(fd)
				return -1, unix.EISDIR // as O_CREAT on a directory
			}
			if err != unix.ELOOP || flags&unix.O_NOFOLLOW != 0 {
				return t.opened(fd, flags, err, isFIFO)
			}
		} else {
			if flags&unix.O_CREAT != 0 {
				unix.Umask(t.umask)
			}
			fd, err := unix.Openat(dir, name, f, mode)
			if err != unix.ELOOP || flags&(unix.O_NOFOLLOW|unix.O_EXCL) != 0 {
				return t.opened(fd, flags, err, isFIFO)
			}
		}
		// The last component is a symlink, which the task's open would
		// follow (and, with O_CREAT, make what it names): followed here,
		// its target checked again.
		if hops++; hops > maxHops {
			return -1, unix.ELOOP
		}
		next, text, err := t.link(dir, baseName(name))
		if err != nil {
			return -1, err
		}
		if next >= 0 {
			// A magic link: it leads to what exists; nothing is made.
			fd, err := t.magicReopen(next, flags)
			return t.opened(fd, flags, err, func() bool {
				var st unix.Stat_t
				return unix.Fstat(next, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFIFO
			})
		}
		start, p = dir, text
	}
}

// magicReopen opens what the O_PATH descriptor fd (a magic link
// followed) is, with flags, as the task may.
func (t *task) magicReopen(fd int, flags int) (int, error) {
	f := (flags &^ (unix.O_CREAT | unix.O_EXCL | unix.O_NOFOLLOW)) | unix.O_NOCTTY | unix.O_NONBLOCK | unix.O_CLOEXEC
	return unix.Open("/proc/thread-self/fd/"+itoa(fd), f, 0)
}

// opened finishes an open: one that would wait is errWait (a FIFO
// without its other end, isFIFO says; a lease being broken), and the
// O_NONBLOCK it was opened with is taken off unless asked for. A FIFO's
// reader that must wait is kept in the call (held).
func (t *task) opened(fd int, flags int, err error, isFIFO func() bool) (int, error) {
	if err != nil {
		if flags&(unix.O_NONBLOCK|unix.O_PATH) == 0 && (err == unix.EWOULDBLOCK || err == unix.ENXIO && isFIFO()) {
			return -1, errWait
		}
		return -1, err
	}
	if flags&(unix.O_NONBLOCK|unix.O_PATH) != 0 {
		return fd, nil // an O_PATH descriptor has no status flags to clear
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFIFO && flags&unix.O_ACCMODE == unix.O_RDONLY {
		// A reader's open waits for a writer: ready once one has
		// written or come and gone. (One that came and writes nothing
		// yet leaves the task waiting longer than the kernel would.)
		// Meanwhile the descriptor is kept, as the kernel counts a
		// waiting reader: a writer does not wait for it.
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		if n, _ := unix.Poll(pfd, 0); n == 0 {
			t.c.held = fd
			return -1, errWait
		}
	}
	fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err == nil {
		_, err = unix.FcntlInt(uintptr(fd), unix.F_SETFL, fl&^unix.O_NONBLOCK)
	}
	if err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// parkOpen sets aside an open that would wait, and tries it again later,
// from the start, by a worker: none waits in it.
func (s *Server) parkOpen(c *call) bool {
	c.tries++
	if c.since.IsZero() {
		c.since = time.Now()
	}
	d := time.Duration(c.tries) * 5 * time.Millisecond
	if d > 200*time.Millisecond {
		d = 200 * time.Millisecond
	}
	time.AfterFunc(d, func() { s.work <- c })
	return false
}

func itoa(i int) string {
	const digits = "0123456789"
	if i == 0 {
		return "0"
	}
	var b [20]byte
	n := len(b)
	neg := i < 0
	if neg {
		i = -i
	}
	for i > 0 {
		n--
		b[n] = digits[i%10]
		i /= 10
	}
	if neg {
		n--
		b[n] = '-'
	}
	return string(b[n:])
}
