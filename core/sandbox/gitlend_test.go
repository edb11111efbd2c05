package sandbox

import (
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// lendState is what lending changes of a git directory: its owner, group,
// mode and access ACL.
type lendState struct {
	uid, gid int
	mode     uint32
	acl      string
}

func lendStateOf(t *testing.T, dir string) lendState {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Lstat(dir, &st); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 256)
	n, err := unix.Getxattr(dir, "system.posix_acl_access", b)
	acl := ""
	if err == nil {
		acl = string(b[:n])
	}
	return lendState{int(st.Uid), int(st.Gid), st.Mode & 0o7777, acl}
}

// TestGitLentWhileSessionRuns: while a session runs in a directory its
// user named, what the agent writes in the git directories of the
// user's repositories there (here an interactive rebase's to-do list
// with exec lines, in the repository and a nested one) is checked only
// when it ends. Until then those git directories (and that of a linked
// worktree outside the workspace, read-only inside) are the
// sandbox's uid's (lent), so the user's git on the host, and root's,
// refuse the repositories ("dubious ownership") and run nothing; git
// inside keeps working; at the end (Destroy, a second session's end, or
// after a daemon that died, the next one's Cleanup) each is given back
// exactly as it was (owner, group, mode, ACL), after the rebase the
// agent made was moved aside. A second session over the same directory
// shares the lend, and pins the lent repositories as the user's.
func TestGitLentWhileSessionRuns(t *testing.T) {
	requireRoot(t)
	for _, mode := range []string{"end", "daemon died", "two sessions"} {
		t.Run(mode, func(t *testing.T) {
			state := t.TempDir()
			d := newDriver(t, NativeOptions{StateDir: state})
			const user = userDirOwner
			ws, marker, git := userDir(t)
			outside := filepath.Join(t.TempDir(), "out")
			os.Chmod(filepath.Dir(outside), 0o777)
			repo := func(dir string) {
				os.MkdirAll(dir, 0o755)
				os.Chown(dir, user, user)
				for _, c := range [][]string{{"init", "-q", "-b", "main"}, {"commit", "-q", "--allow-empty", "-m", "1"}, {"commit", "-q", "--allow-empty", "-m", "2"}} {
					if out, err := git(dir, c...); err != nil {
						t.Fatal(out)
					}
				}
			}
			repo(ws)
			repo(filepath.Join(ws, "sub"))
			if out, err := git(ws, "worktree", "add", "-q", "-b", "side", outside); err != nil {
				t.Fatal(out)
			}
			// One directory with an ACL of its own, kept through the lend.
			if out, err := hostGit(ws, "--version"); err != nil {
				t.Fatal(out)
			}
			gitdirs := []string{filepath.Join(ws, ".git"), filepath.Join(ws, "sub", ".git"), filepath.Join(ws, ".git", "worktrees", "out")}
			if err := unix.Setxattr(gitdirs[1], "system.posix_acl_access", accessACL(7, 5, 5, 4344), 0); err != nil {
				t.Logf("no ACL on the test's filesystem: %v", err)
			}
			before := map[string]lendState{}
			for _, g := range gitdirs {
				before[g] = lendStateOf(t, g)
			}

			b := newBox(t, d, Spec{Workspace: ws, Owner: &User{UID: user, GID: user}})
			b.must("git config --global user.name agent && git config --global user.email a@example.com")
			// The agent leaves a rebase with exec lines in each git
			// directory, as it may (git inside rebases).
			plant := `H=$(git -C DIR rev-parse HEAD) && mkdir -p GD/rebase-merge && cd GD/rebase-merge &&
echo refs/heads/BR > head-name && echo $H > onto && echo $H > orig-head && touch interactive &&
echo 1 > msgnum && echo 1 > end && : > done && printf 'exec touch MARK/TAG\n' > git-rebase-todo && echo planted; cd /workspace`
			for _, p := range [][4]string{{".", ".git", "main", "top"}, {"sub", "sub/.git", "main", "sub"}} {
				if out := b.must(strings.NewReplacer("DIR", p[0], "GD", p[1], "BR", p[2], "TAG", p[3], "MARK", marker).Replace(plant) + " 2>&1"); !strings.Contains(out, "planted") {
					t.Fatalf("planting in %s: %s", p[1], out)
				}
			}
			// Git inside works in the lent repositories.
			if out := b.must("echo x > f && git add f && git commit -qm inside && git -C sub commit -q --allow-empty -m inside && git log --oneline | head -1"); !strings.Contains(out, "inside") {
				t.Errorf("git inside:\n%s", out)
			}
			hostRefused := func(when string) {
				t.Helper()
				for _, dir := range []string{ws, filepath.Join(ws, "sub"), outside} {
					for who, run := range map[string]func(string, ...string) (string, error){"the user": git, "root": hostGit} {
						status, err := run(dir, "status")
						out, _ := run(dir, "rebase", "--continue")
						noMarks(t, marker, who, status+"\n"+out)
						if err == nil || !strings.Contains(status, "dubious ownership") {
							t.Errorf("%s: %s's git in %s was not refused: %v\n%s", when, who, dir, err, status)
						}
					}
				}
			}
			hostRefused("while the session runs")
			for _, g := range gitdirs {
				var st syscall.Stat_t
				if syscall.Lstat(g, &st) == nil && int(st.Uid) == user {
					t.Errorf("%s is still the user's while the session runs", g)
				}
			}

			end := b.sb.Destroy
			switch mode {
			case "daemon died":
				end = newDriver(t, NativeOptions{StateDir: state}).Cleanup
			case "two sessions":
				// A second session over the same directory shares the lend
				// and pins the lent repository as the user's own.
				b2 := newBox(t, d, Spec{Workspace: ws, Owner: &User{UID: user, GID: user}})
				if code, out := b2.run("for f in .git/config sub/.git/config .git/hooks/pre-commit sub/.git/hooks/pre-commit; do echo '#' >> $f || echo writable $f; done 2>&1"); strings.Count(out, "Read-only") != 4 {
					t.Errorf("the second session could write a lent repository's control files (exit %d):\n%s", code, out)
				}
				b.term.Close()
				if err := b.sb.Destroy(context.Background()); err != nil {
					t.Fatal(err)
				}
				hostRefused("after the first of two sessions ended")
				b = b2
				end = b2.sb.Destroy
			}
			b.term.Close()
			if err := end(context.Background()); err != nil {
				t.Fatal(err)
			}
			for _, g := range gitdirs {
				if got := lendStateOf(t, g); got != before[g] {
					t.Errorf("%s: given back as %+v, was %+v", g, got, before[g])
				}
			}
			for _, dir := range []string{ws, filepath.Join(ws, "sub"), outside} {
				status, err := git(dir, "status")
				out, _ := git(dir, "rebase", "--continue")
				noMarks(t, marker, "the user, after the end", status+"\n"+out)
				if err != nil {
					t.Errorf("the user's git in %s after the end: %v\n%s", dir, err, status)
				}
			}
			for _, g := range gitdirs[:2] {
				if aside, _ := filepath.Glob(filepath.Join(g, "rebase-merge.sandbox-*")); len(aside) != 1 {
					t.Errorf("the agent's rebase in %s, moved aside: %v", g, aside)
				}
			}
		})
	}
}

