package sandbox

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// The in-progress rule. Git keeps an operation in progress in the
// repository's git directory, and what its --continue, --skip or the
// next commit does comes from files there: a rebase's to-do list (exec
// lines are shell commands), its merge strategy and options (a strategy
// is a program, git-merge-NAME; the resolve strategy's options reach
// git read-tree unquoted), git am's apply options (rebase-apply/apply-opt:
// --build-fake-ancestor=PATH writes any file), a cherry-pick's options
// (sequencer/opts), rerere's pending list (MERGE_RR names the files a
// commit copies into rr-cache, any path); and, not operations but read
// alike, the old remote definitions (remotes/NAME, branches/NAME), which
// git takes for any remote its config does not name, origin too: a
// plain push or fetch would go where the agent wrote. In a repository of the user's
// the agent may run all of these (the directory is writable, as they
// need), so it can also leave one in progress that does its work as the
// user once they continue it on the host. No mount can tell the agent's
// writes of those files from its git's, no permission the user's own git
// does not also have can keep it from reading them, and checking them
// one by one misses the next option git adds (two red teams found six
// ways): so the rule acts on the whole of each, once nothing in the
// sandbox can write any more. When the session ends (and when a daemon
// that died is swept after), in the git directories of the user's
// repositories (theirs, their worktrees' and submodules'), each of
// stateNames that is not exactly as it was when the first shell of the
// first live session over the repository started (the base: one for
// all the sessions over it at once, so a second session does not take
// the first's work for the user's) is renamed aside to
// NAME.sandbox-RANDOM, which needs no space: git then sees no such
// operation in progress and runs nothing of it; the user can look at it,
// and rename it back to go on. A rebase the agent finished or aborted
// leaves nothing behind, and one of the user's that the session did not
// touch stays. While the session runs, the user's git would still act on
// what the agent wrote: the README says not to continue an operation in
// a directory a session is working in.

// stateNames are the entries of a git directory that hold an operation
// in progress, or what the next one does (see above).
var stateNames = []string{"rebase-merge", "rebase-apply", "sequencer", "MERGE_RR", "remotes", "branches",
	// A bisect: git bisect reset checks out what BISECT_START names,
	// unquoted (an option), and the rest say a bisect is in progress.
	"BISECT_START", "BISECT_LOG", "BISECT_TERMS", "BISECT_NAMES", "BISECT_EXPECTED_REV", "BISECT_ANCESTORS_OK",
	"BISECT_RUN", "BISECT_FIRST_PARENT", "BISECT_HEAD",
	// git instaweb's web server (found in gitweb/ where none is
	// installed), its config (include_shell), gitweb's Perl config, and
	// the pid its --stop kills.
	"gitweb", "pid",
	// A merge's autostash, which the next commit applies.
	"MERGE_AUTOSTASH"}

// Bounds of a state's fingerprint: one bigger (a git am of thousands of
// patches) is never taken for unchanged.
const (
	maxStateBytes   = 64 << 20
	maxStateEntries = 100000
)

// unknownState is the fingerprint of a state past the bounds, or
// unreadable.
const unknownState = "unknown"

// stateBase is what the rule compares a repository's state with at the
// end: the fingerprint of each of stateNames present in its git
// directories when the first shell started (the user's own), keyed by
// path beneath the repository's git directory.
type stateBase struct {
	States map[string]string `json:",omitempty"`
}

// stateDirs are the git directory gitdir (relative to the directory ws)
// and those of its linked worktrees and submodules (worktrees/*,
// modules/**: git directories of their own), relative to ws.
func stateDirs(ws int, gitdir string) []string {
	var dirs []string
	var walk func(dir string, depth int, module bool)
	seen := 0
	walk = func(dir string, depth int, module bool) {
		if seen++; seen > 1000 || depth > 8 {
			return
		}
		dirs = append(dirs, dir)
		for _, sub := range []string{"worktrees", "modules"} {
			for _, name := range dirNames(ws, path.Join(dir, sub)) {
				walk(path.Join(dir, sub, name), depth+1, sub == "modules")
			}
		}
		if module {
			// A submodule named a/b has its git directory at modules/a/b.
			for _, name := range dirNames(ws, dir) {
				switch name {
				case "objects", "refs", "logs", "hooks", "info", "rebase-merge", "rebase-apply", "sequencer", "worktrees", "modules", "lfs":
					continue
				}
				walk(path.Join(dir, name), depth+1, true)
			}
		}
	}
	walk(path.Clean(gitdir), 0, false)
	return dirs
}

