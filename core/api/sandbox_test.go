package api_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harnessd/harnessd/core/api"
	"github.com/harnessd/harnessd/core/config"
	"github.com/harnessd/harnessd/core/daemon"
	"github.com/harnessd/harnessd/core/event"
	"github.com/harnessd/harnessd/core/python"
	"github.com/harnessd/harnessd/core/sandbox"
)

func nativeConfig(t *testing.T) config.Config {
	cfg := testConfig(t, t.TempDir())
	cfg.Sandbox.Driver = config.DriverNative
	cfg.Sandbox.PoolSize = 2
	cfg.Sandbox.MemoryMB = 256
	cfg.Sandbox.Pids = 128
	// What is tested here is the sandbox itself: no policy refuses the
	// attempts first (TestHooks has the policies).
	cfg.Hooks.Builtin = false
	return cfg
}

// TestSandboxedSessions: with the native driver each session's shell runs
// in its own sandbox, sessions come from the warm pool, and deleting one
// leaves none of its processes.
func TestSandboxedSessions(t *testing.T) {
	cfg := nativeConfig(t)
	td := startDaemon(t, cfg)
	ctx := context.Background()
	time.Sleep(500 * time.Millisecond) // let the pool fill
	a, err := td.cl.CreateSession(ctx, daemon.CreateRequest{ID: "a"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := td.cl.CreateSession(ctx, daemon.CreateRequest{ID: "b"})
	if err != nil {
		t.Fatal(err)
	}
	var started event.SandboxStarted
	td.cl.Events(ctx, "a", 0, false, func(ev event.Event) error {
		if s, ok := ev.Payload.(event.SandboxStarted); ok {
			started = s
		}
		return nil
	})
	if started.Driver != "native" || started.Workdir != "/workspace" || !strings.HasPrefix(started.SandboxID, "w") {
		t.Errorf("sandbox_started %+v: want a native sandbox from the warm pool (id w…)", started)
	}
	out := run(t, td.cl, "a", "echo secret-a > mine.txt; cat /etc/shadow 2>&1 | head -1; id -u; ls /workspace")
	if !strings.Contains(out.Output, "Permission denied") || !strings.Contains(out.Output, "mine.txt") || out.Cwd != "/workspace" {
		t.Errorf("inside a: %+v", out)
	}
	if got, err := os.ReadFile(filepath.Join(a.Workspace, "mine.txt")); err != nil || string(got) != "secret-a\n" {
		t.Errorf("a's workspace on the host: %q %v", got, err)
	}
	if out := run(t, td.cl, "b", "ls /workspace; cat /proc/1/cmdline | tr '\\0' ' '"); strings.Contains(out.Output, "mine.txt") {
		t.Errorf("b sees a's workspace: %q", out.Output)
	}
	if out := run(t, td.cl, "a", "touch /usr/x 2>&1; (exec 3<>/dev/tcp/127.0.0.1/22) 2>&1 | head -1"); !strings.Contains(out.Output, "Read-only") {
		t.Errorf("a: %q", out.Output)
	}
	pid := a.PID
	if err := td.cl.DeleteSession(ctx, "a", false); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, 0); err == nil {
		t.Errorf("a's shell (pid %d) still alive after delete", pid)
	}
	if _, err := os.Stat(filepath.Join(a.Workspace, "mine.txt")); err != nil {
		t.Errorf("the workspace must outlive the sandbox until purged: %v", err)
	}
	if err := td.cl.DeleteSession(ctx, "a", true); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(a.Workspace); !os.IsNotExist(err) {
		t.Errorf("purged workspace %s: %v", a.Workspace, err)
	}
	if out := run(t, td.cl, "b", "echo still here"); out.Output != "still here\n" {
		t.Errorf("b after a's end: %+v", out)
	}
	_ = b
}

// TestProxyNetwork: with network = "proxy", a sandbox reaches an allowed
// host only through the daemon's proxy, a refused one gets 403, and both
// decisions are events in the session's log.
func TestProxyNetwork(t *testing.T) {
	if _, err := os.Stat("/usr/bin/curl"); err != nil {
		t.Fatal("curl is needed (scripts/test installs it)")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "hello from the host")
	}))
	defer srv.Close()
	cfg := nativeConfig(t)
	cfg.Sandbox.PoolSize = 0
	cfg.Sandbox.Network = config.NetworkProxy
	cfg.Sandbox.Proxy.Allow = []string{"allowed.test"}
	cfg.Sandbox.Proxy.Ports = []int{80}
	td := startDaemonWith(t, cfg, daemon.Options{ProxyHosts: map[string]string{"allowed.test": srv.Listener.Addr().String()}})
	ctx := context.Background()
	if _, err := td.cl.CreateSession(ctx, daemon.CreateRequest{ID: "net"}); err != nil {
		t.Fatal(err)
	}
	if out := run(t, td.cl, "net", "curl -s http://allowed.test/"); out.Output != "hello from the host" {
		t.Errorf("allowed: %+v", out)
	}
	if out := run(t, td.cl, "net", "curl -s -w ' %{http_code}' http://denied.test/"); !strings.Contains(out.Output, "not in the allowlist") || !strings.HasSuffix(out.Output, " 403") {
		t.Errorf("denied: %+v", out)
	}
	hostPort := strings.TrimPrefix(srv.URL, "http://")
	if out := run(t, td.cl, "net", "curl -s --noproxy '*' --max-time 2 http://"+hostPort+"/ || echo direct-failed"); !strings.Contains(out.Output, "direct-failed") {
		t.Errorf("direct connection to the host's loopback: %+v", out)
	}
	td.cl.DeleteSession(ctx, "net", false)
	var seen []string
	td.cl.Events(ctx, "net", 0, false, func(ev event.Event) error {
		if n, ok := ev.Payload.(event.NetConnect); ok {
			seen = append(seen, fmt.Sprintf("%s allowed=%v closed=%v", n.Host, n.Allowed, n.Closed))
		}
		return nil
	})
	want := "[allowed.test allowed=true closed=false allowed.test allowed=true closed=true denied.test allowed=false closed=false]"
	if fmt.Sprint(seen) != want {
		t.Errorf("net_connect events %v, want %s", seen, want)
	}
}

