package sandbox

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Native is the driver that isolates each shell with Linux namespaces
// (user, mount, pid, network, uts, ipc, cgroup), a private root of
// read-only host directories, no capabilities and a seccomp filter.
type Native struct {
	opts    NativeOptions
	initExe *os.File // the carried init program (carriedInit), or nil: opts.Exe
	procSys string   // /proc/sys; tests point it elsewhere to simulate a host without user namespaces

	hideMu sync.Mutex
	hide   map[string]hideEntry

	disksMu sync.Mutex
	disks   map[string]bool // ids of this driver's sandboxes with a disk, which Cleanup leaves alone

	ctlOnce sync.Once // the warning that control directories are host directories
}

type hideEntry struct {
	at    time.Time
	paths []hiddenPath
}

// hideTTL is how long a scan of etc for unreadable files is reused.
const hideTTL = 10 * time.Second

var _ Driver = (*Native)(nil)

// NewNative returns the native driver; nil opts means the defaults.
func NewNative(opts *NativeOptions) (*Native, error) {
	var o NativeOptions
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	var initExe *os.File
	if o.Exe == "" {
		f, err := carriedInit()
		switch {
		case err != nil:
			o.Logger.Warn("sandbox init: the carried init program is unusable; re-executing this binary instead, which makes every sandbox's start slower", "err", err)
		case f != nil:
			initExe = f
		}
		if initExe == nil {
			o.Exe = "/proc/self/exe"
		}
	}
	if initExe == nil {
		if _, err := os.Stat(o.Exe); err != nil {
			return nil, fmt.Errorf("sandbox init binary: %w", err)
		}
	}
	if o.StateDir == "" {
		o.StateDir = defaultStateDir()
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = 10 * time.Second
	}
	return &Native{opts: o, initExe: initExe, procSys: "/proc/sys", hide: map[string]hideEntry{}, disks: map[string]bool{}}, nil
}

func defaultStateDir() string {
	if os.Geteuid() == 0 {
		return "/run/harnessd/sandboxes"
	}
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		return filepath.Join(d, "harnessd", "sandboxes")
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("harnessd-%d", os.Getuid()), "sandboxes")
}

// Name is "native".
func (*Native) Name() string { return "native" }

// CheckHost reports whether this host lets the driver create sandboxes:
// nil, or an error wrapping ErrUserNamespaces that names the setting to
// change.
func (d *Native) CheckHost() error {
	read := func(name string) (string, bool) {
		b, err := os.ReadFile(filepath.Join(d.procSys, name))
		return strings.TrimSpace(string(b)), err == nil
	}
	if _, err := os.Stat("/proc/self/ns/user"); err != nil {
		return featureError("this kernel has no user namespaces (CONFIG_USER_NS): use a kernel built with it, or set sandbox.driver = \"none\" (no isolation)")
	}
	if v, ok := read("user/max_user_namespaces"); ok && v == "0" {
		return featureError("user namespaces are disabled (%s/user/max_user_namespaces is 0): set it above 0, e.g. `sysctl -w user.max_user_namespaces=15000` (and in /etc/sysctl.d), or set sandbox.driver = \"none\" (no isolation)", d.procSys)
	}
	if os.Geteuid() == 0 {
		return nil
	}
	if v, ok := read("kernel/unprivileged_userns_clone"); ok && v == "0" {
		return featureError("unprivileged user namespaces are disabled (%s/kernel/unprivileged_userns_clone is 0): `sysctl -w kernel.unprivileged_userns_clone=1`, or run harnessd as root", d.procSys)
	}
	if v, ok := read("kernel/apparmor_restrict_unprivileged_userns"); ok && v == "1" {
		return featureError("AppArmor restricts unprivileged user namespaces (%s/kernel/apparmor_restrict_unprivileged_userns is 1): `sysctl -w kernel.apparmor_restrict_unprivileged_userns=0`, give harnessd an AppArmor profile that allows userns, or run harnessd as root", d.procSys)
	}
	return nil
}

