package sandbox

import (
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
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
// renamed into place, with its directory and name; one group per
// filesystem, shared by every guard there: gitguard_fanotify_linux.go)
// and hands every repository that appears in the workspace, other than
// those the first shell found (the user's own, which are pinned), to
// the sandbox's dedicated uid: the .git directory, file or symlink, or
// a bare repository's directory, changes owner. Git on the host checks exactly
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
// back: it has no capability, and the dedicated uid is not mapped in its
// namespace (or, where the init enforces the HEAD rule, mapped only for
// the init to tell it: headrule_linux.go).
//
// The window: between the agent's mkdir or rename of a .git and the
// guard's chown (a read of the event, a handle opened, a chown: well
// under a millisecond on an idle host; longer under load, and an agent
// can add load), the user's git would trust it. Each shell start sweeps
// what its init found, and Destroy sweeps the workspace, for anything
// the watch missed. The HEAD rule closes the window: the agent gets no
// HEAD in a directory the dedicated uid does not own, so what the watch
// has not handed over yet is no repository at all. From Linux 5.14 the
// sandbox's init enforces it (seccomp user notification:
// headrule_linux.go, package gitnotify), with the symlink rule beside
// it; before, the kernel does where it has BPF LSM (kernelRule, package
// gitlsm).

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

	// watches are the guard's, one per filesystem (and mount) the
	// workspace spans, through the shared groups (fanGroups); mounts are
	// the descriptors of the submounts among them (the workspace's is
	// wsFd), closed once the watches are gone.
	watches []*fanWatch
	mounts  []int

	mu   sync.Mutex
	base map[devIno]bool // the user's own repositories (gitdirs, bare ones)
	// own are those repositories as arm was given them, and bases what
	// their operations in progress held then (gitstate_linux.go), by path; held
	// are the shared bases the guard holds (takeBase). A sweeper takes
	// its bases from a record instead.
	own     []Repo
	bases   map[string]stateBase
	held    []devIno
	sweeper bool
	// armed is set once the base is known; until then what the watch
	// sees waits in pending (missed: more than maxPending came, and
	// arm sweeps the workspace instead).
	armed   bool
	pending []pendingEntry
	missed  bool
	// unarmed is set when the guard stopped before arm: it then hands
	// over nothing (see stop).
	unarmed bool
	// noACL is set once the filesystem refused an ACL: the group bits
	// serve instead.
	noACL bool
	// lent are the user's git directories the guard holds lent while
	// the session runs (gitlend_linux.go).
	lent []lent
	// stopped is set when the guard gives back its lends (giveBackAll):
	// a lend still under way then gives back what it made.
	stopped bool
	// unchecked are the user's git directories (Repo.Path) whose walk
	// for links the end could not finish: not given back.
	unchecked map[string]bool
	handed    int // repositories handed over, for tests and the log
	// unlogged counts handovers past the first handoverLogLines, logged
	// as a total at most every handoverLogEvery (lastTotal) and at stop:
	// an agent making repositories in a loop must not fill the log.
	unlogged  int
	lastTotal time.Time
	record    string // where arm writes the guard's record (guardRecordName), if not ""
	stopOnce  sync.Once

	// rule is the kernel's part of the guard (see kernelRule), where the
	// daemon has it; inits are the inits it guards (guardInit). Where it
	// has not, notify has each init enforce the same rule itself
	// (headrule_linux.go).
	rule   kernelRule
	inits  []guardedInit
	notify bool
	// since is when the guard was made, before the sandbox's first
	// shell: a directory born before it is the user's (see predates).
	// ruled is a sweeper's headRule: whether its sandbox had the rule.
	since time.Time
	ruled bool
	// oldDirs are the directories in the workspace at arm, where its
	// filesystem keeps no birth times (see predates); nil elsewhere.
	oldDirs map[devIno]bool
}

// headRule reports whether new HEADs are refused in the user's
// directories: by the kernel, or by the init.
func (g *gitGuard) headRule() bool { return g.rule != nil || g.notify }

