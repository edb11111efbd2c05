package sandbox

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// systemDirs are bound read-only from the host (or Spec.Image); a symlink
// among them (/bin -> usr/bin on a merged-/usr system) is copied as one.
var systemDirs = []string{"usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc"}

// devices are the host device nodes bound into the sandbox's /dev.
var devices = []string{"null", "zero", "full", "random", "urandom", "tty"}

// procReadOnly are bound read-only over themselves in the sandbox's /proc:
// the sandbox's uid 0 is the daemon's, and for a daemon running as root
// these files check the writer's uid, not its capabilities
// (/proc/sysrq-trigger would reboot the host).
var procReadOnly = []string{"sys", "sysrq-trigger", "irq", "bus", "fs"}

// procMasked are covered with an empty file or directory: kernel memory,
// keys and timers that say too much about the host.
var procMasked = []string{"kcore", "keys", "timer_list", "sched_debug", "latency_stats", "kallsyms", "kmsg", "kpagecount", "kpageflags", "kpagecgroup", "acpi", "scsi", "asound", "config.gz"}

// initRootMount is where an init that cannot walk the daemon's state
// directory mounts its new root, in its own mount namespace: a directory
// every host has, open to all. The host's /tmp is covered only there.
const initRootMount = "/tmp"

// roFlags are added to every read-only bind.
const roFlags = unix.MS_RDONLY | unix.MS_NOSUID | unix.MS_NODEV

// buildRoot makes the sandbox's root: a tmpfs holding read-only binds of
// the system directories, the workspace (read-write, its protected paths
// read-only), the control directory, /tmp, /proc and /dev; then switches
// to it and forgets the host's.
func buildRoot(cfg *initConfig) error {
	if err := mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return err
	}
	root := cfg.Root
	if err := mount("tmpfs", root, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755,size=1m,nr_inodes=4096"); err != nil {
		return err
	}
	in := func(p string) string { return filepath.Join(root, p) }

	// Empty things to cover what must not be seen; binds of them are
	// remounted read-only, and they are removed before the switch.
	emptyFile, emptyDir := in(".empty-file"), in(".empty-dir")
	if err := writeFile(emptyFile, 0); err != nil {
		return err
	}
	if err := mkdir(emptyDir, 0); err != nil {
		return err
	}
	cover := func(target string, dir bool) error {
		src := emptyFile
		if dir {
			src = emptyDir
		}
		if err := mount(src, target, "", unix.MS_BIND, ""); err != nil {
			return err
		}
		return remount(target, roFlags|unix.MS_NOEXEC)
	}

	submounts := false // a read-only bind brought submounts along
	sys := cfg.Image.Path
	switch {
	case cfg.Image.Tree > 0:
		// The image's clone is attached at a staging point in the new
		// root, bound from, and detached again before the switch.
		sys = in(".image")
		if err := mkdir(sys, 0o700); err != nil {
			return err
		}
		if err := unix.MoveMount(cfg.Image.Tree, "", unix.AT_FDCWD, sys, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
			return initErr("move_mount", cfg.Image.Path+" on "+sys, err)
		}
		defer func() {
			_ = unix.Unmount(sys, unix.MNT_DETACH)
			_ = unix.Rmdir(sys)
		}()
	case sys == "":
		sys = "/"
	}
	for _, d := range systemDirs {
		src := filepath.Join(sys, d)
		fi, err := os.Lstat(src)
		switch {
		case errors.Is(err, os.ErrNotExist):
			continue
		case err != nil:
			return initErr("lstat", src, err)
		case fi.Mode()&os.ModeSymlink != 0:
			link, err := os.Readlink(src)
			if err != nil {
				return initErr("readlink", src, err)
			}
			if err := os.Symlink(link, in(d)); err != nil {
				return initErr("symlink", in(d), err)
			}
			continue
		case !fi.IsDir():
			continue
		}
		if err := mkdir(in(d), 0o755); err != nil {
			return err
		}
		sub, err := bindRO(src, in(d))
		if err != nil {
			return err
		}
		submounts = submounts || sub
	}
	for _, h := range cfg.Hidden {
		if err := cover(filepath.Join(in("etc"), h.Path), h.Dir); err != nil {
			return err
		}
	}
	// /tmp, /proc and /dev come before the binds at host paths, which may
	// lie below them (a read-only path under /tmp).
	if err := mkdir(in("tmp"), 0o755); err != nil {
		return err
	}
	if err := mount("tmpfs", in("tmp"), "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=1777,size="+strconv.FormatInt(cfg.TmpBytes, 10)); err != nil {
		return err
	}

	if err := buildProc(in("proc"), cfg.PidMax, cover); err != nil {
		return err
	}
	if err := buildDev(in("dev")); err != nil {
		return err
	}

	// Mount points at paths the caller chose are made and opened with
	// openat2(RESOLVE_IN_ROOT): a symlink of the new root's own (/dev/shm
	// -> /tmp) resolves inside it, never to the host's /tmp.
	rootFd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return initErr("open", root, err)
	}
	defer unix.Close(rootFd)
	roRoots := []string{}
	for _, d := range systemDirs {
		roRoots = append(roRoots, in(d))
	}
	for i, p := range cfg.ReadOnly {
		from := cfg.ReadOnlyFrom[i]
		fi, err := os.Stat(from.path())
		if err != nil {
			return initErr("stat", p, err)
		}
		real, sub, err := bindIn(rootFd, p, fi.IsDir(), from, bindReadOnly, roFlags)
		if err != nil {
			return err
		}
		roRoots = append(roRoots, real)
		submounts = submounts || sub
	}

	// The workspace, read-write but nosuid and nodev, and its protected
	// paths read-only.
	if _, _, err := bindIn(rootFd, cfg.Workdir, true, cfg.Workspace, bindRecursive, unix.MS_NOSUID|unix.MS_NODEV); err != nil {
		return err
	}
	ws, err := openIn(rootFd, cfg.Workdir)
	if err != nil {
		return initErr("open", cfg.Workdir, err)
	}
	defer unix.Close(ws)
	if cfg.found, cfg.note, err = protectWorkspace(cfg, ws); err != nil {
		return err
	}

	// The terminal's control directory, read-only at a fixed path
	// (ControlPath, whatever the daemon's is): the terminal writes its
	// files from the host side, the shell only reads them, and so `rm -rf
	// /` cannot cut the terminal off from its shell.
	if _, _, err := bindIn(rootFd, cfg.ControlDir, true, cfg.ControlFrom, bindOnly, roFlags|unix.MS_NOEXEC); err != nil {
		return err
	}

	// Submounts that came along with a recursive bind are still writable:
	// make every mount under a read-only directory read-only too.
	if submounts {
		if err := remountSubmounts(roRoots); err != nil {
			return err
		}
	}
	if err := os.Remove(emptyFile); err != nil {
		return initErr("remove", emptyFile, err)
	}
	if err := os.Remove(emptyDir); err != nil {
		return initErr("remove", emptyDir, err)
	}

	// pivot_root(".", ".") stacks the old root on the new one; unmounting
	// "." then drops it (runc's way, which needs no directory for it).
	if err := unix.Chdir(root); err != nil {
		return initErr("chdir", root, err)
	}
	if err := unix.PivotRoot(".", "."); err != nil {
		return initErr("pivot_root", root, err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return initErr("umount2", "old root", err)
	}
	if err := unix.Chdir("/"); err != nil {
		return initErr("chdir", "/", err)
	}
	if err := remount("/", roFlags); err != nil {
		return err
	}
	return nil
}