// Create makes the sandbox's directories and control group. Nothing runs
// until a terminal starts a shell through Prepare and Started.
func (d *Native) Create(ctx context.Context, spec Spec) (Sandbox, error) {
	spec, err := spec.withDefaults()
	if err != nil {
		return nil, err
	}
	if spec.Workspace == "" {
		return nil, fmt.Errorf("%w: workspace is required", ErrInvalidSpec)
	}
	if err := d.CheckHost(); err != nil {
		return nil, err
	}
	ws, err := realDir(spec.Workspace)
	if err != nil {
		return nil, fmt.Errorf("%w: workspace: %w", ErrInvalidSpec, err)
	}
	if spec.WorkspaceResolved && ws != filepath.Clean(spec.Workspace) {
		return nil, fmt.Errorf("%w: workspace %s: it now leads to %s through a symlink, which it did not when checked", ErrInvalidSpec, spec.Workspace, ws)
	}
	spec.Workspace = ws
	sys := "/"
	if spec.Image != "" {
		if sys, err = realDir(spec.Image); err != nil {
			return nil, fmt.Errorf("%w: image: %w", ErrInvalidSpec, err)
		}
	}
	if err := os.MkdirAll(d.opts.StateDir, 0o700); err != nil {
		return nil, fmt.Errorf("sandbox state dir: %w", err)
	}
	dir := filepath.Join(d.opts.StateDir, spec.ID)
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, fmt.Errorf("sandbox %s: %w", spec.ID, err)
	}
	s := &nativeSandbox{d: d, spec: spec, dir: dir, ctl: filepath.Join(dir, "ctl"), root: filepath.Join(dir, "root")}
	s.uid, s.gid = d.hostIDs(spec.Owner)
	undo := func() {
		os.RemoveAll(dir)
		s.closeControl()
	}
	hidden, err := d.hidden(filepath.Join(sys, "etc"), s.reader())
	if err != nil {
		undo()
		return nil, err
	}
	// The root is made here only for an init of the daemon's own user:
	// any other mounts its own where it can reach (initConfig), and a
	// directory made for nothing costs each start an inode allocation,
	// dear on a file system where sandboxes come and go.
	var made []string
	if !s.controlMount(ctx) {
		made = append(made, s.ctl)
	}
	if s.uid == os.Geteuid() {
		made = append(made, s.root)
	}
	for _, p := range made {
		if err := os.Mkdir(p, 0o700); err != nil {
			undo()
			return nil, fmt.Errorf("sandbox %s: %w", spec.ID, err)
		}
	}
	fresh, err := s.handOver()
	if err != nil {
		undo()
		return nil, fmt.Errorf("sandbox %s: %w", spec.ID, err)
	}
	s.diskBy = s.makeDisk(ctx, fresh)
	s.startGuard(ctx, fresh)
	if d.opts.Cgroups != nil {
		g, err := d.opts.Cgroups(spec.ID, spec.Limits)
		if err != nil {
			s.stopGuard(ctx)
			s.releaseDisk()
			undo()
			return nil, fmt.Errorf("sandbox %s: cgroup: %w", spec.ID, err)
		}
		s.group = g
	}
	s.cfg = s.initConfig(hidden, sys)
	s.cfg.PinStray = s.guard != nil && s.guard.headRule()
	gitUser := os.Geteuid()
	if spec.Owner != nil {
		gitUser = spec.Owner.UID
	}
	// A workspace the daemon has just made (empty, under its data
	// directory) holds no repository, and no config names it: its Create
	// (the warm pool's too) skips the reading, some 0.1 ms.
	if readHostGit != nil && (spec.Owner != nil || !fresh) {
		s.cfg.HostGit, s.cfg.Home = readHostGit(ws, gitUser)
	}
	if s.guard != nil && s.guard.notify {
		devs, err := workspaceDevs(ws)
		if err != nil {
			s.stopGuard(ctx)
			s.releaseDisk()
			undo()
			return nil, fmt.Errorf("sandbox %s: git guard: %w", spec.ID, err)
		}
		s.cfg.HeadRule = &headRuleConfig{Devs: devs}
	}
	s.enforced = s.enforcement()
	d.opts.Logger.DebugContext(ctx, "sandbox created", "sandbox", spec.ID, "workspace", ws, "network", spec.Network, "limits", s.enforced)
	return s, nil
}

// readHostGit reads what the host's git configs name in a workspace
// (hostgit_linux.go, the daemon's only: the init, built without it,
// never creates a sandbox).
var readHostGit func(ws string, uid int) (refs []configRef, home string)

// hostIDs are the host uid and gid the sandbox's root is mapped to: the
// daemon's own when it is not root (the only ids it can map), else the
// owner's unless that is root, else the driver's unprivileged ids.
func (d *Native) hostIDs(owner *User) (uid, gid int) {
	if os.Geteuid() != 0 {
		return os.Geteuid(), os.Getegid()
	}
	uid, gid = d.opts.UID, d.opts.GID
	if uid <= 0 {
		uid = DefaultUID
	}
	if gid <= 0 {
		gid = DefaultGID
	}
	if owner != nil && owner.UID > 0 {
		uid = owner.UID
		if owner.GID > 0 {
			gid = owner.GID
		}
	}
	return uid, gid
}

// handOver gives the sandbox's host user what it must own when that is
// not the daemon's: the control directory, unless it is a control mount,
// the user's from the start (its shell reads the terminal's files
// there), the proxy's socket (the init connects to it),
// and the workspace directory itself when the daemon made it (owned by the
// daemon and empty: it becomes the sandbox user's, mode 0700). A directory
// with something in it keeps its owner and mode, and so does what is in
// it: a workspace path that names a host directory by mistake (/etc) must
// never be given away.
//
// It reports whether the workspace is such a fresh one (as root only),
// which alone may get a disk of its own (see makeDisk).
func (s *nativeSandbox) handOver() (fresh bool, err error) {
	if s.uid == os.Geteuid() {
		return false, nil
	}
	if s.ctlMount == nil { // a control mount is the sandbox user's from the start
		if err := os.Lchown(s.ctl, s.uid, s.gid); err != nil {
			return false, err
		}
	}
	if s.spec.Network == NetworkProxy {
		if err := unix.Fchownat(unix.AT_FDCWD, s.spec.ProxySocket, s.uid, s.gid, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return false, &os.PathError{Op: "chown", Path: s.spec.ProxySocket, Err: err}
		}
	}
	fd, err := unix.Open(s.spec.Workspace, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return false, &os.PathError{Op: "open", Path: s.spec.Workspace, Err: err}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return false, &os.PathError{Op: "stat", Path: s.spec.Workspace, Err: err}
	}
	if int(st.Uid) != os.Geteuid() {
		return false, nil // the user's own directory
	}
	dup, err := unix.Dup(fd)
	if err != nil {
		return false, os.NewSyscallError("dup", err)
	}
	d := os.NewFile(uintptr(dup), s.spec.Workspace)
	names, _ := d.Readdirnames(1)
	d.Close()
	if len(names) > 0 {
		return false, nil // not one the daemon just made
	}
	if err := unix.Fchown(fd, s.uid, s.gid); err != nil {
		return false, &os.PathError{Op: "chown", Path: s.spec.Workspace, Err: err}
	}
	if err := unix.Fchmod(fd, 0o700); err != nil {
		return false, &os.PathError{Op: "chmod", Path: s.spec.Workspace, Err: err}
	}
	return true, nil
}

