package sandbox

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// The git guard: in a workspace its user named (Spec.Owner, as root), the
// sandbox is that user, so a repository the agent makes there would be
// theirs, and their git on the host would run whatever its config and
// hooks say. No mount can make the agent's new files one user's and its
// new repositories another's, and pins come too late for a repository
// made after the shell started. So the daemon watches the workspace's
// filesystem (fanotify, FAN_REPORT_DFID_NAME: every entry created or
// renamed into place, with its directory and name) and hands every
// repository that appears in the workspace, other than those the first
// shell found (the user's own, which are pinned), to the sandbox's
// dedicated uid: the .git directory, file or symlink, or a bare
// repository's directory, changes owner. Git on the host checks exactly
// that owner (safe.directory): the user's git, and root's, now refuse the
// repository as "dubious ownership" and run nothing from it. The user
// keeps the access they had as its owner through an ACL entry (or, where
// the filesystem has no ACLs, the group bits of the sandbox's group), so
// git inside keeps working; inside, its shell trusts every repository
// (safe.directory=* in GIT_CONFIG_*), since those it does not own now
// look like nobody's.
//
// An owner sticks to the inode: renaming the repository, or the
// directories above it, keeps it quarantined, and a copy or a new one
// is a new creation, seen again. What the agent cannot do is give it
// back: it has no capability and the dedicated uid is not mapped in its
// namespace.
//
// The window: between the agent's mkdir or rename of a .git and the
// guard's chown (a read of the event, a handle opened, a chown: well
// under a millisecond on an idle host; longer under load, and an agent
// can add load), the user's git would trust it. Each shell start sweeps
// what its init found, and Destroy sweeps the workspace, for anything
// the watch missed.

// quarantineNames are the entry names whose creation may make a
// repository: .git itself, and what makes a directory a bare one.
var quarantineNames = map[string]bool{"HEAD": true, "objects": true, "refs": true, "commondir": true}

type devIno struct{ dev, ino uint64 }

// gitGuard watches one sandbox's workspace; see above.
type gitGuard struct {
	ws    string // the workspace's real path
	wsFd  int    // a descriptor of it: where handles are opened
	user  int    // the sandbox's host uid: whose repositories the guard hands over
	gid   int    // the sandbox's host gid: the group fallback
	owner int    // the dedicated uid repositories go to
	log   *slog.Logger

	fan  int // the fanotify group, or -1
	wake [2]int

	armed chan struct{} // closed once the base is known
	done  chan struct{} // closed when the loop has ended

	mu   sync.Mutex
	base map[devIno]bool // the user's own repositories (gitdirs, bare ones)
	// noACL is set once the filesystem refused an ACL: the group bits
	// serve instead.
	noACL  bool
	handed int // repositories handed over, for tests and the log
	// unlogged counts handovers past the first handoverLogLines, logged
	// as a total at most every handoverLogEvery (lastTotal) and at stop:
	// an agent making repositories in a loop must not fill the log.
	unlogged  int
	lastTotal time.Time
	record    string // where arm writes the guard's record (guardRecordName), if not ""
	stopOnce  sync.Once
}

// newGitGuard makes the guard of ws for repositories of uid user, to be
// handed to owner (gid: the sandbox's group, for filesystems without
// ACLs), and starts its watch, which acts once arm says which
// repositories are the user's own. The error says why the host cannot
// watch (no fanotify with directory entry events, before Linux 5.9; no
// CAP_SYS_ADMIN): the guard then only sweeps (see sweep), and the caller
// says so. A nil guard means the workspace could not be opened.
func newGitGuard(ws string, user, gid, owner int, log *slog.Logger) (*gitGuard, error) {
	g, err := newGitGuardSweeper(ws, user, gid, owner, log)
	if err != nil {
		return nil, err
	}
	g.done = make(chan struct{}) // the loop's, from here
	if err := g.watch(); err != nil {
		for _, fd := range []int{g.fan, g.wake[0], g.wake[1]} {
			if fd >= 0 {
				unix.Close(fd)
			}
		}
		g.fan, g.wake = -1, [2]int{-1, -1}
		close(g.done)
		return g, err
	}
	go g.loop()
	return g, nil
}

