package sandbox

import (
	"strings"
	"testing"
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