// makeDisk gives a fresh workspace (see handOver) a filesystem of
// Limits.DiskBytes (see disk_linux.go) and says how the disk limit is
// enforced. Where it cannot, the sandbox goes on without one, as it does
// without cgroups, and says why: Stats.Enforced, and a log line, since
// the session's user may have expected the quota.
func (s *nativeSandbox) makeDisk(ctx context.Context, fresh bool) string {
	size := s.spec.Limits.DiskBytes
	if size == 0 {
		return "none"
	}
	var why string
	log := s.d.opts.Logger.WarnContext
	switch {
	case os.Geteuid() != 0:
		// The same for every sandbox: the startup's probe says so once
		// (Stats.Enforced), the rest quietly.
		why, log = "a loop filesystem needs root", s.d.opts.Logger.DebugContext
	case !fresh:
		why = "the workspace is an existing directory, which a filesystem of its own would hide"
	default:
		ctx, cancel := context.WithTimeout(ctx, diskTimeout)
		defer cancel()
		s.d.disksMu.Lock()
		s.d.disks[s.spec.ID] = true
		s.d.disksMu.Unlock()
		fd, err := unix.Open(s.spec.Workspace, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err == nil {
			s.disk, err = newDisk(ctx, s.d.diskDir(s.spec.Workspace), s.spec.ID, s.spec.Workspace, fd, size, s.uid, s.gid)
			unix.Close(fd)
		}
		if err == nil {
			return fmt.Sprintf("loop filesystem (ext4, %d inodes)", max(size/diskInodeBytes, 1024))
		}
		s.d.disksMu.Lock()
		delete(s.d.disks, s.spec.ID)
		s.d.disksMu.Unlock()
		why = err.Error()
	}
	log(ctx, "sandbox disk quota not enforced", "sandbox", s.spec.ID, "workspace", s.spec.Workspace,
		"disk_bytes", size, "reason", why, "instead", "RLIMIT_FSIZE bounds each file, not their sum")
	return "not enforced: " + why + "; RLIMIT_FSIZE bounds each file, not their sum"
}

// diskDir is where a sandbox's disk image goes: NativeOptions.DiskDir,
// else beside the workspace.
func (d *Native) diskDir(ws string) string {
	if d.opts.DiskDir != "" {
		return d.opts.DiskDir
	}
	return filepath.Join(filepath.Dir(ws), ".harnessd-disks")
}

// releaseDisk copies the workspace out of its disk and removes the disk.
func (s *nativeSandbox) releaseDisk() error {
	if s.disk == nil {
		return nil
	}
	err := s.disk.release(func(msg string, args ...any) {
		s.d.opts.Logger.Warn(msg, append([]any{"sandbox", s.spec.ID}, args...)...)
	})
	s.disk = nil
	s.d.disksMu.Lock()
	delete(s.d.disks, s.spec.ID)
	s.d.disksMu.Unlock()
	if err != nil {
		return fmt.Errorf("disk: %w", err)
	}
	return nil
}

// giveControlFiles makes the files the terminal has put in the control
// directory the sandbox user's, so that its shell can read them (they are
// bound read-only inside; the daemon writes them from outside).
func (s *nativeSandbox) giveControlFiles() error {
	if s.uid == os.Geteuid() {
		return nil
	}
	f, err := os.Open(s.ctl)
	if err != nil {
		return err
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return err
	}
	for _, n := range names {
		if err := unix.Fchownat(int(f.Fd()), n, s.uid, s.gid, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return &os.PathError{Op: "chown", Path: filepath.Join(s.ctl, n), Err: err}
		}
	}
	return nil
}

func realDir(p string) (string, error) {
	p, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	if p, err = filepath.EvalSymlinks(p); err != nil {
		return "", err
	}
	fi, err := os.Stat(p)
	if err != nil {
		return "", err
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("%s is not a directory", p)
	}
	return p, nil
}

// reader is who the sandbox is to the host's permission checks: its uid,
// and its groups (as root, only its gid: the init drops the daemon's
// supplementary groups; rootless, the daemon's, which it keeps).
func (s *nativeSandbox) reader() reader {
	r := reader{uid: uint32(s.uid), groups: []uint32{uint32(s.gid)}}
	if os.Geteuid() != 0 {
		gs, _ := os.Getgroups()
		for _, g := range gs {
			r.groups = append(r.groups, uint32(g))
		}
	}
	return r
}

// reader is a host user and its groups.
type reader struct {
	uid    uint32
	groups []uint32
}

func (r reader) key() string { return fmt.Sprint(r.uid, r.groups) }

// may reports whether r may do what bits (a mix of 4, 2, 1) asks on a
// file of this owner, group and mode, by the mode bits; a file with an
// access ACL is taken to allow it.
func (r reader) may(p string, st *unix.Stat_t, bits uint32) bool {
	if n, err := unix.Lgetxattr(p, "system.posix_acl_access", nil); err == nil && n > 0 {
		return true
	}
	switch {
	case st.Uid == r.uid:
		return st.Mode>>6&bits == bits
	case slices.Contains(r.groups, st.Gid):
		return st.Mode>>3&bits == bits
	}
	return st.Mode&bits == bits
}

// hidden lists what under etc is not world-readable (files without o+r,
// directories without o+rx, sockets and fifos) and yet the sandbox's user
// r could open: it is covered with an empty file or directory inside, so
// that a key a group of the daemon's user may read (ssl-cert's, say) stays
// out of the sandbox. What r may not read anyway (/etc/shadow, to any
// sandbox but host root's, which none is) is left as it is: the kernel
// refuses it, and no cover in mountinfo names it. A scan is reused for
// hideTTL.
func (d *Native) hidden(etc string, r reader) ([]hiddenPath, error) {
	d.hideMu.Lock()
	defer d.hideMu.Unlock()
	key := etc + "\x00" + r.key()
	if e, ok := d.hide[key]; ok && time.Since(e.at) < hideTTL {
		return e.paths, nil
	}
	var out []hiddenPath
	err := filepath.WalkDir(etc, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			if p == etc && errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll
			}
			if de != nil && de.IsDir() && p != etc {
				return fs.SkipDir // the daemon cannot read it either
			}
			return nil
		}
		if p == etc || de.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		var st unix.Stat_t
		if unix.Lstat(p, &st) != nil {
			return nil
		}
		rel, _ := filepath.Rel(etc, p)
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
			switch {
			case !r.may(p, &st, 1):
				return fs.SkipDir // nothing in it can be reached
			case st.Mode&0o005 != 0o005:
				out = append(out, hiddenPath{Path: rel, Dir: true})
				return fs.SkipDir
			}
		case unix.S_IFREG:
			if st.Mode&0o004 == 0 && r.may(p, &st, 4) {
				out = append(out, hiddenPath{Path: rel})
			}
		default:
			if r.may(p, &st, 4) || r.may(p, &st, 2) {
				out = append(out, hiddenPath{Path: rel})
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("scan %s: %w", etc, err)
	}
	d.hide[key] = hideEntry{at: time.Now(), paths: out}
	return out, nil
}