// newGitGuardSweeper is a guard that does not watch: it only sweeps.
func newGitGuardSweeper(ws string, user, gid, owner int, log *slog.Logger) (*gitGuard, error) {
	g := &gitGuard{ws: ws, user: user, gid: gid, owner: owner, log: log, fan: -1, wsFd: -1, wake: [2]int{-1, -1},
		armed: make(chan struct{}), done: make(chan struct{}), base: map[devIno]bool{}}
	close(g.done)
	fd, err := unix.Open(ws, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0) // not O_PATH: open_by_handle_at refuses one
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: ws, Err: err}
	}
	g.wsFd = fd
	return g, nil
}

// watch sets up the fanotify group: every entry created or renamed into
// place on the filesystems the workspace spans.
func (g *gitGuard) watch() error {
	var err error
	g.fan, err = unix.FanotifyInit(unix.FAN_CLASS_NOTIF|unix.FAN_CLOEXEC|unix.FAN_NONBLOCK|unix.FAN_UNLIMITED_QUEUE|unix.FAN_REPORT_DFID_NAME,
		unix.O_RDONLY|unix.O_CLOEXEC|unix.O_LARGEFILE)
	if err != nil {
		g.fan = -1
		return os.NewSyscallError("fanotify_init", err)
	}
	// Its own filesystem, and any mounted below it (the sandbox gets
	// the workspace with its submounts).
	for _, p := range append([]string{g.ws}, submounts(g.ws)...) {
		if err := unix.FanotifyMark(g.fan, unix.FAN_MARK_ADD|unix.FAN_MARK_FILESYSTEM,
			unix.FAN_CREATE|unix.FAN_MOVED_TO|unix.FAN_ONDIR, unix.AT_FDCWD, p); err != nil {
			return &os.PathError{Op: "fanotify_mark", Path: p, Err: err}
		}
	}
	// Events name directories by handle: one that cannot be opened
	// (no CAP_DAC_READ_SEARCH) would make every event a failure.
	h, _, err := unix.NameToHandleAt(g.wsFd, "", unix.AT_EMPTY_PATH)
	if err != nil {
		return &os.PathError{Op: "name_to_handle_at", Path: g.ws, Err: err}
	}
	fd, err := unix.OpenByHandleAt(g.wsFd, h, unix.O_PATH|unix.O_CLOEXEC)
	if err != nil {
		return &os.PathError{Op: "open_by_handle_at", Path: g.ws, Err: err}
	}
	unix.Close(fd)
	if err := unix.Pipe2(g.wake[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		return os.NewSyscallError("pipe2", err)
	}
	return nil
}

// submounts are the mount points strictly below dir, from the daemon's
// mount table.
func submounts(dir string) []string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		mp := unescapeMount(f[4])
		if mp != dir && within(mp, dir) {
			out = append(out, mp)
		}
	}
	return out
}

// within reports whether p is dir or below it.
func within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

// arm tells the guard which repositories are the user's own (what the
// first init found, before the agent ran anything) and lets it act on
// what it has seen since it started.
func (g *gitGuard) arm(repos []Repo) {
	g.mu.Lock()
	for _, r := range repos {
		if r.File {
			continue // a .git file: its gitdir is elsewhere, and it is pinned
		}
		if id, ok := g.idOf(r.Path); ok {
			g.base[id] = true
		}
	}
	g.mu.Unlock()
	if g.record != "" {
		b, _ := json.Marshal(guardRecord{Workspace: g.ws, User: g.user, GID: g.gid, Owner: g.owner, Repos: repos})
		if err := os.WriteFile(g.record, b, 0o600); err != nil {
			g.log.Warn("sandbox git guard: no record for a daemon that dies", "err", err)
		}
	}
	select {
	case <-g.armed:
	default:
		close(g.armed)
	}
}

// idOf is the device and inode of rel beneath the workspace, with no
// symlink on the way.
func (g *gitGuard) idOf(rel string) (devIno, bool) {
	fd, err := openBeneath(g.wsFd, rel)
	if err != nil {
		return devIno{}, false
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return devIno{}, false
	}
	return devIno{st.Dev, st.Ino}, true
}

// stop ends the watch once every event queued so far has been handled,
// and waits for it. Safe to call more than once.
func (g *gitGuard) stop() {
	g.stopOnce.Do(func() {
		select {
		case <-g.armed:
		default:
			close(g.armed) // never armed: what it saw is handled as new
		}
		if g.wake[1] >= 0 {
			unix.Write(g.wake[1], []byte{0})
		}
		<-g.done
		g.closeFds()
		g.mu.Lock()
		g.logTotalLocked()
		g.mu.Unlock()
	})
}