// dirNames are the names of the directories in rel beneath ws (none if
// it is missing or a symlink on the way), at most 1000.
func dirNames(ws int, rel string) []string {
	fd, err := openBeneath(ws, rel)
	if err != nil {
		return nil
	}
	defer unix.Close(fd)
	var names []string
	eachName(fd, func(name string) bool {
		var st unix.Stat_t
		if unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
			names = append(names, name)
		}
		return len(names) < 1000
	})
	return names
}

// eachName calls fn with each name in the directory fd (O_PATH), in the
// directory's order, until fn returns false; the error is the reading's.
func eachName(fd int, fn func(name string) bool) error {
	dir, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(dir)
	buf := make([]byte, 64<<10)
	var batch []string
	for {
		n, err := unix.ReadDirent(dir, buf)
		if err != nil || n == 0 {
			return err
		}
		_, _, batch = unix.ParseDirent(buf[:n], -1, batch[:0])
		for _, name := range batch {
			if !fn(name) {
				return nil
			}
		}
	}
}

// fingerprint is a digest of name in dir (a state: a file, or a
// directory and everything beneath it: names, types, modes and
// contents, no link followed), "" if it is missing, or unknownState.
func fingerprint(dir int, name string) string {
	var st unix.Stat_t
	if err := unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if err == unix.ENOENT {
			return ""
		}
		return unknownState
	}
	h := sha256.New()
	bytes, entries := 0, 0
	var walk func(dir int, name string, st *unix.Stat_t) bool
	walk = func(dir int, name string, st *unix.Stat_t) bool {
		if entries++; entries > maxStateEntries {
			return false
		}
		fmt.Fprintf(h, "%q %o %d\n", name, st.Mode, st.Size)
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFREG:
			if bytes += int(st.Size); bytes > maxStateBytes {
				return false
			}
			text, err := readBeneath(dir, name, maxStateBytes)
			if err != nil {
				return false
			}
			fmt.Fprintf(h, "%d:%s\n", len(text), text)
		case unix.S_IFLNK:
			buf := make([]byte, 4096)
			n, err := unix.Readlinkat(dir, name, buf)
			if err != nil {
				return false
			}
			fmt.Fprintf(h, "-> %q\n", buf[:n])
		case unix.S_IFDIR:
			sub, err := openBeneath(dir, name)
			if err != nil {
				return false
			}
			defer unix.Close(sub)
			names, ok := allNames(sub)
			if !ok {
				return false
			}
			for _, n := range names {
				var cst unix.Stat_t
				if unix.Fstatat(sub, n, &cst, unix.AT_SYMLINK_NOFOLLOW) != nil || !walk(sub, n, &cst) {
					return false
				}
			}
			fmt.Fprintf(h, "end %q\n", name)
		}
		return true
	}
	if !walk(dir, name, &st) {
		return unknownState
	}
	return hex.EncodeToString(h.Sum(nil))
}

// allNames are the names in the directory fd (O_PATH), sorted; ok is
// false past maxStateEntries.
func allNames(fd int) ([]string, bool) {
	var names []string
	if err := eachName(fd, func(name string) bool {
		names = append(names, name)
		return len(names) <= maxStateEntries
	}); err != nil || len(names) > maxStateEntries {
		return nil, false
	}
	slices.Sort(names)
	return names, true
}