// pidNamespacePidMax reports whether this kernel keeps pid_max per pid
// namespace (Linux 6.14). On older kernels the sysctl is global and must
// never be written from a sandbox.
func pidNamespacePidMax() bool {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return false
	}
	rel := unix.ByteSliceToString(u.Release[:])
	var major, minor int
	if _, err := fmt.Sscanf(rel, "%d.%d", &major, &minor); err != nil {
		return false
	}
	return major > 6 || major == 6 && minor >= 14
}

// nativeSandbox is one sandbox of the native driver.
type nativeSandbox struct {
	d        *Native
	spec     Spec
	dir      string   // state directory: ctl below it (but for a control mount), and root if the init is the daemon's user
	ctl      string   // the control directory as the daemon reaches it: under dir, or ctlMount's /proc/self/fd path
	ctlMount *os.File // the control directory's own tmpfs, attached nowhere (controlMount), or nil
	root     string
	uid, gid int      // the sandbox's root on the host
	sources  []source // what the init inherits, open, from initSourceFD on
	cfg      initConfig
	group    Group
	enforced []Enforced
	disk     *disk     // the workspace's own filesystem, if it has one
	diskBy   string    // how Limits.DiskBytes is enforced
	guard    *gitGuard // in a workspace of its user's: see gitguard_linux.go

	mu         sync.Mutex
	reposKnown bool    // cfg.Repos holds what the first init found
	pending    *launch // prepared, not yet Started
	inits      []*initProc
	destroyed  bool
	files      *fileConn // the running init's file channel (files_linux.go)

	destroyOnce sync.Once
	destroyErr  error
}

// launch is one init between Prepare and Started.
type launch struct {
	conn     *os.File   // the daemon's end of the socket
	child    *os.File   // the init's end, closed here once it has started
	sources  []*os.File // what the init mounts from, likewise
	prepared bool       // the init starts inside the group's v2 directory
	// first is a guarded sandbox's first init's hold on lends
	// (beginFirstInit), ended once it has reported, or never will; lent
	// is the Lent of its config.
	first *firstHold
	lent  [][2]uint64
}

func (l *launch) close() {
	l.conn.Close()
	l.closeChild()
	l.first.end()
}

func closeAll(fs []*os.File) {
	for _, f := range fs {
		f.Close()
	}
}

// closeChild closes what the init inherited, once it has it.
func (l *launch) closeChild() {
	l.child.Close()
	closeAll(l.sources)
}

// initProc is one started init, held by pidfd so a recycled pid is never
// signalled.
type initProc struct {
	pid   int
	pidfd int
}

func (s *nativeSandbox) ID() string         { return s.spec.ID }
func (s *nativeSandbox) Workdir() string    { return s.spec.Workdir }
func (s *nativeSandbox) ControlDir() string { return s.ctl }
func (s *nativeSandbox) InitWrapped() bool  { return true }

// ControlDirInside is ControlPath.
func (s *nativeSandbox) ControlDirInside() string { return ControlPath }

// source is what the daemon opens for the init, in Prepare.
type source struct {
	path string
	how  int
}

// How a source is opened.
const (
	cloneTree         = iota // open_tree(OPEN_TREE_CLONE): the path's own mount
	cloneTreeRec             // the same with its submounts
	cloneTreeResolved        // cloneTreeRec, refusing a symlink on the way (Spec.WorkspaceResolved)
	openPath                 // an O_PATH descriptor (the proxy's socket)
)

