package daemon

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/core/config"
	"github.com/harnessd/harnessd/core/sandbox"
)

// Requester is who asked for a session, as the API's peer credentials
// say. It is not part of a request's JSON.
type Requester struct {
	UID, GID int
	Groups   []int
}

// userWorkspace checks a workspace a client asked for: an existing
// directory (symlinks resolved) that the requester may write and that is
// not the daemon's own. It returns the directory's real path.
func (d *Daemon) userWorkspace(path string, who *Requester) (string, error) {
	bad := func(format string, args ...any) (string, error) {
		return "", fmt.Errorf("%w: workspace %q: %s", ErrBadRequest, path, fmt.Sprintf(format, args...))
	}
	if !filepath.IsAbs(path) {
		return bad("must be an absolute path")
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return bad("%v", unwrapPath(err))
	}
	st, err := os.Stat(real)
	if err != nil {
		return bad("%v", unwrapPath(err))
	}
	if !st.IsDir() {
		return bad("not a directory")
	}
	if real == "/" {
		return bad("the root directory cannot be a workspace")
	}
	if m := st.Mode(); m&os.ModeSticky != 0 && m.Perm()&0o002 != 0 {
		// /tmp, /dev/shm: every user writes there, so anyone could plant
		// what the agent reads (AGENTS.md) or the sandbox pins.
		return bad("a directory every user may write in (sticky, like /tmp) cannot be a workspace; use a directory of your own")
	}
	for _, own := range []string{d.dataDir, d.runDir} {
		if r, err := filepath.EvalSymlinks(own); err == nil && (within(real, r) || within(r, real)) {
			return bad("holds or is inside harnessd's own data (%s)", own)
		}
	}
	if who == nil {
		return bad("the requester is unknown")
	}
	if home := homeOf(who.UID); home != "" && (within(home, real) || inHidden(real, home)) {
		// Files there (.bashrc, .gitconfig, .ssh/config, .config/…)
		// are run by the user's own shell and tools on the host: an
		// agent writing them would run code outside the sandbox.
		return bad("is, holds or is a hidden directory of uid %d's home directory (%s), whose files run code on the host; use a project directory", who.UID, home)
	}
	if err := writable(real, who); err != nil {
		return bad("uid %d %v", who.UID, err)
	}
	return real, nil
}

// homeOf is uid's home directory, symlinks resolved; "" when it has none
// that can be found.
func homeOf(uid int) string {
	u, err := user.LookupId(strconv.Itoa(uid))
	if err != nil || u.HomeDir == "" || u.HomeDir == "/" || !filepath.IsAbs(u.HomeDir) {
		return ""
	}
	if real, err := filepath.EvalSymlinks(u.HomeDir); err == nil {
		return real
	}
	return filepath.Clean(u.HomeDir)
}

// inHidden reports whether path is in a hidden entry of home (~/.config,
// ~/.ssh), where tools look for their configuration.
func inHidden(path, home string) bool {
	rest, ok := strings.CutPrefix(path, strings.TrimSuffix(home, "/")+"/")
	return ok && strings.HasPrefix(rest, ".")
}

// within reports whether path is dir or below it.
func within(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, strings.TrimSuffix(dir, "/")+"/")
}

// writable checks, from the mode bits, that who may reach dir (search
// permission on every directory above it) and write in it. ACLs are not
// consulted: a directory only an ACL opens is refused.
func writable(dir string, who *Requester) error {
	return permitted(dir, who, 0o3, "write")
}

