package demo

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestDemo plays the whole script against the real PTY and a real bbolt
// file: every act must pass and every event must replay identically.
func TestDemo(t *testing.T) {
	var out bytes.Buffer
	if err := Run(context.Background(), &out, Options{Dir: t.TempDir()}); err != nil {
		t.Fatalf("demo: %v\n%s", err, out.String())
	}
	for _, want := range []string{"all 12 acts passed", "driver=native", "file_str_replace", "python_result", "shadow-denied", "hook_veto", "identical to the live stream", "invalid_action", "sandbox_stopped"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("transcript lacks %q:\n%s", want, out.String())
		}
	}
}