// open opens one source as a descriptor the init inherits.
func (src source) open() (*os.File, error) {
	var fd int
	var err error
	switch src.how {
	case openPath:
		fd, err = unix.Open(src.path, unix.O_PATH|unix.O_CLOEXEC, 0)
	case cloneTree:
		fd, err = unix.OpenTree(unix.AT_FDCWD, src.path, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	case cloneTreeResolved:
		// The path had no symlink when Create resolved it: one there now
		// was swapped in since, and is refused (ELOOP) rather than followed.
		how := unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
		var dir int
		for {
			dir, err = unix.Openat2(unix.AT_FDCWD, src.path, &how)
			if err != unix.EINTR && err != unix.EAGAIN {
				break
			}
		}
		if err == nil {
			fd, err = unix.OpenTree(dir, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE|unix.AT_EMPTY_PATH)
			unix.Close(dir)
		}
	default:
		fd, err = unix.OpenTree(unix.AT_FDCWD, src.path, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
	}
	if err != nil {
		return nil, initErr("open_tree", src.path, err)
	}
	return os.NewFile(uintptr(fd), src.path), nil
}

// initConfig is the init's configuration but for the shell, and the
// sources Prepare opens for it (s.sources). sys is the image's real path.
func (s *nativeSandbox) initConfig(hidden []hiddenPath, sys string) initConfig {
	cfg := initConfig{
		ID:         s.spec.ID,
		Root:       s.root,
		ReadOnly:   s.spec.ReadOnly,
		Hidden:     hidden,
		Workdir:    s.spec.Workdir,
		Protected:  s.spec.Protected,
		ControlDir: ControlPath,
		TmpBytes:   s.spec.Limits.TmpBytes,
		Hostname:   s.spec.Hostname,
		NewNet:     s.spec.Network != NetworkHost,
	}
	// Clones where the init is not the daemon's user (see initConfig),
	// else paths; a control mount is cloned whoever the init is: no
	// path leads to it.
	clones := s.uid != os.Geteuid()
	add := func(path string, how int) Source {
		if !clones && how != openPath && (path != s.ctl || s.ctlMount == nil) {
			return Source{Path: path}
		}
		s.sources = append(s.sources, source{path, how})
		return Source{Path: path, Tree: initSourceFD + len(s.sources) - 1}
	}
	if clones {
		// A root of its own, where the init can reach: the state
		// directory is the daemon's.
		cfg.Root = initRootMount
	}
	wsHow := cloneTreeRec
	if s.spec.WorkspaceResolved {
		wsHow = cloneTreeResolved
	}
	cfg.Workspace = add(s.spec.Workspace, wsHow)
	cfg.ControlFrom = add(s.ctl, cloneTree)
	if s.spec.Image != "" {
		cfg.Image = add(sys, cloneTreeRec)
	}
	for _, p := range s.spec.ReadOnly {
		cfg.ReadOnlyFrom = append(cfg.ReadOnlyFrom, add(p, cloneTreeRec))
	}
	if s.spec.Network == NetworkProxy {
		cfg.ProxySocket = fdPath(add(s.spec.ProxySocket, openPath).Tree)
	}
	cfg.Sources = len(s.sources)
	l := s.spec.Limits
	var hard unix.Rlimit
	_ = unix.Getrlimit(unix.RLIMIT_NOFILE, &hard)
	nofile := uint64(l.NoFile)
	if hard.Max > 0 && nofile > hard.Max {
		nofile = hard.Max
	}
	cfg.Rlimits = append(cfg.Rlimits,
		Rlimit{unix.RLIMIT_NOFILE, "RLIMIT_NOFILE", nofile},
		Rlimit{unix.RLIMIT_CORE, "RLIMIT_CORE", 0})
	if l.FileBytes > 0 {
		cfg.Rlimits = append(cfg.Rlimits, Rlimit{unix.RLIMIT_FSIZE, "RLIMIT_FSIZE", uint64(l.FileBytes)})
	}
	if s.group != nil {
		// What the cgroups of this host cannot enforce, the group hands
		// back as rlimits.
		for _, r := range s.group.Rlimits() {
			cfg.Rlimits = append(cfg.Rlimits, r)
			if r.Resource == unix.RLIMIT_NPROC && pidNamespacePidMax() {
				cfg.PidMax = int(r.Value) + pidMaxSlack
			}
		}
		return cfg
	}
	if l.MemoryBytes > 0 {
		cfg.Rlimits = append(cfg.Rlimits, Rlimit{unix.RLIMIT_AS, "RLIMIT_AS", uint64(l.MemoryBytes)})
	}
	if l.Pids > 0 {
		cfg.Rlimits = append(cfg.Rlimits, Rlimit{unix.RLIMIT_NPROC, "RLIMIT_NPROC", uint64(l.Pids)})
		if pidNamespacePidMax() {
			cfg.PidMax = l.Pids + pidMaxSlack
		}
	}
	return cfg
}

// pidMaxSlack: once a pid namespace's pids wrap, the kernel hands out pids
// from 300 up, so pid_max = limit+300 bounds the live pids to between
// limit and limit+300.
const pidMaxSlack = 300

func (s *nativeSandbox) enforcement() []Enforced {
	l := s.spec.Limits
	rl := map[int]uint64{}
	for _, r := range s.cfg.Rlimits {
		rl[r.Resource] = r.Value
	}
	_, asLimit := rl[unix.RLIMIT_AS]
	_, nprocLimit := rl[unix.RLIMIT_NPROC]
	by := func(value int64, cgroup bool, fallback string) string {
		switch {
		case value == 0:
			return "none"
		case cgroup:
			return "cgroup"
		}
		return fallback
	}
	grouped := s.group != nil
	cpuGrouped := grouped
	if c, ok := s.group.(interface{ EnforcesCPU() bool }); ok {
		cpuGrouped = c.EnforcesCPU()
	}
	pids := "not enforced: needs a cgroup (RLIMIT_NPROC does not bind uid 0, and this kernel's pid_max is global)"
	switch {
	case s.cfg.PidMax > 0:
		pids = fmt.Sprintf("rlimit RLIMIT_NPROC and pid namespace pid_max %d", s.cfg.PidMax)
	default:
		pids = "rlimit RLIMIT_NPROC"
	}
	e := []Enforced{
		{"tmp", l.TmpBytes, "tmpfs size"},
		{"memory", l.MemoryBytes, by(l.MemoryBytes, grouped && !asLimit, "rlimit RLIMIT_AS (address space of each process, not their sum)")},
		{"pids", int64(l.Pids), by(int64(l.Pids), grouped && !nprocLimit, pids)},
		{"cpu_weight", int64(l.CPUWeight), by(int64(l.CPUWeight), cpuGrouped, "not enforced: needs a cgroup")},
		{"nofile", int64(rl[unix.RLIMIT_NOFILE]), "rlimit RLIMIT_NOFILE"},
		{"core", 0, "rlimit RLIMIT_CORE"},
	}
	if v, ok := rl[unix.RLIMIT_FSIZE]; ok {
		e = append(e, Enforced{"fsize", int64(v), "rlimit RLIMIT_FSIZE"})
	}
	return append(e, Enforced{"disk", l.DiskBytes, s.diskBy})
}

// cloneFlags are the namespaces every init starts in.
const cloneFlags = unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWUTS |
	unix.CLONE_NEWIPC | unix.CLONE_NEWCGROUP

// Prepare turns the terminal's bash command into `harnessd sandbox-init`
// in new namespaces, with bash's command in the init's configuration.
func (s *nativeSandbox) Prepare(cmd *exec.Cmd) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.destroyed {
		return ErrDestroyed
	}
	if s.pending != nil { // a Start that failed: its Started never came
		s.pending.close()
		s.pending = nil
	}
	if len(cmd.ExtraFiles) > 0 {
		return errors.New("sandbox: the shell command may not carry ExtraFiles")
	}
	cfg := s.cfg
	cfg.Shell = shellSpec{Path: cmd.Path, Args: cmd.Args, Env: s.shellEnv(cmd.Env), Dir: cmd.Dir}
	if cfg.Shell.Dir == "" {
		cfg.Shell.Dir = s.spec.Workdir
	}
	if err := s.giveControlFiles(); err != nil {
		return fmt.Errorf("sandbox %s: control files: %w", s.spec.ID, err)
	}
	// The sources, from initSourceFD on. The cgroup files are not among
	// them: the group may still be in the making (see Cgroups), and the
	// init joins it only once Started sends them.
	var sources []*os.File
	for _, src := range s.sources {
		f, err := src.open()
		if err != nil {
			closeAll(sources)
			return err
		}
		sources = append(sources, f)
	}
	var first *firstHold
	if s.guard != nil {
		// The git directories lent now are the user's, though the init
		// sees them as the dedicated uid's; none over this workspace is
		// lent between here and the first init's report, and Started
		// refuses one that reports a lend it was not told of
		// (gitlend_linux.go).
		if !s.reposKnown {
			first = beginFirstInit(s.guard.ws, s.d.opts.StartTimeout)
		}
		cfg.Lent = lentIDs()
	}
	msg, err := json.Marshal(&cfg)
	if err != nil {
		first.end()
		closeAll(sources)
		return fmt.Errorf("sandbox config: %w", err)
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		first.end()
		closeAll(sources)
		return os.NewSyscallError("socketpair", err)
	}
	l := &launch{conn: os.NewFile(uintptr(fds[0]), "sandbox-init"), child: os.NewFile(uintptr(fds[1]), "sandbox-init-child"), sources: sources, first: first, lent: cfg.Lent}
	if _, err := l.conn.Write(append(msg, '\n')); err != nil {
		l.close()
		return fmt.Errorf("send sandbox config: %w", err)
	}

	cmd.Args = []string{"harnessd", InitCommand}
	cmd.Dir = ""
	// Two Ps, and no runtime watching the cgroup's CPU limit: it would
	// hold cgroup files of the daemon's mounts open in the init for
	// nothing. Not one P: the init's setup is a string of system calls
	// (mounts, seccomp, the shell's fork) on its locked main thread, and
	// with no idle P the runtime's sysmon takes the P from any call that
	// lasts over 20 µs and hands it to another thread, which the main
	// thread must then wait to get it back from. With a second P idle,
	// it leaves a call its P for up to 10 ms.
	cmd.Env = []string{initFDEnv + "=3", "GOMAXPROCS=2", "GODEBUG=containermaxprocs=0,updatemaxprocs=0"}
	cmd.ExtraFiles = append([]*os.File{l.child}, sources...) // fd 3, then the sources from initSourceFD
	cmd.Path = s.d.opts.Exe
	if s.d.initExe != nil {
		// The carried program, last: executed through the child's own
		// descriptor (its number there is known, the daemon's is not),
		// which the init leaves to close at the shell's exec (close_range).
		cmd.Path = fdPath(3 + len(cmd.ExtraFiles))
		cmd.ExtraFiles = append(cmd.ExtraFiles, s.d.initExe)
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	a := cmd.SysProcAttr
	a.Cloneflags |= cloneFlags
	if cfg.NewNet {
		a.Cloneflags |= unix.CLONE_NEWNET
	}
	// One id inside, 0, is one unprivileged uid and gid outside (see the
	// package doc; the daemon's own when it is not root). The init
	// becomes that 0 (the daemon's ids are not mapped, unless they are
	// the sandbox's). Rootless, setgroups is denied, as the kernel
	// demands, and the init keeps the daemon's user's groups. As root,
	// the init clears the daemon's supplementary groups (host root's
	// group must not follow it in); the shell, without CAP_SETGID, can
	// change them no further.
	rootless := os.Geteuid() != 0
	a.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: s.uid, Size: 1}}
	if cfg.HeadRule != nil {
		// The init tells the dedicated uid's directories by their owner
		// (headrule_linux.go).
		dedicated, _ := s.d.hostIDs(nil)
		a.UidMappings = append(a.UidMappings, syscall.SysProcIDMap{ContainerID: headRuleOwner, HostID: dedicated, Size: 1})
	}
	a.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: s.gid, Size: 1}}
	a.GidMappingsEnableSetgroups = !rootless
	a.Credential = &syscall.Credential{Uid: 0, Gid: 0, Groups: []uint32{}, NoSetGroups: rootless}
	a.Pdeathsig = syscall.SIGKILL
	if s.group != nil {
		l.prepared = s.group.Prepare(a) // else Started adds the init to v2, if the group has it
	}
	s.pending = l
	return nil
}

