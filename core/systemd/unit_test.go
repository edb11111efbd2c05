package systemd

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/core/config"
)

// contrib is where the unit files live, from this package's directory.
const contrib = "../../contrib/systemd"

var units = []string{"harnessd.socket", "harnessd.service"}

// TestUnitsVerify runs systemd-analyze verify on copies of the units in
// which ExecStart names a binary that exists (this test binary), and fails
// on anything it says about them; what it says about other units on this
// machine is only logged.
func TestUnitsVerify(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Fatal("systemd-analyze not found: install it with `apt-get install -y systemd` (Debian package systemd)")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var paths []string
	for _, name := range units {
		b, err := os.ReadFile(filepath.Join(contrib, name))
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		if name == "harnessd.service" {
			const bin = "ExecStart=/usr/local/bin/harnessd "
			if !strings.Contains(text, bin) {
				t.Fatalf("%s has no %q line", name, bin)
			}
			text = strings.Replace(text, bin, "ExecStart="+exe+" ", 1)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	cmd := exec.Command(analyze, append([]string{"verify", "--man=no"}, paths...)...)
	out, err := cmd.CombinedOutput()
	t.Logf("%s verify: %v\n%s", analyze, exitStatus(err), out)
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if strings.Contains(line, dir) || strings.Contains(line, "harnessd.s") {
			t.Errorf("systemd-analyze: %s", line)
		}
	}
	if err != nil {
		t.Errorf("systemd-analyze verify failed: %v", err)
	}
}

func exitStatus(err error) string {
	if err == nil {
		return "exit 0"
	}
	return err.Error()
}

// unitSettings returns the values of key in the [Service] section of unit,
// one per line it appears on.
func unitSettings(t *testing.T, unit, key string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(contrib, unit))
	if err != nil {
		t.Fatal(err)
	}
	var vals []string
	section := ""
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "["):
			section = line
		case section == "[Service]":
			if k, v, ok := strings.Cut(line, "="); ok && k == key {
				vals = append(vals, v)
			}
		}
	}
	return vals
}

// TestUnitStopTimeout: systemd must not SIGKILL the daemon while it is
// still inside its default shutdown grace period, plus the 5s it then
// gives the API server and the time to close the store.
func TestUnitStopTimeout(t *testing.T) {
	vals := unitSettings(t, "harnessd.service", "TimeoutStopSec")
	if len(vals) != 1 {
		t.Fatalf("TimeoutStopSec = %q, want one value", vals)
	}
	stop, err := time.ParseDuration(vals[0])
	if err != nil {
		t.Fatalf("TimeoutStopSec=%s: %v", vals[0], err)
	}
	grace := config.Default().Daemon.ShutdownGrace.Duration
	if need := grace + 5*time.Second + 5*time.Second; stop < need {
		t.Errorf("TimeoutStopSec=%v, want at least %v (shutdown_grace %v + 5s API shutdown + 5s to close)", stop, need, grace)
	}
}

// TestSysusers checks the sysusers.d entry with systemd-sysusers --dry-run.
func TestSysusers(t *testing.T) {
	sysusers, err := exec.LookPath("systemd-sysusers")
	if err != nil {
		t.Fatal("systemd-sysusers not found: install it with `apt-get install -y systemd`")
	}
	conf, err := filepath.Abs(filepath.Join(contrib, "harnessd.sysusers"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(sysusers, "--dry-run", conf).CombinedOutput()
	t.Logf("systemd-sysusers --dry-run:\n%s", out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "Creating group 'harnessd'") {
		if _, err := exec.Command("getent", "group", "harnessd").Output(); err != nil {
			t.Errorf("systemd-sysusers would not create group harnessd")
		}
	}
	if strings.Contains(string(out), "ignoring") {
		t.Errorf("systemd-sysusers ignored part of %s", conf)
	}
}