// buildProc mounts a fresh /proc for the new pid namespace, sets its
// pid_max, and makes the host-wide knobs in it read-only or empty.
func buildProc(dst string, pidMax int, cover func(string, bool) error) error {
	if err := mkdir(dst, 0o555); err != nil {
		return err
	}
	if err := mount("proc", dst, "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return err
	}
	if pidMax > 0 {
		f := filepath.Join(dst, "sys/kernel/pid_max")
		if err := os.WriteFile(f, []byte(strconv.Itoa(pidMax)), 0); err != nil {
			return initErr("write", f, err)
		}
	}
	for _, p := range procReadOnly {
		t := filepath.Join(dst, p)
		if _, err := os.Lstat(t); err != nil {
			continue
		}
		if err := mount(t, t, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return err
		}
		if err := remount(t, roFlags|unix.MS_NOEXEC); err != nil {
			return err
		}
	}
	for _, p := range procMasked {
		t := filepath.Join(dst, p)
		fi, err := os.Lstat(t)
		if err != nil {
			continue
		}
		if err := cover(t, fi.IsDir()); err != nil {
			return err
		}
	}
	return nil
}

// buildDev makes a minimal /dev: the host's null, zero, full, random,
// urandom and tty nodes bound in read-only (a device node on a read-only
// mount still reads and writes; only its inode cannot change, so no chmod
// of the host's /dev/null), a private devpts for programs that open their
// own pseudo-terminals, the shell's own terminal as /dev/console, and the
// usual links.
func buildDev(dst string) error {
	if err := mkdir(dst, 0o755); err != nil {
		return err
	}
	if err := mount("tmpfs", dst, "tmpfs", unix.MS_NOSUID|unix.MS_NOEXEC, "mode=0755,size=64k,nr_inodes=64"); err != nil {
		return err
	}
	bindNode := func(src, name string) error {
		t := filepath.Join(dst, name)
		if err := writeFile(t, 0o666); err != nil {
			return err
		}
		if err := mount(src, t, "", unix.MS_BIND, ""); err != nil {
			return err
		}
		return remount(t, unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NOEXEC)
	}
	for _, d := range devices {
		if err := bindNode("/dev/"+d, d); err != nil {
			return err
		}
	}
	// The shell's terminal was opened in the daemon's mount namespace, so
	// its descriptor cannot be a bind source; its path in this namespace's
	// copy of the host's mounts can.
	if tty, err := os.Readlink("/proc/self/fd/0"); err == nil && isTTY(0) && strings.HasPrefix(tty, "/dev/pts/") {
		if err := bindNode(tty, "console"); err != nil {
			return err
		}
	}
	pts := filepath.Join(dst, "pts")
	if err := mkdir(pts, 0o755); err != nil {
		return err
	}
	if err := mount("devpts", pts, "devpts", unix.MS_NOSUID|unix.MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620"); err != nil {
		return err
	}
	for name, target := range map[string]string{
		"ptmx": "pts/ptmx", "fd": "/proc/self/fd", "stdin": "/proc/self/fd/0",
		"stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2", "shm": "/tmp",
	} {
		if err := os.Symlink(target, filepath.Join(dst, name)); err != nil {
			return initErr("symlink", filepath.Join(dst, name), err)
		}
	}
	return remount(dst, unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NOEXEC)
}

