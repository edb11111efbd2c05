package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// tsSDKVersion is the @modelcontextprotocol/sdk the client test uses.
const tsSDKVersion = "1.32.2"

// tsSDK installs the TypeScript SDK once into the user's cache dir,
// keyed by its version, and returns the directory holding node_modules.
func tsSDK(t *testing.T) string {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed (scripts/test installs Debian's nodejs and npm): the TypeScript MCP client test cannot run", tool)
		}
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "harnessd-test", "mcp-ts-sdk-"+tsSDKVersion)
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err == nil {
		return dir
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	// Install beside it, then rename: a run that dies mid-install leaves
	// no half a cache.
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "install-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	cmd := exec.Command("npm", "install", "--prefix", tmp, "--no-audit", "--no-fund", "--loglevel=error", "@modelcontextprotocol/sdk@"+tsSDKVersion)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm install @modelcontextprotocol/sdk@%s: %v\n%s", tsSDKVersion, err, out)
	}
	if err := os.Rename(tmp, dir); err != nil && !os.IsExist(err) {
		if _, serr := os.Stat(dir); serr != nil { // another run won the race: fine
			t.Fatal(err)
		}
	}
	return dir
}

// TestMCPWithTheTypeScriptSDK: the reference TypeScript client spawns
// `harnessd mcp --embedded` over stdio, lists and validates the tools,
// keeps state across two execs, pages a trimmed output, and disconnects;
// afterwards no process it started is left.
func TestMCPWithTheTypeScriptSDK(t *testing.T) {
	sdkDir := tsSDK(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "harnessd")
	build := exec.Command("go", "build", "-o", bin, "github.com/harnessd/harnessd/cmd/harnessd")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	// Orphans of harnessd (a shell it failed to kill) come to this
	// process instead of init, so that "none left" can be checked.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		t.Fatalf("PR_SET_CHILD_SUBREAPER: %v", err)
	}
	defer unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	node := exec.CommandContext(ctx, "node", filepath.Join("testdata", "mcp_client.mjs"))
	node.Env = append(os.Environ(), "SDK_DIR="+sdkDir, "HARNESSD_BIN="+bin, "TMPDIR="+dir)
	var stdout, stderr bytes.Buffer
	node.Stdout, node.Stderr = &stdout, &stderr
	if err := node.Run(); err != nil {
		t.Fatalf("node: %v\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	type call struct {
		IsError bool           `json:"isError"`
		Text    string         `json:"text"`
		Data    map[string]any `json:"data"`
	}
	var got struct {
		PID    int `json:"pid"`
		Server struct {
			Name string `json:"name"`
		} `json:"server"`
		Tools              map[string]map[string]any `json:"tools"`
		SchemaErrors       []string                  `json:"schemaErrors"`
		ExecAcceptsCommand bool                      `json:"execAcceptsCommand"`
		ExecRejectsEmpty   bool                      `json:"execRejectsEmpty"`
		Cd, Echo, Seq      call
		Page, Unknown      call
		Closed             bool `json:"closed"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("client output %q: %v\nstderr: %s", stdout.String(), err, stderr.String())
	}
	if got.Server.Name != "harnessd" || !got.Closed {
		t.Errorf("server %+v, closed %v", got.Server, got.Closed)
	}
	for _, name := range []string{"session_create", "session_list", "session_delete", "exec", "output_read", "events"} {
		if _, ok := got.Tools[name]; !ok {
			t.Errorf("tool %s not listed", name)
		}
	}
	if got.Tools["exec"]["destructiveHint"] != true || got.Tools["output_read"]["readOnlyHint"] != true {
		t.Errorf("annotations: exec %v, output_read %v", got.Tools["exec"], got.Tools["output_read"])
	}
	if len(got.SchemaErrors) > 0 || !got.ExecAcceptsCommand || !got.ExecRejectsEmpty {
		t.Errorf("schemas: errors %v, exec accepts {command} %v, rejects {} %v", got.SchemaErrors, got.ExecAcceptsCommand, got.ExecRejectsEmpty)
	}
	if got.Cd.IsError || got.Cd.Data["cwd"] != "/tmp" || got.Cd.Data["exit_code"] != 0.0 {
		t.Errorf("cd /tmp && export X=1: %+v", got.Cd)
	}
	if got.Echo.IsError || got.Echo.Data["output"] != "1 /tmp\n" {
		t.Errorf("echo $X $PWD: %+v", got.Echo)
	}
	if got.Seq.IsError || got.Seq.Data["lines_total"] != 5000.0 || !strings.Contains(got.Seq.Text, "output_read") {
		t.Errorf("seq 1 5000: %+v", got.Seq)
	}
	if got.Page.IsError || got.Page.Data["text"] != "100\n101\n102\n" {
		t.Errorf("output_read 100-102: %+v", got.Page)
	}
	if !got.Unknown.IsError || !strings.Contains(got.Unknown.Text, "session_list") {
		t.Errorf("exec in an unknown session: %+v", got.Unknown)
	}

	// Nothing is left: harnessd itself, its embedded daemon's shells and
	// sandboxes, all gone (reaped, or orphaned to us and then killed).
	if got.PID == 0 {
		t.Fatal("the client did not say harnessd's pid")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		left := descendants(os.Getpid())
		if alive(got.PID) {
			left = append(left, fmt.Sprintf("%d harnessd mcp itself", got.PID))
		}
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes left after the client disconnected:\n%s\nharnessd stderr: %s", strings.Join(left, "\n"), stderr.String())
		}
		time.Sleep(20 * time.Millisecond) // killed processes take a moment to be reaped
	}
	if ents, _ := filepath.Glob(filepath.Join(dir, "harnessd-mcp-*")); len(ents) > 0 {
		t.Errorf("the embedded daemon's temporary directory is left: %v", ents)
	}
}

// descendants lists the live (not zombie) processes under pid.
func descendants(pid int) []string {
	ents, _ := os.ReadDir("/proc")
	children := map[int][]int{}
	info := map[int]string{}
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		f := strings.Fields(s[i+1:])
		if len(f) < 2 || f[0] == "Z" {
			continue
		}
		pp, _ := strconv.Atoi(f[1])
		children[pp] = append(children[pp], p)
		cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		info[p] = fmt.Sprintf("%d %s", p, bytes.ReplaceAll(cmd, []byte{0}, []byte{' '}))
	}
	var out []string
	var walk func(int)
	walk = func(p int) {
		for _, c := range children[p] {
			out = append(out, info[c])
			walk(c)
		}
	}
	walk(pid)
	return out
}

func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) > 0 && f[0] != "Z"
}
