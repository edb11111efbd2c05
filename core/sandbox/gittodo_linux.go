package sandbox

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"path"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// The rebase to-do rule. An interactive rebase keeps its state in the
// repository's git directory (rebase-merge/), and the next command of
// `git rebase --continue` (or --skip) comes from rebase-merge/git-rebase-todo:
// an `exec` (or `x`) line there is a shell command git runs, and
// rebase-merge/strategy (or a cherry-pick's sequencer/opts, options.strategy)
// names a merge strategy git runs as the program git-merge-NAME (a path,
// where NAME has a slash). In a repository of the user's, the agent may
// rebase (the directory is writable, as a rebase needs), so it can also
// leave a rebase in progress that runs its command as the user once they
// continue it on the host. No mount can tell the agent's writes of those
// files from its git's, and no permission the user's own git does not
// also have can keep it from reading them: the rule acts once nothing in
// the sandbox can write any more. When the session ends (and when a
// daemon that died is swept after), in the git directories of the user's
// repositories (theirs, their worktrees' and submodules'), compared with
// what they held when the first shell of the first live session over
// them started (the base: one for all the sessions over a repository at
// once, so a second session does not take the first's lines for the
// user's): every exec line not in the base becomes a comment that says
// where it came from (git status shows it; `git rebase --edit-todo` can
// restore it); a strategy file naming no strategy git has built in, and
// sequencer options naming a strategy, are removed (git then merges as
// it would by default); a rebase-merge, sequencer, to-do list or either
// file that is a symbolic link (git never makes one; git on the host
// would follow it) is removed. It fails closed: a to-do list it cannot
// rewrite (a full disk, a name in the way) has the whole rebase-merge
// moved aside, which needs no space, or is removed. While the session
// runs, the user's git would still run what the agent wrote: the README
// says not to continue a rebase in a directory a session is working in.
// (sequencer/todo, a cherry-pick's or revert's, takes no exec line.)

// maxTodo bounds a file the rule reads: a rebase of a hundred thousand
// commits is some 6 MB of to-do list.
const maxTodo = 16 << 20

// todoHeader starts every exec line the rule disarms.
const todoHeader = "# harnessd: written in a sandbox, not run; remove this prefix to run it: "

// The files the rule reads, beneath a git directory.
const (
	todoFile     = "rebase-merge/git-rebase-todo"
	strategyFile = "rebase-merge/strategy"
	optsFile     = "sequencer/opts"
)

// builtinStrategies are the merge strategies git has in itself: another
// name is a program git looks for.
var builtinStrategies = map[string]bool{"ort": true, "recursive": true, "resolve": true, "octopus": true, "ours": true, "subtree": true}

