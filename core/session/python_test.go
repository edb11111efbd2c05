package session

import (
	"context"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/core/python"
)

// TestPythonBigOutputTrimmedAndKept: a cell printing 1 MB is shown
// trimmed, and its whole output is kept and paged back byte for byte.
func TestPythonBigOutputTrimmedAndKept(t *testing.T) {
	s, outputs := newSession(t)
	ctx := context.Background()
	res, tr, err := s.PythonFor(ctx, 0, python.Run{Code: "for n in range(20000):\n    print('line %05d ' % n + 'y' * 41)"})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 || res.Trimmed == nil || res.Trimmed.OutputID == "" || !res.Unsandboxed {
		t.Fatalf("%+v", res)
	}
	if len(res.Output) > 20000 || !strings.Contains(res.Output, "line 00000") || !strings.Contains(res.Output, "line 19999") {
		t.Fatalf("the view (%d bytes): %.300q", len(res.Output), res.Output)
	}
	if tr.BytesTotal != 20000*53 {
		t.Errorf("bytes total %d, want %d", tr.BytesTotal, 20000*53)
	}
	page, err := outputs.ReadLines(ctx, res.Trimmed.OutputID, 12345, 12345)
	if err != nil {
		t.Fatal(err)
	}
	if page.Text != "line 12344 "+strings.Repeat("y", 41)+"\n" {
		t.Errorf("line 12345 of the full output: %q", page.Text)
	}
	// The session's Python persists, and ends with the session.
	if res, _, _ := s.PythonFor(ctx, 0, python.Run{Code: "n"}); strings.TrimSpace(res.Output) != "19999" {
		t.Errorf("n: %+v", res)
	}
}