// TestSandboxOwner: files a sandbox makes are never the host's root's. A
// session a non-root client creates makes files that are that client's
// (podman's keep-id); root's sessions make files of the sandbox's
// dedicated unprivileged user. A setuid bit set inside grants nothing.
func TestSandboxOwner(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Fatal("curl is needed (scripts/test installs it): ", err)
	}
	cfg := nativeConfig(t)
	os.Chmod(cfg.Daemon.DataDir, 0o755)
	os.Chmod(filepath.Dir(cfg.Daemon.DataDir), 0o755) // t.TempDir's parent is 0700
	cfg.Daemon.AllowUIDs = []int{65533}
	td := startDaemon(t, cfg)
	os.Chmod(td.socket, 0o666)
	ctx := context.Background()

	cmd := exec.Command(curl, "-s", "--unix-socket", td.socket, "-X", "POST", "http://x/v1/sessions", "-d", `{"id":"mine"}`)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65533, Gid: 65532}}
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), `"id":"mine"`) {
		t.Fatalf("create as uid 65533: %v %s", err, out)
	}
	root, err := td.cl.CreateSession(ctx, daemon.CreateRequest{ID: "root"})
	if err != nil {
		t.Fatal(err)
	}
	mine, err := td.cl.Session(ctx, "mine")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		info     daemon.Info
		uid, gid uint32
	}{
		{mine, 65533, 65532},
		{root, sandbox.DefaultUID, sandbox.DefaultGID},
	} {
		out := run(t, td.cl, c.info.ID, "echo x > made.txt && mkdir d && cp /usr/bin/id d/tool && chmod 755 d/tool && id -u")
		if out.ExitCode != 0 || !strings.HasSuffix(out.Output, "0\n") {
			t.Fatalf("%s: %+v", c.info.ID, out)
		}
		for _, name := range []string{"made.txt", "d", "d/tool"} {
			fi, err := os.Stat(filepath.Join(c.info.Workspace, name))
			if err != nil {
				t.Fatal(err)
			}
			st := fi.Sys().(*syscall.Stat_t)
			if st.Uid != c.uid || st.Gid != c.gid {
				t.Errorf("%s: %s owned by %d:%d on the host, want %d:%d", c.info.ID, name, st.Uid, st.Gid, c.uid, c.gid)
			}
		}
	}
}