// standardPath is the shell's PATH inside: the daemon's own may name
// directories the sandbox does not have.
const standardPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

func (s *nativeSandbox) shellEnv(env []string) []string {
	over := []string{"PATH=" + standardPath, "HOME=" + s.spec.Workdir, "HOSTNAME=" + s.spec.Hostname}
	if s.guard != nil {
		over = append(over, "GIT_CONFIG_SYSTEM="+filepath.Join(ControlPath, guardGitConfigName))
		if s.guard.headRule() {
			over = append(over, kernelRuleGitEnv...)
		}
	}
	if s.spec.Network == NetworkProxy {
		u := "http://" + ProxyAddr
		over = append(over, "HTTP_PROXY="+u, "HTTPS_PROXY="+u, "http_proxy="+u, "https_proxy="+u,
			"NO_PROXY=localhost,127.0.0.1", "no_proxy=localhost,127.0.0.1")
	}
	return mergeEnv(env, append(over, s.spec.Env...))
}

// mergeEnv applies extra over base; a later KEY replaces an earlier one.
func mergeEnv(base, extra []string) []string {
	idx := make(map[string]int, len(base)+len(extra))
	out := make([]string, 0, len(base)+len(extra))
	for _, kv := range append(append([]string(nil), base...), extra...) {
		k, _, _ := strings.Cut(kv, "=")
		if i, ok := idx[k]; ok {
			out[i] = kv
			continue
		}
		idx[k] = len(out)
		out = append(out, kv)
	}
	return out
}

