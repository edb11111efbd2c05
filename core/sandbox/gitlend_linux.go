package sandbox

import (
	"errors"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Lending: while a session runs over a directory its user named, the
// git directories of the user's own repositories there (each .git, and
// the git directories of its linked worktrees and submodules) are lent
// to the sandbox's dedicated uid, as the guard hands over a repository
// the agent makes (handOver: the user keeps their access through an ACL
// entry, so git inside works), and given back when the session ends,
// after the end-of-session rules (asideStates) have looked at them.
//
// Why: what the agent writes in those git directories (an operation in
// progress whose to-do list runs commands, an index naming files
// outside, a legacy remote, a symlink where only the kernel's rule or
// none holds) is checked only when the session ends. Git on the host
// checks the owner of the git directory it is about to use
// (safe.directory, git 2.35.2 and later; libgit2 1.4.3 and later): while
// it is lent, the user's git and root's refuse the repository as
// "dubious ownership" and run nothing of it, so there is no window in
// which the agent's writes are trusted before they are checked. The
// price is the same advice the README gave before, now enforced: no git
// of the user's in that repository while a session runs there.
//
// Sessions over the same repository share a lend (lentDirs, by inode):
// the first lends it and records what it was, the last gives it back.
// Everything that tells the user's repositories by owner also asks
// isLent (the host configs' reading, and each init, through
// initConfig.Lent), and lendGate keeps a lend from landing between a
// first init's config and its walk, which would take the lent
// repository for someone else's and not pin it. A record in the
// sandbox's state directory (guardRecord.Lent) has the next daemon give
// back what one that died had lent.

// lentDir is one git directory a guard lent: where, and what it was.
type lentDir struct {
	Path     string // beneath the workspace
	Dev, Ino uint64
	UID, GID int
	Mode     uint32
	ACL      []byte `json:",omitempty"` // its access ACL, if it had one
}

// lentShare is a lend and how many live guards hold it.
type lentShare struct {
	orig lentDir
	n    int
}

var (
	// lendGate serialises lends.
	lendGate sync.Mutex
	// firstInits are the guarded sandboxes' first inits between their
	// config and their report (beginFirstInit): a lend over their
	// workspace waits for them.
	firstInits = struct {
		sync.Mutex
		m map[*firstHold]bool
	}{m: map[*firstHold]bool{}}
	lentDirs = struct {
		sync.Mutex
		m map[devIno]*lentShare
	}{m: map[devIno]*lentShare{}}
)

// firstHold is a guarded sandbox's first init's hold on lends over its
// workspace (beginFirstInit).
type firstHold struct {
	ws    string
	until time.Time // firstInits' lock
}

// beginFirstInit holds lends over the workspace ws off, for at most
// limit, while a guarded sandbox's first init, whose config says what
// is lent now, walks it: a lend in between would have it take one of
// the user's repositories for another's, and not pin it. The hold is
// an optimisation, not the guarantee: Started refuses a first init
// that reports a repository lent since its config (lentSince). renew
// extends it (the process start, then its report, may each take up to
// the start timeout); end ends it, and may be called more than once.
func beginFirstInit(ws string, limit time.Duration) *firstHold {
	h := &firstHold{ws: ws, until: time.Now().Add(limit)}
	firstInits.Lock()
	firstInits.m[h] = true
	firstInits.Unlock()
	return h
}

func (h *firstHold) renew(limit time.Duration) {
	if h == nil {
		return
	}
	firstInits.Lock()
	h.until = time.Now().Add(limit)
	firstInits.Unlock()
}

func (h *firstHold) end() {
	if h == nil {
		return
	}
	firstInits.Lock()
	delete(firstInits.m, h)
	firstInits.Unlock()
}

// waitFirstInits waits until no first init over a workspace that holds
// ws, or that ws holds, holds lends off (first inits elsewhere cannot
// see what is lent here).
func waitFirstInits(ws string) {
	for {
		firstInits.Lock()
		busy := false
		now := time.Now()
		for h := range firstInits.m {
			if now.After(h.until) {
				delete(firstInits.m, h)
				continue
			}
			if within(h.ws, ws) || within(ws, h.ws) {
				busy = true
			}
		}
		firstInits.Unlock()
		if !busy {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// lentSince reports whether a repository a first init reported (repos,
// beneath the guard's workspace) is lent now but was not in the Lent of
// its config (sent): a lend landed while it walked, and it may have
// taken the repository for another's and pinned nothing of it.
func (g *gitGuard) lentSince(repos []Repo, sent [][2]uint64) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.wsFd < 0 {
		return ""
	}
	for _, r := range repos {
		if r.File || r.Stray || r.Half {
			continue
		}
		id, ok := g.idOf(r.Path)
		if ok && isLent(id.dev, id.ino) && !slices.Contains(sent, [2]uint64{id.dev, id.ino}) {
			return r.Path
		}
	}
	return ""
}

// isLent reports whether dev and ino are a git directory a guard has
// lent.
func isLent(dev, ino uint64) bool {
	lentDirs.Lock()
	defer lentDirs.Unlock()
	return lentDirs.m[devIno{dev, ino}] != nil
}

// lentIDs are the git directories guards have lent (initConfig.Lent).
func lentIDs() [][2]uint64 {
	lentDirs.Lock()
	defer lentDirs.Unlock()
	ids := make([][2]uint64, 0, len(lentDirs.m))
	for id := range lentDirs.m {
		ids = append(ids, [2]uint64{id.dev, id.ino})
	}
	return ids
}

// lent is a guard's hold on one lend: the directory's descriptor
// (O_PATH), by which it is given back wherever the agent moved it.
type lent struct {
	dir lentDir
	fd  int
}

// lendOwn lends the git directories of the user's own repositories
// (repos, as arm was given them) and returns what it lent, for the
// guard's record, which is written (write) before any owner changes: a
// daemon that dies after a lend always leaves the record to undo it.
func (g *gitGuard) lendOwn(repos []Repo, write func(lent []lentDir)) {
	lendGate.Lock()
	defer lendGate.Unlock()
	g.mu.Lock()
	stopped := g.stopped
	g.mu.Unlock()
	if stopped {
		return
	}
	var mine []lent
	isNew := map[int]bool{}
	for _, r := range repos {
		if r.File || r.Stray || r.Half {
			// A .git file's git directory is elsewhere: outside the
			// workspace, where the agent cannot write, or a submodule's
			// in the superproject's .git, lent with it.
			continue
		}
		eachGitDir(g.wsFd, r.Path, func(dir int, d, _ string) {
			if l, fresh, ok := g.take(dir, d); ok {
				isNew[len(mine)] = fresh
				mine = append(mine, l)
			}
		})
	}
	recs := make([]lentDir, 0, len(mine))
	for _, l := range mine {
		recs = append(recs, l.dir)
	}
	// A guard stopped meanwhile (Destroy does not wait for a start in
	// progress) lends nothing: its stop has given back what it held.
	g.mu.Lock()
	stopped = g.stopped
	if !stopped {
		write(recs)
	}
	g.mu.Unlock()
	if !stopped {
		// A first init over this workspace that has its config already,
		// but has not walked yet, takes what is lent from now on for
		// another's.
		waitFirstInits(g.ws)
	}
	held := mine[:0]
	for i, l := range mine {
		if isNew[i] {
			var st unix.Stat_t
			err := unix.Fstat(l.fd, &st)
			g.mu.Lock()
			if g.stopped {
				err = errGuardStopped
			}
			if err == nil {
				err = g.handOver(l.fd, &st, l.dir.ACL)
			}
			g.mu.Unlock()
			if err != nil {
				if err != errGuardStopped {
					g.log.Error("sandbox git guard: could not lend a git directory of the user's to the sandbox's uid: their git on the host trusts it while the session runs",
						"workspace", g.ws, "path", l.dir.Path, "err", err)
				}
				g.giveBack(l)
				continue
			}
		}
		held = append(held, l)
	}
	g.mu.Lock()
	if g.stopped {
		g.mu.Unlock()
		for _, l := range held {
			g.giveBack(l)
		}
		return
	}
	g.lent = held
	g.mu.Unlock()
	if len(held) > 0 {
		g.log.Info("sandbox git guard: the user's repositories in the workspace are the sandbox's uid's until the session ends: their git on the host refuses them meanwhile",
			"workspace", g.ws, "git_dirs", len(held), "uid", g.owner)
	}
}

var errGuardStopped = errors.New("the guard has stopped")

// take joins the lend of the git directory dir (d beneath the
// workspace), or makes it where the directory is the user's: isNew says
// its owner is still to change. Not ok: neither (another's).
func (g *gitGuard) take(dir int, d string) (l lent, isNew, ok bool) {
	var st unix.Stat_t
	if unix.Fstat(dir, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return lent{}, false, false
	}
	id := devIno{st.Dev, st.Ino}
	lentDirs.Lock()
	defer lentDirs.Unlock()
	sh := lentDirs.m[id]
	switch {
	case sh != nil:
		sh.n++
	case int(st.Uid) == g.user:
		orig := lentDir{Path: d, Dev: st.Dev, Ino: st.Ino, UID: int(st.Uid), GID: int(st.Gid), Mode: st.Mode & 0o7777}
		if acl, err := getACL(dir); err == nil {
			orig.ACL = acl
		} else if !errors.Is(err, unix.ENODATA) && !errors.Is(err, unix.EOPNOTSUPP) {
			return lent{}, false, false
		}
		sh = &lentShare{orig: orig, n: 1}
		lentDirs.m[id] = sh
		isNew = true
	default:
		return lent{}, false, false
	}
	fd, err := unix.FcntlInt(uintptr(dir), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		if sh.n--; sh.n == 0 {
			delete(lentDirs.m, id)
		}
		return lent{}, false, false
	}
	rec := sh.orig
	rec.Path = d
	return lent{dir: rec, fd: fd}, isNew, true
}

// getACL is the access ACL of the inode behind fd.
func getACL(fd int) ([]byte, error) {
	proc := fdPath(fd)
	n, err := unix.Getxattr(proc, "system.posix_acl_access", nil)
	if err != nil {
		return nil, err
	}
	b := make([]byte, n)
	n, err = unix.Getxattr(proc, "system.posix_acl_access", b)
	if err != nil {
		return nil, err
	}
	return b[:n], nil
}

// giveBackAll lets go of every lend the guard holds, and of any it is
// still making: the last holder gives the directory back. After
// asideStates.
func (g *gitGuard) giveBackAll() {
	g.mu.Lock()
	g.stopped = true // a lend still under way gives back itself
	held := g.lent
	g.lent = nil
	g.mu.Unlock()
	for _, l := range held {
		g.giveBack(l)
	}
}

// uncheckedAt reports whether the lent git directory at d beneath the
// workspace belongs to a repository whose end checks did not finish.
func (g *gitGuard) uncheckedAt(d string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	for gitdir := range g.unchecked {
		if d == gitdir || strings.HasPrefix(d, gitdir+"/") {
			return true
		}
	}
	return false
}

// giveBack lets go of one lend, and gives the directory back if no
// other guard holds it, unless the end could not check it whole.
func (g *gitGuard) giveBack(l lent) {
	defer unix.Close(l.fd)
	id := devIno{l.dir.Dev, l.dir.Ino}
	unchecked := g.uncheckedAt(l.dir.Path) // g.mu before lentDirs, never after (lentSince)
	lentDirs.Lock()
	defer lentDirs.Unlock()
	sh := lentDirs.m[id]
	if sh == nil {
		return
	}
	if sh.n--; sh.n > 0 {
		return
	}
	delete(lentDirs.m, id)
	if unchecked {
		g.keepLent(l.dir.Path)
		return
	}
	g.dropGitFile(l.fd, l.dir.Path)
	if err := g.restore(l.fd, sh.orig); err != nil {
		g.log.Error("sandbox git guard: could not give a git directory back to the user: their git refuses it as dubious ownership until they take it back (sudo chown)",
			"workspace", g.ws, "path", l.dir.Path, "uid", sh.orig.UID, "err", err)
	}
}

// keepLent says why the git directory at d stays the dedicated uid's.
func (g *gitGuard) keepLent(d string) {
	g.log.Error("sandbox git guard: a git directory of the user's is not given back: it held more entries than the end looks at for the symbolic links the sandbox could have made there; look for them (find DIR -type l), then take it back (sudo chown USER DIR)",
		"workspace", g.ws, "path", d, "entries", maxLinkWalk)
}

// dropGitFile moves aside a .git in the lent git directory dir (at d
// beneath the workspace), before it is given back: the HEAD rule lets
// the agent make one of any kind in a directory the dedicated uid owns,
// and git looks for .git before it takes a directory for a bare
// repository, so one left in a bare repository of the user's would
// lead their git elsewhere (or fail it) once it is theirs again. Git
// makes none in a git directory.
func (g *gitGuard) dropGitFile(dir int, d string) {
	var st unix.Stat_t
	if unix.Fstatat(dir, ".git", &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return
	}
	g.log.Warn("sandbox git guard: a .git the sandbox made in a git directory of the user's", "workspace", g.ws, "path", path.Join(d, ".git"), "what", moveAside(dir, ".git"))
}

// restore gives the directory behind fd back as orig says it was, if it
// is still the one lent and still the dedicated uid's (a user who took
// it back keeps it as they left it).
func (g *gitGuard) restore(fd int, orig lentDir) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return os.NewSyscallError("fstat", err)
	}
	if st.Dev != orig.Dev || st.Ino != orig.Ino || int(st.Uid) != g.owner {
		return nil
	}
	if err := unix.Fchownat(fd, "", orig.UID, orig.GID, unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return os.NewSyscallError("fchownat", err)
	}
	proc := fdPath(fd)
	var err error
	if orig.ACL != nil {
		err = unix.Setxattr(proc, "system.posix_acl_access", orig.ACL, 0)
	} else if err = unix.Removexattr(proc, "system.posix_acl_access"); errors.Is(err, unix.ENODATA) || errors.Is(err, unix.EOPNOTSUPP) {
		err = nil
	}
	if err != nil {
		return &os.PathError{Op: "restore the ACL of", Path: proc, Err: err}
	}
	if err := unix.Fchmodat(unix.AT_FDCWD, proc, orig.Mode, 0); err != nil {
		return &os.PathError{Op: "chmod", Path: proc, Err: err}
	}
	return nil
}

// giveBackRecord gives back what a dead daemon's guard had lent (its
// record's), where it is still lent: a sweeper's.
func (g *gitGuard) giveBackRecord(recs []lentDir) {
	for _, r := range recs {
		fd, err := openBeneath(g.wsFd, r.Path)
		if err != nil {
			g.log.Error("sandbox git guard: a git directory an earlier daemon lent to the sandbox's uid is gone from where it was; the user takes it back with sudo chown",
				"workspace", g.ws, "path", r.Path, "err", err)
			continue
		}
		var st unix.Stat_t
		switch {
		case unix.Fstat(fd, &st) != nil:
		case st.Dev != r.Dev || st.Ino != r.Ino:
			if int(st.Uid) == g.owner {
				g.log.Error("sandbox git guard: a git directory an earlier daemon lent to the sandbox's uid was replaced; the user takes it back with sudo chown",
					"workspace", g.ws, "path", r.Path)
			}
		case int(st.Uid) != g.owner:
			// Given back already (by another record of the same lend), or
			// taken back by the user.
		case g.uncheckedAt(r.Path):
			g.keepLent(r.Path)
		default:
			g.dropGitFile(fd, r.Path)
			if err := g.restore(fd, r); err != nil {
				g.log.Error("sandbox git guard: could not give a git directory back to the user: their git refuses it as dubious ownership until they take it back (sudo chown)",
					"workspace", g.ws, "path", r.Path, "uid", r.UID, "err", err)
			}
		}
		unix.Close(fd)
	}
}
