package sandbox

import (
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/core/terminal"
)

// kernelRuleOrSkip skips where neither the kernel (BPF LSM) nor the
// sandbox's init (seccomp user notification) can enforce the git
// guard's HEAD rule, saying why, unless HARNESSD_TEST_WATCH_ONLY asks
// for the test with the watch alone (which the race is expected to
// beat: the test then fails, counting). Where both can, the init's is
// tested (as guards use it), or the kernel's with
// HARNESSD_TEST_KERNEL_RULE set.
func kernelRuleOrSkip(t *testing.T) (watchOnly bool) {
	t.Helper()
	requireRoot(t)
	if os.Getenv("HARNESSD_TEST_WATCH_ONLY") != "" {
		noKernelRule = true
		t.Cleanup(func() { noKernelRule = false })
		return true
	}
	if os.Getenv("HARNESSD_TEST_KERNEL_RULE") != "" {
		preferKernelRule = true
		t.Cleanup(func() { preferKernelRule = false })
	}
	switch {
	case sharedInitRule() && !preferKernelRule:
		t.Log("the HEAD rule: the init's (seccomp user notification)")
	case sharedKernelRule(slog.Default()) != nil:
		t.Log("the HEAD rule: the kernel's (BPF LSM)")
	case sharedInitRule():
		t.Log("the HEAD rule: the init's (seccomp user notification)")
	default:
		t.Skipf("neither the kernel (BPF LSM: %v) nor the init (seccomp user notification: %v) can enforce the git guard's HEAD rule here", kernelRuleErr, initRuleErr)
	}
	return false
}

// runLong runs script in the box in the background, its output to a
// file, and waits for it (the terminal's own wait is capped), returning
// the output.
func (b *box) runLong(script string, limit time.Duration) string {
	b.t.Helper()
	b.must("rm -f /tmp/long.out /tmp/long.done; ( (" + script + ") > /tmp/long.out 2>&1 < /dev/null; touch /tmp/long.done) > /dev/null 2>&1 &")
	for end := time.Now().Add(limit); time.Now().Before(end); time.Sleep(500 * time.Millisecond) {
		if code, _ := b.run("test -e /tmp/long.done"); code == 0 {
			return b.must("cat /tmp/long.out")
		}
	}
	b.t.Fatalf("%q: not done within %s", script, limit)
	return ""
}

// TestGitUserDirHEADRace is the red team's race (issue 16, item 1): the
// agent renames a prepared gitdir (HEAD, objects, refs, a config whose
// core.fsmonitor touches a marker) to .git in a directory its user
// named, 300 times, while two loops run that user's git status there.
// With the watch alone, some of those runs trust the repository before
// it is handed over (6% in the red team's run); with the kernel rule,
// the prepared directory never gets its HEAD, and no run ever runs the
// agent's command.
func TestGitUserDirHEADRace(t *testing.T) {
	watchOnly := kernelRuleOrSkip(t)
	d := newDriver(t, NativeOptions{})
	ws, marker, _ := userDir(t)
	b := newBox(t, d, Spec{Workspace: ws, Owner: &User{UID: userDirOwner, GID: userDirOwner}})
	const tries = 300
	var stop atomic.Bool
	var runs atomic.Int64
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				hostGitAs(userDirOwner, ws, "status", "--porcelain")
				runs.Add(1)
			}
		}()
	}
	script := fmt.Sprintf(`heads=0 moved=0
for i in $(seq 1 %d); do
  rm -rf .git p 2>/dev/null
  mkdir -p p/objects p/refs/heads
  printf '[core]\n\trepositoryformatversion = 0\n\tfsmonitor = "touch %s/race-'$i'; false"\n' > p/config
  (echo 'ref: refs/heads/main' > p/HEAD) 2>/dev/null && heads=$((heads+1))
  mv p .git 2>/dev/null && moved=$((moved+1))
done
echo "heads=$heads moved=$moved"`, tries, marker)
	out := b.runLong(script, 10*time.Minute)
	stop.Store(true)
	wg.Wait()
	ents, _ := os.ReadDir(marker)
	t.Logf("agent: %s; the user's git status ran %d times; it ran the agent's command %d times", out, runs.Load(), len(ents))
	if len(ents) > 0 {
		t.Errorf("the user's git ran the agent's fsmonitor command %d times in %d tries (watch only: %v)", len(ents), tries, watchOnly)
	}
	if !watchOnly && !strings.Contains(out, "heads=0 ") {
		t.Errorf("the agent wrote a HEAD in a directory of the user's: %s", out)
	}
}