// Started adds the init to the cgroup v2 directory if Prepare could not
// start it there, lets it start the shell once set up, with the cgroup v1
// files it joins through first, and waits for that. Any failure is the
// init's *InitError, or says the init died or hung.
func (s *nativeSandbox) Started(pid int) error {
	s.mu.Lock()
	l := s.pending
	s.pending = nil
	if s.destroyed {
		s.mu.Unlock()
		if l != nil {
			l.close()
		}
		return ErrDestroyed
	}
	if l == nil {
		s.mu.Unlock()
		return ErrNotPrepared
	}
	// The init's report may take the start timeout from now.
	l.first.renew(s.d.opts.StartTimeout)
	defer l.first.end() // its report, if any, has come by the return
	l.closeChild()
	defer l.conn.Close()
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		s.mu.Unlock()
		return os.NewSyscallError("pidfd_open", err)
	}
	ip := &initProc{pid: pid, pidfd: pidfd}
	s.inits = append(s.inits, ip)
	s.mu.Unlock()

	c, err := net.FileConn(l.conn)
	if err != nil {
		return fmt.Errorf("sandbox init socket: %w", err)
	}
	kept := false // the socket goes on as the file channel once the shell runs
	defer func() {
		if !kept {
			c.Close()
		}
	}()
	if err := c.SetDeadline(time.Now().Add(s.d.opts.StartTimeout)); err != nil {
		return err
	}
	r := bufio.NewReader(c)
	recv := func(stage string) (initMsg, error) {
		var m initMsg
		line, err := r.ReadBytes('\n')
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return m, fmt.Errorf("%w: sandbox init %d did not finish %s within %s", ErrSetup, pid, stage, s.d.opts.StartTimeout)
			}
			return m, fmt.Errorf("%w: sandbox init %d exited during %s", ErrSetup, pid, stage)
		}
		if err := json.Unmarshal(line, &m); err != nil {
			return m, fmt.Errorf("%w: sandbox init %d: bad message %q: %w", ErrSetup, pid, line, err)
		}
		if m.Err != nil {
			return m, m.Err
		}
		return m, nil
	}
	// The init goes on from Ready to the shell on nothing of its report
	// unless a git guard must see what it found first (arm, sweep). Else
	// Go is sent now, behind the config on the socket, for the init to
	// find there once it is ready: it never waits for this process to be
	// scheduled, read Ready and answer.
	early := s.guard == nil
	if early {
		if err := s.release(c, pid, l.prepared); err != nil {
			return err
		}
	}
	m, err := recv("setup")
	l.first.end() // its walk is done: before arm, which may lend
	if err != nil {
		return err
	}
	if l.first != nil {
		if p := s.guard.lentSince(m.Repos, l.lent); p != "" {
			// Lent by another session over the directory while this
			// init walked it: it may have taken that repository of the
			// user's for another's, and pinned nothing of it.
			return fmt.Errorf("%w: sandbox %s: git guard: %s was lent to another session's sandbox while this one's init looked at the workspace; start again", ErrSetup, s.spec.ID, p)
		}
	}
	if m.Note != "" {
		s.d.opts.Logger.Warn("sandbox init", "sandbox", s.spec.ID, "note", m.Note)
	}
	s.mu.Lock()
	first := !s.reposKnown
	if first {
		// The first shell's init looked before the agent could run
		// anything: what it found are the workspace's own repositories,
		// which every later init pins, wherever its own walk stops.
		s.cfg.Repos, s.reposKnown = m.Repos, true
	}
	s.mu.Unlock()
	if s.guard != nil {
		if first {
			s.guard.arm(m.Repos) // the user's own; the rest are the agent's
		} else {
			s.guard.sweep(m.Repos) // what a watch could have missed
		}
	}
	if s.guard != nil {
		// Before the agent can run anything: the init starts the shell
		// only once told to go on (never early with a guard, above).
		if err := s.guard.guardInit(pid, pidfd); err != nil {
			return fmt.Errorf("%w: sandbox %s: git guard: kernel rule: %w", ErrSetup, s.spec.ID, err)
		}
	}
	if !early {
		if err := s.release(c, pid, l.prepared); err != nil {
			return err
		}
	}
	if _, err := recv("shell start"); err != nil {
		return err
	}
	kept = true
	s.keepFiles(c, r)
	return nil
}