// guardedInit is an init the kernel rule guards: its user namespace, on
// the filesystems devs, until it exits (pidfd, the guard's own).
type guardedInit struct {
	ns    uint32
	devs  []uint64
	pidfd int
}

// pendingEntry is an entry the watch saw before arm: name in dir (an
// O_PATH descriptor the entry owns).
type pendingEntry struct {
	dir     int
	name    string
	gitName bool
}

// maxPending bounds the entries a guard keeps until arm (repositories
// the user or the host made in the workspace between Create and the
// first shell's start); past it, arm sweeps the workspace.
const maxPending = 1024

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
	if err := g.watch(); err != nil {
		g.unwatch(context.Background()) // nothing was handed to it yet
		return g, err
	}
	return g, nil
}

// newGitGuardSweeper is a guard that does not watch: it only sweeps.
func newGitGuardSweeper(ws string, user, gid, owner int, log *slog.Logger) (*gitGuard, error) {
	g := &gitGuard{ws: ws, user: user, gid: gid, owner: owner, log: log, wsFd: -1, base: map[devIno]bool{}, since: time.Now()}
	fd, err := unix.Open(ws, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0) // not O_PATH: open_by_handle_at refuses one
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: ws, Err: err}
	}
	g.wsFd = fd
	return g, nil
}

