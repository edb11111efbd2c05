package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestDisarm: which lines of a to-do list git runs as commands, and what
// the rule leaves of them.
func TestDisarm(t *testing.T) {
	todo := "pick 1 a\nexec make\nx  make\n\texec\texit 1\nexecute 1\nxx 2\n# exec no\nexec make\nexec\r\nx"
	out, n := disarm(todo, []string{"exec make"})
	want := "pick 1 a\nexec make\n" + todoHeader + "x  make\n" + todoHeader + "\texec\texit 1\nexecute 1\nxx 2\n# exec no\n" +
		todoHeader + "exec make\n" + todoHeader + "exec\r\n" + todoHeader + "x"
	if out != want || n != 5 {
		t.Errorf("disarm: %d\n%q\nwant 5\n%q", n, out, want)
	}
}

// FuzzDisarm: whatever the sandbox wrote, no exec line is left but those
// kept, and every other line is as it was.
func FuzzDisarm(f *testing.F) {
	f.Add("pick 1 a\nexec make\nx make", "exec make")
	f.Add("\t x\n exec  \n", "")
	f.Fuzz(func(t *testing.T, todo, kept string) {
		keep := execLines(kept)
		out, n := disarm(todo, keep)
		in, got := strings.Split(todo, "\n"), strings.Split(out, "\n")
		if len(in) != len(got) {
			t.Fatalf("lines %d -> %d", len(in), len(got))
		}
		left := map[string]int{}
		for _, l := range keep {
			left[l]++
		}
		changed := 0
		for i := range in {
			switch {
			case in[i] == got[i]:
				if isExec(got[i]) {
					if left[got[i]] == 0 {
						t.Fatalf("exec line %q left, not kept", got[i])
					}
					left[got[i]]--
				}
			case got[i] == todoHeader+in[i] && isExec(in[i]) && !isExec(got[i]):
				changed++
			default:
				t.Fatalf("line %q became %q", in[i], got[i])
			}
		}
		if changed != n {
			t.Fatalf("%d changed, reported %d", changed, n)
		}
	})
}

// TestDisarmTooBig: a to-do list too big to check is set aside whole,
// with a note in its place.
func TestDisarmTooBig(t *testing.T) {
	dir := t.TempDir()
	gitdir := filepath.Join(dir, ".git", "rebase-merge")
	os.MkdirAll(gitdir, 0o755)
	big := strings.Repeat("pick 0123456789 padding padding padding\n", maxTodo/40+10) + "exec touch /tmp/x\n"
	os.WriteFile(filepath.Join(gitdir, "git-rebase-todo"), []byte(big), 0o640)
	ws, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(ws)
	did := disarmRepo(ws, ".git", todoBase{})
	got, _ := os.ReadFile(filepath.Join(gitdir, "git-rebase-todo"))
	asides, _ := filepath.Glob(filepath.Join(gitdir, "git-rebase-todo.sandbox-*"))
	if len(asides) != 1 {
		t.Fatalf("set aside as %v", asides)
	}
	aside, _ := os.ReadFile(asides[0])
	if len(did) != 1 || len(execLines(string(got))) != 0 || !strings.Contains(string(got), "too big") || string(aside) != big {
		t.Errorf("did %q; the list now %q; set aside %d bytes of %d", did, got, len(aside), len(big))
	}
	if fi, _ := os.Stat(filepath.Join(gitdir, "git-rebase-todo")); fi == nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("the note's mode: %v", fi)
	}
}
