package gitnotify

import (
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// maxHops is the kernel's limit on symlinks followed in one resolution
// (MAXSYMLINKS).
const maxHops = 40

// split cuts p into the directory part the kernel walks and the last
// component (with its trailing slashes), as the *at calls take them: a
// path of slashes alone is "/" and "." (the root itself).
func split(p string) (dir, last string) {
	t := strings.TrimRight(p, "/")
	if t == "" {
		return "/", "."
	}
	i := strings.LastIndexByte(t, '/')
	return p[:i+1], p[i+1:]
}

// baseName is last without its trailing slashes: the entry's name.
func baseName(last string) string { return strings.TrimRight(last, "/") }

// parent resolves, from start (not consumed), the directory of p's last
// component as the task would, and returns an O_PATH descriptor of it
// (the task's, closed with it) and that component. hops counts the
// symlinks followed, across the calls of one resolution.
func (t *task) parent(start int, p string, hops *int) (int, string, error) {
	if p == "" {
		return -1, "", unix.ENOENT
	}
	dir, last := split(p)
	if dir == "" {
		return start, last, nil
	}
	base := start
	if strings.HasPrefix(dir, "/") {
		base = t.s.root
	}
	// The kernel resolves the directory in one call, unless it meets a
	// magic link (ELOOP) or ends in /proc: there /proc/self would mean
	// the init, and the init's own magic links would be followed.
	fd, err := unix.Openat2(base, dir, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_MAGICLINKS,
	})
	if err == nil {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return -1, "", err
		}
		if st.Dev != t.s.procDev {
			return t.keep(fd), last, nil
		}
		unix.Close(fd)
	} else if err != unix.ELOOP {
		return -1, "", err
	}
	fd, err = t.walk(base, dir, hops)
	if err != nil {
		return -1, "", err
	}
	return fd, last, nil
}

// walk resolves dir from start, one component at a time, and returns an
// O_PATH descriptor of the directory it names (the task's).
func (t *task) walk(start int, dir string, hops *int) (int, error) {
	cur := start
	comps := strings.Split(dir, "/")
	if strings.HasPrefix(dir, "/") {
		cur = t.s.root
	}
	for len(comps) > 0 {
		c := comps[0]
		comps = comps[1:]
		if c == "" || c == "." {
			continue
		}
		fd, err := unix.Openat(cur, c, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return -1, err
		}
		t.keep(fd)
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return -1, err
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
			cur = fd
			continue
		case unix.S_IFLNK:
		default:
			return -1, unix.ENOTDIR
		}
		if *hops++; *hops > maxHops {
			return -1, unix.ELOOP
		}
		next, text, err := t.link(cur, c)
		if err != nil {
			return -1, err
		}
		if next >= 0 {
			cur = next // a magic link, followed
			continue
		}
		if strings.HasPrefix(text, "/") {
			cur = t.s.root
		}
		comps = append(strings.Split(text, "/"), comps...)
	}
	var st unix.Stat_t
	if err := unix.Fstat(cur, &st); err != nil {
		return -1, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return -1, unix.ENOTDIR
	}
	return cur, nil
}

// link is what the symlink name in dir leads to, as the task would
// follow it: its text, to resolve further from dir; or, for a magic link
// of /proc, the descriptor it leads to (O_PATH, the task's). In /proc
// itself, self and thread-self name the task.
func (t *task) link(dir int, name string) (int, string, error) {
	var st unix.Stat_t
	if err := unix.Fstat(dir, &st); err != nil {
		return -1, "", err
	}
	if st.Dev == t.s.procDev {
		if st.Ino == procRootIno {
			switch name {
			case "self":
				return -1, strconv.Itoa(t.tgid), nil
			case "thread-self":
				return -1, strconv.Itoa(t.tgid) + "/task/" + strconv.Itoa(t.tid), nil
			}
		} else {
			fd, err := t.magic(dir, func() (int, error) {
				return unix.Openat(dir, name, unix.O_PATH|unix.O_CLOEXEC, 0)
			})
			if err != nil {
				return -1, "", err
			}
			return t.keep(fd), "", nil
		}
	}
	text, err := readlinkat(dir, name)
	return -1, text, err
}

// procRootIno is the inode number of procfs's root (PROC_ROOT_INO).
const procRootIno = 1

func readlinkat(dir int, name string) (string, error) {
	for n := 256; ; n *= 2 {
		b := make([]byte, n)
		got, err := unix.Readlinkat(dir, name, b)
		if err != nil {
			return "", err
		}
		if got < n {
			return string(b[:got]), nil
		}
		if n >= unix.PathMax {
			return "", unix.ENAMETOOLONG
		}
	}
}

// magic runs follow, which follows a magic link of the /proc directory
// dir, with the task's right to: a process's links are its own to
// follow, and another's only if that one is dumpable, which this
// thread's (same uid, no capability in effect) are too, but for the
// init's own: this thread is of the init, the task is not. So the
// init's are refused, and the task's own are followed with
// CAP_SYS_PTRACE (a non-dumpable task).
func (t *task) magic(dir int, follow func() (int, error)) (int, error) {
	owner, err := t.procOwner(dir)
	if err != nil {
		return -1, err
	}
	switch owner {
	case t.tgid:
		return t.asTask(follow)
	case 1: // the init: its threads, even this one, are no task's
		return -1, unix.EACCES
	}
	return follow()
}

// procOwner is the thread group whose /proc/PID directory holds dir
// (a directory of /proc below its root).
func (t *task) procOwner(dir int) (int, error) {
	where, err := readlinkat(-1, "/proc/thread-self/fd/"+strconv.Itoa(dir))
	if err != nil {
		return 0, unix.EACCES
	}
	rest, ok := strings.CutPrefix(where, "/proc/")
	if !ok {
		return 0, unix.EACCES // /proc mounted elsewhere too: not served
	}
	comps := strings.Split(rest, "/")
	if _, err := strconv.Atoi(comps[0]); err != nil {
		return 0, unix.EACCES
	}
	// The status of the process dir is in (PID may be a thread's, or
	// reused since: dir pins the one it is).
	up := strings.Repeat("../", len(comps)-1)
	fd, err := unix.Openat(dir, up+"status", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, unix.EACCES
	}
	defer unix.Close(fd)
	b := make([]byte, 4096)
	n, _ := unix.Read(fd, b)
	for _, line := range strings.Split(string(b[:max(n, 0)]), "\n") {
		if v, ok := strings.CutPrefix(line, "Tgid:"); ok {
			if tgid, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
				return tgid, nil
			}
		}
	}
	return 0, unix.EACCES
}