// eachGitDir calls fn with each git directory of the repository whose
// git directory is gitdir beneath ws (stateDirs): open (dir), its path
// beneath ws (d), and beneath gitdir (rel: the prefix of its keys in a
// base).
func eachGitDir(ws int, gitdir string, fn func(dir int, d, rel string)) {
	gitdir = path.Clean(gitdir)
	for _, d := range stateDirs(ws, gitdir) {
		dir, err := openBeneath(ws, d)
		if err != nil {
			continue
		}
		fn(dir, d, strings.TrimPrefix(strings.TrimPrefix(d, gitdir), "/"))
		unix.Close(dir)
	}
}

// readBase reads the base of the repository whose git directory is
// gitdir beneath ws.
func readBase(ws int, gitdir string) stateBase {
	b := stateBase{States: map[string]string{}}
	eachGitDir(ws, gitdir, func(dir int, _, rel string) {
		for _, name := range stateNames {
			if fp := fingerprint(dir, name); fp != "" {
				b.States[path.Join(rel, name)] = fp
			}
		}
	})
	return b
}

// sharedBases are the bases of the repositories some live guard holds,
// by git directory: a guard that starts while another's session works
// in the same repository takes that one's, not what the other's agent
// left (which it would then keep as the user's).
var sharedBases = struct {
	sync.Mutex
	m map[devIno]*sharedBase
}{m: map[devIno]*sharedBase{}}

type sharedBase struct {
	refs int
	base stateBase
}

// takeBase is the base of the repository id, read (by read) only if no
// live guard holds it; releaseBase lets it go.
func takeBase(id devIno, read func() stateBase) stateBase {
	sharedBases.Lock()
	defer sharedBases.Unlock()
	if b := sharedBases.m[id]; b != nil {
		b.refs++
		return b.base
	}
	b := &sharedBase{refs: 1, base: read()}
	sharedBases.m[id] = b
	return b.base
}

func releaseBase(id devIno) {
	sharedBases.Lock()
	defer sharedBases.Unlock()
	if b := sharedBases.m[id]; b != nil {
		if b.refs--; b.refs <= 0 {
			delete(sharedBases.m, id)
		}
	}
}

// asideRepo applies the rule to one repository, whose git directory is
// gitdir beneath ws, against base, and the index rule (gitindex.go) to
// its indexes, in one pass over its git directories: what it did, for
// the log.
func asideRepo(ws int, gitdir string, base stateBase) []string {
	var did []string
	hashLen := 20
	if cfg, err := readBeneath(ws, path.Join(gitdir, "config"), 1<<20); err == nil {
		if l := strings.ToLower(cfg); strings.Contains(l, "objectformat") && strings.Contains(l, "sha256") {
			hashLen = 32
		}
	}
	eachGitDir(ws, gitdir, func(dir int, d, rel string) {
		for _, name := range stateNames {
			fp := fingerprint(dir, name)
			if fp == "" || fp != unknownState && fp == base.States[path.Join(rel, name)] {
				continue // none, or the user's own, untouched
			}
			did = append(did, path.Join(d, name)+": "+moveAside(dir, name))
		}
		for _, name := range indexNames(dir) {
			if why := indexWrong(dir, name, hashLen); why != "" {
				did = append(did, path.Join(d, name)+": "+why+"; "+moveAside(dir, name))
			}
		}
	})
	return did
}

// indexNames are the indexes of the git directory dir: its index, and
// every sharedindex.* (a split index's shared part), found by reading
// the whole directory, however many names the agent put beside them.
func indexNames(dir int) []string {
	names := []string{"index"}
	eachName(dir, func(name string) bool {
		if strings.HasPrefix(name, "sharedindex.") {
			names = append(names, name)
		}
		return true
	})
	return names
}

// maxLinkWalk bounds the entries linksAside looks at in one repository.
// Its directory reads give each entry's type, so only links cost a stat:
// two million entries are some seconds at the session's end. (A
// variable for tests.)
var maxLinkWalk = 2_000_000