// TestClientWorkspace: a session can work in a client's own directory,
// bound at /workspace, when the client (by its peer credentials) may write
// it; what the agent writes there belongs to the client; purging the
// session leaves the directory.
func TestClientWorkspace(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to connect as another uid")
	}
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatal("curl is needed (scripts/test installs it): ", err)
	}
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	os.Chmod(filepath.Dir(dir), 0o755)
	cfg := nativeConfig(t)
	cfg.Daemon.DataDir = filepath.Join(dir, "data")
	cfg.Daemon.Socket = filepath.Join(dir, "h.sock")
	cfg.Daemon.AllowUIDs = []int{65533, 65534}
	td := startDaemon(t, cfg)
	os.Chmod(td.socket, 0o666)
	project := filepath.Join(dir, "project")
	os.Mkdir(project, 0o755)
	os.WriteFile(filepath.Join(project, "README"), []byte("mine\n"), 0o644)
	os.Chown(project, 65533, 65533)
	os.Chown(filepath.Join(project, "README"), 65533, 65533)

	// The requester's home, and what is hidden in it, run code on the
	// host (.bashrc, .gitconfig): never a workspace.
	root, err := user.LookupId("0")
	if err != nil {
		t.Fatal(err)
	}
	rootHome := root.HomeDir
	hidden, err := os.MkdirTemp(rootHome, ".harnessd-test-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(hidden)

	as := func(uid int, body string) (int, string) {
		return curlAs(t, td.socket, uid, "POST", "/v1/sessions", body)
	}
	for _, c := range []struct {
		uid  int
		ws   string
		want string
	}{
		{65534, project, "may not write it"},
		{65533, "project", "must be an absolute path"},
		{65533, filepath.Join(dir, "missing"), "no such file"},
		{65533, filepath.Join(project, "README"), "not a directory"},
		{0, cfg.Daemon.DataDir, "harnessd's own data"},
		{0, "/", "root directory"},
		{65533, "/tmp", "every user may write"},
		{0, rootHome, "home directory"},
		{0, hidden, "home directory"},
	} {
		if code, body := as(c.uid, fmt.Sprintf(`{"workspace":%q}`, c.ws)); code != 400 || !strings.Contains(body, c.want) {
			t.Errorf("uid %d, workspace %s: %d %s, want 400 %q", c.uid, c.ws, code, body, c.want)
		}
	}
	code, body := as(65533, fmt.Sprintf(`{"id":"mine","workspace":%q}`, project))
	if code != 201 {
		t.Fatalf("%d %s", code, body)
	}
	out := run(t, td.cl, "mine", "cat README && pwd && echo made > new.txt && id -u")
	if out.Output != "mine\n/workspace\n0\n" {
		t.Fatalf("%q", out.Output)
	}
	st, err := os.Stat(filepath.Join(project, "new.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if uid := st.Sys().(*syscall.Stat_t).Uid; uid != 65533 {
		t.Errorf("the agent's file belongs to uid %d on the host, want the client's 65533", uid)
	}
	if err := td.cl.DeleteSession(context.Background(), "mine", true); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(project, "README")); err != nil {
		t.Fatalf("purging the session removed the client's directory: %v", err)
	}
}

