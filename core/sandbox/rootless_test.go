package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harnessd/harnessd/core/event"
	"github.com/harnessd/harnessd/core/terminal"
)

// rootlessEnv makes TestMain run rootlessChild instead of the tests.
const rootlessEnv = "HARNESSD_SANDBOX_TEST_ROOTLESS"

// rootlessCommands are run inside a sandbox made by an unprivileged user.
var rootlessCommands = []string{
	"id -u",
	"echo hi > f && cat f",
	"cat /etc/shadow",
	"touch /usr/x",
	"grep CapEff /proc/self/status | tr -d '\\t'",
	"ls /root",
	"unshare -r true",
	"ulimit -u",
	"echo x > .git/config",
	`awk '$5 == "/run/harness" {print $5}' /proc/self/mountinfo`,
	"touch /run/harness/x",
}

type rootlessResult struct {
	Code int
	Out  string
}

// rootlessChild runs as uid 65534: it makes a sandbox with the native
// driver and prints what each of rootlessCommands did, as JSON.
func rootlessChild() int {
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "rootless child:", err)
		return 1
	}
	d, err := NewNative(&NativeOptions{StateDir: os.Getenv("STATE")})
	if err != nil {
		return fail(err)
	}
	ctx := context.Background()
	sb, err := d.Create(ctx, Spec{Workspace: os.Getenv("WS"), Limits: Limits{Pids: 50}})
	if err != nil {
		return fail(err)
	}
	defer sb.Destroy(ctx)
	term, err := terminal.New(ctx, termOptions(sb))
	if err != nil {
		return fail(err)
	}
	defer term.Close()
	res := map[string]rootlessResult{}
	for _, c := range rootlessCommands {
		var out bytes.Buffer
		r, err := term.Run(ctx, event.CmdRun{Command: c, TimeoutS: (10 * time.Second).Seconds()}, &out)
		if err != nil {
			return fail(err)
		}
		res[c] = rootlessResult{r.ExitCode, strings.TrimSpace(out.String())}
	}
	if err := json.NewEncoder(os.Stdout).Encode(res); err != nil {
		return fail(err)
	}
	return 0
}

// TestRootless runs the driver as an unprivileged user (nobody), as
// bubblewrap runs: the test binary, copied where nobody can execute it,
// makes a sandbox whose shell has a writable workspace and no way into the
// host.
func TestRootless(t *testing.T) {
	requireRoot(t)
	const nobody = 65534
	dir, err := os.MkdirTemp("", "harnessd-rootless-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(dir, "sandbox.test")
	if err := copyFile(self, exe, 0o755); err != nil {
		t.Fatal(err)
	}
	ws, state := filepath.Join(dir, "ws"), filepath.Join(dir, "state")
	for _, p := range []string{ws, state} {
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(p, nobody, nobody); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(exe)
	cmd.Env = []string{rootlessEnv + "=1", "WS=" + ws, "STATE=" + state, "PATH=" + os.Getenv("PATH"), "HOME=/nonexistent"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("rootless child: %v\n%s", err, stderr.String())
	}
	var res map[string]rootlessResult
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("rootless child output %q: %v", stdout.String(), err)
	}
	for c, r := range res {
		t.Logf("%-45s exit %d  %.80q", c, r.Code, r.Out)
	}
	want := func(c string, code int, out string) {
		if r := res[c]; (code >= 0 && r.Code != code) || (code < 0 && r.Code == 0) || (out != "" && r.Out != out) {
			t.Errorf("%q: exit %d %q, want exit %d %q", c, r.Code, r.Out, code, out)
		}
	}
	want("id -u", 0, "0")
	want("echo hi > f && cat f", 0, "hi")
	want("cat /etc/shadow", -1, "")
	want("touch /usr/x", -1, "")
	want("grep CapEff /proc/self/status | tr -d '\\t'", 0, "CapEff:0000000000000000")
	want("ls /root", -1, "")
	want("unshare -r true", -1, "")
	want("ulimit -u", 0, "50")
	want("echo x > .git/config", -1, "")
	// A rootless daemon cannot make the control directory a filesystem
	// of its own (controlMount), but it is at ControlPath all the same.
	want(`awk '$5 == "/run/harness" {print $5}' /proc/self/mountinfo`, 0, ControlPath)
	want("touch /run/harness/x", -1, "")
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(ws, "f"), &st); err != nil || st.Uid != nobody {
		t.Errorf("workspace file on the host: %v, uid %d, want %d", err, st.Uid, nobody)
	}
	if _, err := os.Stat("/usr/x"); err == nil {
		t.Errorf("/usr/x exists on the host")
	}
}

func copyFile(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