// permitted checks, from the mode bits, that who may reach dir and has
// the permission bits (rwx as 4, 2, 1) on it; what names them in the
// error.
func permitted(dir string, who *Requester, bits os.FileMode, what string) error {
	if who.UID == 0 {
		return nil
	}
	groups := append([]int{who.GID}, who.Groups...)
	can := func(p string, bits os.FileMode) (bool, error) {
		st, err := os.Stat(p)
		if err != nil {
			return false, err
		}
		sys := st.Sys().(*syscall.Stat_t)
		mode := st.Mode().Perm()
		switch {
		case int(sys.Uid) == who.UID:
			return mode&(bits<<6) == bits<<6, nil
		case slices.Contains(groups, int(sys.Gid)):
			return mode&(bits<<3) == bits<<3, nil
		}
		return mode&bits == bits, nil
	}
	for p := filepath.Dir(dir); ; p = filepath.Dir(p) {
		ok, err := can(p, 0o1)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("may not reach it (no search permission on %s)", p)
		}
		if p == "/" {
			break
		}
	}
	ok, err := can(dir, bits)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("may not %s it", what)
	}
	return nil
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// ownWorkspace reports whether ws is a workspace the daemon made (and may
// remove), rather than a client's directory.
func (d *Daemon) ownWorkspace(ws string) bool {
	return within(ws, filepath.Join(d.dataDir, "workspaces")) || within(ws, d.runDir)
}

// owner is the sandbox owner of a session on a client's directory: the
// requester, so that what the agent writes there is theirs.
func owner(who *Requester) *sandbox.User {
	if who == nil || who.UID == 0 {
		return nil
	}
	return &sandbox.User{UID: who.UID, GID: who.GID}
}

// GitSource is a session workspace made from a repository on the host: a
// fresh clone of Repo, Ref checked out, in the daemon's own workspace
// directory (removed with the session's workspace, on purge).
type GitSource struct {
	// Repo is a host directory holding a git repository (a work tree with
	// .git, or a bare repository); the requester must be able to read it.
	Repo string `json:"repo"`
	// Ref is a branch, tag or commit; empty means the repository's HEAD.
	// A branch is checked out as a local branch of the same name, a tag
	// or commit detached.
	Ref string `json:"ref,omitempty"`
}

// gitClone is a checked git source (see GitSource), ready to be cloned
// into a session's workspace by into. close removes what it holds.
//
// The clone is made in the workspace once its sandbox exists: with a disk
// (sandbox.disk_mb, as root), in that filesystem, so the quota bounds the
// clone as it bounds the agent, and a repository too big for it is
// refused, saying so; and within sandbox.clone_timeout, past which git is
// killed (its process group: upload-pack too) and what it wrote removed.
// The files belong to the sandbox's user (own, or the driver's default),
// as a fresh workspace's do.
//
// Why a clone and not `git worktree add`: a worktree's .git is a file
// pointing into the user's repository, and git inside would read and
// write that repository's config, hooks and refs (commondir). Bound into
// the sandbox, the agent could plant a hook or a core.fsmonitor that the
// user's own git then runs; not bound, git would not work inside at all.
// A clone is a repository of its own: the sandbox pins its control files
// like any workspace's, and nothing in it is read by the user's git.
//
// Why --no-local: a local clone copies or hardlinks .git/objects as
// files. A hardlink shares the inode with the user's repository (our
// chown would change their files' owner, and the sandbox could write
// objects the user's git reads), and a copy made by the daemon (root)
// follows whatever is in objects/, which the user controls
// (CVE-2022-39253). --no-local goes through the pack protocol: only
// objects reachable from refs, written by the daemon's git.
//
// Before it, checkGitDir refuses a source whose .git holds a symbolic
// link git would follow (a ref, a pack) or borrows objects
// (objects/info/alternates): upload-pack would serve what they lead to,
// another repository of the user's, to the new session's agent.
//
// For a client that is not root, upload-pack (the only process that reads
// the source) runs as the client (uploadPackAs). Otherwise the daemon's
// git runs with no system or global config but a safe entry for the
// source (so root's git does not refuse a repository the
// client owns, and so no filter, hook or fsmonitor of the host's config
// applies), no template (no hooks copied into the clone), hooks and
// fsmonitor off on the command line, no terminal prompt, and no
// submodules: nothing the source or the sandbox writes can make the host
// run code. Only upload-pack reads the source's own config, and it is
// made for untrusted repositories.
type gitClone struct {
	d       *Daemon
	src     GitSource
	repo    string        // the source's real path
	who     *Requester    // who asked: upload-pack runs as them
	own     *sandbox.User // whose the clone's files become
	tmp     string        // holds cfgFile, outside the workspace
	cfgFile string        // the global git config: the source's safe entries
	timeout time.Duration
	diskMB  int
}