func isTTY(fd int) bool {
	_, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	return err == nil
}

// GitControl are the paths in a repository's .git directory from which a
// git run on the host would take code to run or a place to take it from:
// config (core.fsmonitor, core.hooksPath, aliases, filters, ...),
// config.worktree, commondir (which moves config and hooks anywhere),
// hooks, the other worktrees' gitdirs and the submodules' gitdirs. Each
// init pins them read-only in the workspace's .git, and with them
// objects/info/alternates and what the config names in the workspace
// (protectRepo), missing ones as empty
// (commondir as ".", .git itself: git refuses an empty one); everything else in .git
// (objects, refs, HEAD, index, logs, packed-refs) stays writable, so
// commits, branches and status work inside.
var GitControl = []string{"config", "config.worktree", "commondir", "hooks/", "worktrees/", "modules/"}

// created is what a missing protected file is created with: nothing, but
// for those git reads and refuses empty.
var created = map[string]string{".git/commondir": ".\n"}

// maxStrayPins bounds the stray HEADs an init pins (each is a mount,
// and so is each directory above it).
const maxStrayPins = 256

// maxGitScan bounds how many entries of the workspace the init looks at
// for repositories below its top: a shell's start must not wait on a
// walk of a huge tree. What lies past it is not pinned (and the daemon
// logs so).
const maxGitScan = 200000

// Repo is a repository the git rule pins: a .git directory or file, or
// a bare repository's directory. The init reports those it found to the
// daemon, which has every later init of the sandbox pin them too.
type Repo struct {
	Path string // relative to the workspace: "sub/.git", ".git", "store.git", "." (a bare one)
	File bool   // a .git file: a pointer to a gitdir elsewhere
	// Stray is a file named HEAD outside any repository (Path names
	// it), pinned read-only: a directory is a repository only with a
	// HEAD, so the agent cannot rewrite this one into a valid one (nor
	// move its directory) to complete a repository of the user's.
	Stray bool `json:",omitempty"`
	// Half is the directory of a stray HEAD that would do as a
	// repository's, or is a link (Path names the directory): a
	// repository but for objects and refs, which the agent could add.
	// Where stray HEADs are pinned, it is pinned read-only whole (the
	// workspace's top, as a repository: its control files).
	Half bool `json:",omitempty"`
}

// findRepos walks the workspace at ws for every repository in it: .git
// directories and files at any depth, bare repositories (a directory
// with HEAD, objects and refs, which is all git needs to take one), and
// the files named HEAD elsewhere (Repo.Stray). It
// does not follow symlinks, does not look inside what it finds, and stops
// after limit entries (0: maxGitScan), saying so in note.
func findRepos(ws string, limit int) (repos []Repo, note string) {
	if limit <= 0 {
		limit = maxGitScan
	}
	n := 0
	// With a trailing slash the root is followed: it is /proc/self/fd/N,
	// a link, when it is a clone.
	ws = strings.TrimSuffix(ws, "/") + "/"
	rootBare := bareRepo(ws)
	if rootBare { // a bare repository given as the workspace
		repos = append(repos, Repo{Path: "."})
	}
	_ = filepath.WalkDir(ws, func(p string, de fs.DirEntry, err error) error {
		if err != nil || p == ws {
			return nil
		}
		if n++; n > limit {
			note = fmt.Sprintf("git rule: the workspace has more than %d entries; repositories past them that the sandbox's first shell did not find are not pinned", limit)
			return fs.SkipAll
		}
		rel, _ := filepath.Rel(ws, p)
		switch {
		case de.Name() == ".git" && de.IsDir():
			repos = append(repos, Repo{Path: rel})
			return fs.SkipDir
		case de.Name() == ".git" && de.Type().IsRegular():
			repos = append(repos, Repo{Path: rel, File: true})
		case de.IsDir() && bareRepo(p):
			repos = append(repos, Repo{Path: rel})
			return fs.SkipDir
		case de.Name() == "HEAD" && de.Type().IsRegular() && !(rootBare && rel == "HEAD"):
			repos = append(repos, Repo{Path: rel, Stray: true})
			if validHead(p) {
				// A repository but for objects and refs, which the
				// agent may add: pinned as one, so that its config
				// and hooks are none of the agent's.
				repos = append(repos, Repo{Path: filepath.Dir(rel), Half: true})
			}
		case de.Name() == "HEAD" && de.Type()&fs.ModeSymlink != 0:
			// A link cannot be pinned, and may be replaced: its
			// directory is pinned as a repository.
			repos = append(repos, Repo{Path: filepath.Dir(rel), Half: true})
		}
		return nil
	})
	return repos, note
}