// watch has the workspace's filesystem watched, and those of the mounts
// below it (the sandbox gets the workspace with its submounts), by the
// groups of those filesystems (fanGroups).
func (g *gitGuard) watch() error {
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
	w, err := fanGroups.watch(g, g.ws, g.wsFd)
	if err != nil {
		return err
	}
	g.watches = append(g.watches, w)
	for _, p := range submounts(g.ws) {
		fd, err := unix.Open(p, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return &os.PathError{Op: "open", Path: p, Err: err}
		}
		g.mounts = append(g.mounts, fd)
		w, err := fanGroups.watch(g, p, fd)
		if err != nil {
			return err
		}
		g.watches = append(g.watches, w)
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
	var old map[devIno]bool
	if !g.sweeper && g.headRule() && !keepsBirth(g.wsFd) {
		old = dirsIn(g.wsFd, maxGitScan)
	}
	g.mu.Lock()
	g.oldDirs = old
	if g.bases == nil {
		g.bases = map[string]stateBase{}
	}
	for _, r := range repos {
		// A .git file counts too: its gitdir is elsewhere (and pinned),
		// but a later sweep finds the file itself among what the init
		// reports, and must leave it the user's.
		id, ok := g.idOf(r.Path)
		if !ok {
			continue
		}
		g.base[id] = true
		if !g.sweeper && !r.File && !r.Stray && !r.Half {
			gitdir := r.Path
			g.bases[gitdir] = takeBase(id, func() stateBase { return readBase(g.wsFd, gitdir) })
			g.held = append(g.held, id)
		}
	}
	g.own = repos
	bases := g.bases
	sweeper := g.sweeper
	g.mu.Unlock()
	write := func(lent []lentDir) {
		if g.record == "" {
			return
		}
		b, _ := json.Marshal(guardRecord{Workspace: g.ws, User: g.user, GID: g.gid, Owner: g.owner, Repos: repos, Bases: bases,
			Since: g.since, Ruled: g.headRule(), Lent: lent})
		if err := os.WriteFile(g.record, b, 0o600); err != nil {
			g.log.Warn("sandbox git guard: no record for a daemon that dies", "err", err)
		}
	}
	if sweeper {
		write(nil)
	} else {
		g.lendOwn(repos, write)
	}
	g.setArmed()
}

// setArmed lets the guard act on what its watch sees, and acts on what
// it saw until now.
func (g *gitGuard) setArmed() {
	g.mu.Lock()
	pending, missed := g.pending, g.missed
	g.armed, g.pending, g.missed = true, nil, false
	g.mu.Unlock()
	for _, e := range pending {
		if where, err := os.Readlink(fdPath(e.dir)); err == nil && within(where, g.ws) {
			g.act(e.dir, e.name, where, e.gitName)
		}
		unix.Close(e.dir)
	}
	if missed {
		g.sweepAll()
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

// stop ends the watch once every event queued so far has been handled
// (or ctx is done: the sweep that follows finds what it left), and
// waits for it. Safe to call more than once.
func (g *gitGuard) stop(ctx context.Context) {
	g.stopOnce.Do(func() {
		g.unwatch(ctx)
		g.mu.Lock()
		if !g.armed {
			// Stopped before arm: no shell of this sandbox ever ran
			// (the first starts only once arm knows the user's own
			// repositories), so nothing in the workspace is its agent's;
			// with no base, every repository of the user's, and each
			// one whose pinned commondir the init just made, would look
			// new. It hands over nothing (another session's agent is
			// its own guard's).
			for _, e := range g.pending {
				unix.Close(e.dir)
			}
			g.pending, g.missed, g.unarmed = nil, false, true
		}
		g.mu.Unlock()
		g.setArmed()
		g.mu.Lock()
		g.logTotalLocked()
		g.mu.Unlock()
	})
}

// unwatch ends the guard's watches and closes the submounts'
// descriptors: once it returns, no group hands the guard anything.
func (g *gitGuard) unwatch(ctx context.Context) {
	fanGroups.unwatchAll(ctx, g.watches)
	g.watches = nil
	for _, fd := range g.mounts {
		unix.Close(fd)
	}
	g.mounts = nil
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

// entry acts on name, created in dir (where: its path), which a group
// found in the workspace; before arm, it keeps it for then. The group's
// lock is held: dir is the group's.
func (g *gitGuard) entry(dir int, name, where string, gitName bool) {
	g.mu.Lock()
	if !g.armed {
		if len(g.pending) >= maxPending {
			g.missed = true
		} else if fd, err := unix.FcntlInt(uintptr(dir), unix.F_DUPFD_CLOEXEC, 0); err != nil {
			g.missed = true
		} else {
			g.pending = append(g.pending, pendingEntry{dir: fd, name: name, gitName: gitName})
		}
		g.mu.Unlock()
		return
	}
	g.mu.Unlock()
	g.act(dir, name, where, gitName)
}

// act hands over what name, created in dir, made a repository of: the
// entry itself if it is a .git, else dir if that is now a bare
// repository.
func (g *gitGuard) act(dir int, name, where string, gitName bool) {
	if gitName {
		g.quarantineAt(dir, name, where)
		return
	}
	if strings.HasSuffix(name, ".git") {
		// A bare repository's usual name (git init --bare x.git): a
		// directory so named is handed over as it is made, before git
		// writes its HEAD, which the kernel rule refuses in a directory
		// of the user's.
		var st unix.Stat_t
		if unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
			g.quarantineAt(dir, name, where)
		}
		return
	}
	if bareLike(dir) {
		g.quarantineAt(dir, "", where)
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
	if name != "" && st.Mode&unix.S_IFMT == unix.S_IFREG && st.Nlink > 1 {
		// A .git file with another name too: the agent linked one of the
		// user's files there, and a handover would take it from them. The
		// link goes instead (git makes none).
		if err := unix.Unlinkat(dir, name, 0); err != nil && err != unix.ENOENT {
			g.log.Error("sandbox git guard: could not remove a .git the agent linked to another file: the user's git on the host would read it",
				"path", where, "err", err)
			return
		}
		g.log.Info("sandbox git guard: removed a .git the agent made as a hard link to another file", "path", where)
		return
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR && (g.headRule() || g.ruled) && g.predates(fd) {
		// A directory of the user's from before the session, that the
		// agent renamed to .git or added objects, refs or commondir to
		// (beside a HEAD git would not take): under the HEAD rule it gets
		// no HEAD it did not have (and a HEAD it had is pinned, whole
		// where it would do), so it is no repository, and a handover
		// would only take it from the user.
		g.log.Debug("sandbox git guard: left a directory of the user's from before the session theirs", "path", where)
		return
	}
	if err := g.handOver(fd, &st, nil); err != nil {
		g.log.Error("sandbox git guard: could not hand a repository the agent made to the sandbox's uid: the user's git on the host would trust it",
			"path", where, "err", err)
		return
	}
	if g.headRule() && name != "" && st.Mode&unix.S_IFMT == unix.S_IFDIR {
		g.makeHeadDirs(fd, where)
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

// predates reports whether the directory fd (O_PATH) was there before
// the guard was made: born before it, where the filesystem keeps birth
// times (which nothing in the sandbox can set), else found by arm's walk
// of the workspace (oldDirs: the first maxGitScan entries; a directory
// past them counts as new, and a sweeper after a dead daemon has none).
func (g *gitGuard) predates(fd int) bool {
	var stx unix.Statx_t
	if unix.Statx(fd, "", unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW, unix.STATX_BTIME|unix.STATX_INO, &stx) != nil {
		return false
	}
	if stx.Mask&unix.STATX_BTIME == 0 {
		return g.oldDirs[devIno{unix.Mkdev(stx.Dev_major, stx.Dev_minor), stx.Ino}]
	}
	return time.Unix(stx.Btime.Sec, int64(stx.Btime.Nsec)).Before(g.since)
}

// keepsBirth reports whether the filesystem of fd keeps birth times.
func keepsBirth(fd int) bool {
	var stx unix.Statx_t
	return unix.Statx(fd, "", unix.AT_EMPTY_PATH, unix.STATX_BTIME, &stx) == nil && stx.Mask&unix.STATX_BTIME != 0
}

// dirsIn are the directories beneath the directory fd, itself included,
// within its first limit entries; no link is followed.
func dirsIn(fd, limit int) map[devIno]bool {
	dirs := map[devIno]bool{}
	n := 0
	// The trailing slash has the walk start through the magic link.
	filepath.WalkDir(fdPath(fd)+"/", func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		if n++; n > limit {
			return fs.SkipAll
		}
		if fi, err := d.Info(); err == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				dirs[devIno{st.Dev, st.Ino}] = true
			}
		}
		return nil
	})
	return dirs
}

// headDirs are the directories of a gitdir, below its top, where git
// makes a HEAD of its own: a clone's origin/HEAD. Under the kernel rule
// a directory the agent makes there is the user's and gets no HEAD, so
// the guard makes them, the dedicated uid's, as it hands a new .git
// over (a clone makes refs/remotes/origin only once it has fetched).
// The reflog of HEAD (logs/HEAD) is the other: the shell's git makes no
// new reflog instead (kernelRuleGitEnv). Linked worktrees' and
// submodules' gitdirs (worktrees/NAME, modules/NAME) are not among
// them: git worktree add and submodules fail there.
var headDirs = []string{"refs/remotes/origin"}

// kernelRuleGitEnv is the environment of a shell the kernel rule
// guards: its git makes no new reflog (core.logAllRefUpdates, at the
// command line's level, above a repository's own), since the reflog of
// HEAD, logs/HEAD, is a HEAD in a directory git makes as the user (in a
// repository of the user's, or one the agent made); reflogs that exist
// are still written.
var kernelRuleGitEnv = []string{"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=core.logAllRefUpdates", "GIT_CONFIG_VALUE_0=false"}

// makeHeadDirs makes the missing headDirs in the gitdir fd (an O_PATH
// descriptor of a directory just handed over; where names it), each
// directory it makes handed over too. Nothing on the way is followed:
// the agent may have put a link there already.
func (g *gitGuard) makeHeadDirs(fd int, where string) {
	for _, p := range headDirs {
		dir := fd
		for _, c := range strings.Split(p, "/") {
			err := unix.Mkdirat(dir, c, 0o755)
			next, oerr := unix.Openat(dir, c, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if dir != fd {
				unix.Close(dir)
			}
			if oerr != nil {
				dir = -1
				break
			}
			dir = next
			if err == nil {
				var st unix.Stat_t
				if err = unix.Fstat(dir, &st); err == nil {
					err = g.handOver(dir, &st, nil)
				}
				if err != nil {
					g.log.Warn("sandbox git guard: a directory git needs for a HEAD of its own is not the sandbox's uid's: git will fail there", "path", filepath.Join(where, p), "err", err)
				}
			}
		}
		if dir >= 0 && dir != fd {
			unix.Close(dir)
		}
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
// owner bits give, so the user never loses it, then the owner. acl is
// the inode's access ACL, if it has one: its entries keep the access
// they gave (aclWithUser).
func (g *gitGuard) handOver(fd int, st *unix.Stat_t, acl []byte) error {
	gid := -1
	if st.Mode&unix.S_IFMT != unix.S_IFLNK {
		proc := fdPath(fd)
		mode := st.Mode & 0o7777
		u := uint16(mode >> 6 & 7)
		err := errNoACL
		if !g.noACL {
			value := accessACL(u, uint16(mode>>3&7), uint16(mode&7), g.user)
			if with, ok := aclWithUser(acl, g.user, u); ok {
				value = with
			}
			err = unix.Setxattr(proc, "system.posix_acl_access", value, 0)
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

// ACL entry tags (linux/posix_acl_xattr.h).
const (
	aclUserObj  = 0x01
	aclUser     = 0x02
	aclGroupObj = 0x04
	aclGroup    = 0x08
	aclMask     = 0x10
	aclOther    = 0x20
)

// aclWithUser is the access ACL acl (a system.posix_acl_access value)
// with uid user given perm as well, and no other entry given more than
// it had: the named entries and the owning group's are cut to what the
// mask let them have, and the new mask is what they and the user's entry
// need. Not ok: acl is empty or not an ACL.
func aclWithUser(acl []byte, user int, perm uint16) ([]byte, bool) {
	if len(acl) < 4+8 || (len(acl)-4)%8 != 0 || binary.LittleEndian.Uint32(acl) != 2 {
		return nil, false
	}
	type entry struct {
		tag, perm uint16
		id        uint32
	}
	var es []entry
	mask := uint16(7)
	objects := 0
	var last entry
	for i := 4; i < len(acl); i += 8 {
		e := entry{binary.LittleEndian.Uint16(acl[i:]), binary.LittleEndian.Uint16(acl[i+2:]), binary.LittleEndian.Uint32(acl[i+4:])}
		// As the kernel takes them: known tags, in tag then id order,
		// each once, permission bits only.
		if i > 4 && (e.tag < last.tag || e.tag == last.tag && e.id <= last.id) || e.perm&^7 != 0 {
			return nil, false
		}
		last = e
		switch e.tag {
		case aclUserObj, aclGroupObj, aclOther:
			objects++
		case aclUser, aclGroup:
		case aclMask:
			mask = e.perm
			continue
		default:
			return nil, false
		}
		es = append(es, e)
	}
	if objects != 3 {
		return nil, false
	}
	newMask := perm
	found := false
	for i := range es {
		switch es[i].tag {
		case aclUser, aclGroupObj, aclGroup:
			es[i].perm &= mask
			if es[i].tag == aclUser && es[i].id == uint32(user) {
				es[i].perm |= perm
				found = true
			}
			newMask |= es[i].perm
		}
	}
	if !found {
		es = append(es, entry{aclUser, perm, uint32(user)})
	}
	es = append(es, entry{aclMask, newMask, 0xffffffff})
	slices.SortFunc(es, func(a, b entry) int {
		if a.tag != b.tag {
			return int(a.tag) - int(b.tag)
		}
		return cmp.Compare(a.id, b.id)
	})
	b := binary.LittleEndian.AppendUint32(nil, 2)
	for _, e := range es {
		b = binary.LittleEndian.AppendUint16(b, e.tag)
		b = binary.LittleEndian.AppendUint16(b, e.perm)
		b = binary.LittleEndian.AppendUint32(b, e.id)
	}
	return b, true
}

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
	g.mu.Lock()
	unarmed := g.unarmed
	g.mu.Unlock()
	if unarmed {
		return
	}
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
	ws, unarmed := g.wsFd, g.unarmed
	g.mu.Unlock()
	if ws < 0 || unarmed {
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

// kernelRule is the kernel's part of the guard (package gitlsm, a BPF
// LSM program): a task whose credentials are in user namespace userNS
// gets EPERM for a new entry named HEAD, or a new .git that is not a
// directory, on the filesystems devs, in a directory that owner does
// not own. Since a directory is a repository only with a HEAD, no
// directory of the user's becomes one by the agent's hand, and there is
// no window: a .git the watch has handed to the dedicated uid gets its
// HEAD then (git writes hooks/, info/ and refs/ first), and git init
// fails, on HEAD, where the watch was late. No .git file or link can
// name one of the user's old directories that has a HEAD (a reflog,
// .git/logs/HEAD, is a valid one) once the agent has added the rest.
type kernelRule interface {
	Add(userNS uint32, devs []uint64, owner uint32) error
	Remove(userNS uint32, devs []uint64)
}

// loadKernelRule loads the kernel rule (gitlsm_linux.go, the daemon's
// only: the sandbox's init does not carry it); nil in the init.
var loadKernelRule func() (kernelRule, error)

// noKernelRule leaves the HEAD rule, the kernel's and the init's, out
// of new guards: tests of the watch alone set it.
var noKernelRule bool

// preferKernelRule has new guards use the kernel's HEAD rule where it
// loads even though the init's holds too: tests of the kernel's set it.
// By default the init's is preferred (see startGuard).
var preferKernelRule bool

// initRuleLog says once that the init's rule is the one in force.
var initRuleLog sync.Once

var (
	initRuleOnce sync.Once
	initRuleErr  error // why the init cannot enforce the HEAD rule
)

// sharedInitRule reports whether inits can enforce the HEAD rule here
// (headRuleAvailable), checked once.
func sharedInitRule() bool {
	initRuleOnce.Do(func() { initRuleErr = headRuleAvailable() })
	return initRuleErr == nil
}

var (
	kernelRuleOnce sync.Once
	theKernelRule  kernelRule
	kernelRuleErr  error // why there is none
)

// sharedKernelRule is the daemon's kernel rule, loaded by the first
// guard that asks, for the daemon's life; nil where the kernel cannot
// enforce it. The log says, once, which protection is in force.
func sharedKernelRule(log *slog.Logger) kernelRule {
	kernelRuleOnce.Do(func() {
		if loadKernelRule == nil {
			kernelRuleErr = errors.New("not in this program")
			return
		}
		r, err := loadKernelRule()
		if err != nil {
			kernelRuleErr = err
			if sharedInitRule() {
				log.Info("sandbox git guard: the kernel cannot refuse a sandbox a new HEAD (BPF LSM); each guarded sandbox's init refuses it instead (seccomp user notification), at some tens of microseconds per entry the agent makes: no repository the agent makes is ever the user's",
					"lsm_err", err)
				return
			}
			log.Warn("sandbox git guard: neither the kernel (BPF LSM) nor the sandbox's init (seccomp user notification) can refuse a sandbox a new HEAD; in a directory a user named, a repository the agent makes is that user's until the watch hands it over, and their git trusts it meanwhile",
				"lsm_err", err, "notify_err", initRuleErr)
			return
		}
		theKernelRule = r
		log.Info("sandbox git guard: the kernel refuses a guarded sandbox every new HEAD in a directory of its user's (BPF LSM): no repository the agent makes there is ever the user's")
	})
	return theKernelRule
}

// guardInit has the kernel rule guard the tasks of the init pid (its
// pidfd: still alive once its namespace is read), on the filesystems the
// workspace spans now, before it starts anything of the agent's; and
// forgets the inits that have exited (a shell rebuilt), whose namespace
// has no task left (they were its pid namespace's) and whose number may
// be another's later. An error means the init must not go on.
func (g *gitGuard) guardInit(pid, pidfd int) error {
	if g.rule == nil {
		return nil
	}
	g.pruneInits(false)
	devs, err := workspaceDevs(g.ws)
	if err != nil {
		return err
	}
	var st unix.Stat_t
	p := fmt.Sprintf("/proc/%d/ns/user", pid)
	if err := unix.Stat(p, &st); err != nil {
		return &os.PathError{Op: "stat", Path: p, Err: err}
	}
	own, err := unix.FcntlInt(uintptr(pidfd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return os.NewSyscallError("fcntl", err)
	}
	if exited(own, 0) {
		unix.Close(own)
		return fmt.Errorf("sandbox init %d exited", pid)
	}
	ns := uint32(st.Ino)
	if err := g.rule.Add(ns, devs, uint32(g.owner)); err != nil {
		g.rule.Remove(ns, devs)
		unix.Close(own)
		return err
	}
	g.mu.Lock()
	g.inits = append(g.inits, guardedInit{ns: ns, devs: devs, pidfd: own})
	g.mu.Unlock()
	return nil
}

// pruneInits takes out of the kernel rule the guard's inits that have
// exited, or all of them.
func (g *gitGuard) pruneInits(all bool) {
	g.mu.Lock()
	var gone []guardedInit
	kept := g.inits[:0]
	for _, in := range g.inits {
		if all || exited(in.pidfd, 0) {
			gone = append(gone, in)
		} else {
			kept = append(kept, in)
		}
	}
	g.inits = kept
	g.mu.Unlock()
	for _, in := range gone {
		g.rule.Remove(in.ns, in.devs)
		unix.Close(in.pidfd)
	}
}

// workspaceDevs are the device numbers of the filesystems of ws and of
// the mounts below it, as their superblocks have them (mountinfo's; a
// btrfs subvolume's stat differs), and as stat gives ws.
func workspaceDevs(ws string) ([]uint64, error) {
	var stx unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, ws, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_MNT_ID, &stx); err != nil {
		return nil, &os.PathError{Op: "statx", Path: ws, Err: err}
	}
	devs := []uint64{unix.Mkdev(stx.Dev_major, stx.Dev_minor)}
	add := func(d uint64) {
		if !slices.Contains(devs, d) {
			devs = append(devs, d)
		}
	}
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	// The workspace's own mount: by its id (Linux 5.8), else the last
	// mount over the longest mount point above it.
	byID := stx.Mask&unix.STATX_MNT_ID != 0
	found, longest := false, -1
	var top uint64
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		var major, minor uint32
		if _, err := fmt.Sscanf(f[2], "%d:%d", &major, &minor); err != nil {
			continue
		}
		dev, mp := unix.Mkdev(major, minor), unescapeMount(f[4])
		switch {
		case byID && f[0] == strconv.FormatUint(stx.Mnt_id, 10):
			found = true
			add(dev)
		case mp != ws && within(mp, ws):
			add(dev)
		}
		if !byID && within(ws, mp) && len(mp) >= longest {
			longest, top = len(mp), dev
		}
	}
	if !byID && longest >= 0 {
		found = true
		add(top)
	}
	if !found {
		return nil, fmt.Errorf("%s: its mount is not in /proc/self/mountinfo", ws)
	}
	return devs, nil
}

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
		// The init's rule where it holds, the kernel's only where it
		// does not (a kernel before 5.14 with BPF LSM): the init's also
		// makes no symlink in the user's git directories (Rule.GitMounts),
		// which the kernel's BPF program does not cover, and it is the
		// one this project's tests and CI run; the price is the init's
		// tens of microseconds per entry the agent makes, in guarded
		// sandboxes only.
		switch {
		case noKernelRule:
		case sharedInitRule() && !preferKernelRule:
			g.notify = true
			initRuleLog.Do(func() {
				s.d.opts.Logger.Info("sandbox git guard: each guarded sandbox's init refuses it a new HEAD in a directory of its user's, and any symlink in their git directories (seccomp user notification), at some tens of microseconds per entry the agent makes: no repository the agent makes there is ever the user's")
			})
		case sharedKernelRule(s.d.opts.Logger) != nil:
			g.rule = sharedKernelRule(s.d.opts.Logger)
		case sharedInitRule():
			g.notify = true
		}
	}
	if err != nil {
		s.d.opts.Logger.WarnContext(ctx, "sandbox git guard: not watching; a repository the agent makes is handed over only at the next shell start and when the session ends",
			"sandbox", s.spec.ID, "workspace", s.spec.Workspace, "err", err)
	}
	s.guard = g
}

// stopGuard ends the guard's watch, once it has handled every event (or
// ctx is done), and sweeps the whole workspace.
func (s *nativeSandbox) stopGuard(ctx context.Context) {
	if s.guard == nil {
		return
	}
	s.guard.stop(ctx)
	s.guard.sweepAll()
	s.guard.asideStates()
	s.guard.giveBackAll()
	s.guard.releaseBases()
	s.guard.closeWs()
	if s.guard.rule != nil {
		s.guard.pruneInits(true)
	}
	os.Remove(s.guard.record)
}

// asideStates applies the in-progress rule (gitstate_linux.go) to the
// user's own repositories, once the sandbox can write no more: at the
// end, or for a daemon that died. Not before arm: then no agent ran.
func (g *gitGuard) asideStates() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.wsFd < 0 || g.unarmed || !g.armed {
		return
	}
	for _, r := range g.own {
		if r.File || r.Stray || r.Half {
			continue
		}
		for _, did := range asideRepo(g.wsFd, r.Path, g.bases[r.Path]) {
			g.log.Warn("sandbox git guard: an operation in progress (rebase, am, cherry-pick, rerere) in a repository of the user's held what the sandbox wrote", "workspace", g.ws, "what", did)
		}
		did, whole := linksAside(g.wsFd, r.Path, g.since)
		for _, did := range did {
			g.log.Warn("sandbox git guard: the git directory of a repository of the user's held a symbolic link the sandbox made, which their git would write through", "workspace", g.ws, "what", did)
		}
		if !whole {
			if g.unchecked == nil {
				g.unchecked = map[string]bool{}
			}
			g.unchecked[path.Clean(r.Path)] = true
		}
	}
}

// releaseBases lets go of the shared bases the guard holds, once it has
// applied the rule.
func (g *gitGuard) releaseBases() {
	g.mu.Lock()
	held := g.held
	g.held = nil
	g.mu.Unlock()
	for _, id := range held {
		releaseBase(id)
	}
}

// armRecord arms a sweeper with what a record says.
func (g *gitGuard) armRecord(r guardRecord) {
	g.sweeper = true
	g.arm(r.Repos)
	g.mu.Lock()
	g.bases = r.Bases
	// Since is the guard's start whatever the rule: the links the
	// agent made are those changed since then (linksAside).
	if !r.Since.IsZero() {
		g.since = r.Since
	}
	g.ruled = r.Ruled && !r.Since.IsZero()
	g.mu.Unlock()
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
	Repos            []Repo               // the user's own
	Bases            map[string]stateBase // what their operations in progress held at arm, by repository
	// Since and Ruled are the guard's since and headRule: a directory
	// born before Since stays the user's where the rule held.
	Since time.Time
	Ruled bool
	// Lent are the user's git directories the guard lent to the
	// dedicated uid (gitlend_linux.go), to give back.
	Lent []lentDir `json:",omitempty"`
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
		g.armRecord(r)
		g.sweepAll()
		g.asideStates()
		g.giveBackRecord(r.Lent)
		g.closeWs()
		d.opts.Logger.Info("sandbox git guard: swept the workspace of a sandbox an earlier daemon left", "workspace", r.Workspace, "handed_over", g.handed)
		os.Remove(p)
	}
}
