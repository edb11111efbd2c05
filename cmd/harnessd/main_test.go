package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/harnessd/harnessd/cmd/harnessd/cli"
	"github.com/harnessd/harnessd/core/daemon"
	"github.com/harnessd/harnessd/core/sandbox"
	"github.com/harnessd/harnessd/core/systemd/sdtest"
	"github.com/harnessd/harnessd/plugins/builtin"
)

// The test binary doubles as harnessd: with HARNESSD_BE_MAIN=1 it runs the
// real command line, so these tests drive the real daemon and the real
// client as separate processes, as a user would.
func TestMain(m *testing.M) {
	if os.Getenv("HARNESSD_BE_MAIN") == "1" || (len(os.Args) > 1 && (os.Args[1] == sandbox.InitCommand || os.Args[1] == builtin.Command)) {
		main()
		return
	}
	os.Exit(m.Run())
}

type harness struct {
	t      *testing.T
	dir    string
	socket string
	config string
}

func newHarness(t *testing.T) *harness {
	dir := t.TempDir()
	h := &harness{t: t, dir: dir, socket: filepath.Join(dir, "h.sock"), config: filepath.Join(dir, "harness.toml")}
	// The sandbox driver is not what these tests are about.
	if err := os.WriteFile(h.config, []byte("[sandbox]\ndriver = \"none\"\n[daemon]\nshutdown_grace = \"1s\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return h
}

func (h *harness) command(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "HARNESSD_BE_MAIN=1", "HARNESSD_SOCKET="+h.socket)
	return cmd
}

// serve starts `harnessd serve` and waits until it answers.
func (h *harness) serve() *exec.Cmd {
	h.t.Helper()
	cmd, _ := h.serveLogged()
	return cmd
}

// serveLogged is serve, also returning the daemon's log as it grows.
func (h *harness) serveLogged() (*exec.Cmd, *syncBuffer) {
	h.t.Helper()
	cmd := h.command("serve", "--config", h.config, "--data", h.dir, "--socket", h.socket)
	logs := new(syncBuffer)
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
		if h.t.Failed() {
			h.t.Logf("daemon log:\n%s", logs.String())
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, _, code := h.run("session", "ls"); code == 0 {
			return cmd, logs
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("daemon did not answer in 20s:\n%s", logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (h *harness) run(args ...string) (stdout, stderr string, code int) {
	h.t.Helper()
	cmd := h.command(args...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		code = exit.ExitCode()
	default:
		h.t.Fatal(err)
	}
	return o.String(), e.String(), code
}

func (h *harness) must(args ...string) string {
	h.t.Helper()
	out, errOut, code := h.run(args...)
	if code != 0 {
		h.t.Fatalf("harnessd %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

func TestCLI(t *testing.T) {
	h := newHarness(t)
	srv := h.serve()

	if id := strings.TrimSpace(h.must("session", "new", "--id", "w", "--label", "task=cli")); id != "w" {
		t.Fatalf("session new printed %q", id)
	}
	h.must("exec", "w", "--", "cd /tmp && export A=hello")
	out, _, code := h.run("exec", "w", "--", `echo "$A from $PWD"; (exit 3)`)
	if out != "hello from /tmp\n" || code != 3 {
		t.Fatalf("exec: %q exit %d (want the command's exit code)", out, code)
	}
	// exec prints the whole output as it comes, as ssh does; --trimmed
	// prints what the model was shown.
	out, errOut, code := h.run("exec", "w", "--", "seq", "1", "3000")
	if code != 0 || strings.Count(out, "\n") != 3000 || !strings.HasSuffix(out, "2999\n3000\n") || errOut != "" {
		t.Fatalf("exec: exit %d, %d lines\n%s", code, strings.Count(out, "\n"), errOut)
	}
	out, errOut, code = h.run("exec", "--trimmed", "w", "--", "seq", "1", "3000")
	m := regexp.MustCompile(`harnessd output (o\d+)`).FindStringSubmatch(errOut)
	if code != 0 || !strings.Contains(out, "lines (") || m == nil {
		t.Fatalf("trimmed exec: exit %d\n%s\n%s", code, out, errOut)
	}
	if got := h.must("output", m[1], "--lines", "1500-1502"); got != "1500\n1501\n1502\n" {
		t.Fatalf("output --lines: %q", got)
	}
	if got := h.must("output", m[1]); strings.Count(got, "\n") != 3000 {
		t.Fatalf("whole output: %d lines", strings.Count(got, "\n"))
	}
	// Still running at the soft timeout: the documented status, then poll.
	// Its output is printed as it comes, long before exec returns.
	long := h.command("exec", "w", "--", "sleep 0.2; echo late; sleep 12")
	var longErr bytes.Buffer
	long.Stderr = &longErr
	pipe, err := long.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := long.Start(); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	line, err := bufio.NewReader(pipe).ReadString('\n')
	if err != nil || line != "late\n" {
		t.Fatalf("exec's first line: %q %v", line, err)
	}
	if d := time.Since(began); d > 4*time.Second {
		t.Fatalf("exec printed the first line after %v; want it as it was printed (the call returns at the 10 s soft timeout)", d)
	}
	err = long.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != cli.ExitStillRunning || !strings.Contains(longErr.String(), "still running") {
		t.Fatalf("long command: %v %q", err, longErr.String())
	}
	h.run("exec", "--input", "w", "--", "C-c")
	// A hook's refusal: nothing ran, the reason on stderr, its own status.
	_, errOut, code = h.run("exec", "w", "--", "rm -rf /")
	if code != cli.ExitVetoed || !strings.Contains(errOut, "not run:") || !strings.Contains(errOut, "dangerous.lua") {
		t.Fatalf("vetoed exec: exit %d %q", code, errOut)
	}

	var infos []daemon.Info
	if err := json.Unmarshal([]byte(h.must("session", "ls", "--json")), &infos); err != nil || len(infos) != 1 || infos[0].Labels["task"] != "cli" {
		t.Fatalf("session ls --json: %+v %v", infos, err)
	}
	if got := h.must("session", "show", "w"); !strings.Contains(got, "state") || !strings.Contains(got, "live") {
		t.Fatalf("session show: %q", got)
	}
	lines := strings.Split(strings.TrimSpace(h.must("events", "w", "--json")), "\n")
	for _, l := range lines {
		if !json.Valid([]byte(l)) {
			t.Fatalf("events --json: not JSON: %q", l)
		}
	}
	if got := h.must("events", "w"); !strings.Contains(got, "cmd_output") || !strings.Contains(got, "(answers #") {
		t.Fatalf("events: %q", got)
	}

	// A follower sees the deletion and exits 0.
	follow := h.command("events", "-f", "w")
	var fo bytes.Buffer
	follow.Stdout = &fo
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	h.must("exec", "w", "--", "echo watched; sleep 0.3")
	h.must("session", "rm", "w")
	done := make(chan error, 1)
	go func() { done <- follow.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("events -f: %v", err)
		}
	case <-time.After(10 * time.Second):
		follow.Process.Kill()
		t.Fatal("events -f did not end when the session was deleted")
	}
	if !strings.Contains(lastLine(fo.String()), "sandbox_stopped") {
		t.Fatalf("follower's last line: %q", lastLine(fo.String()))
	}
	// The follower showed the command's output as it ran: between the
	// command and its observation.
	if m := regexp.MustCompile(`(?s)\$ echo watched.*\n      \| watched\n.*cmd_output`).FindString(fo.String()); m == "" {
		t.Fatalf("follower did not show the output in progress:\n%s", fo.String())
	}
	_, errOut, code = h.run("exec", "w", "--", "true")
	if code != 1 || !strings.Contains(errOut, "session_ended") {
		t.Fatalf("exec on a deleted session: %d %q", code, errOut)
	}
	out, errOut, code = h.run("replay", "w")
	if code != 0 || !strings.Contains(out, "$ seq 1 3000") || !strings.Contains(errOut, "no gaps") {
		t.Fatalf("replay: %d\n%s\n%s", code, out, errOut)
	}

	// Plain curl works too.
	if curl, err := exec.LookPath("curl"); err == nil {
		b, err := exec.Command(curl, "-s", "--unix-socket", h.socket, "http://localhost/v1/sessions/w").Output()
		if err != nil || !strings.Contains(string(b), `"state":"stopped"`) {
			t.Fatalf("curl: %s %v", b, err)
		}
	} else {
		t.Fatal("curl is needed (scripts/test installs it)")
	}

	// SIGTERM: a clean stop, exit 0, the socket gone.
	srv.Process.Signal(syscall.SIGTERM)
	if err := srv.Wait(); err != nil {
		t.Fatalf("serve after SIGTERM: %v", err)
	}
	if _, err := os.Stat(h.socket); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("socket after SIGTERM: %v", err)
	}
}

// syncBuffer is a bytes.Buffer a child's output can be read from while it
// runs.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	return s[strings.LastIndexByte(s, '\n')+1:]
}

func TestCLINotRunning(t *testing.T) {
	h := newHarness(t)
	_, errOut, code := h.run("session", "ls")
	if code != 3 || !strings.Contains(errOut, "is harnessd serve running? socket: "+h.socket) {
		t.Fatalf("exit %d: %q", code, errOut)
	}
	_, errOut, code = h.run("frobnicate")
	if code != 2 || !strings.Contains(errOut, "unknown command") {
		t.Fatalf("exit %d: %q", code, errOut)
	}
	os.WriteFile(h.config, []byte("[daemon]\nmax_body = 1\n"), 0o644)
	_, errOut, code = h.run("serve", "--config", h.config)
	if code != 2 || !strings.Contains(errOut, h.config+":2: daemon.max_body") {
		t.Fatalf("bad config: exit %d: %q", code, errOut)
	}
}

// TestKillAndRestart: after SIGKILL, the next daemon marks the live
// session interrupted, and its history is still readable.
func TestKillAndRestart(t *testing.T) {
	h := newHarness(t)
	srv := h.serve()
	h.must("session", "new", "--id", "k")
	h.must("exec", "k", "--", "echo before the crash")
	srv.Process.Kill()
	srv.Wait()
	h.serve()
	var info daemon.Info
	if err := json.Unmarshal([]byte(h.must("session", "show", "k", "--json")), &info); err != nil || info.State != daemon.StateInterrupted {
		t.Fatalf("after restart: %+v %v", info, err)
	}
	out := h.must("replay", "k")
	if !strings.Contains(out, "before the crash") || !strings.Contains(out, "crashed or was killed") {
		t.Fatalf("replay after crash:\n%s", out)
	}
}

// TestDemo runs the README's first command.
func TestDemo(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "demo")
	cmd.Env = append(os.Environ(), "HARNESSD_BE_MAIN=1", "TMPDIR="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, out)
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	var last string
	for sc.Scan() {
		last = sc.Text()
	}
	if !regexp.MustCompile(`^all [0-9]+ acts passed$`).MatchString(last) {
		t.Fatalf("demo's last line %q:\n%s", last, out)
	}
}

// TestSystemd runs `harnessd serve` as systemd would start it from
// harnessd.socket: the socket made by the manager and passed as fd 3
// (LISTEN_FDS), READY=1 expected on NOTIFY_SOCKET once it serves, watchdog
// pings, and STOPPING=1 then exit 0 on SIGTERM.
func TestSystemd(t *testing.T) {
	h := newHarness(t)
	m := sdtest.New(t)
	m.Listen(t, h.socket)
	cmd := h.command("serve", "--config", h.config, "--data", h.dir)
	var logs bytes.Buffer
	cmd.Stderr = &logs
	m.Prepare(cmd, 2*time.Second)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
		if t.Failed() {
			t.Logf("daemon log:\n%s\nnotify messages: %q", logs.String(), m.Messages())
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := m.WaitFor(ctx, "READY=1"); err != nil {
		t.Fatal(err)
	}
	// Ready means serving: the first request works at once.
	if id := strings.TrimSpace(h.must("session", "new", "--id", "sd")); id != "sd" {
		t.Fatalf("session new: %q", id)
	}
	if err := m.WaitFor(ctx, "WATCHDOG=1"); err != nil {
		t.Fatal(err)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := m.WaitFor(ctx, "STOPPING=1"); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	}
	if !strings.Contains(logs.String(), "socket activated") {
		t.Errorf("the daemon did not say it was socket-activated:\n%s", logs.String())
	}
	// The socket belongs to the manager: still there for the next start.
	if _, err := os.Stat(h.socket); err != nil {
		t.Fatalf("activated socket removed by the daemon: %v", err)
	}
}

// TestUnitCapabilities runs the real daemon under the CapabilityBoundingSet
// and NoNewPrivileges of contrib/systemd/harnessd.service (applied with
// setpriv) and makes a native sandbox: the unit must leave the daemon
// what sandboxes need. The other hardening options (ProtectSystem=,
// PrivateTmp=, …) need systemd as pid 1 and are not exercised here.
func TestUnitCapabilities(t *testing.T) {
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Fatal("setpriv not found: install it with `apt-get install -y util-linux`")
	}
	unit, err := os.ReadFile("../../contrib/systemd/harnessd.service")
	if err != nil {
		t.Fatal(err)
	}
	var caps []string
	nnp := false
	for _, line := range strings.Split(string(unit), "\n") {
		if v, ok := strings.CutPrefix(line, "CapabilityBoundingSet="); ok {
			for _, c := range strings.Fields(v) {
				caps = append(caps, "+"+strings.ToLower(strings.TrimPrefix(c, "CAP_")))
			}
		}
		if line == "NoNewPrivileges=yes" {
			nnp = true
		}
	}
	if len(caps) == 0 || !nnp {
		t.Fatalf("the unit sets caps %v, NoNewPrivileges %v", caps, nnp)
	}
	h := newHarness(t)
	os.WriteFile(h.config, []byte("[sandbox]\ndriver = \"native\"\npool_size = 0\n"), 0o644)
	args := []string{"--bounding-set=-all," + strings.Join(caps, ","), "--no-new-privs", "--", os.Args[0],
		"serve", "--config", h.config, "--data", h.dir, "--socket", h.socket}
	cmd := exec.Command(setpriv, args...)
	cmd.Env = append(os.Environ(), "HARNESSD_BE_MAIN=1")
	logs := new(syncBuffer)
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
		if t.Failed() {
			t.Logf("daemon log:\n%s", logs.String())
		}
	}()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, _, code := h.run("session", "ls"); code == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("daemon did not answer")
		}
		time.Sleep(50 * time.Millisecond)
	}
	h.must("session", "new", "--id", "caps")
	out := h.must("exec", "caps", "--", "grep -E '^Cap(Eff|Bnd)' /proc/self/status; pwd")
	if !strings.Contains(out, "CapEff:\t0000000000000000") || !strings.HasSuffix(out, "/workspace\n") {
		t.Fatalf("inside the sandbox: %q", out)
	}
}

// TestStoreCompact: `harnessd store compact` refuses a store the daemon
// holds, and after a purge gives back the space the deleted session took.
func TestStoreCompact(t *testing.T) {
	h := newHarness(t)
	srv := h.serve()
	h.must("session", "new", "--id", "big")
	h.must("exec", "big", "--", "head -c 20000000 /dev/zero | base64 -w 100 | head -c 20000000")
	h.must("session", "rm", "big", "--purge")
	out, errOut, code := h.run("store", "compact", "--config", h.config, "--data", h.dir)
	if code != 1 || !strings.Contains(errOut, "stop harnessd first") {
		t.Fatalf("compact while served: exit %d\n%s%s", code, out, errOut)
	}
	srv.Process.Signal(syscall.SIGTERM)
	if err := srv.Wait(); err != nil {
		t.Fatalf("serve: %v", err)
	}
	db := filepath.Join(h.dir, "harnessd.db")
	before, err := os.Stat(db)
	if err != nil {
		t.Fatal(err)
	}
	out = h.must("store", "compact", "--config", h.config, "--data", h.dir)
	after, err := os.Stat(db)
	if err != nil {
		t.Fatal(err)
	}
	if after.Size() > before.Size()/4 || !strings.Contains(out, "->") {
		t.Fatalf("compact: %d -> %d bytes (%q): the purged output's space was not given back", before.Size(), after.Size(), out)
	}
	h.serve() // the compacted store opens
	if got := h.must("session", "ls"); strings.Contains(got, "big") {
		t.Fatalf("purged session listed after compact:\n%s", got)
	}
}

// TestSIGHUP: SIGHUP reloads harness.toml instead of killing the daemon:
// what can change live is applied, what cannot is named in the log, and a
// broken file leaves the running configuration in place.
func TestSIGHUP(t *testing.T) {
	h := newHarness(t)
	cmd, logs := h.serveLogged()
	waitLog := func(s string) {
		t.Helper()
		for end := time.Now().Add(10 * time.Second); !strings.Contains(logs.String(), s); {
			if time.Now().After(end) {
				t.Fatalf("log never said %q", s)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	os.WriteFile(h.config, []byte("[sandbox]\ndriver = \"none\"\nmemory_mb = 300\n[daemon]\nshutdown_grace = \"1s\"\nmax_sessions = 1\n"), 0o644)
	cmd.Process.Signal(syscall.SIGHUP)
	waitLog("configuration reloaded")
	if s := logs.String(); !strings.Contains(s, "daemon.max_sessions") || !strings.Contains(s, "only after a restart") || !strings.Contains(s, "sandbox.memory_mb") {
		t.Fatalf("reload log does not name what was applied and what needs a restart:\n%s", s)
	}
	h.must("session", "new", "--id", "one")
	if _, errOut, code := h.run("session", "new", "--id", "two"); code == 0 || !strings.Contains(errOut, "max_sessions") {
		t.Fatalf("max_sessions = 1 after reload: second session: exit %d %s", code, errOut)
	}
	os.WriteFile(h.config, []byte("[daemon\n"), 0o644)
	cmd.Process.Signal(syscall.SIGHUP)
	waitLog("configuration not reloaded")
	if _, _, code := h.run("session", "ls"); code != 0 || cmd.ProcessState != nil {
		t.Fatal("the daemon did not survive a SIGHUP with a broken file")
	}
}
