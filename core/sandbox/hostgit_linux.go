//go:build !sandboxinit

package sandbox

import (
	"bufio"
	"io"
	"io/fs"
	"os"
	"os/user"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// The init pins what a repository's own config names in the workspace
// (configPaths), but git on the host reads more than that: the user's
// global configs (~/.gitconfig, ~/.config/git/config), the system's
// (/etc/gitconfig), and, where the workspace lies inside the worktree of
// a repository of the user's whose .git is above it, that repository's
// config. A `core.hooksPath = .githooks` or a filter's `./scripts/clean`
// there names a path in every worktree, which the agent writes. The
// daemon reads those configs (the init cannot see them) and hands the
// init what they name (initConfig.HostGit).

func init() {
	readHostGit = hostGitRefs
}

// systemGitConfig is git's system-wide config (Debian's git: prefix /usr).
var systemGitConfig = "/etc/gitconfig"

// maxHostConfigs bounds the configs hostGitRefs reads, includes and
// all, and the repositories it reads them for (a repository an agent
// makes is not the user's, so cannot take a place).
const maxHostConfigs = 256

// hostGitRefs returns what the host's git configs for the user uid name
// that is, or may be, in the workspace ws (a real path): paths relative
// to a worktree (hooks directories and programs), and absolute paths in
// ws; and the user's home, as a real path (initConfig.Home). Unreadable configs are passed over: git reads none either, or
// reads them as a user the daemon cannot be.
func hostGitRefs(ws string, uid int) (refs []configRef, home string) {
	h := hostConfigs{ws: ws, seen: map[string]bool{}, home: realPath(userHome(uid))}
	// The configs git reads wherever it runs (XDG_CONFIG_HOME is the
	// user's shell's, unknown here: its default is taken).
	h.read(systemGitConfig, "", 0)
	if h.home != "" {
		h.read(filepath.Join(h.home, ".config/git/config"), "", 0)
		h.read(filepath.Join(h.home, ".gitconfig"), "", 0)
	}
	global := h.refs
	h.refs = nil
	// The user's repositories whose worktrees hold the workspace: what
	// their configs name, and the global configs' relative paths, taken
	// in their worktrees, may lie in it.
	around := reposAround(ws, uid)
	around = append(around, reposWithin(ws, uid, maxGitScan)...)
	for _, r := range around {
		for _, c := range []string{"config", "config.worktree"} {
			h.read(filepath.Join(r.gitdir, c), r.top, 0)
		}
		if common, err := readLine(filepath.Join(r.gitdir, "commondir")); err == nil {
			if !filepath.IsAbs(common) {
				common = filepath.Join(r.gitdir, common)
			}
			h.read(filepath.Join(common, "config"), r.top, 0)
		}
		for _, g := range global {
			if !filepath.IsAbs(g.Path) {
				h.add(g, r.top, "")
			}
		}
	}
	seen := map[configRef]bool{}
	for _, r := range append(global, h.refs...) {
		if !seen[r] {
			seen[r] = true
			refs = append(refs, r)
		}
	}
	return refs, h.home
}

// userHome is the home directory of the user uid, or "" (a variable for
// tests, whose users have no passwd entry).
var userHome = func(uid int) string {
	u, err := user.LookupId(strconv.Itoa(uid))
	if err != nil {
		return ""
	}
	return u.HomeDir
}

// hostConfigs is one walk of the host's configs.
type hostConfigs struct {
	ws, home string
	seen     map[string]bool
	refs     []configRef
}

// read adds what the config file at p names (see add), and reads the
// configs it includes that lie outside the workspace (the init walks
// those inside). top is the worktree its relative hooks and programs are
// relative to: "" for every repository's.
func (h *hostConfigs) read(p, top string, depth int) {
	// Once per worktree: a config two repositories share names paths in
	// each one's.
	key := p + "\x00" + top
	if depth > maxIncludeDepth || h.seen[key] || len(h.seen) >= maxHostConfigs {
		return
	}
	h.seen[key] = true
	var f *os.File
	var err error
	if rp := realPath(p); within(rp, h.ws) {
		// The config itself is a file of the workspace's (a dotfiles
		// repository's, ~/.gitconfig linked to it; a repository's in
		// the workspace): the init pins it, and the daemon reads it for
		// what it names outside the workspace, or through a link, which
		// the init cannot see. Beneath the workspace, through no link.
		h.refs = append(h.refs, configRef{Path: rp})
		f, err = openBeneathWs(h.ws, rp)
	} else {
		f, err = openHostFile(p)
	}
	if err != nil {
		return
	}
	defer f.Close() // a regular file: both openers check
	text, err := io.ReadAll(io.LimitReader(f, 1<<20))
	if err != nil {
		return
	}
	for _, r := range configPaths(string(text)) {
		if inc := h.add(r, top, filepath.Dir(p)); inc != "" {
			h.read(inc, top, depth+1)
		}
	}
}

// add keeps r, named by a config in directory dir (for an include) of a
// repository whose worktree's top is top ("" for every repository's),
// where it is, or may be, in the workspace; it returns an include's
// absolute path.
func (h *hostConfigs) add(r configRef, top, dir string) string {
	p := r.Path
	switch {
	case p == "" || strings.HasPrefix(p, "%("):
		return ""
	case p == "~" || strings.HasPrefix(p, "~/"):
		if h.home == "" {
			return ""
		}
		p = filepath.Join(h.home, p[1:])
	case strings.HasPrefix(p, "~"):
		return "" // another user's home: not looked up
	case filepath.IsAbs(p):
	case !r.Hooks && !r.Exec:
		p = filepath.Join(dir, p) // an include: relative to its config
	case top == "":
		// A worktree's, in every repository: the init resolves it.
		h.refs = append(h.refs, configRef{Path: path.Clean(p), Hooks: r.Hooks, Exec: r.Exec})
		return ""
	default:
		p = filepath.Join(top, p)
	}
	p = realPath(filepath.Clean(p))
	if within(p, h.ws) {
		h.refs = append(h.refs, configRef{Path: p, Hooks: r.Hooks, Exec: r.Exec})
	}
	if r.Hooks || r.Exec {
		return ""
	}
	return p
}

// usersRepo reports whether st, a .git, is the user uid's: theirs, or
// one of theirs the git guard lent to the dedicated uid while another
// session runs (gitlend_linux.go).
func usersRepo(st *syscall.Stat_t, uid int) bool {
	return int(st.Uid) == uid || isLent(st.Dev, st.Ino)
}

// repoAround is a repository whose worktree holds the workspace.
type repoAround struct{ top, gitdir string }

// reposAround finds the user uid's repositories whose worktrees hold the
// workspace ws: the workspace's own where its .git is a file naming a
// git directory outside it (a linked worktree, whose config is the main
// repository's), and every one above it, nested ones and those across a
// mount too (git run at any of their tops reads its own config, which
// may name paths below). A repository not the user's (one an agent made
// above a later workspace, handed over by the git guard) is passed
// over: git on the host does not trust it.
func reposAround(ws string, uid int) []repoAround {
	var out []repoAround
	for dir := ws; ; dir = filepath.Dir(dir) {
		g := filepath.Join(dir, ".git")
		var st syscall.Stat_t
		if syscall.Lstat(g, &st) == nil && usersRepo(&st, uid) {
			switch st.Mode & syscall.S_IFMT {
			case syscall.S_IFDIR:
				if dir != ws && hasHead(g) { // the init reads a .git in the workspace
					out = append(out, repoAround{dir, g})
				}
			case syscall.S_IFREG:
				if target := gitdirOutside(g, ws); target != "" {
					out = append(out, repoAround{dir, target})
				}
			}
		}
		if dir == "/" || len(out) >= maxHostConfigs {
			return out
		}
	}
}

// reposWithin finds the user uid's repositories in the workspace ws
// whose configs the init cannot read whole: a .git that is a file or a
// link naming a git directory outside the workspace (a linked worktree
// of a repository elsewhere, a submodule of one above), and every .git
// directory, whose config may include a file outside or name the
// workspace through a link (read here, beneath the workspace). It does
// not follow links, and stops after limit entries, as the init's walk.
func reposWithin(ws string, uid, limit int) []repoAround {
	var out []repoAround
	n := 0
	_ = filepath.WalkDir(ws, func(p string, de fs.DirEntry, err error) error {
		if err != nil || p == ws {
			return nil
		}
		if n++; n > limit || len(out) >= maxHostConfigs {
			return fs.SkipAll
		}
		if de.Name() != ".git" {
			return nil
		}
		var st syscall.Stat_t
		if syscall.Lstat(p, &st) != nil || !usersRepo(&st, uid) {
			return skipDir(de)
		}
		top := filepath.Dir(p)
		switch {
		case de.IsDir():
			if hasHead(p) {
				out = append(out, repoAround{top, p})
			}
			return fs.SkipDir
		case de.Type().IsRegular():
			if target := gitdirOutside(p, ws); target != "" {
				out = append(out, repoAround{top, target})
			}
		case de.Type()&fs.ModeSymlink != 0:
			if target := realPath(p); !within(target, ws) && hasHead(target) {
				out = append(out, repoAround{top, target})
			}
		}
		return nil
	})
	return out
}

// hasHead reports whether the git directory gitdir has a HEAD (a file,
// or a symbolic ref's link), without which git takes it for no
// repository. A directory of the user's that an agent renamed to .git
// has none (the guard's HEAD rule refuses it one), and what it holds is
// the agent's: the daemon must read nothing of it.
func hasHead(gitdir string) bool { return headAt(unix.AT_FDCWD, gitdir) }

// gitdirOutside is the real path of the git directory the .git file at
// dotgit names ("gitdir: X", X relative to the file's directory), where
// that lies outside the workspace ws and has a HEAD; else "".
func gitdirOutside(dotgit, ws string) string {
	line, err := readLine(dotgit)
	target, ok := strings.CutPrefix(line, "gitdir: ")
	if err != nil || !ok {
		return ""
	}
	if !filepath.IsAbs(target) {
		target = filepath.Join(filepath.Dir(dotgit), target)
	}
	if target = realPath(filepath.Clean(target)); within(target, ws) || !hasHead(target) {
		return ""
	}
	return target
}

func skipDir(de fs.DirEntry) error {
	if de.IsDir() {
		return fs.SkipDir
	}
	return nil
}

// openBeneathWs opens the regular file at the real path p in the
// workspace ws, beneath it and through no symbolic link, without
// blocking.
func openBeneathWs(ws, p string) (*os.File, error) {
	rel, err := filepath.Rel(ws, p)
	if err != nil {
		return nil, err
	}
	dir, err := unix.Open(ws, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(dir)
	how := unix.OpenHow{Flags: unix.O_RDONLY | unix.O_NONBLOCK | unix.O_NOCTTY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
	fd, err := unix.Openat2(dir, rel, &how)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), p)
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil, syscall.EINVAL
	}
	return f, nil
}

// realPath is p with the symbolic links of the part of it that exists
// resolved, so that it compares with the workspace's real path.
func realPath(p string) string {
	if p == "" {
		return ""
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	dir := filepath.Dir(p)
	if dir == p {
		return p
	}
	return filepath.Join(realPath(dir), filepath.Base(p))
}

// readLine reads the first line of the file at p.
func readLine(p string) (string, error) {
	f, err := openHostFile(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	s := bufio.NewScanner(io.LimitReader(f, 4096))
	s.Scan()
	return strings.TrimSpace(s.Text()), s.Err()
}

// openHostFile opens the file at p for reading only if it is a regular
// file: the daemon (root) reads paths an agent may have made, and must
// neither block on a FIFO nor open a device.
func openHostFile(p string) (*os.File, error) {
	if st, err := os.Stat(p); err != nil || !st.Mode().IsRegular() {
		return nil, syscall.EINVAL
	}
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, err
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil, syscall.EINVAL
	}
	return f, nil
}
