package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"github.com/harnessd/harnessd/cmd/harnessd/cli"
	"github.com/harnessd/harnessd/core/sandbox"
)

// envBeHarnessd makes the test binary harnessd itself (cli.Main, as
// cmd/harnessd runs it), so that the smoke run attacks a real daemon
// process without a go build of its own.
const envBeHarnessd = "FAULTS_TEST_BE_HARNESSD"

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == sandbox.InitCommand {
		sandbox.InitMain()
	}
	if os.Getenv(envBeHarnessd) == "1" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := cli.Main(ctx, os.Args[1:], cli.Env{Stdout: os.Stdout, Stderr: os.Stderr, Version: "faults-test"})
		stop()
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// TestSmoke runs two SIGKILL cycles (one strict, one batch) and the
// garbage part against this test binary as `harnessd serve`, as CI does
// to keep the harness compiling and working; the full run is `go run
// ./bench/faults`.
func TestSmoke(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the fault harness runs as root (CI does)")
	}
	t.Setenv(envBeHarnessd, "1") // for the daemons it starts
	var stdout, stderr bytes.Buffer
	t0 := time.Now()
	code := run(t.Context(), []string{"-cycles", "2", "-only", "kill,garbage", "-harnessd", os.Args[0], "-json"}, &stdout, &stderr)
	t.Logf("took %v", time.Since(t0).Round(time.Millisecond))
	var rep Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("exit %d; -json output does not decode: %v\n%s\nstderr:\n%s", code, err, &stdout, &stderr)
	}
	if code != 0 || !rep.Pass {
		var text bytes.Buffer
		rep.writeText(&text)
		t.Fatalf("exit %d\n%s\nstderr:\n%s", code, &text, &stderr)
	}
	got := map[string]*Part{}
	for _, p := range rep.Parts {
		got[p.Name] = p
	}
	if len(rep.Parts) != 2 || got["kill"] == nil || got["garbage"] == nil {
		t.Fatalf("parts %+v, want kill and garbage", rep.Parts)
	}
	for _, p := range rep.Parts {
		checks := 0
		for _, f := range p.Figures {
			if f.Status != "" {
				checks++
			}
		}
		if checks == 0 || p.Skipped != "" {
			t.Errorf("part %s: %d checks, skipped %q", p.Name, checks, p.Skipped)
		}
	}
	if figure(got["kill"], "cycles") != "2 (strict 1, batch 1)" {
		t.Errorf("kill cycles: %q", figure(got["kill"], "cycles"))
	}
}

func figure(p *Part, name string) string {
	for _, f := range p.Figures {
		if f.Name == name {
			return f.Value
		}
	}
	return ""
}

// TestFlags: bad flags are exit status 2, before anything runs.
func TestFlags(t *testing.T) {
	for _, args := range [][]string{{"-only", "nope"}, {"-cycles", "0"}, {"extra"}} {
		var out, errOut bytes.Buffer
		if code := run(t.Context(), args, &out, &errOut); code != 2 {
			t.Errorf("%q: exit %d, want 2\n%s", args, code, &errOut)
		}
	}
}