// checkGitSource checks src for who (see GitSource) and prepares its
// clone for session id. The caller closes it.
func (d *Daemon) checkGitSource(id string, src GitSource, who *Requester, own *sandbox.User) (*gitClone, error) {
	bad := func(format string, args ...any) (*gitClone, error) {
		return nil, fmt.Errorf("%w: git repo %q: %s", ErrBadRequest, src.Repo, fmt.Sprintf(format, args...))
	}
	if !filepath.IsAbs(src.Repo) {
		return bad("must be an absolute path")
	}
	if err := checkRef(src.Ref); err != nil {
		return nil, fmt.Errorf("%w: git ref %q: %v", ErrBadRequest, src.Ref, err)
	}
	repo, err := filepath.EvalSymlinks(src.Repo)
	if err != nil {
		return bad("%v", unwrapPath(err))
	}
	for _, own := range []string{d.dataDir, d.runDir} {
		if r, err := filepath.EvalSymlinks(own); err == nil && (within(repo, r) || within(r, repo)) {
			return bad("holds or is inside harnessd's own data (%s)", own)
		}
	}
	gitDir := repo
	if st, err := os.Stat(filepath.Join(repo, ".git")); err == nil && st.IsDir() {
		gitDir = filepath.Join(repo, ".git")
	} else if err == nil {
		// A .git file: a worktree or a submodule, whose repository is
		// elsewhere; the clone would read a directory we did not check.
		return bad("is a linked worktree or submodule (.git is a file); name the main repository")
	}
	if who == nil {
		return bad("the requester is unknown")
	}
	// The daemon reads the repository as root: it must be one the client
	// could read itself, or a clone would hand them someone else's code.
	for _, dir := range []string{repo, gitDir} {
		if err := readable(dir, who); err != nil {
			return bad("uid %d %v", who.UID, err)
		}
	}
	if err := checkGitDir(gitDir); err != nil {
		return bad("%v", err)
	}
	parent := filepath.Join(d.dataDir, "workspaces")
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return nil, fmt.Errorf("daemon: git workspace: %w", err)
	}
	tmp, err := os.MkdirTemp(parent, "."+id+".clone-")
	if err != nil {
		return nil, fmt.Errorf("daemon: git workspace: %w", err)
	}
	// The global config is ours: only the safe entries for the source.
	c := &gitClone{d: d, src: src, repo: repo, who: who, own: own, tmp: tmp, cfgFile: filepath.Join(tmp, ".gitconfig"),
		timeout: d.conf().Sandbox.CloneTimeout.Duration, diskMB: d.conf().Sandbox.DiskMB}
	safe := fmt.Sprintf("[safe]\n\tdirectory = %s\n\tdirectory = %s\n", gitQuote(repo), gitQuote(gitDir))
	if err := os.WriteFile(c.cfgFile, []byte(safe), 0o600); err != nil {
		c.close()
		return nil, fmt.Errorf("daemon: git workspace: %w", err)
	}
	return c, nil
}

// close removes the clone's temporary directory.
func (c *gitClone) close() { os.RemoveAll(c.tmp) }