func (g *gitGuard) closeFds() {
	for _, fd := range []int{g.fan, g.wake[0], g.wake[1]} {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
}

// closeWs closes the workspace's descriptor, after the last sweep.
func (g *gitGuard) closeWs() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.wsFd >= 0 {
		unix.Close(g.wsFd)
		g.wsFd = -1
	}
}

// loop reads events until stop, draining the queue before it ends.
func (g *gitGuard) loop() {
	defer close(g.done)
	<-g.armed
	buf := make([]byte, 64<<10)
	fds := []unix.PollFd{{Fd: int32(g.fan), Events: unix.POLLIN}, {Fd: int32(g.wake[0]), Events: unix.POLLIN}}
	for {
		stopping := false
		if _, err := unix.Poll(fds, -1); err != nil && err != unix.EINTR {
			g.log.Error("sandbox git guard: poll", "workspace", g.ws, "err", err)
			return
		}
		if fds[1].Revents != 0 {
			stopping = true
		}
		for {
			n, err := unix.Read(g.fan, buf)
			if err == unix.EINTR {
				continue
			}
			if err != nil || n <= 0 {
				break // EAGAIN: drained
			}
			g.events(buf[:n])
		}
		if stopping {
			return
		}
	}
}

// events handles one read's worth of fanotify events.
func (g *gitGuard) events(b []byte) {
	const metaLen = 24 // struct fanotify_event_metadata
	for len(b) >= metaLen {
		evLen := int(binary.NativeEndian.Uint32(b[0:4]))
		mlen := int(binary.NativeEndian.Uint16(b[6:8]))
		mask := binary.NativeEndian.Uint64(b[8:16])
		if evLen < metaLen || evLen > len(b) {
			return
		}
		ev := b[:evLen]
		b = b[evLen:]
		if mask&unix.FAN_Q_OVERFLOW != 0 {
			g.log.Warn("sandbox git guard: events lost; sweeping the workspace", "workspace", g.ws)
			g.sweepAll()
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
			handle := rec[20 : 20+hb]
			name, _, _ := strings.Cut(string(rec[20+hb:]), "\x00")
			g.entry(unix.NewFileHandle(ht, handle), name)
		}
	}
}

// entry acts on name created in the directory behind h.
func (g *gitGuard) entry(h unix.FileHandle, name string) {
	gitName := strings.EqualFold(name, ".git")
	if !gitName && !quarantineNames[name] {
		return
	}
	dir, err := unix.OpenByHandleAt(g.wsFd, h, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC)
	if err != nil {
		if err != unix.ESTALE && err != unix.ENOENT {
			g.log.Warn("sandbox git guard: open by handle", "workspace", g.ws, "name", name, "err", err)
		}
		return // gone already
	}
	defer unix.Close(dir)
	p, err := os.Readlink(fdPath(dir))
	if err != nil || !within(p, g.ws) {
		return // not in the workspace (or no longer linked)
	}
	if gitName {
		g.quarantineAt(dir, name, p)
		return
	}
	if bareLike(dir) {
		g.quarantineAt(dir, "", p)
	}
}

// bareLike reports whether the directory dir might be taken by git as a
// repository: HEAD, and objects and refs, or a commondir naming them
// elsewhere. Any file type counts: git follows links.
func bareLike(dir int) bool {
	has := func(n string) bool {
		var st unix.Stat_t
		return unix.Fstatat(dir, n, &st, unix.AT_SYMLINK_NOFOLLOW) == nil
	}
	return has("HEAD") && (has("commondir") || has("objects") && has("refs"))
}