// TestGitUserDirHEADPlants: every way the agent has of making a new
// HEAD in a directory of the user's fails, with EPERM: a file, a
// symlink, a hard link, a fifo, a directory, a rename (new name and
// RENAME_EXCHANGE with a HEAD of the user's), O_TMPFILE linked in, cp -r
// of a prepared gitdir, git init --bare by another name, HEAD in a
// subdirectory given objects and refs; and the user's git on the host
// runs nothing.
func TestGitUserDirHEADPlants(t *testing.T) {
	kernelRuleOrSkip(t)
	d := newDriver(t, NativeOptions{})
	ws, marker, git := userDir(t)
	// A directory of the user's with objects and refs (a bare repository
	// but for HEAD), and a stray HEAD of theirs with a valid content.
	for _, p := range []string{"half/objects", "half/refs/heads", "stray", "vs"} {
		os.MkdirAll(filepath.Join(ws, p), 0o755)
	}
	os.WriteFile(filepath.Join(ws, "stray", "HEAD"), []byte("not a ref\n"), 0o644)
	os.WriteFile(filepath.Join(ws, "vs", "HEAD"), []byte("ref: refs/heads/main\n"), 0o644) // valid already
	if out, err := exec.Command("chown", "-R", strconv.Itoa(userDirOwner)+":"+strconv.Itoa(userDirOwner), ws).CombinedOutput(); err != nil {
		t.Fatalf("chown: %v %s", err, out)
	}
	// A repository of the user's with a commit: its .git/logs has a
	// HEAD (the reflog), which git takes as a valid one.
	for _, c := range [][]string{{"init", "-q", "-b", "main", "own"}, {"-C", "own", "commit", "-q", "--allow-empty", "-m", "1"}} {
		if out, err := git(ws, c...); err != nil {
			t.Fatalf("git %v: %v %s", c, err, out)
		}
	}
	b := newBox(t, d, Spec{Workspace: ws, Owner: &User{UID: userDirOwner, GID: userDirOwner}})
	cfg := `printf '[core]\n\tfsmonitor = "touch ` + marker + `/%s; false"\n' %s > %s/config`
	b.must(fmt.Sprintf(cfg, "half", "", "half"))
	py := `python3 -c 'import os,sys; %s' 2>&1 | tail -1`
	const perm = "not permitted"
	// want: what the agent's command must say: EPERM from the rule;
	// "fail": any failure (a copy that raced the watch); "": anything
	// (git's own, whose HEAD comes once the watch has handed .git over).
	for _, c := range []struct{ name, cmd, dir, want string }{
		{"file", "echo 'ref: refs/heads/main' > half/HEAD", "half", perm},
		{"symlink", "ln -s refs/heads/main half/HEAD", "half", perm},
		{"hard link", "echo 'ref: refs/heads/main' > h0 && ln h0 half/HEAD", "half", perm},
		{"fifo", "mkfifo half/HEAD", "half", perm},
		{"directory", "mkdir half/HEAD", "half", perm},
		{"rename", "echo 'ref: refs/heads/main' > h1 && mv h1 half/HEAD", "half", perm},
		{"mknod", fmt.Sprintf(py, `os.mknod("half/HEAD", 0o100644)`), "half", perm},
		{"O_TMPFILE", fmt.Sprintf(py, `fd=os.open("half", os.O_TMPFILE|os.O_WRONLY, 0o644); os.write(fd, b"ref: refs/heads/main\n"); os.link("/proc/self/fd/%d" % fd, "half/HEAD")`), "half", "Error"},
		{"exchange", "echo 'ref: refs/heads/main' > half/xx && " + fmt.Sprintf(py,
			`import ctypes; l=ctypes.CDLL(None, use_errno=True); r=l.renameat2(-100, b"half/xx", -100, b"half/HEAD", 2); print(r, os.strerror(ctypes.get_errno()))`), "half", "No such file"},
		{"cp -r", "mkdir -p /tmp/prep/objects /tmp/prep/refs/heads && echo 'ref: refs/heads/main' > /tmp/prep/HEAD && " +
			fmt.Sprintf(cfg, "cp", "", "/tmp/prep") + " && mkdir cpd && cp -r /tmp/prep cpd/.git", "cpd", "fail"},
		{"cp -r bare", "cp -r /tmp/prep cpb", "cpb", perm},
		{"stray rewritten", "echo 'ref: refs/heads/main' > stray/HEAD; mkdir -p stray/objects stray/refs/heads && " + fmt.Sprintf(cfg, "stray", "", "stray"), "stray", "Read-only"},
		{"valid stray completed", "mkdir -p vs/objects vs/refs/heads; " + fmt.Sprintf(cfg, "vs", "", "vs"), "vs", "Read-only"},
		{"reflog completed, .git file to it", "mkdir -p own/.git/logs/objects own/.git/logs/refs/heads; " + fmt.Sprintf(cfg, "reflog", "", "own/.git/logs") +
			"; mkdir rl && printf 'gitdir: ../own/.git/logs\\n' > rl/.git", "rl", perm},
		{"reflog completed, .git link to it", "mkdir rl2 && ln -s ../own/.git/logs rl2/.git", "rl2", perm},
		{"git init then config", "git init -q -b main gi; git -C gi config core.fsmonitor 'touch " + marker + "/gi; false'", "gi", ""},
		{"git init --bare", "git init -q --bare gb; printf '[core]\\n\\tfsmonitor = \"touch " + marker + "/gb; false\"\\n' >> gb/config", "gb", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out := b.run(c.cmd)
			switch c.want {
			case "":
			case "fail":
				// Or it worked because the watch had handed the new .git
				// over before the copy's HEAD (the init's rule slows a
				// copy down enough for that, now and then): then it is
				// the dedicated uid's, which the host's git refuses.
				var st syscall.Stat_t
				if code == 0 && (syscall.Lstat(filepath.Join(ws, c.dir, ".git"), &st) != nil || int(st.Uid) == userDirOwner) {
					t.Errorf("it worked, and the .git is not handed over: %q", out)
				}
			default:
				if !strings.Contains(out, c.want) {
					t.Errorf("%q, want %q", out, c.want)
				}
			}
			out = hostRuns(git, ws, c.dir)
			noMarks(t, marker, "the workspace's user", out)
			out = hostRuns(hostGit, ws, c.dir)
			noMarks(t, marker, "root", out)
		})
	}
}

