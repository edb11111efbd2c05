//go:build !sandboxinit

package sandbox

import (
	"bufio"
	"io"
	"os"
	"os/user"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
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

func init() { readHostGit = hostGitRefs }

// systemGitConfig is git's system-wide config (Debian's git: prefix /usr).
var systemGitConfig = "/etc/gitconfig"

// maxHostConfigs bounds the configs hostGitRefs reads, includes and all.
const maxHostConfigs = 32

// hostGitRefs returns what the host's git configs for the user uid name
// that is, or may be, in the workspace ws (a real path): paths relative
// to a worktree (hooks directories and programs), and absolute paths in
// ws. Unreadable configs are passed over: git reads none either, or
// reads them as a user the daemon cannot be.
func hostGitRefs(ws string, uid int) []configRef {
	h := hostConfigs{ws: ws, seen: map[string]bool{}, home: userHome(uid)}
	// The configs git reads wherever it runs (XDG_CONFIG_HOME is the
	// user's shell's, unknown here: its default is taken).
	h.read(systemGitConfig, "", 0)
	if h.home != "" {
		h.read(filepath.Join(h.home, ".config/git/config"), "", 0)
		h.read(filepath.Join(h.home, ".gitconfig"), "", 0)
	}
	global := h.refs
	h.refs = nil
	// The relative ones also name paths in an enclosing repository's
	// worktree, which may reach into the workspace.
	top, gitdir := enclosingRepo(ws)
	if top != "" {
		for _, c := range []string{"config", "config.worktree"} {
			h.read(filepath.Join(gitdir, c), top, 0)
		}
		if common, err := readLine(filepath.Join(gitdir, "commondir")); err == nil {
			if !filepath.IsAbs(common) {
				common = filepath.Join(gitdir, common)
			}
			h.read(filepath.Join(common, "config"), top, 0)
		}
		for _, r := range global {
			if !filepath.IsAbs(r.Path) {
				h.add(r, top, "")
			}
		}
	}
	return append(global, h.refs...)
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
	if depth > maxIncludeDepth || h.seen[p] || len(h.seen) >= maxHostConfigs {
		return
	}
	h.seen[p] = true
	f, err := openHostFile(p)
	if err != nil {
		return
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return
	}
	text, err := io.ReadAll(io.LimitReader(f, 1<<20))
	if err != nil {
		return
	}
	for _, r := range configPaths(string(text)) {
		if inc := h.add(r, top, filepath.Dir(p)); inc != "" && !within(inc, h.ws) {
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
	p = filepath.Clean(p)
	if within(p, h.ws) {
		h.refs = append(h.refs, configRef{Path: p, Hooks: r.Hooks, Exec: r.Exec})
	}
	if r.Hooks || r.Exec {
		return ""
	}
	return p
}

// enclosingRepo finds the repository whose worktree holds the workspace
// ws from above, as git's discovery would from ws: the nearest directory
// above it with a .git (a directory, or a file naming one), on the same
// file system. It returns the worktree's top and the git directory, or
// "".
func enclosingRepo(ws string) (top, gitdir string) {
	var st syscall.Stat_t
	if syscall.Stat(ws, &st) != nil {
		return "", ""
	}
	dev := st.Dev
	for dir := filepath.Dir(ws); ; dir = filepath.Dir(dir) {
		var dst syscall.Stat_t
		if syscall.Stat(dir, &dst) != nil || dst.Dev != dev {
			return "", "" // git stops at a file system's edge too
		}
		g := filepath.Join(dir, ".git")
		if fi, err := os.Stat(g); err == nil {
			if fi.IsDir() {
				return dir, g
			}
			line, err := readLine(g)
			if target, ok := strings.CutPrefix(line, "gitdir: "); err == nil && ok {
				if !filepath.IsAbs(target) {
					target = filepath.Join(dir, target)
				}
				return dir, filepath.Clean(target)
			}
		}
		if dir == "/" {
			return "", ""
		}
	}
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
