package daemon

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

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
	for _, own := range []string{d.dataDir, d.runDir} {
		if r, err := filepath.EvalSymlinks(own); err == nil && (within(real, r) || within(r, real)) {
			return bad("holds or is inside harnessd's own data (%s)", own)
		}
	}
	if who == nil {
		return bad("the requester is unknown")
	}
	if err := writable(real, who); err != nil {
		return bad("uid %d %v", who.UID, err)
	}
	return real, nil
}

// within reports whether path is dir or below it.
func within(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, strings.TrimSuffix(dir, "/")+"/")
}

// writable checks, from the mode bits, that who may reach dir (search
// permission on every directory above it) and write in it. ACLs are not
// consulted: a directory only an ACL opens is refused.
func writable(dir string, who *Requester) error {
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
	ok, err := can(dir, 0o3)
	if err != nil {
		return err
	}
	if !ok {
		return errors.New("may not write it")
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