// TestOwnership: a session is its creator's (and root's, and the daemon
// user's): another allowed user neither sees it in lists nor reaches it,
// its runs, outputs or approvals, each answered 404 as if it did not exist.
func TestOwnership(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to connect as another uid")
	}
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatal("curl is needed (scripts/test installs it): ", err)
	}
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	cfg.Daemon.AllowUIDs = []int{65533, 65534}
	td := startDaemon(t, cfg)
	os.Chmod(td.socket, 0o666)
	os.Chmod(dir, 0o755)
	os.Chmod(filepath.Dir(dir), 0o755)
	as := func(uid int, method, path, body string) (int, string) {
		return curlAs(t, td.socket, uid, method, path, body)
	}
	if code, body := as(65533, "POST", "/v1/sessions", `{"id":"mine"}`); code != 201 || !strings.Contains(body, `"owner":65533`) {
		t.Fatalf("create as 65533: %d %s", code, body)
	}
	if code, body := as(65533, "POST", "/v1/sessions/mine/actions", `{"kind":"cmd_run","command":"seq 1 5000"}`); code != 200 || !strings.Contains(body, `"output_id":"o`) {
		t.Fatalf("own action: %d %.300s", code, body)
	}
	out := regexp.MustCompile(`"output_id":"(o\d+)"`).FindStringSubmatch(func() string { _, b := as(65533, "GET", "/v1/sessions/mine/events", ""); return b }())
	if out == nil {
		t.Fatal("no output id in the owner's events")
	}
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/v1/sessions/mine", ""},
		{"DELETE", "/v1/sessions/mine", ""},
		{"POST", "/v1/sessions/mine/actions", `{"kind":"cmd_run","command":"echo intruder"}`},
		{"POST", "/v1/sessions/mine/replies", `{"text":"hi"}`},
		{"GET", "/v1/sessions/mine/events", ""},
		{"GET", "/v1/sessions/mine/runs", ""},
		{"GET", "/v1/outputs/" + out[1], ""},
		{"POST", "/v1/approvals/mine/1", `{"approve":true}`},
	} {
		if code, body := as(65534, c.method, c.path, c.body); code != 404 || !strings.Contains(body, "not_found") {
			t.Errorf("65534 %s %s: %d %.200s, want 404", c.method, c.path, code, body)
		}
	}
	if _, body := as(65534, "GET", "/v1/sessions", ""); strings.Contains(body, "mine") {
		t.Errorf("65534 lists another user's session: %s", body)
	}
	// The owner and root still reach it; nothing the other user tried ran.
	if code, body := as(65533, "GET", "/v1/sessions", ""); code != 200 || !strings.Contains(body, "mine") {
		t.Errorf("owner's list: %d %s", code, body)
	}
	if code, body := as(0, "GET", "/v1/sessions/mine/events", ""); code != 200 || strings.Contains(body, "intruder") {
		t.Errorf("root's read: %d, or the intruder's action was recorded: %.300s", code, body)
	}
}

// curlAs sends one request to the daemon's socket with curl running as
// uid (its primary group the same number), as another local user's client
// would, and returns the status and body.
func curlAs(t *testing.T, socket string, uid int, method, path, body string) (int, string) {
	t.Helper()
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Fatal("curl is needed (scripts/test installs it): ", err)
	}
	args := []string{"-s", "-o", "-", "-w", "\n%{http_code}", "--unix-socket", socket, "-X", method}
	if body != "" {
		args = append(args, "-d", body)
	}
	cmd := exec.Command(curl, append(args, "http://x"+path)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("curl as %d: %v", uid, err)
	}
	i := strings.LastIndexByte(string(out), '\n')
	var code int
	fmt.Sscan(string(out[i+1:]), &code)
	return code, string(out[:i])
}