// release lets the init go on to start the shell once it is set up: into
// the group's v2 directory first if it was not born there, then the Go
// message with the group's cgroup v1 tasks files, which the init joins
// before it drops its privileges (see initMsg). This is where the daemon
// waits for a group still in the making (Cgroups), and where one that
// could not be made fails the start: the init, sent no Go, never runs
// the shell.
func (s *nativeSandbox) release(c net.Conn, pid int, prepared bool) error {
	m := initMsg{Go: true}
	var files []*os.File
	if s.group != nil {
		if !prepared {
			if err := s.group.AddV2(pid); err != nil {
				return fmt.Errorf("sandbox %s: join cgroup: %w", s.spec.ID, err)
			}
		}
		var err error
		if files, err = s.group.JoinFiles(); err != nil {
			return fmt.Errorf("sandbox %s: join cgroup: %w", s.spec.ID, err)
		}
		defer closeAll(files)
		for _, f := range files {
			m.Cgroups = append(m.Cgroups, f.Name())
		}
	}
	b, err := json.Marshal(&m)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	uc, ok := c.(*net.UnixConn)
	switch {
	case len(files) == 0:
		_, err = c.Write(b)
	case !ok:
		err = errors.New("the init's socket is not a unix socket")
	default:
		fds := make([]int, len(files))
		for i, f := range files {
			fds[i] = int(f.Fd())
		}
		// The files ride on the message's first byte; a stream socket
		// takes it whole here (it is far below the socket's buffer).
		var n int
		n, _, err = uc.WriteMsgUnix(b, unix.UnixRights(fds...), nil)
		if err == nil && n < len(b) {
			_, err = c.Write(b[n:])
		}
	}
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		// Past StartTimeout already (the message is far smaller than the
		// socket's buffer, so nothing else holds it up).
		return fmt.Errorf("%w: sandbox init %d did not finish setup within %s", ErrSetup, pid, s.d.opts.StartTimeout)
	case err != nil:
		return fmt.Errorf("%w: release sandbox init %d: %w", ErrSetup, pid, err)
	}
	return nil
}

// live returns the inits that have not exited.
func (s *nativeSandbox) live() []*initProc {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*initProc
	for _, ip := range s.inits {
		if !exited(ip.pidfd, 0) {
			out = append(out, ip)
		}
	}
	return out
}

// exited waits up to d for the process behind pidfd to exit.
func exited(pidfd int, d time.Duration) bool {
	fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, int(d.Milliseconds()))
		if err == unix.EINTR {
			continue
		}
		return err != nil || n > 0
	}
}

// Stats counts the sandbox's processes (those in its inits' pid
// namespaces) and asks the cgroup for memory and CPU.
func (s *nativeSandbox) Stats(ctx context.Context) (Stats, error) {
	st := Stats{Enforced: s.enforced}
	nss := map[string]bool{}
	for _, ip := range s.live() {
		if ns, err := os.Readlink("/proc/" + strconv.Itoa(ip.pid) + "/ns/pid"); err == nil {
			nss[ns] = true
		}
	}
	if len(nss) > 0 {
		ents, err := os.ReadDir("/proc")
		if err != nil {
			return st, err
		}
		for _, e := range ents {
			if ctx.Err() != nil {
				return st, ctx.Err()
			}
			if _, err := strconv.Atoi(e.Name()); err != nil {
				continue
			}
			if ns, err := os.Readlink("/proc/" + e.Name() + "/ns/pid"); err == nil && nss[ns] {
				st.Processes++
			}
		}
	}
	if s.group != nil {
		mem, cpu, err := s.group.Usage()
		if err != nil {
			return st, fmt.Errorf("sandbox %s: cgroup usage: %w", s.spec.ID, err)
		}
		st.MemoryBytes, st.CPU = max(mem, 0), cpu
	}
	return st, nil
}

// Destroy kills every init (each one's death ends its pid namespace and
// every process in it), waits for them, removes the cgroup and the state
// directory.
func (s *nativeSandbox) Destroy(ctx context.Context) error {
	s.destroyOnce.Do(func() { s.destroyErr = s.destroy(ctx) })
	return s.destroyErr
}

func (s *nativeSandbox) destroy(ctx context.Context) error {
	s.mu.Lock()
	s.destroyed = true
	if s.pending != nil {
		s.pending.close()
		s.pending = nil
	}
	inits := s.inits
	s.inits = nil
	s.mu.Unlock()
	s.closeFiles()

	var errs []error
	for _, ip := range inits {
		if err := unix.PidfdSendSignal(ip.pidfd, unix.SIGKILL, nil, 0); err != nil && err != unix.ESRCH {
			errs = append(errs, os.NewSyscallError("pidfd_send_signal", err))
		}
	}
	if s.group != nil {
		// The inits' deaths already end every process; a group that is in
		// no cgroup (a rootless host) cannot kill, and need not.
		if err := s.group.Kill(); err != nil {
			s.d.opts.Logger.Debug("sandbox cgroup kill", "sandbox", s.spec.ID, "err", err)
		}
	}
	gone := true
	for _, ip := range inits {
		for !exited(ip.pidfd, 50*time.Millisecond) {
			if ctx.Err() != nil {
				errs = append(errs, fmt.Errorf("sandbox init %d not gone: %w", ip.pid, ctx.Err()))
				gone = false
				break
			}
		}
		unix.Close(ip.pidfd)
	}
	if s.group != nil {
		if err := s.group.Destroy(); err != nil {
			errs = append(errs, fmt.Errorf("cgroup destroy: %w", err))
		}
	}
	// Every repository the agent made is handed over, once nothing in
	// the sandbox can make another: the watch's last events, then a walk.
	s.stopGuard(ctx)
	// Only once every process that could write the disk is gone: else
	// it stays mounted, for the next daemon's Cleanup.
	if gone {
		if err := s.releaseDisk(); err != nil {
			errs = append(errs, err)
		}
	} else if s.disk != nil {
		errs = append(errs, fmt.Errorf("disk %s left mounted on %s", s.disk.image, s.disk.ws))
	}
	if err := os.RemoveAll(s.dir); err != nil {
		errs = append(errs, err)
	}
	// Prepare, which clones it, refuses from now on (destroyed); a
	// terminal still writing holds a descriptor of its own.
	s.closeControl()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("destroy sandbox %s: %w", s.spec.ID, err)
	}
	return nil
}