// into clones the source into ws, an empty directory (the workspace, its
// disk mounted there if it has one), and checks out the ref. On any
// failure it empties ws again.
func (c *gitClone) into(ctx context.Context, ws string) (err error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: git repo %q: %s", ErrBadRequest, c.src.Repo, fmt.Sprintf(format, args...))
	}
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	defer func() {
		if err != nil {
			if rerr := emptyDir(ws); rerr != nil {
				c.d.log.Warn("a failed clone's files are left", "workspace", ws, "err", rerr)
			}
		}
	}()
	// What went wrong, said for the client: the clock, the disk, or git.
	failed := func(what, out string) error {
		switch {
		case errors.Is(ctx.Err(), context.DeadlineExceeded):
			return bad("%s took longer than sandbox.clone_timeout (%s): stopped, and what it wrote removed", what, c.timeout)
		case ctx.Err() != nil:
			return fmt.Errorf("daemon: git workspace: %s: %w", what, context.Cause(ctx))
		case strings.Contains(out, "No space left on device") || full(ws):
			return bad("does not fit in the workspace's disk of %d MiB (sandbox.disk_mb): %s", c.diskMB, out)
		}
		return bad("%s: %s", what, out)
	}
	// The workspace is the sandbox's user's already (its disk's root
	// is), and root's git refuses a repository another user owns: it is
	// safe, as no shell has run in it yet; what is in it is this clone.
	f, err := os.OpenFile(c.cfgFile, os.O_WRONLY|os.O_APPEND, 0)
	if err == nil {
		_, err = fmt.Fprintf(f, "\tdirectory = %s\n", gitQuote(ws))
		err = errors.Join(err, f.Close())
	}
	if err != nil {
		return fmt.Errorf("daemon: git workspace: %w", err)
	}
	git := func(dir string, args ...string) (string, error) {
		return runGit(ctx, dir, c.cfgFile, args...)
	}
	clone := []string{"clone", "--quiet", "--no-local", "--no-checkout", "--template="}
	if c.who.UID != 0 {
		// What reads the source is upload-pack, and it reads it as the
		// client: the mode bits above are a first answer, but objects/
		// may be a symlink and objects/info/alternates may name another
		// user's repository, from which the daemon's root would serve any
		// commit a ref names. Without safe.directory: a repository the
		// client does not own is refused, as the client's own git would.
		up, err := uploadPackAs(c.who)
		if err != nil {
			return err
		}
		clone = append(clone, "--upload-pack="+up)
	}
	if out, err := git(c.tmp, append(clone, "--", c.repo, ws)...); err != nil {
		return failed("git clone", out)
	}
	// Which commit Ref names, in the clone: a branch of the source is a
	// remote-tracking branch here, a tag or commit resolves as it is.
	var checkout []string
	switch ref := c.src.Ref; {
	case ref == "":
		if _, err := git(ws, "rev-parse", "--quiet", "--verify", "HEAD^{commit}"); err != nil {
			return bad("has no commits")
		}
		checkout = []string{"checkout", "--quiet", "--force"}
	case gitOK(git(ws, "rev-parse", "--quiet", "--verify", "refs/heads/"+ref)):
		checkout = []string{"checkout", "--quiet", "--force", ref, "--"}
	case gitOK(git(ws, "rev-parse", "--quiet", "--verify", "refs/remotes/origin/"+ref)):
		checkout = []string{"checkout", "--quiet", "--force", "-b", ref, "--track", "origin/" + ref, "--"}
	default:
		sha, err := git(ws, "rev-parse", "--quiet", "--verify", "--end-of-options", ref+"^{commit}")
		if err != nil {
			return fmt.Errorf("%w: git ref %q: not a branch, tag or commit of %s", ErrBadRequest, ref, c.src.Repo)
		}
		checkout = []string{"checkout", "--quiet", "--force", "--detach", strings.TrimSpace(sha), "--"}
	}
	if out, err := git(ws, checkout...); err != nil {
		return failed("git checkout "+c.src.Ref, out)
	}
	if err := c.d.giveClone(ws, c.own); err != nil {
		return fmt.Errorf("daemon: git workspace: %w", err)
	}
	return nil
}

// full reports whether the filesystem of dir has no block left for an
// ordinary user (a clone that filled the workspace's disk).
func full(dir string) bool {
	var st unix.Statfs_t
	return unix.Statfs(dir, &st) == nil && st.Bavail == 0
}

// emptyDir removes everything in dir, and not dir: a workspace whose
// disk is mounted there, or whose directory a session holds.
func emptyDir(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range ents {
		errs = append(errs, os.RemoveAll(filepath.Join(dir, e.Name())))
	}
	return errors.Join(errs...)
}