// todoBase is what the rule compares a repository's state with at the
// end: what its git directories held when the first shell started (the
// user's own), keyed by path beneath the repository's git directory.
type todoBase struct {
	Execs map[string][]string `json:",omitempty"` // a to-do list's exec lines
	Files map[string]string   `json:",omitempty"` // a strategy file's or sequencer options' content
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
// it is missing or a symlink on the way).
func dirNames(ws int, rel string) []string {
	fd, err := openBeneath(ws, rel)
	if err != nil {
		return nil
	}
	defer unix.Close(fd)
	dir, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	defer unix.Close(dir)
	var names []string
	buf := make([]byte, 8192)
	for len(names) < 1000 {
		n, err := unix.ReadDirent(dir, buf)
		if err != nil || n == 0 {
			break
		}
		var ents []string
		_, _, ents = unix.ParseDirent(buf[:n], -1, ents)
		for _, e := range ents {
			var st unix.Stat_t
			if unix.Fstatat(dir, e, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
				names = append(names, e)
			}
		}
	}
	return names
}

// execLines are the exec lines of a to-do list, as git reads it: after
// blanks, `exec` or `x` and then a blank or the line's end.
func execLines(todo string) []string {
	var lines []string
	for _, line := range strings.Split(todo, "\n") {
		if isExec(line) {
			lines = append(lines, line)
		}
	}
	return lines
}

func isExec(line string) bool {
	s := strings.TrimLeft(line, " \t")
	for _, cmd := range []string{"exec", "x"} {
		if rest, ok := strings.CutPrefix(s, cmd); ok && (rest == "" || strings.ContainsRune(" \t\r", rune(rest[0]))) {
			return true
		}
	}
	return false
}

// disarm turns every exec line of todo not in keep (the lines there
// before, each as often as it was) into a comment, and reports how many.
func disarm(todo string, keep []string) (string, int) {
	left := map[string]int{}
	for _, l := range keep {
		left[l]++
	}
	lines := strings.Split(todo, "\n")
	n := 0
	for i, l := range lines {
		if !isExec(l) {
			continue
		}
		if left[l] > 0 {
			left[l]--
			continue
		}
		lines[i] = todoHeader + l
		n++
	}
	return strings.Join(lines, "\n"), n
}

// readBase reads the base of the repository whose git directory is
// gitdir beneath ws.
func readBase(ws int, gitdir string) todoBase {
	b := todoBase{Execs: map[string][]string{}, Files: map[string]string{}}
	gitdir = path.Clean(gitdir)
	for _, d := range stateDirs(ws, gitdir) {
		rel := strings.TrimPrefix(strings.TrimPrefix(d, gitdir), "/")
		if text, err := readBeneath(ws, path.Join(d, todoFile), maxTodo); err == nil {
			if lines := execLines(text); len(lines) > 0 {
				b.Execs[path.Join(rel, todoFile)] = lines
			}
		}
		for _, f := range []string{strategyFile, optsFile} {
			if text, err := readBeneath(ws, path.Join(d, f), maxTodo); err == nil {
				b.Files[path.Join(rel, f)] = text
			}
		}
	}
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
	base todoBase
}

// takeBase is the base of the repository id, read (by read) only if no
// live guard holds it; releaseBase lets it go.
func takeBase(id devIno, read func() todoBase) todoBase {
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

// disarmRepo applies the rule to one repository, whose git directory is
// gitdir beneath ws, against base: what it did, for the log.
func disarmRepo(ws int, gitdir string, base todoBase) []string {
	var did []string
	gitdir = path.Clean(gitdir)
	for _, d := range stateDirs(ws, gitdir) {
		dir, err := openBeneath(ws, d)
		if err != nil {
			continue
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(d, gitdir), "/")
		for _, what := range disarmDir(dir, rel, base) {
			did = append(did, path.Join(d, what))
		}
		unix.Close(dir)
	}
	return did
}

// disarmDir applies the rule in one git directory (dir; rel, its path
// beneath the repository's, keys base).
func disarmDir(dir int, rel string, base todoBase) []string {
	var did []string
	say := func(format string, a ...any) { did = append(did, fmt.Sprintf(format, a...)) }
	for _, name := range []string{"rebase-merge", "sequencer"} {
		if isLinkAt(dir, name) {
			if err := unix.Unlinkat(dir, name, 0); err != nil {
				say("%s: a symbolic link, not removed: %v", name, err)
			} else {
				say("%s: a symbolic link, removed", name)
			}
		}
	}
	if what := disarmTodo(dir, base.Execs[path.Join(rel, todoFile)]); what != "" {
		say("%s: %s", todoFile, what)
	}
	checks := []struct {
		file  string
		state string // the directory moved aside if the file cannot go
		bad   func(string) bool
	}{
		{strategyFile, "rebase-merge", func(s string) bool { return !builtinStrategies[strings.TrimSpace(s)] }},
		{optsFile, "sequencer", func(s string) bool { return strings.Contains(strings.ToLower(s), "strategy") }},
	}
	for _, c := range checks {
		prev, had := base.Files[path.Join(rel, c.file)]
		if what := disarmFile(dir, c.file, c.state, prev, had, c.bad); what != "" {
			say("%s: %s", c.file, what)
		}
	}
	return did
}

// isLinkAt reports whether name in dir is a symbolic link.
func isLinkAt(dir int, name string) bool {
	var st unix.Stat_t
	return unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK
}

// statBeneath opens the directory of rel (beneath dir, no link on the
// way) and stats rel's last name there, not following it: ok is false
// (and nothing is open) if either is missing. The caller closes parent.
func statBeneath(dir int, rel string) (parent int, name string, st unix.Stat_t, ok bool) {
	p, name := path.Split(rel)
	parent, err := openBeneath(dir, path.Clean(p))
	if err != nil {
		return -1, "", st, false
	}
	if unix.Fstatat(parent, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		unix.Close(parent)
		return -1, "", st, false
	}
	return parent, name, st, true
}

// disarmFile removes file (beneath the git directory dir) if it is a
// link, or if it changed from prev (had: it was there) and is bad; if it
// cannot, it moves the state directory it is in aside.
func disarmFile(dir int, file, state, prev string, had bool, bad func(string) bool) string {
	parent, name, st, ok := statBeneath(dir, file)
	if !ok {
		return ""
	}
	defer unix.Close(parent)
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFLNK:
	case unix.S_IFREG:
		text, err := readBeneath(parent, name, maxTodo+1)
		if err == nil && (had && text == prev || !bad(text)) {
			return ""
		}
	default:
		return "" // git cannot read it
	}
	if err := unix.Unlinkat(parent, name, 0); err != nil {
		return fmt.Sprintf("could not be removed (%v): %s", err, moveAside(dir, state))
	}
	return "removed (written in a sandbox: git would have run what it names)"
}

// disarmTodo applies the rule to the to-do list of the git directory
// dir, keeping the exec lines in keep.
func disarmTodo(dir int, keep []string) string {
	parent, name, st, ok := statBeneath(dir, todoFile)
	if !ok {
		return ""
	}
	defer unix.Close(parent)
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
	case unix.S_IFLNK:
		if err := unix.Unlinkat(parent, name, 0); err != nil {
			return fmt.Sprintf("a symbolic link, not removed (%v): %s", err, moveAside(dir, "rebase-merge"))
		}
		return "a symbolic link, removed"
	default:
		return ""
	}
	if st.Size > maxTodo {
		return setAside(dir, parent, name, &st, fmt.Sprintf("too big to check (%d bytes)", st.Size))
	}
	text, err := readBeneath(parent, name, maxTodo+1)
	if err == nil && len(text) > maxTodo {
		err = fmt.Errorf("grew past %d bytes", maxTodo)
	}
	if err != nil {
		return setAside(dir, parent, name, &st, fmt.Sprintf("unreadable (%v)", err))
	}
	out, n := disarm(text, keep)
	if n == 0 {
		return ""
	}
	if err := replaceAt(parent, name, []byte(out), &st); err != nil {
		return fmt.Sprintf("%d exec lines could not be disarmed (%v): %s", n, err, moveAside(dir, "rebase-merge"))
	}
	return fmt.Sprintf("%d exec lines disarmed", n)
}