// linksAside removes the symbolic links made, or moved, since (the
// guard's start) in the git directories of the repository whose git
// directory is gitdir beneath ws. Git makes none there, and the user's
// git writes through any it finds (COMMIT_EDITMSG, logs/HEAD, a ref:
// to ~/.bashrc). Where the init's rule holds, the agent could make none
// (Rule.GitMounts); where only the kernel's, or no rule, does, this is
// what keeps the user's next commit from writing through the agent's
// link once the session is over. A link's change time is the kernel's:
// nothing in the sandbox can set it back (a rename or link sets it).
// The entries git writes are looked at first; past maxLinkWalk entries
// it stops, and says so. It returns what it did, for the log, and
// whether it looked at every entry (whole): a repository it did not is
// not given back (gitlend_linux.go).
func linksAside(ws int, gitdir string, since time.Time) (did []string, whole bool) {
	budget := maxLinkWalk
	eachGitDir(ws, gitdir, func(dir int, d, _ string) {
		walkGitDir(dir, d, 0, &budget, func(parent int, name, where string) {
			var st unix.Stat_t
			if unix.Fstatat(parent, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil || st.Mode&unix.S_IFMT != unix.S_IFLNK ||
				time.Unix(st.Ctim.Unix()).Before(since) {
				return
			}
			buf := make([]byte, 4096)
			n, _ := unix.Readlinkat(parent, name, buf)
			if err := unix.Unlinkat(parent, name, 0); err != nil {
				did = append(did, fmt.Sprintf("%s -> %s: made in the sandbox, and could not be removed: %v", where, buf[:max(n, 0)], err))
				return
			}
			did = append(did, fmt.Sprintf("%s -> %s: a symbolic link made in the sandbox: removed", where, buf[:max(n, 0)]))
		})
	})
	if budget < 0 {
		did = append(did, fmt.Sprintf("%s: more than %d entries in its git directories; those past them were not looked at for symbolic links (find %s -type l)", gitdir, maxLinkWalk, gitdir))
	}
	return did, budget >= 0
}

// gitWrites are the entries of a git directory git writes, or writes
// beneath: looked at before any other.
var gitWrites = map[string]bool{"HEAD": true, "ORIG_HEAD": true, "FETCH_HEAD": true, "MERGE_HEAD": true, "MERGE_MSG": true,
	"MERGE_MODE": true, "SQUASH_MSG": true, "CHERRY_PICK_HEAD": true, "REVERT_HEAD": true, "COMMIT_EDITMSG": true,
	"TAG_EDITMSG": true, "AUTO_MERGE": true, "index": true, "packed-refs": true, "config": true, "description": true,
	"shallow": true, "logs": true, "refs": true, "info": true, "hooks": true, "objects": true}

// gitDirs are directories git writes beneath refs/ and logs/.
var gitDirs = map[string]bool{"heads": true, "tags": true, "remotes": true, "notes": true, "stash": true, "pack": true}

// walkGitDir calls fn with each symbolic link beneath the git directory
// dir (at d beneath the workspace), but in its worktrees' and
// submodules' git directories (eachGitDir visits those), until budget
// runs out.
func walkGitDir(dir int, d string, depth int, budget *int, fn func(parent int, name, where string)) {
	fd, err := unix.Openat(dir, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	f := os.NewFile(uintptr(fd), d)
	defer f.Close()
	ents, _ := f.ReadDir(-1)
	// In every directory, its links (those of git's names first), then
	// its files, then its directories, git's own before others: what the
	// agent fills cannot keep the walk from a link git writes through
	// (logs/HEAD), short of two million links.
	rank := func(e os.DirEntry) int {
		git := gitWrites[e.Name()] || gitDirs[e.Name()]
		switch {
		case e.Type()&os.ModeSymlink != 0 && git:
			return 0
		case e.Type()&os.ModeSymlink != 0:
			return 1
		case !e.IsDir():
			return 2
		case git:
			return 3
		}
		return 4
	}
	slices.SortStableFunc(ents, func(a, b os.DirEntry) int { return rank(a) - rank(b) })
	for _, e := range ents {
		if *budget--; *budget < 0 {
			return
		}
		name, where := e.Name(), path.Join(d, e.Name())
		t := e.Type()
		if t&os.ModeType == os.ModeIrregular { // the file system gave no type
			var st unix.Stat_t
			if unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
				continue
			}
			t = map[uint32]os.FileMode{unix.S_IFLNK: os.ModeSymlink, unix.S_IFDIR: os.ModeDir}[st.Mode&unix.S_IFMT]
		}
		switch {
		case t&os.ModeSymlink != 0:
			fn(fd, name, where)
		case t&os.ModeDir != 0 && !(depth == 0 && (name == "worktrees" || name == "modules")):
			sub, err := unix.Openat(fd, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != nil {
				continue
			}
			walkGitDir(sub, where, depth+1, budget, fn)
			unix.Close(sub)
		}
	}
}

// maxIndex bounds an index the rule reads: a repository of some two
// million files. A bigger one is moved aside unread.
const maxIndex = 256 << 20

// indexWrong says why the index name in dir must go, or "" (having
// dropped what git derives from its entries).
func indexWrong(dir int, name string, hashLen int) string {
	var st unix.Stat_t
	if unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return ""
	}
	switch {
	case st.Mode&unix.S_IFMT == unix.S_IFLNK:
		return "a symbolic link"
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return ""
	case st.Size > maxIndex:
		return fmt.Sprintf("too big to check (%d bytes)", st.Size)
	}
	text, err := readBeneath(dir, name, maxIndex)
	if err != nil {
		return fmt.Sprintf("unreadable (%v)", err)
	}
	data := []byte(text)
	var starts []int
	bad, entries, err := indexEntries(data, hashLen, &starts)
	switch {
	case err != nil:
		return "not an index git reads"
	case bad != "":
		return fmt.Sprintf("an entry git would not make (or hands a tool as an option), %q", bad)
	}
	if strings.HasPrefix(name, "sharedindex.") {
		// A split index's shared part is named by its checksum, which
		// a rewrite would change: it stays as it is, if git would read
		// the same entries from it block by block.
		if !ieotMatches(data, entries, hashLen, starts) {
			return "its entry offset table reads other entries"
		}
		return ""
	}
	// What git derives from the entries goes, for git to make again
	// from them (derivedExtensions): in any index, since none of the
	// user's is told from the agent's.
	out, dropped, err := indexWithoutDerived(data, entries, hashLen)
	if err != nil {
		return "not an index git reads"
	}
	if len(dropped) > 0 {
		if err := replaceFile(dir, name, out, &st); err != nil {
			return fmt.Sprintf("its %s could not be dropped (%v)", strings.Join(dropped, ", "), err)
		}
	}
	return ""
}

// replaceFile replaces the regular file name in dir with data, keeping
// its owner and mode: a new file beside it, renamed over it.
func replaceFile(dir int, name string, data []byte, st *unix.Stat_t) error {
	tmp := name + ".sandbox-" + randomSuffix()
	fd, err := unix.Openat(dir, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, st.Mode&0o777)
	if err != nil {
		return os.NewSyscallError("open", err)
	}
	f := os.NewFile(uintptr(fd), tmp)
	_, err = f.Write(data)
	if err == nil {
		err = f.Chown(int(st.Uid), int(st.Gid))
	}
	if err == nil {
		err = f.Chmod(os.FileMode(st.Mode & 0o777))
	}
	if err == nil {
		err = f.Sync()
	}
	err = errors.Join(err, f.Close())
	if err == nil {
		err = unix.Renameat(dir, tmp, dir, name)
	}
	if err != nil {
		unix.Unlinkat(dir, tmp, 0)
	}
	return err
}

// moveAside renames the state name of the git directory dir to a name of
// its own, which needs no space: git then sees no such operation in
// progress, and runs nothing of it.
func moveAside(dir int, name string) string {
	aside := name + ".sandbox-" + randomSuffix()
	if err := unix.Renameat2(dir, name, dir, aside, unix.RENAME_NOREPLACE); err != nil {
		return fmt.Sprintf("written in the sandbox, and could not be moved aside: %v", err)
	}
	return "written in the sandbox: moved aside to " + aside + " (git runs nothing of it; rename it back to go on)"
}

// randomSuffix is a name part nothing in the sandbox could have guessed.
func randomSuffix() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