// TestSessionNetwork: a session may narrow sandbox.network, never widen
// it; a narrowed session's sandbox has the network it asked for.
func TestSessionNetwork(t *testing.T) {
	cfg := nativeConfig(t)
	cfg.Sandbox.Network = config.NetworkHost
	td := startDaemon(t, cfg)
	ctx := context.Background()
	if _, err := td.cl.CreateSession(ctx, daemon.CreateRequest{ID: "open"}); err != nil {
		t.Fatal(err)
	}
	if _, err := td.cl.CreateSession(ctx, daemon.CreateRequest{ID: "closed", Network: config.NetworkNone}); err != nil {
		t.Fatal(err)
	}
	ifaces := `awk -F: 'NR>2 {gsub(/ /, "", $1); printf "%s ", $1}' /proc/net/dev`
	open := run(t, td.cl, "open", ifaces)
	closed := run(t, td.cl, "closed", ifaces)
	if closed.Output != "lo " || open.Output == "lo " {
		t.Fatalf("interfaces: host network %q, narrowed to none %q", open.Output, closed.Output)
	}
	// Widening, and what is not a network, are refused.
	td2 := startDaemon(t, nativeConfig(t)) // sandbox.network none
	for net, want := range map[string]string{config.NetworkHost: "more open", config.NetworkProxy: "more open", "wifi": "want none, proxy or host"} {
		_, err := td2.cl.CreateSession(ctx, daemon.CreateRequest{Network: net})
		var ae *api.Error
		if !errors.As(err, &ae) || ae.Status != 400 || !strings.Contains(ae.Message, want) {
			t.Errorf("network %q on a none daemon: %v, want 400 %q", net, err, want)
		}
	}
	if _, err := td2.cl.CreateSession(ctx, daemon.CreateRequest{Network: config.NetworkNone}); err != nil {
		t.Errorf("asking for the configured network: %v", err)
	}
}