// setAside moves a to-do list the rule cannot check beside it, under a
// name of its own, and leaves one that says so in its place: nothing of
// it runs, and it is there to read.
func setAside(dir, parent int, name string, st *unix.Stat_t, why string) string {
	aside := name + ".sandbox-" + randomSuffix()
	if err := unix.Renameat2(parent, name, parent, aside, unix.RENAME_NOREPLACE); err != nil {
		return fmt.Sprintf("%s, and could not be set aside (%v): %s", why, err, moveAside(dir, "rebase-merge"))
	}
	note := fmt.Sprintf("# harnessd: the to-do list the sandbox left was %s: it is in %s, not run\n", why, aside)
	if err := replaceAt(parent, name, []byte(note), st); err != nil {
		return fmt.Sprintf("%s: set aside as %s (no note in its place: %v)", why, aside, err)
	}
	return fmt.Sprintf("%s: set aside as %s", why, aside)
}

// moveAside renames the state directory (rebase-merge, sequencer) of the
// git directory dir to a name of its own, which needs no space: git then
// sees no rebase or cherry-pick in progress, and runs nothing of it.
func moveAside(dir int, state string) string {
	aside := state + ".sandbox-" + randomSuffix()
	if err := unix.Renameat2(dir, state, dir, aside, unix.RENAME_NOREPLACE); err != nil {
		return fmt.Sprintf("%s could not be moved aside either: %v", state, err)
	}
	return state + " moved aside to " + aside
}

// randomSuffix is a name part nothing in the sandbox could have guessed.
func randomSuffix() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// replaceAt replaces the file name in dir with one holding b, with st's
// owner and mode, by a rename: git reading it meanwhile sees the old
// list or the new one.
func replaceAt(dir int, name string, b []byte, st *unix.Stat_t) error {
	tmp := name + ".harnessd-" + randomSuffix()
	f, err := unix.Openat(dir, tmp, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, st.Mode&0o777)
	if err != nil {
		return err
	}
	err = writeAll(f, b)
	if err == nil {
		err = unix.Fchown(f, int(st.Uid), int(st.Gid))
	}
	if err == nil {
		err = unix.Fsync(f)
	}
	unix.Close(f)
	if err == nil {
		err = unix.Renameat(dir, tmp, dir, name)
	}
	if err != nil {
		unix.Unlinkat(dir, tmp, 0)
	}
	return err
}

func writeAll(fd int, b []byte) error {
	for len(b) > 0 {
		n, err := unix.Write(fd, b)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}