// quarantineAt hands the entry name in dir (dir itself for "") to the
// guard's owner, unless it is one of the user's own repositories or not
// the user's. where names it in the log.
func (g *gitGuard) quarantineAt(dir int, name, where string) {
	fd := dir
	if name != "" {
		var err error
		fd, err = unix.Openat(dir, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return
		}
		defer unix.Close(fd)
		where = filepath.Join(where, name)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if int(st.Uid) != g.user || g.base[devIno{st.Dev, st.Ino}] {
		return // another's (the user's git refuses it already), or the user's own
	}
	if err := g.handOver(fd, &st); err != nil {
		g.log.Error("sandbox git guard: could not hand a repository the agent made to the sandbox's uid: the user's git on the host would trust it",
			"path", where, "err", err)
		return
	}
	g.handed++
	if g.handed <= handoverLogLines {
		g.log.Info("sandbox git guard: a repository the agent made is the sandbox's uid's, not the user's", "path", where, "uid", g.owner)
		return
	}
	g.unlogged++
	if now := time.Now(); now.Sub(g.lastTotal) >= handoverLogEvery {
		g.logTotalLocked()
		g.lastTotal = now
	}
}

// Handovers logged one by one, and how often the rest are logged as a
// total.
const (
	handoverLogLines = 20
	handoverLogEvery = 10 * time.Second
)

// logTotalLocked logs the handovers not logged one by one; g.mu held.
func (g *gitGuard) logTotalLocked() {
	if g.unlogged == 0 {
		return
	}
	g.log.Info("sandbox git guard: more repositories the agent made are the sandbox's uid's, not the user's",
		"workspace", g.ws, "since_last_line", g.unlogged, "in_all", g.handed, "uid", g.owner)
	g.unlogged = 0
}

// handOver changes the owner of the inode behind fd (O_PATH) to g.owner,
// keeping the user's access: first an ACL entry giving the user what the
// owner bits give, so the user never loses it, then the owner.
func (g *gitGuard) handOver(fd int, st *unix.Stat_t) error {
	gid := -1
	if st.Mode&unix.S_IFMT != unix.S_IFLNK {
		proc := fdPath(fd)
		mode := st.Mode & 0o7777
		u := uint16(mode >> 6 & 7)
		err := errNoACL
		if !g.noACL {
			err = unix.Setxattr(proc, "system.posix_acl_access", accessACL(u, uint16(mode>>3&7), uint16(mode&7), g.user), 0)
		}
		if err != nil {
			if !errors.Is(err, unix.EOPNOTSUPP) && err != errNoACL {
				return &os.PathError{Op: "setxattr system.posix_acl_access", Path: proc, Err: err}
			}
			// No ACLs here: the sandbox's group gets the owner's bits.
			g.noACL = true
			gid = g.gid
			if err := unix.Fchmodat(unix.AT_FDCWD, proc, uint32(mode&^0o070|uint32(u)<<3), 0); err != nil {
				return &os.PathError{Op: "chmod", Path: proc, Err: err}
			}
		}
	}
	if err := unix.Fchownat(fd, "", g.owner, gid, unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return os.NewSyscallError("fchownat", err)
	}
	return nil
}

var errNoACL = errors.New("no ACL")

// accessACL is a system.posix_acl_access value: the owner, the group and
// others as the mode bits give, and uid user with the owner's bits.
func accessACL(owner, group, other uint16, user int) []byte {
	const (
		tagUserObj  = 0x01
		tagUser     = 0x02
		tagGroupObj = 0x04
		tagMask     = 0x10
		tagOther    = 0x20
		undefined   = 0xffffffff
	)
	b := binary.LittleEndian.AppendUint32(nil, 2) // POSIX_ACL_XATTR_VERSION
	add := func(tag, perm uint16, id uint32) {
		b = binary.LittleEndian.AppendUint16(b, tag)
		b = binary.LittleEndian.AppendUint16(b, perm)
		b = binary.LittleEndian.AppendUint32(b, id)
	}
	add(tagUserObj, owner, undefined)
	add(tagUser, owner, uint32(user))
	add(tagGroupObj, group, undefined)
	add(tagMask, group|owner, undefined)
	add(tagOther, other, undefined)
	return b
}

// sweep hands over every repository in repos (paths relative to the
// workspace, as an init found them) that is not the user's own.
func (g *gitGuard) sweep(repos []Repo) {
	for _, r := range repos {
		dir, name := path.Split(r.Path)
		if r.Path == "." {
			dir, name = ".", ""
		}
		g.mu.Lock()
		dfd, err := openBeneath(g.wsFd, path.Clean("./"+dir))
		g.mu.Unlock()
		if err != nil {
			continue
		}
		g.quarantineAt(dfd, name, filepath.Join(g.ws, dir))
		unix.Close(dfd)
	}
}

// maxGuardSweep bounds a whole-workspace sweep (at Destroy, after a
// daemon's crash, after lost events): ten times a shell start's scan,
// since an agent could hide a repository past that one (a second or two
// of walking).
const maxGuardSweep = 10 * maxGitScan

// sweepAll walks the workspace (as findRepos does) and hands over every
// repository in it that is not the user's own.
func (g *gitGuard) sweepAll() {
	g.mu.Lock()
	ws := g.wsFd
	g.mu.Unlock()
	if ws < 0 {
		return
	}
	repos, note := findRepos(fdPath(ws), maxGuardSweep)
	if note != "" {
		g.log.Warn("sandbox git guard: the workspace has more entries than a sweep looks at; repositories past them were not handed over",
			"workspace", g.ws, "entries", maxGuardSweep)
	}
	g.sweep(repos)
}

// guardGitConfig is the system git configuration of a guarded sandbox's
// shell (GIT_CONFIG_SYSTEM, in its control directory, which is
// read-only inside): the image's own, and trust in every repository,
// since those the guard handed over look like nobody's inside. Not
// GIT_CONFIG_COUNT: git drops that for the upload-pack of a local clone,
// which checks ownership too.
const guardGitConfig = "[include]\n\tpath = /etc/gitconfig\n[safe]\n\tdirectory = *\n"

// guardGitConfigName is guardGitConfig's file in the control directory.
const guardGitConfigName = "gitconfig"

// startGuard gives the sandbox a git guard where its user is a host
// user's (Spec.Owner, the daemon root) and the workspace is not one the
// daemon made (fresh): a directory the user named, where their git
// would trust a repository the agent made. Where the host cannot watch,
// the sweeps still run and the log says what is missing.
func (s *nativeSandbox) startGuard(ctx context.Context, fresh bool) {
	dedicated, _ := s.d.hostIDs(nil)
	if os.Geteuid() != 0 || fresh || s.uid == dedicated {
		return
	}
	if err := os.WriteFile(filepath.Join(s.ctl, guardGitConfigName), []byte(guardGitConfig), 0o644); err != nil {
		s.d.opts.Logger.WarnContext(ctx, "sandbox git guard: git inside will refuse the repositories handed over", "sandbox", s.spec.ID, "err", err)
	}
	g, err := newGitGuard(s.spec.Workspace, s.uid, s.gid, dedicated, s.d.opts.Logger)
	if g != nil {
		g.record = filepath.Join(s.dir, guardRecordName)
	}
	if err != nil {
		s.d.opts.Logger.WarnContext(ctx, "sandbox git guard: not watching; a repository the agent makes is handed over only at the next shell start and when the session ends",
			"sandbox", s.spec.ID, "workspace", s.spec.Workspace, "err", err)
	}
	s.guard = g
}

// stopGuard ends the guard's watch, once it has handled every event, and
// sweeps the whole workspace.
func (s *nativeSandbox) stopGuard() {
	if s.guard == nil {
		return
	}
	s.guard.stop()
	s.guard.sweepAll()
	s.guard.closeWs()
	os.Remove(s.guard.record)
}

// guardRecordName is the file in a sandbox's state directory that says,
// once the first shell has started, what its guard needs to sweep the
// workspace after a daemon that died: a daemon killed outright never
// reaches Destroy's sweep (and, where fanotify is missing, that sweep
// is all there is).
const guardRecordName = "git-guard.json"

// guardRecord is guardRecordName's content.
type guardRecord struct {
	Workspace        string
	User, GID, Owner int
	Repos            []Repo // the user's own
}

// cleanupGuards sweeps the workspace of every sandbox a daemon that died
// left a guard record for, and removes the record.
func (d *Native) cleanupGuards(ctx context.Context) {
	recs, _ := filepath.Glob(filepath.Join(d.opts.StateDir, "*", guardRecordName))
	for _, p := range recs {
		if ctx.Err() != nil {
			return
		}
		var r guardRecord
		b, err := os.ReadFile(p)
		if err == nil {
			err = json.Unmarshal(b, &r)
		}
		if err != nil || r.Workspace == "" || r.User <= 0 || r.Owner <= 0 {
			d.opts.Logger.Warn("sandbox git guard: a record left by an earlier daemon is unreadable", "record", p, "err", err)
			continue
		}
		g, _ := newGitGuardSweeper(r.Workspace, r.User, r.GID, r.Owner, d.opts.Logger)
		if g == nil {
			os.Remove(p) // the workspace is gone
			continue
		}
		g.arm(r.Repos)
		g.sweepAll()
		g.closeWs()
		d.opts.Logger.Info("sandbox git guard: swept the workspace of a sandbox an earlier daemon left", "workspace", r.Workspace, "handed_over", g.handed)
		os.Remove(p)
	}
}