// TestSessionProfile makes a session with a [profiles.NAME] of its own and
// checks, from inside the sandbox, that its settings replaced [sandbox]'s
// (the private /tmp's size, the workspace's disk, the network), that the
// session and its hooks know its profile, and that a wrong name or a
// wider network is a 400 that says what there is.
func TestSessionProfile(t *testing.T) {
	cfg := nativeConfig(t)
	cfg.Sandbox.Network = config.NetworkHost
	cfg.Sandbox.PoolSize = 1 // a profile's session must not take [sandbox]'s pooled sandbox
	cfg.Profiles["tight"] = config.Profile{Network: config.NetworkNone, TmpMB: 16, DiskMB: 64, Pids: 64}
	pol := filepath.Join(t.TempDir(), "policies")
	os.Mkdir(pol, 0o755)
	policy := `harness.on("action.cmd_run", function(ev)
  if ev.command == "which-profile" then return harness.veto("profile=" .. harness.session.profile) end
end)`
	if err := os.WriteFile(filepath.Join(pol, "p.lua"), []byte(policy), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg.Hooks.Dirs = []string{pol}
	td := startDaemon(t, cfg)
	ctx := context.Background()
	info, err := td.cl.CreateSession(ctx, daemon.CreateRequest{ID: "tight", Profile: "tight"})
	if err != nil {
		t.Fatal(err)
	}
	if info.Profile != "tight" {
		t.Errorf("info.Profile = %q", info.Profile)
	}
	if _, err := td.cl.CreateSession(ctx, daemon.CreateRequest{ID: "plain"}); err != nil {
		t.Fatal(err)
	}
	probe := `echo "tmp=$(df -m --output=size /tmp | tail -1 | tr -d ' ') ifaces=$(awk -F: 'NR>2 {gsub(/ /, "", $1); printf "%s,", $1}' /proc/net/dev)"`
	tight := strings.TrimSpace(run(t, td.cl, "tight", probe).Output)
	plain := strings.TrimSpace(run(t, td.cl, "plain", probe).Output)
	if !strings.Contains(tight, "tmp=16 ") || !strings.HasSuffix(tight, "ifaces=lo,") {
		t.Errorf("inside the tight profile's sandbox: %q", tight)
	}
	if strings.Contains(plain, "tmp=16 ") || strings.HasSuffix(plain, "ifaces=lo,") {
		t.Errorf("inside a session without a profile: %q", plain)
	}
	if os.Geteuid() == 0 {
		// The workspace is a filesystem of the profile's size.
		if out := strings.TrimSpace(run(t, td.cl, "tight", `df -m --output=size /workspace | tail -1 | tr -d ' '`).Output); out == "" || len(out) > 2 {
			t.Errorf("the tight profile's 64 MiB workspace is %q MiB", out)
		}
	}
	ev, err := td.cl.Act(ctx, "tight", event.SourceAgent, event.CmdRun{Command: "which-profile"})
	if v, ok := ev.Payload.(event.HookVeto); err != nil || !ok || v.Reason != "profile=tight" {
		t.Errorf("a hook's harness.session.profile: %+v %v", ev.Payload, err)
	}
	all, err := td.cl.Profiles(ctx)
	if err != nil || len(all) != 2 || all[1].Name != "tight" || all[1].TmpMB != 16 || all[1].MemoryMB != cfg.Sandbox.MemoryMB || all[0].Name != "small" {
		t.Errorf("profiles: %+v %v", all, err)
	}
	for _, tc := range []struct {
		req  daemon.CreateRequest
		want string
	}{
		{daemon.CreateRequest{Profile: "huge"}, `profile "huge" is not in harness.toml's [profiles] (have small, tight)`},
		{daemon.CreateRequest{Profile: "tight", Network: config.NetworkProxy}, "more open than profile tight's network (none)"},
	} {
		_, err := td.cl.CreateSession(ctx, tc.req)
		var ae *api.Error
		if !errors.As(err, &ae) || ae.Status != 400 || !strings.Contains(ae.Message, tc.want) {
			t.Errorf("%+v: %v, want 400 %q", tc.req, err, tc.want)
		}
	}
}

// TestPythonInNativeSession runs cells through the API in a native
// session, from the warm pool: Python works in the sandbox's /workspace as
// the shell does, sees what the shell wrote and the shell sees what it
// wrote, and does not see the host.
func TestPythonInNativeSession(t *testing.T) {
	td := startDaemon(t, nativeConfig(t))
	ctx := context.Background()
	info, err := td.cl.CreateSession(ctx, daemon.CreateRequest{ID: "py"})
	if err != nil {
		t.Fatal(err)
	}
	cell := func(code string) python.Result {
		t.Helper()
		obs, err := td.cl.Act(ctx, "py", event.SourceAgent, python.Run{Code: code})
		if err != nil {
			t.Fatal(err)
		}
		r, ok := obs.Payload.(python.Result)
		if !ok {
			t.Fatalf("%q: got %s %+v", code, obs.Kind(), obs.Payload)
		}
		return r
	}
	run(t, td.cl, "py", "echo from-shell > shell.txt")
	r := cell("import os\nprint(os.getcwd(), open('shell.txt').read().strip(), os.path.exists('/proc/1/root' + " + fmt.Sprintf("%q", info.Workspace) + "))\n_ = open('py.txt', 'w').write('from-python')")
	if r.ExitCode != 0 || strings.TrimSpace(r.Output) != "/workspace from-shell False" || r.Unsandboxed {
		t.Fatalf("a cell in the sandbox: %+v", r)
	}
	if out := run(t, td.cl, "py", "cat py.txt"); out.Output != "from-python" {
		t.Errorf("the shell reads %q", out.Output)
	}
	if b, err := os.ReadFile(filepath.Join(info.Workspace, "py.txt")); err != nil || string(b) != "from-python" {
		t.Errorf("on the host: %q %v", b, err)
	}
	if r := cell("import os; os.getppid() != 0 and open('/proc/1/cmdline').read().split('\\0')[0]"); !strings.Contains(r.Output, "harnessd") {
		t.Errorf("pid 1 of Python's pid namespace is %q, want the sandbox's init", r.Output)
	}
}
