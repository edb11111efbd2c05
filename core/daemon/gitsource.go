package daemon

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// maxGitCheck bounds checkGitDir's walk: a repository with more entries
// in its .git than this (loose objects, mostly) is refused, not half
// checked. `git gc` packs them.
const maxGitCheck = 1 << 20

// errTooBig ends checkGitDir's walk at maxGitCheck.
var errTooBig = errors.New("too many entries")

// checkGitDir refuses a source repository whose git directory would make
// a --git clone read outside it. upload-pack reads what it finds there
// and follows symbolic links (a ref, a pack, a loose object, packed-refs
// that is a link to another repository's), and it serves the objects of
// every repository objects/info/alternates names: an agent that worked
// in a directory of the user's could leave either, and the next session
// cloned from it would be handed another of the user's repositories.
// The repository's own logs, hooks, worktrees and modules are not
// walked: upload-pack reads none of them. A symlink git itself takes as
// a symbolic ref (a target in refs/, as old gits wrote HEAD) is not
// followed, and allowed. A commondir (a linked worktree's gitdir, whose
// refs and objects are elsewhere) is refused too, but for "." (itself).
//
// This is a check before the clone, not a lock: an agent of a session
// still working in the source could plant a link after it (where the
// sandbox's init enforces the git rule, it can make no symlink there at
// all; see README).
func checkGitDir(gitDir string) error {
	n := 0
	var found error
	err := filepath.WalkDir(gitDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // gone while we walked: git's own doing
			}
			return err
		}
		if n++; n > maxGitCheck {
			return errTooBig
		}
		rel, _ := filepath.Rel(gitDir, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			switch rel {
			case "logs", "hooks", "worktrees", "modules":
				return fs.SkipDir
			}
			return nil
		}
		if d.Type()&fs.ModeSymlink == 0 {
			return nil
		}
		to, err := os.Readlink(p)
		if err != nil {
			return err
		}
		if symref(rel, to) {
			return nil
		}
		found = fmt.Errorf("holds a symbolic link, .git/%s -> %s: a --git clone reads no link in a repository (git would follow it out of it); remove it, or clone from another copy (an agent's session over this directory may have left it: see the README)", rel, to)
		return fs.SkipAll
	})
	if found != nil {
		return found
	}
	if errors.Is(err, errTooBig) {
		return fmt.Errorf("has more than %d entries in its git directory to check: pack them first (git gc)", maxGitCheck)
	}
	if err != nil {
		return fmt.Errorf("cannot check its git directory: %v", unwrapPath(err))
	}
	// A commondir makes this a linked worktree's gitdir: git reads the
	// refs and objects of the directory it names, wherever that is.
	// One that names the git directory itself ("."), as the sandbox's
	// pin of a missing commondir leaves in a repository of the user's
	// (rootfs_linux.go), names no other: git trims only line ends.
	if b, err := os.ReadFile(filepath.Join(gitDir, "commondir")); err == nil && strings.TrimRight(string(b), "\r\n") != "." {
		return fmt.Errorf("reads its refs and objects from %s (.git/commondir): a linked worktree's git directory, not a repository; name the main repository (an agent's session may have left the file: see the README)", strings.TrimSpace(string(b)))
	}
	for _, name := range []string{"alternates", "http-alternates"} {
		if from := borrowed(filepath.Join(gitDir, "objects", "info", name)); from != "" {
			return fmt.Errorf("borrows objects from %s (.git/objects/info/%s): a --git clone reads only the repository's own objects; make them its own first (git repack -a -d, then remove that file)", from, name)
		}
	}
	return nil
}

// symref reports whether the symlink rel in a git directory, pointing to
// to, is one git reads as a symbolic ref rather than following it: HEAD
// or a ref whose target is a ref name.
func symref(rel, to string) bool {
	if rel != "HEAD" && !strings.HasPrefix(rel, "refs/") {
		return false
	}
	return strings.HasPrefix(to, "refs/") && path.Clean(to) == to && !strings.Contains(to, "..")
}

// borrowed is the first object directory an alternates file names, or ""
// if it names none (missing, empty, or only comments).
func borrowed(file string) string {
	f, err := os.Open(file)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" && !strings.HasPrefix(line, "#") {
			return line
		}
	}
	if sc.Err() != nil {
		return file // unreadable past a point: say so rather than clone
	}
	return ""
}
