package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/core/sandbox"
)

// TestMain lets the test binary be what the bench binary is besides the
// benchmark: the native sandbox's init (re-exec'd as sandbox-init), and
// the sessions section's daemon (re-exec'd with envServe set, it is
// `harnessd serve`).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == sandbox.InitCommand {
		sandbox.InitMain()
	}
	if code, ok := serveChild(); ok {
		os.Exit(code)
	}
	if code, ok := pluginChild(); ok {
		os.Exit(code)
	}
	if code, ok := wakeChild(); ok {
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// TestQuick runs the whole benchmark in -quick mode, as CI does, and checks
// the report's shape, not its figures: those mean something only on a
// quiet machine.
func TestQuick(t *testing.T) {
	var stdout, stderr bytes.Buffer
	start := time.Now()
	if code := run(t.Context(), []string{"-quick", "-json"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit status %d\nstderr: %s\nstdout: %s", code, &stderr, &stdout)
	}
	took := time.Since(start)

	var rep Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("decode -json output: %v\n%s", err, &stdout)
	}
	if !rep.Header.Quick || rep.Header.CPUs < 1 || rep.Header.GoVersion == "" {
		t.Errorf("header = %+v", rep.Header)
	}
	got := map[string]*Section{}
	for _, s := range rep.Sections {
		got[s.Name] = s
	}
	for _, want := range sections {
		s, ok := got[want.name]
		if !ok {
			t.Errorf("section %s missing from the report", want.name)
			continue
		}
		if s.Error != "" {
			t.Errorf("section %s: %s", s.Name, s.Error)
		}
		if s.Skipped != "" {
			if s.Name != "tmux" || s.Skipped != "skipped: tmux not installed" {
				t.Errorf("section %s skipped: %s", s.Name, s.Skipped)
			}
			continue
		}
		if len(s.Rows) == 0 {
			t.Errorf("section %s has no rows", s.Name)
		}
		for _, r := range s.Rows {
			if r.Figure.Value <= 0 && r.Figure.Unit != unitBytes {
				t.Errorf("%s / %s: figure %+v", s.Name, r.Name, r.Figure)
			}
			if r.Baseline != nil && r.Ratio <= 0 {
				t.Errorf("%s / %s: baseline %+v but ratio %v", s.Name, r.Name, *r.Baseline, r.Ratio)
			}
			if r.Target != "" && r.Status != "PASS" && r.Status != "MISS" {
				t.Errorf("%s / %s: target %q with status %q", s.Name, r.Name, r.Target, r.Status)
			}
		}
	}

	// The sandbox section's and the native sessions' figures are there.
	names := map[string]bool{}
	for _, s := range rep.Sections {
		for _, r := range s.Rows {
			names[s.Name+"/"+r.Name] = true
		}
	}
	for _, want := range []string{
		"sandbox/native cold create-to-first-prompt p50",
		"sandbox/vs bwrap --unshare-all p50",
		"sandbox/API create p50, pool hit",
		"sandbox/API create p50, cold, heap_floor_mb = 0",
		"sandbox/sandboxes created at once (20 asked)",
		"sandbox/shells gone after delete",
		"sessions/daemon RSS / idle session @100",
		"sessions/native: daemon RSS / idle session @10",
		"agents/Step through go-plugin p50",
		"agents/plugin start p50",
		"hooks/shipped policies p50",
		"hooks/shipped policies, 2 sessions at once",
		"api/wake-up: 1-byte round trip to a process, back to back",
		"api/the same, vs its floor after the same idle",
		"api/wake-up: the same after 30.00 ms asleep",
	} {
		if !names[want] {
			t.Errorf("no row %q", want)
		}
	}

	var text bytes.Buffer
	if err := writeText(&text, &rep); err != nil {
		t.Fatal(err)
	}
	for _, s := range rep.Sections {
		if !strings.Contains(text.String(), "== "+s.Name+": ") {
			t.Errorf("text report lacks section %s", s.Name)
		}
	}
	t.Logf("-quick took %s\n%s", took.Round(time.Millisecond), &text)
	if took > 30*time.Second {
		// Not a failure: a loaded CI machine can be slow. The budget is
		// for a quiet one.
		t.Logf("-quick took %s, over its 30 s budget", took.Round(time.Second))
	}
}

// TestSandboxWithoutBwrap runs the sandbox section's cold starts where
// bubblewrap is not installed: its baseline is skipped with a note, and
// the rest is measured.
func TestSandboxWithoutBwrap(t *testing.T) {
	b := &bench{opts: options{quick: true}, tmp: t.TempDir(), bwrap: "harnessd-bench-no-such-bwrap"}
	s := &Section{Name: "sandbox"}
	if _, err := b.sandboxCold(t.Context(), s, filepath.Join(b.tmp, "cold")); err != nil {
		t.Fatal(err)
	}
	skipped := false
	for _, n := range s.Notes {
		skipped = skipped || strings.HasPrefix(n, "bwrap: skipped: bubblewrap is not installed")
	}
	if !skipped {
		t.Errorf("no note that bwrap was skipped in %q", s.Notes)
	}
	found := false
	for _, r := range s.Rows {
		if strings.Contains(r.Name, "bwrap") || (r.Baseline != nil && strings.Contains(r.Baseline.Label, "bwrap")) {
			t.Errorf("row %q (baseline %+v) without bwrap", r.Name, r.Baseline)
		}
		found = found || r.Name == "native cold create-to-first-prompt p50"
	}
	if !found {
		t.Errorf("no native cold row in %+v", s.Rows)
	}
}