// TestGitUserDirHEADGitWorks: with the kernel rule, git inside still
// works in a directory its user named: git init (tried again where the
// watch was late: the rule then refused its HEAD), commits, branches,
// status, a clone; in the user's own repository, commits and checkouts
// (HEAD.lock renamed over HEAD); git init in the sandbox's /tmp. And
// the host still makes HEADs there: the rule is the sandbox's alone.
func TestGitUserDirHEADGitWorks(t *testing.T) {
	kernelRuleOrSkip(t)
	d := newDriver(t, NativeOptions{})
	ws, _, git := userDir(t)
	if out, err := git(ws, "init", "-q", "-b", "main", "own"); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	b := newBox(t, d, Spec{Workspace: ws, Owner: &User{UID: userDirOwner, GID: userDirOwner}})
	b.must("git config --global user.name agent && git config --global user.email a@example.com")
	b.must(`cd /workspace/own && echo 1 > f && git add f && git commit -qm 1 && git checkout -qb topic && git checkout -q main && git status --porcelain`)
	b.must(`git init -q /tmp/x && git -C /tmp/x status >/dev/null`)
	b.must(`cd /workspace && for i in 1 2 3; do git init -q -b main new 2>/dev/null && break; sleep 0.1; done; cd new && echo 1 > f && git add f && git commit -qm 1 && git branch b && git status --porcelain`)
	b.must(`cd /workspace && for i in 1 2 3; do rm -rf cl; git clone -q own cl && break; sleep 0.1; done; git -C cl log --oneline | head -1 && git -C cl status --porcelain`)
	b.must(`cd /workspace && for i in 1 2 3; do rm -rf x.git; git init -q --bare x.git 2>/dev/null && break; sleep 0.1; done; git -C x.git rev-parse --is-bare-repository`)
	b.must(`cd /workspace && git -C new push -q ../x.git main && git -C x.git log --oneline | head -1`)
	if out, err := hostGit(ws, "rev-parse", "--git-dir"); err == nil {
		t.Errorf("the host's git trusts the workspace: %s", out)
	}
	for _, p := range []string{filepath.Join(ws, "HEAD"), filepath.Join(ws, "own", "HEAD2")} {
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Errorf("the host cannot make %s: %v", p, err)
		}
	}
}