// uploadPackAs is the upload-pack command (git runs it with sh -c, the
// repository's path quoted after it) that serves a clone as who: setpriv
// (util-linux) drops root for who's uid, gid and groups, and the global
// config is no one's.
func uploadPackAs(who *Requester) (string, error) {
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		return "", fmt.Errorf("daemon: git workspace: reading a repository as its client needs setpriv (util-linux): %w", err)
	}
	groups := "--clear-groups"
	if len(who.Groups) > 0 {
		ids := make([]string, len(who.Groups))
		for i, g := range who.Groups {
			ids[i] = strconv.Itoa(g)
		}
		groups = "--groups=" + strings.Join(ids, ",")
	}
	return fmt.Sprintf("env GIT_CONFIG_GLOBAL=/dev/null %s --reuid=%d --regid=%d %s -- git upload-pack", setpriv, who.UID, who.GID, groups), nil
}

// sweepClones removes the temporary directories of clones a dead daemon
// left half made (their sessions were never recorded).
func (d *Daemon) sweepClones() {
	left, _ := filepath.Glob(filepath.Join(d.dataDir, "workspaces", ".*.clone-*"))
	for _, dir := range left {
		if err := os.RemoveAll(dir); err != nil {
			d.log.Warn("a half-made clone is left", "dir", dir, "err", err)
		}
	}
}

// checkRef refuses a ref git could read as an option or that names
// nothing a checkout can use; git itself decides the rest.
func checkRef(ref string) error {
	switch {
	case strings.HasPrefix(ref, "-"):
		return errors.New("may not start with '-'")
	case strings.ContainsFunc(ref, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		return errors.New("may not hold spaces or control characters")
	case strings.Contains(ref, ":"):
		return errors.New("may not hold ':'")
	}
	return nil
}

func gitOK(_ string, err error) bool { return err == nil }

// gitQuote quotes a path for a git config file.
func gitQuote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// runGit runs the host's git with a built environment (see gitClone)
// and returns its combined output.
func runGit(ctx context.Context, dir, cfgFile string, args ...string) (string, error) {
	args = append([]string{
		"-c", "core.hooksPath=/dev/null",
		"-c", "core.fsmonitor=false",
		"-c", "protocol.allow=never",
		"-c", "protocol.file.allow=always",
		"-c", "submodule.recurse=false",
	}, args...)
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = []string{
		"PATH=/usr/local/bin:/usr/bin:/bin",
		"HOME=/nonexistent",
		"LC_ALL=C",
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=" + cfgFile,
		"GIT_TERMINAL_PROMPT=0",
		"GIT_ASKPASS=/bin/false",
		"GIT_PROTOCOL_FROM_USER=0",
	}
	// Its own process group, so a cancelled clone takes upload-pack with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		msg := strings.TrimSpace(string(out))
		if len(msg) > 500 {
			msg = msg[:500] + "…"
		}
		if msg == "" {
			msg = err.Error()
		}
		return msg, fmt.Errorf("git: %w", err)
	}
	return string(out), nil
}

// giveClone makes a clone's files the sandbox user's, as a fresh
// workspace is (sandbox.Native hands over only an empty one, and the
// root of its disk). The ids
// are those the native driver maps the sandbox's root to: the owner
// unless root, else sandbox.DefaultUID (the daemon sets no other); a
// daemon that is not root, or the none driver, runs the shell as itself.
func (d *Daemon) giveClone(ws string, own *sandbox.User) error {
	if err := os.Chmod(ws, 0o700); err != nil {
		return err
	}
	if os.Geteuid() != 0 || d.conf().Sandbox.Driver != config.DriverNative {
		return nil
	}
	uid, gid := sandbox.DefaultUID, sandbox.DefaultGID
	if own != nil && own.UID > 0 {
		uid, gid = own.UID, own.GID
	}
	return filepath.WalkDir(ws, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
}

// readable checks, from the mode bits, that who may reach dir and list
// and read it, as writable does for a directory source.
func readable(dir string, who *Requester) error {
	return permitted(dir, who, 0o5, "read")
}