// aclEntries decodes an access ACL value: tag and id to permission bits,
// or ok false if it is not one the kernel would take (version 2, entries
// in tag then id order, one of each object tag, a mask where there are
// named entries).
func aclEntries(b []byte) (m map[[2]uint32]uint16, ok bool) {
	if len(b) < 4 || (len(b)-4)%8 != 0 || binary.LittleEndian.Uint32(b) != 2 {
		return nil, false
	}
	m = map[[2]uint32]uint16{}
	var last [2]uint32
	for i := 4; i < len(b); i += 8 {
		k := [2]uint32{uint32(binary.LittleEndian.Uint16(b[i:])), binary.LittleEndian.Uint32(b[i+4:])}
		if i > 4 && (k[0] < last[0] || k[0] == last[0] && k[1] <= last[1]) {
			return nil, false
		}
		last = k
		m[k] = binary.LittleEndian.Uint16(b[i+2:])
	}
	return m, true
}

// effective is what entry k of ACL m grants: its bits, cut by the mask
// for named entries and the owning group.
func effective(m map[[2]uint32]uint16, k [2]uint32) uint16 {
	p := m[k]
	if k[0] == aclUser || k[0] == aclGroupObj || k[0] == aclGroup {
		if mask, ok := m[[2]uint32{aclMask, 0xffffffff}]; ok {
			p &= mask
		}
	}
	return p
}

// FuzzACLWithUser: aclWithUser, given any bytes (an ACL read from the
// filesystem), never panics; what it returns is a well-formed ACL in
// which the user has perm, and no entry that was there grants more
// than it did (the lend must not widen anyone's access).
func FuzzACLWithUser(f *testing.F) {
	f.Add(accessACL(7, 5, 5, 4344), 4343, uint16(7))
	f.Add(accessACL(7, 7, 0, 4343), 4343, uint16(5))
	f.Add([]byte{2, 0, 0, 0}, 1, uint16(7))
	f.Add(append(accessACL(6, 4, 4, 10), 0x08, 0, 7, 0, 20, 0, 0, 0), 30, uint16(6))
	f.Fuzz(func(t *testing.T, in []byte, user int, perm uint16) {
		perm &= 7
		if user < 0 || user > 1<<31 {
			return
		}
		out, ok := aclWithUser(in, user, perm)
		if !ok {
			return
		}
		before, wellFormed := aclEntries(in)
		after, ok := aclEntries(out)
		if !ok {
			t.Fatalf("not an ACL: %x from %x", out, in)
		}
		if got := effective(after, [2]uint32{aclUser, uint32(user)}); got&perm != perm {
			t.Fatalf("the user has %o, want %o: %x", got, perm, out)
		}
		if !wellFormed {
			return
		}
		for k := range before {
			if k[0] == aclMask || k == [2]uint32{aclUser, uint32(user)} {
				continue
			}
			if b, a := effective(before, k), effective(after, k); a&^b != 0 {
				t.Fatalf("entry %v grants %o, it granted %o: %x -> %x", k, a, b, in, out)
			}
		}
	})
}