// TestGitUserDirHEADRates counts how often git init and git clone,
// once each, succeed in a directory its user named under the kernel
// rule: they fail where git writes its HEAD before the watch has handed
// the new .git over. Idle, then with two busy loops on the host; and
// git init with no templates, whose HEAD follows its mkdir closest.
func TestGitUserDirHEADRates(t *testing.T) {
	kernelRuleOrSkip(t)
	if testing.Short() {
		t.Skip("200 tries each")
	}
	d := newDriver(t, NativeOptions{})
	ws, _, _ := userDir(t)
	b := newBox(t, d, Spec{Workspace: ws, Owner: &User{UID: userDirOwner, GID: userDirOwner}})
	b.must("git init -q -b main /tmp/src && cd /tmp/src && echo 1 > f && git add f && git -c user.name=a -c user.email=a@b commit -qm 1")
	count := func() string {
		return b.runLong(`i=0 c=0 e=0; for n in $(seq 1 200); do git init -q i$n 2>/dev/null && i=$((i+1)); git clone -q /tmp/src c$n 2>/dev/null && c=$((c+1)); git init -q --template= e$n 2>/dev/null && e=$((e+1)); done; rm -rf i* c* e*; echo "init=$i/200 clone=$c/200 init-without-templates=$e/200"`, 30*time.Minute)
	}
	t.Logf("idle: %s", count())
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				for i := 0; i < 1e6; i++ {
				}
			}
		}()
	}
	t.Logf("2 busy loops: %s", count())
	close(stop)
	wg.Wait()
}

// TestGitUserDirHEADEntries: each init of a guarded sandbox has its
// entries in the kernel rule's map from before its shell starts; a
// rebuilt shell's init replaces the old one's (which exited), and
// Destroy removes the last.
func TestGitUserDirHEADEntries(t *testing.T) {
	kernelRuleOrSkip(t)
	if sharedKernelRule(slog.Default()) == nil {
		t.Skipf("the kernel rule's entries: the kernel cannot load it here (%v), and the init's rule has none (each init serves its own sandbox)", kernelRuleErr)
	}
	preferKernelRule = true
	t.Cleanup(func() { preferKernelRule = false })
	rule, ok := sharedKernelRule(slog.Default()).(interface{ Len() int })
	if !ok {
		t.Fatal("the kernel rule does not count its entries (Len)")
	}
	base := rule.Len()
	d := newDriver(t, NativeOptions{})
	ws, _, _ := userDir(t)
	b := newBox(t, d, Spec{Workspace: ws, Owner: &User{UID: userDirOwner, GID: userDirOwner}})
	one := rule.Len() - base
	if one < 1 {
		t.Fatalf("%d entries for a running sandbox", one)
	}
	for range 3 {
		b.term.Close()
		term, err := terminal.New(t.Context(), termOptions(b.sb))
		if err != nil {
			t.Fatal(err)
		}
		b.term = term
		b.must("true")
	}
	if n := rule.Len() - base; n != one {
		t.Errorf("%d entries after 3 rebuilt shells, want %d", n, one)
	}
	b.term.Close()
	if err := b.sb.Destroy(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := rule.Len() - base; n != 0 {
		t.Errorf("%d entries after Destroy", n)
	}
}

// TestWorkspaceDevs: the kernel rule's filesystems for a workspace are
// its own (as stat gives it) and those mounted below it, not others.
func TestWorkspaceDevs(t *testing.T) {
	requireRoot(t)
	ws := t.TempDir()
	sub := filepath.Join(ws, "a", "sub")
	os.MkdirAll(sub, 0o755)
	if err := unix.Mount("wsdevs", sub, "tmpfs", 0, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Unmount(sub, unix.MNT_DETACH) })
	other := t.TempDir()
	if err := unix.Mount("wsdevs", other, "tmpfs", 0, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Unmount(other, unix.MNT_DETACH) })
	devs, err := workspaceDevs(ws)
	if err != nil {
		t.Fatal(err)
	}
	dev := func(p string) uint64 {
		var st unix.Stat_t
		if err := unix.Stat(p, &st); err != nil {
			t.Fatal(err)
		}
		return st.Dev
	}
	if !slices.Contains(devs, dev(ws)) || !slices.Contains(devs, dev(sub)) || slices.Contains(devs, dev(other)) {
		t.Errorf("devs %v: want %d and %d, not %d", devs, dev(ws), dev(sub), dev(other))
	}
}
