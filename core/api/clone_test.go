package api_test

import (
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/core/config"
)

// TestGitCloneQuota: a session made from a host repository is cloned
// into its workspace's disk (sandbox.disk_mb), so the quota bounds the
// clone and what the agent adds to it; a repository too big for the disk
// is refused with a 400 saying so, and a clone past
// sandbox.clone_timeout is stopped with a 400 saying so; either way
// nothing of it is left: no workspace, no disk image, no temporary
// directory. The repositories are local, on disk (no network).
func TestGitCloneQuota(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for a disk and to connect as another uid")
	}
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	os.Chmod(filepath.Dir(dir), 0o755)
	small := filepath.Join(dir, "small")
	gitRepo(t, small, 65533, filepath.Join(dir, "PWNED"))
	// 24 MiB that no compression shrinks, in a disk of 16.
	big := filepath.Join(dir, "big")
	gitRepo(t, big, 65533, filepath.Join(dir, "PWNED"))
	blob := make([]byte, 24<<20)
	rand.Read(blob)
	os.WriteFile(filepath.Join(big, "blob"), blob, 0o644)
	add := exec.Command("sh", "-c", "git -c safe.directory='*' -c core.fsmonitor=false add blob && git -c safe.directory='*' -c core.fsmonitor=false -c user.name=t -c user.email=t@t commit -qm blob")
	add.Dir = big
	if out, err := add.CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	filepath.Walk(big, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, 65533, 65533) })

	cfg := nativeConfig(t)
	cfg.Daemon.DataDir = filepath.Join(dir, "data")
	cfg.Daemon.Socket = filepath.Join(dir, "h.sock")
	cfg.Daemon.AllowUIDs = []int{65533}
	cfg.Sandbox.DiskMB = 16
	cfg.Sandbox.PoolSize = 0
	td := startDaemon(t, cfg)
	os.Chmod(td.socket, 0o666)
	create := func(id, repo string) (int, string) {
		return curlAs(t, td.socket, 65533, "POST", "/v1/sessions", fmt.Sprintf(`{"id":%q,"git":{"repo":%q}}`, id, repo))
	}
	nothingLeft := func(id string) {
		t.Helper()
		if _, err := os.Stat(filepath.Join(cfg.Daemon.DataDir, "workspaces", id)); !os.IsNotExist(err) {
			t.Errorf("%s: the workspace of a refused clone is left: %v", id, err)
		}
		for _, sub := range []string{"workspaces", "disks"} {
			ents, _ := os.ReadDir(filepath.Join(cfg.Daemon.DataDir, sub))
			for _, e := range ents {
				if strings.Contains(e.Name(), id) {
					t.Errorf("%s: left in %s: %s", id, sub, e.Name())
				}
			}
		}
	}

	// A repository that fits: the workspace is the disk, and the agent
	// cannot write past it either.
	if code, body := create("fits", small); code != 201 {
		t.Fatalf("fits: %d %s", code, body)
	}
	out := run(t, td.cl, "fits", "cat f; df -k --output=size /workspace | tail -1 | tr -d ' '; head -c 20M /dev/zero 2>&1 >fill | grep -o 'No space left on device'; rm fill; git status --porcelain -uno")
	if lines := strings.Split(out.Output, "\n"); len(lines) < 3 || lines[0] != "two" || lines[2] != "No space left on device" {
		t.Errorf("a clone in a 16 MiB disk: %q", out.Output)
	} else if kb := lines[1]; len(kb) > 5 {
		t.Errorf("the clone's workspace is %s KiB, not the 16 MiB disk", kb)
	}

	// Too big: refused, saying why, and nothing left.
	code, body := create("toobig", big)
	if code != 400 || !strings.Contains(body, "does not fit in the workspace's disk of 16 MiB (sandbox.disk_mb)") {
		t.Errorf("a repository bigger than the disk: %d %s", code, body)
	}
	t.Logf("too big: %d %s", code, strings.TrimSpace(body))
	nothingLeft("toobig")

	// Too slow: stopped at sandbox.clone_timeout, and nothing left (a
	// daemon of its own: sandbox settings take a restart).
	cfg2 := cfg
	cfg2.Daemon.DataDir = filepath.Join(dir, "data2")
	cfg2.Daemon.Socket = filepath.Join(dir, "h2.sock")
	cfg2.Sandbox.CloneTimeout = config.Duration{Duration: time.Millisecond}
	td2 := startDaemon(t, cfg2)
	os.Chmod(td2.socket, 0o666)
	code, body = curlAs(t, td2.socket, 65533, "POST", "/v1/sessions", `{"id":"slow","git":{"repo":"`+big+`"}}`)
	if code != 400 || !strings.Contains(body, "took longer than sandbox.clone_timeout (1ms)") {
		t.Errorf("a clone past its timeout: %d %s", code, body)
	}
	t.Logf("too slow: %d %s", code, strings.TrimSpace(body))
	cfg = cfg2
	nothingLeft("slow")
}