// validHead reports whether the file at p would do as a repository's
// HEAD: a symbolic ref, or an object name.
func validHead(p string) bool {
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	b := make([]byte, 64)
	n, _ := io.ReadFull(f, b)
	b = b[:n]
	if bytes.HasPrefix(b, []byte("ref: refs/")) {
		return true
	}
	if len(b) < 40 {
		return false
	}
	for _, c := range b[:40] {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func bareRepo(dir string) bool {
	var st unix.Stat_t
	return unix.Lstat(filepath.Join(dir, "HEAD"), &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG &&
		unix.Lstat(filepath.Join(dir, "objects"), &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR &&
		unix.Lstat(filepath.Join(dir, "refs"), &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR
}

// protectWorkspace pins, read-only, git's control files in every
// repository of the workspace (ws, beneath the new root), those an
// earlier init of the sandbox found (cfg.Repos) and those there are now,
// then cfg.Protected. It returns the repositories it found and
// findRepos' note. Every directory from the workspace's top to a
// repository's control files is pinned as a mount point, as .git at the
// top always was: none can be removed or renamed, so a repository the
// user had cannot be moved out of the way (or past maxGitScan) and
// replaced by one of the agent's.
func protectWorkspace(cfg *initConfig, ws int) ([]Repo, string, error) {
	src, err := unix.Open(cfg.Workspace.path(), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, "", initErr("open", cfg.Workspace.Path, err)
	}
	defer unix.Close(src)
	pinned := map[string]bool{}
	found, note := findRepos(cfg.Workspace.path(), cfg.GitScan)
	seen := map[Repo]bool{}
	strays := 0
	skipped := 0
	for k, r := range append(append([]Repo(nil), cfg.Repos...), found...) {
		if seen[r] {
			continue
		}
		seen[r] = true
		if (r.Stray || r.Half) && !cfg.PinStray {
			continue
		}
		if k >= len(cfg.Repos) && !r.Stray && !r.Half && (!ownRepo(src, r, cfg.Lent) || !r.File && !headAt(src, r.Path)) {
			// Not the sandbox's user's (one an agent made in a directory
			// of the user's, handed to the dedicated uid, or another
			// user's): git on the host does not trust it, so it needs no
			// pins, and an agent's thousands of them would otherwise cost
			// every later start its bind mounts. Nor a .git with no HEAD,
			// which git takes for no repository: a directory of the
			// user's the agent renamed to .git (the HEAD rule refuses it
			// a HEAD), whose config is the agent's and could name a path
			// no pin can be made on, failing every later start.
			continue
		}
		if err := protectRepo(src, ws, r, cfg, pinned, &strays, &note); err != nil {
			if !linkInNotOurs(src, r, cfg.Lent, err) {
				return nil, "", err
			}
			// A link in a repository that is not the sandbox's user's
			// (one the git guard handed to the dedicated uid, after an
			// agent of an earlier session made it): git on the host
			// trusts no such repository, so it needs no pins, and an
			// agent could otherwise keep every later session over the
			// directory from starting.
			if skipped++; skipped == 1 {
				note = strings.TrimPrefix(note+"; git rule: a repository not the workspace user's holds a symlink where a control file would be pinned ("+r.Path+"); it is not pinned (git on the host does not trust it)", "; ")
			}
		}
	}
	// What the host's configs name in the workspace by absolute path
	// (hostGitRefs): a repository's above the workspace, whose worktree
	// holds it, or a user's global core.hooksPath there.
	var abs []configRef
	for _, h := range cfg.HostGit {
		if path.IsAbs(h.Path) {
			abs = append(abs, h)
		}
	}
	hw := configWalk{seen: map[string]bool{}, budget: maxConfigPins, home: cfg.Home}
	if err := hw.pin(src, ws, abs, ".", ".", cfg.Workspace.Path, pinned, 0); err != nil {
		return nil, "", err
	}
	for _, p := range cfg.Protected {
		if err := protect(src, ws, p, p, pinned); err != nil {
			return nil, "", err
		}
	}
	return found, note, nil
}

// ownRepo reports whether repository r's git directory (or .git file)
// is owned by the sandbox's uid, as seen inside, or is one the guard
// lent (lent: initConfig.Lent).
func ownRepo(src int, r Repo, lent [][2]uint64) bool {
	var st unix.Stat_t
	if unix.Fstatat(src, r.Path, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return true // let the pin find what is wrong
	}
	return usersOwn(&st, lent)
}

// usersOwn reports whether st is the sandbox's uid's, as seen inside, or
// one of the git directories the guard lent (initConfig.Lent).
func usersOwn(st *unix.Stat_t, lent [][2]uint64) bool {
	return int(st.Uid) == os.Getuid() || slices.Contains(lent, [2]uint64{st.Dev, st.Ino})
}

// headAt reports whether the git directory gitdir beneath src has a HEAD
// (a file, or a symbolic ref's link).
func headAt(src int, gitdir string) bool {
	var st unix.Stat_t
	if unix.Fstatat(src, path.Join(gitdir, "HEAD"), &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return false
	}
	t := st.Mode & unix.S_IFMT
	return t == unix.S_IFREG || t == unix.S_IFLNK
}

// linkInNotOurs reports whether err, from pinning repository r, is a
// symlink on the way (protectErr's ELOOP or EXDEV) in a repository whose
// git directory (r.Path: a .git, a bare repository's directory, a .git
// file) is not owned by the sandbox's uid, as seen inside.
func linkInNotOurs(src int, r Repo, lent [][2]uint64, err error) bool {
	var ie *InitError
	if !errors.As(err, &ie) || ie.Op != "protect" {
		return false
	}
	var st unix.Stat_t
	if e := unix.Fstatat(src, r.Path, &st, unix.AT_SYMLINK_NOFOLLOW); e != nil {
		return false
	}
	return !usersOwn(&st, lent)
}

// protectRepo pins one repository's control files (see protectWorkspace).
func protectRepo(src, ws int, r Repo, cfg *initConfig, pinned map[string]bool, strays *int, note *string) error {
	wsHost := cfg.Workspace.Path
	if r.Half && r.Path != "." {
		return protect(src, ws, r.Path+"/", r.Path+"/", pinned)
	}
	if r.Stray {
		if *strays++; *strays > maxStrayPins {
			if *strays == maxStrayPins+1 {
				*note = strings.TrimPrefix(*note+fmt.Sprintf("; git rule: more than %d files named HEAD outside any repository; those past them are not pinned", maxStrayPins), "; ")
			}
			return nil
		}
		return protect(src, ws, r.Path, r.Path, pinned)
	}
	if r.File {
		if err := protect(src, ws, r.Path, ".git", pinned); err != nil {
			return err
		}
		return protectFileRepo(src, ws, r.Path, cfg, pinned)
	}
	for _, p := range GitControl {
		if err := protect(src, ws, r.Path+"/"+p, ".git/"+p, pinned); err != nil {
			return err
		}
	}
	// objects/info/alternates lends the repository another's objects:
	// with a ref the agent points there (a symlink in refs/), the user's
	// git would check out a repository the sandbox cannot read.
	if err := protectMissing(src, ws, r.Path+"/objects/info/alternates", false, pinned); err != nil {
		return err
	}
	refs := configWalk{seen: map[string]bool{}, budget: maxConfigPins, home: cfg.Home}
	if err := refs.protect(src, ws, r.Path+"/config", repoWorktree(r.Path), wsHost, pinned, 0); err != nil {
		return err
	}
	return refs.pin(src, ws, hostRelative(cfg.HostGit), "", repoWorktree(r.Path), wsHost, pinned, 0)
}

// hostRelative are what the user's own configs on the host (global,
// system) name relative to every worktree: core.hooksPath = .githooks,
// a filter's ./scripts/clean (hostGitRefs).
func hostRelative(host []configRef) []configRef {
	var rel []configRef
	for _, h := range host {
		if !path.IsAbs(h.Path) {
			rel = append(rel, h)
		}
	}
	return rel
}

// protectFileRepo pins, for a repository whose .git is a file (at
// dotgit: a submodule's, a linked worktree's, --separate-git-dir's),
// what the configs of the git directory it names say of its worktree,
// where that git directory is in the workspace (the daemon reads one
// outside it for the workspace's own .git: hostGitRefs), and what the
// host's configs name in every worktree.
func protectFileRepo(src, ws int, dotgit string, cfg *initConfig, pinned map[string]bool) error {
	worktree := path.Dir(dotgit)
	refs := configWalk{seen: map[string]bool{}, budget: maxConfigPins, home: cfg.Home}
	if line, err := readBeneath(src, dotgit, 4096); err == nil {
		line, _, _ = strings.Cut(line, "\n")
		if target, ok := strings.CutPrefix(strings.TrimSpace(line), "gitdir: "); ok {
			if gitdir, ok := configTarget(configRef{Path: target}, worktree, worktree, cfg.Workspace.Path); ok {
				confs := []string{gitdir + "/config", gitdir + "/config.worktree"}
				if common, err := readBeneath(src, gitdir+"/commondir", 4096); err == nil {
					common, _, _ = strings.Cut(common, "\n")
					if c, ok := configTarget(configRef{Path: strings.TrimSpace(common)}, gitdir, worktree, cfg.Workspace.Path); ok {
						confs = append(confs, c+"/config")
					}
				}
				for _, c := range confs {
					if err := refs.protect(src, ws, c, worktree, cfg.Workspace.Path, pinned, 0); err != nil {
						return err
					}
				}
			}
		}
	}
	return refs.pin(src, ws, hostRelative(cfg.HostGit), "", worktree, cfg.Workspace.Path, pinned, 0)
}

// maxConfigPins bounds what one repository's configs get pinned (an
// agent's repository could name the same files over and over).
const maxConfigPins = 256

// configWalk is one repository's walk of its config and includes: the
// files read and the pins left.
type configWalk struct {
	seen   map[string]bool
	budget int
	home   string // the user's home directory on the host, for ~/ (initConfig.Home)
}

// maxIncludeDepth bounds how deep the init follows includes (git's own
// limit is 10).
const maxIncludeDepth = 10

// protect pins what the config at conf (a pinned file, relative
// to the workspace, src) names in the workspace: included files, each
// read for its own includes in turn, the hooks directory and the
// programs its commands run (see configPaths), so that the agent can
// write none of them. A missing one is pinned where its path first
// leaves what exists: an empty file or directory the agent cannot fill.
// A symlink on the way fails the start, as for the control files.
func (w *configWalk) protect(src, ws int, conf, worktree, wsHost string, pinned map[string]bool, depth int) error {
	if depth > maxIncludeDepth || w.seen[conf] {
		return nil
	}
	w.seen[conf] = true
	text, err := readBeneath(src, conf, 1<<20)
	if err != nil {
		return nil // none, or not a file: git reads nothing there either
	}
	return w.pin(src, ws, configPaths(text), path.Dir(conf), worktree, wsHost, pinned, depth)
}

// pin pins refs, named by a config in confDir (relative to the
// workspace) for the repository whose worktree's top is worktree, and
// walks the included configs among them.
func (w *configWalk) pin(src, ws int, refs []configRef, confDir, worktree, wsHost string, pinned map[string]bool, depth int) error {
	for _, ref := range refs {
		if w.home != "" && (ref.Path == "~" || strings.HasPrefix(ref.Path, "~/")) {
			ref.Path = w.home + ref.Path[1:] // git expands it with the user's HOME
		}
		rel, ok := configTarget(ref, confDir, worktree, wsHost)
		if !ok || rel == "." || pinned[rel] {
			continue // outside the workspace, the whole of it, or done
		}
		if w.budget--; w.budget < 0 {
			return nil
		}
		if err := protectMissing(src, ws, rel, ref.Hooks, pinned); err != nil {
			return err
		}
		if !ref.Hooks && !ref.Exec {
			if err := w.protect(src, ws, rel, worktree, wsHost, pinned, depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// protectMissing pins rel (a directory if dir) read-only, or, if part of
// it is missing, its first missing component, made empty (a directory
// unless it is rel itself and rel is a file).
func protectMissing(src, ws int, rel string, dir bool, pinned map[string]bool) error {
	parts := strings.Split(rel, "/")
	for i := range parts {
		sub := strings.Join(parts[:i+1], "/")
		fd, err := openBeneath(src, sub)
		if err == nil {
			unix.Close(fd)
			continue
		}
		if err != unix.ENOENT {
			return protectErr(rel, sub, err)
		}
		if i < len(parts)-1 || dir {
			sub += "/"
		}
		return protect(src, ws, sub, sub, pinned)
	}
	if dir {
		rel += "/"
	}
	return protect(src, ws, rel, rel, pinned)
}

// readBeneath reads at most limit bytes of the regular file rel beneath
// dir, refusing symlinks.
func readBeneath(dir int, rel string, limit int64) (string, error) {
	p, err := openBeneath(dir, rel)
	if err != nil {
		return "", err
	}
	defer unix.Close(p)
	// An O_PATH descriptor reopens through /proc: the same file.
	fd, err := unix.Open(fdPath(p), unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		return "", err
	}
	f := os.NewFile(uintptr(fd), rel)
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return "", unix.EINVAL
	}
	b, err := io.ReadAll(io.LimitReader(f, limit))
	return string(b), err
}

// openBeneath opens rel beneath dir as an O_PATH descriptor, refusing
// symlinks (a trailing one too: without O_NOFOLLOW, RESOLVE_NO_SYMLINKS
// gives ELOOP) and "..".
func openBeneath(dir int, rel string) (int, error) {
	how := unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
	for {
		fd, err := unix.Openat2(dir, rel, &how)
		if err == unix.EINTR || err == unix.EAGAIN {
			continue
		}
		return fd, err
	}
}

// protect binds one path inside the workspace read-only over itself; srcDir
// and dstDir are the directory rel is relative to, on the host's side and
// beneath the new root. Its last component is created first if missing
// and its parent exists (a directory if rel ends in "/" or key, rel as if
// in a .git at the top, is one of knownDirs; else a file holding
// created[key]); a path whose parent is missing (.git/config where there
// is no .git) is skipped, and so is one the init may not create (in a
// directory that is not the sandbox's: the shell may not create it
// either). Every component is resolved with openat2 beneath the
// workspace, refusing symlinks, so a link planted by the agent in an
// earlier life of the sandbox (.git -> /etc) can neither make the init
// create files outside the workspace nor bind a host directory in. Each
// directory on the way (.git) is pinned with a bind over itself, which
// makes it a mount point: it can then be neither renamed nor removed, so
// the agent cannot swap in a .git of its own around the protected files.
func protect(srcDir, dstDir int, rel, key string, pinned map[string]bool) error {
	clean := path.Clean(rel)
	key = path.Clean(key)
	wantDir := strings.HasSuffix(rel, "/") || knownDirs[key]
	parts := strings.Split(clean, "/")
	open := openBeneath
	// Create the last component if missing; skip the path if a parent is
	// missing (or not a directory) or if it cannot be made.
	last := len(parts) - 1
	if last > 0 {
		fd, err := open(srcDir, strings.Join(parts[:last], "/"))
		switch {
		case err == unix.ENOENT || err == unix.ENOTDIR:
			return nil
		case err != nil:
			return protectErr(rel, strings.Join(parts[:last], "/"), err)
		}
		unix.Close(fd)
	}
	if fd, err := open(srcDir, clean); err == nil {
		unix.Close(fd)
	} else if err == unix.ENOTDIR {
		// A parent that is a file: .git/hooks where .git is a linked
		// worktree's or a submodule's pointer to its git directory,
		// which is elsewhere (and pinned there, if it is in reach).
		return nil
	} else if err != unix.ENOENT {
		return protectErr(rel, clean, err)
	} else {
		parent := srcDir
		if last > 0 {
			if parent, err = open(srcDir, strings.Join(parts[:last], "/")); err != nil {
				return protectErr(rel, clean, err)
			}
		}
		if wantDir {
			err = unix.Mkdirat(parent, parts[last], 0o755)
		} else {
			var f int
			if f, err = unix.Openat(parent, parts[last], unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644); err == nil {
				if c := created[key]; c != "" {
					_, err = unix.Write(f, []byte(c))
				}
				unix.Close(f)
			}
		}
		if parent != srcDir {
			unix.Close(parent)
		}
		switch err {
		case nil, unix.EEXIST:
		case unix.EACCES, unix.EPERM, unix.EROFS:
			return nil
		default:
			return protectErr(rel, clean, err)
		}
	}
	// Pin the directories on the way (once: a second bind over .git would
	// hide what was bound below it), then bind the path itself.
	for i := range parts {
		sub := strings.Join(parts[:i+1], "/")
		last := i == len(parts)-1
		if !last && pinned[sub] {
			continue
		}
		pinned[sub] = true
		src, err := open(srcDir, sub)
		if err != nil {
			return protectErr(rel, sub, err)
		}
		dst, err := open(dstDir, sub)
		if err != nil {
			unix.Close(src)
			return protectErr(rel, sub, err)
		}
		err = mount(fdPath(src), fdPath(dst), "", unix.MS_BIND|unix.MS_REC, "")
		unix.Close(src)
		unix.Close(dst)
		if err != nil {
			return err
		}
		if last {
			// Reopened, the path leads to the new mount on top.
			top, err := open(dstDir, sub)
			if err != nil {
				return protectErr(rel, sub, err)
			}
			err = remount(fdPath(top), roFlags)
			unix.Close(top)
			if err != nil {
				return err
			}
		}
	}
	return nil
}

func protectErr(rel, sub string, err error) error {
	if err == unix.ELOOP || err == unix.EXDEV {
		return &InitError{Op: "protect", Path: rel, Msg: sub + " is a symlink (or leaves the workspace); refusing to follow it"}
	}
	return initErr("protect "+rel, sub, err)
}

func fdPath(fd int) string { return "/proc/self/fd/" + strconv.Itoa(fd) }

// path is where the init finds the source: its path, or its clone's
// descriptor.
func (s Source) path() string {
	if s.Tree > 0 {
		return fdPath(s.Tree)
	}
	return s.Path
}

// bindRO binds src at dst and makes dst read-only. It binds only src's own
// mount where it can: then no submount comes along, writable. In a user
// namespace that fails (EINVAL) when src has submounts, which must then
// come too; bindRO binds recursively and reports that they need a
// read-only pass (remountSubmounts).
func bindRO(src, dst string) (submounts bool, err error) {
	err = unix.Mount(src, dst, "", unix.MS_BIND, "")
	if err == unix.EINVAL {
		submounts, err = true, unix.Mount(src, dst, "", unix.MS_BIND|unix.MS_REC, "")
	}
	if err != nil {
		return false, initErr("mount", src+" on "+dst, err)
	}
	return submounts, remount(dst, roFlags)
}

// remount changes a bind mount's flags to flags plus those it must keep:
// in a user namespace, a mount that came from the host keeps its nosuid,
// nodev, noexec, read-only and atime flags locked, and a remount that
// would clear one fails.
func remount(dst string, flags uintptr) error {
	var st unix.Statfs_t
	if err := unix.Statfs(dst, &st); err != nil {
		return initErr("statfs", dst, err)
	}
	keep := uintptr(st.Flags) & (unix.MS_RDONLY | unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC |
		unix.MS_NOATIME | unix.MS_NODIRATIME | unix.MS_RELATIME)
	return mount("", dst, "", unix.MS_REMOUNT|unix.MS_BIND|flags|keep, "")
}

// remountSubmounts makes read-only every mount below a directory that was
// bound read-only (a recursive bind brings the host's submounts along,
// writable).
func remountSubmounts(ro []string) error {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return initErr("open", "/proc/self/mountinfo", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 {
			continue
		}
		mp, opts := unescapeMount(fields[4]), fields[5]
		if strings.HasPrefix(opts, "ro") && (len(opts) == 2 || opts[2] == ',') {
			continue
		}
		for _, d := range ro {
			if strings.HasPrefix(mp, d+"/") {
				if err := remount(mp, roFlags); err != nil {
					return err
				}
				break
			}
		}
	}
	if err := sc.Err(); err != nil {
		return initErr("read", "/proc/self/mountinfo", err)
	}
	return nil
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func mount(src, dst, fstype string, flags uintptr, data string) error {
	if err := unix.Mount(src, dst, fstype, flags, data); err != nil {
		what := dst
		if src != "" && src != fstype {
			what = src + " on " + dst
		}
		return initErr("mount", what, err)
	}
	return nil
}

func mkdir(p string, mode uint32) error {
	if err := unix.Mkdir(p, mode); err != nil && err != unix.EEXIST {
		return initErr("mkdir", p, err)
	}
	return nil
}

func writeFile(p string, mode uint32) error {
	fd, err := unix.Open(p, unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, mode)
	if err != nil {
		return initErr("create", p, err)
	}
	unix.Close(fd)
	return nil
}

// openIn opens p, a path as the sandbox will see it, beneath the new root
// (rootFd) with symlinks resolved inside it.
func openIn(rootFd int, p string) (int, error) {
	how := unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS}
	for {
		fd, err := unix.Openat2(rootFd, strings.TrimPrefix(p, "/"), &how)
		if err == unix.EINTR || err == unix.EAGAIN {
			continue
		}
		return fd, err
	}
}

// makeIn makes p (a directory, or an empty file) and its parents beneath
// the new root.
func makeIn(rootFd int, p string, dir bool) error {
	parts := strings.Split(strings.Trim(path.Clean(p), "/"), "/")
	for i := range parts {
		sub := "/" + strings.Join(parts[:i+1], "/")
		fd, err := openIn(rootFd, sub)
		if err == nil {
			unix.Close(fd)
			continue
		}
		if err != unix.ENOENT {
			return initErr("open", sub, err)
		}
		parent := rootFd
		if i > 0 {
			if parent, err = openIn(rootFd, "/"+strings.Join(parts[:i], "/")); err != nil {
				return initErr("open", sub, err)
			}
		}
		if i < len(parts)-1 || dir {
			err = unix.Mkdirat(parent, parts[i], 0o755)
		} else {
			var f int
			if f, err = unix.Openat(parent, parts[i], unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644); err == nil {
				unix.Close(f)
			}
		}
		if parent != rootFd {
			unix.Close(parent)
		}
		if err != nil {
			return initErr("create", sub, err)
		}
	}
	return nil
}

// How bindIn binds.
const (
	bindOnly      = iota // src's own mount
	bindRecursive        // src and its submounts
	bindReadOnly         // src's own mount if it can (see bindRO)
)

// bindIn binds src at p beneath the new root (attaches its clone, or binds
// its host path) and remounts it with flags. It returns where the mount
// ended up (p with the root's symlinks resolved, as a path from the init's
// root) and, for bindReadOnly, whether submounts came along.
func bindIn(rootFd int, p string, dir bool, from Source, how int, flags uintptr) (string, bool, error) {
	if err := makeIn(rootFd, p, dir); err != nil {
		return "", false, err
	}
	fd, err := openIn(rootFd, p)
	if err != nil {
		return "", false, initErr("open", p, err)
	}
	target := fdPath(fd)
	real, _ := os.Readlink(target)
	submounts := false
	src := from.Path
	switch {
	case from.Tree > 0:
		// The daemon cloned what it meant to: the clone goes in as it
		// is, a read-only one with its submounts, which then need
		// their read-only pass.
		err = unix.MoveMount(from.Tree, "", fd, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH)
		submounts = how == bindReadOnly
		how = -1
	}
	switch how {
	case bindOnly:
		err = unix.Mount(src, target, "", unix.MS_BIND, "")
	case bindRecursive:
		err = unix.Mount(src, target, "", unix.MS_BIND|unix.MS_REC, "")
	case bindReadOnly:
		if err = unix.Mount(src, target, "", unix.MS_BIND, ""); err == unix.EINVAL {
			submounts, err = true, unix.Mount(src, target, "", unix.MS_BIND|unix.MS_REC, "")
		}
	}
	unix.Close(fd)
	if err != nil {
		return "", false, initErr("mount", from.Path+" on "+p, err)
	}
	if fd, err = openIn(rootFd, p); err != nil {
		return "", false, initErr("open", p, err)
	}
	defer unix.Close(fd)
	return real, submounts, remount(fdPath(fd), flags)
}
