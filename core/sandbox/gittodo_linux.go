package sandbox

import (
	"fmt"
	"path"
	"strings"

	"golang.org/x/sys/unix"
)

// The rebase to-do rule. An interactive rebase keeps its state in the
// repository's git directory (rebase-merge/), and the next command of
// `git rebase --continue` (or --skip) comes from rebase-merge/git-rebase-todo:
// an `exec` (or `x`) line there is a shell command git runs. In a
// repository of the user's, the agent may rebase (the directory is
// writable, as a rebase needs), so it can also leave a rebase in progress
// whose to-do list runs its command as the user once they continue it on
// the host. No mount can tell the agent's writes of that file from its
// git's, and no permission the user's own git does not also have can
// keep it from reading it: the rule acts once nothing in the sandbox can
// write any more. When the session ends (and when a daemon that died
// is swept after), every exec line in the to-do lists of the user's
// repositories that was not there when the session's first shell
// started is turned into a comment that says where it came from, so the
// user's `git rebase --continue` stops short of it (git status shows
// it, and `git rebase --edit-todo` can restore it). A rebase-merge
// directory or to-do list that is a symbolic link (git never makes one;
// git on the host would follow it) is removed. While the session runs,
// the user's git would still run what the agent wrote: the README says
// not to continue a rebase in a directory a session is working in.
// (sequencer/todo, a cherry-pick's or revert's, takes no exec line.)

// maxTodo bounds a to-do list read: a rebase of a hundred thousand
// commits is some 6 MB.
const maxTodo = 16 << 20

// todoHeader starts every exec line the rule disarms.
const todoHeader = "# harnessd: written in a sandbox, not run; remove this prefix to run it: "

// todoLists are the to-do lists of interactive rebases beneath the git
// directory gitdir (relative to the directory ws), and beneath those of
// its linked worktrees and submodules (worktrees/*, modules/**: git
// directories of their own), relative to ws.
func todoLists(ws int, gitdir string) []string {
	var lists []string
	var walk func(dir string, depth int, module bool)
	seen := 0
	walk = func(dir string, depth int, module bool) {
		if seen++; seen > 1000 || depth > 8 {
			return
		}
		lists = append(lists, path.Join(dir, "rebase-merge", "git-rebase-todo"))
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
	return lists
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

// readTodos reads the exec lines of every to-do list in the git
// directories repos name (the user's own, at arm), keyed by the list's
// path beneath ws.
func readTodos(ws int, repos []Repo) map[string][]string {
	execs := map[string][]string{}
	for _, r := range repos {
		if r.File || r.Stray || r.Half {
			continue
		}
		for _, list := range todoLists(ws, r.Path) {
			if text, err := readBeneath(ws, list, maxTodo); err == nil {
				if lines := execLines(text); len(lines) > 0 {
					execs[list] = lines
				}
			}
		}
	}
	return execs
}

// disarmTodos applies the rule to the to-do lists of repos (the user's
// own) beneath ws: what it did, for the log, one line a list.
func disarmTodos(ws int, repos []Repo, before map[string][]string) []string {
	var did []string
	for _, r := range repos {
		if r.File || r.Stray || r.Half {
			continue
		}
		for _, list := range todoLists(ws, r.Path) {
			if what := disarmTodo(ws, list, before[list]); what != "" {
				did = append(did, list+": "+what)
			}
		}
	}
	return did
}

// disarmTodo applies the rule to one to-do list, list beneath ws.
func disarmTodo(ws int, list string, keep []string) string {
	dirRel, name := path.Split(list)
	parentRel := path.Dir(path.Clean(dirRel))
	// A rebase-merge that is a link, where git would follow it.
	if parent, err := openBeneath(ws, parentRel); err == nil {
		defer unix.Close(parent)
		var st unix.Stat_t
		if unix.Fstatat(parent, "rebase-merge", &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
			if err := unix.Unlinkat(parent, "rebase-merge", 0); err != nil {
				return fmt.Sprintf("rebase-merge is a symbolic link and could not be removed: %v", err)
			}
			return "rebase-merge was a symbolic link: removed"
		}
	}
	dir, err := openBeneath(ws, path.Clean(dirRel))
	if err != nil {
		return ""
	}
	defer unix.Close(dir)
	var st unix.Stat_t
	if unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return ""
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
	case unix.S_IFLNK:
		if err := unix.Unlinkat(dir, name, 0); err != nil {
			return fmt.Sprintf("a symbolic link that could not be removed: %v", err)
		}
		return "was a symbolic link: removed"
	default:
		return ""
	}
	if st.Size > maxTodo {
		return setAside(dir, name, &st, fmt.Sprintf("too big to check (%d bytes)", st.Size))
	}
	text, err := readBeneath(dir, name, maxTodo+1)
	if err == nil && len(text) > maxTodo {
		err = fmt.Errorf("grew past %d bytes", maxTodo)
	}
	if err != nil {
		return setAside(dir, name, &st, fmt.Sprintf("unreadable (%v)", err))
	}
	out, n := disarm(text, keep)
	if n == 0 {
		return ""
	}
	if err := replaceAt(dir, name, []byte(out), &st); err != nil {
		return fmt.Sprintf("%d exec lines not disarmed: %v", n, err)
	}
	return fmt.Sprintf("%d exec lines disarmed", n)
}

// setAside moves a to-do list the rule cannot check to NAME.sandbox and
// leaves one that says so in its place: nothing of it runs, and it is
// there to read.
func setAside(dir int, name string, st *unix.Stat_t, why string) string {
	aside := name + ".sandbox"
	if err := unix.Renameat(dir, name, dir, aside); err != nil {
		return fmt.Sprintf("%s, and could not be set aside: %v", why, err)
	}
	note := fmt.Sprintf("# harnessd: the to-do list the sandbox left was %s: it is in %s, not run\n", why, aside)
	if err := replaceAt(dir, name, []byte(note), st); err != nil {
		return fmt.Sprintf("%s: set aside as %s (no note: %v)", why, aside, err)
	}
	return fmt.Sprintf("%s: set aside as %s", why, aside)
}

// replaceAt replaces the file name in dir with one holding b, with st's
// owner and mode, by a rename: git reading it meanwhile sees the old
// list or the new one.
func replaceAt(dir int, name string, b []byte, st *unix.Stat_t) error {
	tmp := name + ".harnessd"
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
