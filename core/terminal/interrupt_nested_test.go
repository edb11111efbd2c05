package terminal

import (
	"strings"
	"testing"
	"time"
)

// TestInterruptNestedShellOnce: C-c at a job of a nested interactive bash
// signals that job; the nested bash, which takes the terminal back when
// the job dies, is not a new job and must not get a SIGINT of its own (its
// INT trap ran, and a line it was reading was lost).
func TestInterruptNestedShellOnce(t *testing.T) {
	term := newTerm(t, Options{})
	steps := []req{
		{Command: "bash --norc", SoftTimeout: time.Second},
		{Command: "trap 'echo GOT-INT' INT; echo inner\n", IsInput: true, SoftTimeout: time.Second},
		{Command: "sleep 30\n", IsInput: true, SoftTimeout: 500 * time.Millisecond},
	}
	for _, r := range steps {
		run(t, term, r)
	}
	for range 3 {
		_, out := run(t, term, req{Command: "C-c", IsInput: true, SoftTimeout: 1500 * time.Millisecond})
		if strings.Contains(out, "GOT-INT") {
			t.Fatalf("the nested shell got a SIGINT of its own: %q", out)
		}
		// A new job of the nested shell is still interrupted.
		run(t, term, req{Command: "sleep 30\n", IsInput: true, SoftTimeout: 500 * time.Millisecond})
	}
	_, out := run(t, term, req{Command: "C-c", IsInput: true, SoftTimeout: 1500 * time.Millisecond})
	_, out2 := run(t, term, req{Command: "echo still $((6*7))\n", IsInput: true, SoftTimeout: time.Second})
	if !strings.Contains(out2, "still 42") {
		t.Fatalf("the nested shell did not come back after C-c (%q): %q", out, out2)
	}
	res, _ := run(t, term, req{Command: "exit\n", IsInput: true, SoftTimeout: 2 * time.Second})
	if res.Running {
		t.Fatalf("the nested shell did not exit")
	}
}
