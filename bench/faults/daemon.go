package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/harnessd/harnessd/core/api"
)

// How long the harness waits for the daemon, at most.
const (
	startTimeout = 60 * time.Second // serve to a 200 from /healthz
	stopTimeout  = 60 * time.Second // SIGTERM to exit
)

// daemonSpec is one `harnessd serve` setup: a directory with its config,
// socket, data and logs. Many daemons (restarts) share one spec.
type daemonSpec struct {
	bin    string   // the harnessd binary
	dir    string   // holds harness.toml, the socket and the logs
	data   string   // daemon.data_dir (the store is harnessd.db in it)
	env    []string // added to the environment
	starts int      // how many daemons were started, for log names
}

func (s *daemonSpec) socket() string { return filepath.Join(s.dir, "h.sock") }
func (s *daemonSpec) config() string { return filepath.Join(s.dir, "harness.toml") }
func (s *daemonSpec) store() string  { return filepath.Join(s.data, "harnessd.db") }

// writeConfig writes harness.toml: the driver, a short grace, and extra
// (more TOML sections' keys, already formatted).
func (s *daemonSpec) writeConfig(driver, token, extra string) error {
	conf := fmt.Sprintf(`# written by bench/faults
[terminal]
soft_timeout = "10s"
env = { FAULTS_TOKEN = %q }

[sandbox]
driver = %q
pool_size = 0

[daemon]
shutdown_grace = "2s"
%s`, token, driver, extra)
	return os.WriteFile(s.config(), []byte(conf), 0o644)
}

// proc is one running `harnessd serve`.
type proc struct {
	spec    *daemonSpec
	cmd     *exec.Cmd
	log     string // its stderr and stdout
	cl      *api.Client
	exited  chan struct{}
	waitErr error
}

// start runs `harnessd serve` and waits until /healthz answers 200; it
// returns how long that took.
func (s *daemonSpec) start(ctx context.Context) (*proc, time.Duration, error) {
	s.starts++
	p := &proc{spec: s, log: filepath.Join(s.dir, fmt.Sprintf("daemon-%02d.log", s.starts)), exited: make(chan struct{})}
	logf, err := os.Create(p.log)
	if err != nil {
		return nil, 0, err
	}
	defer logf.Close()
	p.cmd = exec.Command(s.bin, "serve", "--config", s.config(), "--socket", s.socket(), "--data", s.data)
	p.cmd.Env = append(childEnv(), s.env...)
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	t0 := time.Now()
	if err := p.cmd.Start(); err != nil {
		return nil, 0, fmt.Errorf("start %s: %w", s.bin, err)
	}
	go func() { p.waitErr = p.cmd.Wait(); close(p.exited) }()
	p.cl = api.NewClient(s.socket())
	deadline := time.Now().Add(startTimeout)
	for {
		hctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		code, _, err := get(hctx, s.socket(), "/healthz")
		cancel()
		if err == nil && code == http.StatusOK {
			return p, time.Since(t0), nil
		}
		select {
		case <-p.exited:
			return nil, 0, fmt.Errorf("harnessd serve exited before answering (%v); log %s:\n%s", p.waitErr, p.log, tail(p.log, 20))
		case <-ctx.Done():
			p.kill()
			return nil, 0, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.kill()
			return nil, 0, fmt.Errorf("harnessd serve did not answer /healthz with 200 in %v (last: %d %v); log %s:\n%s", startTimeout, code, err, p.log, tail(p.log, 20))
		}
	}
}

// kill sends SIGKILL to the daemon alone (not the shells it started, as a
// crash would leave them) and waits for it to be gone.
func (p *proc) kill() {
	p.cl.Close()
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

// stop sends SIGTERM and waits for the exit; SIGKILL after stopTimeout.
func (p *proc) stop() error {
	p.cl.Close()
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		if p.waitErr != nil {
			return fmt.Errorf("harnessd serve after SIGTERM: %v; log %s:\n%s", p.waitErr, p.log, tail(p.log, 20))
		}
		return nil
	case <-time.After(stopTimeout):
		p.kill()
		return fmt.Errorf("harnessd serve had not exited %v after SIGTERM (killed); log %s:\n%s", stopTimeout, p.log, tail(p.log, 20))
	}
}

// cleanup kills the daemon if it is still running: the deferred end of a
// part, whatever stopped it early.
func (p *proc) cleanup() {
	if p.alive() {
		p.kill()
	}
}

// alive says whether the daemon process is still running.
func (p *proc) alive() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

// logHas says whether the daemon's log contains s.
func (p *proc) logHas(s string) bool {
	b, _ := os.ReadFile(p.log)
	return bytes.Contains(b, []byte(s))
}

// logSays waits up to 5 seconds for the daemon's log to contain s: a line
// logged as it starts serving may come after its first answer.
func (p *proc) logSays(s string) bool {
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if p.logHas(s) {
			return true
		}
		if time.Now().After(end) {
			return false
		}
	}
}

// openFDs counts the daemon's open file descriptors.
func (p *proc) openFDs() int {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", p.pid()))
	if err != nil {
		return -1
	}
	return len(ents)
}

// childEnv is this process's environment without HARNESSD_ variables, so
// that a developer's HARNESSD_DURABILITY or HARNESSD_SOCKET cannot change
// what is attacked behind the report's back.
func childEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "HARNESSD_") {
			env = append(env, kv)
		}
	}
	return env
}

// get sends one GET over the socket on a fresh connection and returns the
// status and body.
func get(ctx context.Context, socket, path string) (int, string, error) {
	hc := &http.Client{Transport: unixTransport(socket)}
	defer hc.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://harnessd"+path, nil)
	if err != nil {
		return 0, "", err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	return resp.StatusCode, string(b), err
}

func unixTransport(socket string) *http.Transport {
	return &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		},
		DisableKeepAlives: true,
	}
}

// tail is the last n lines of a file, for error messages.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// shellsLeft lists the pids of processes whose environment carries the
// run's token: the shells (and what they ran) of daemons that are gone.
func shellsLeft(token string) []int {
	return procsLeft(token, "")
}

// procsLeft lists the pids of processes whose environment carries token,
// or, when bin is set, that run bin (a sandbox's init is harnessd
// re-executed); never this process.
func procsLeft(token, bin string) []int {
	want := []byte("FAULTS_TOKEN=" + token + "\x00")
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if bin != "" {
			if exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe")); err == nil && exe == bin {
				pids = append(pids, pid)
				continue
			}
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue
		}
		if bytes.Contains(append(env, 0), want) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// waitGone waits up to d for the processes procsLeft finds to end, then
// kills what is left (they are ours: started by our daemons, none of
// which runs now) and returns how many that was.
func waitGone(token, bin string, d time.Duration) int {
	deadline := time.Now().Add(d)
	for {
		left := procsLeft(token, bin)
		if len(left) == 0 {
			return 0
		}
		if time.Now().After(deadline) {
			for _, pid := range left {
				syscall.Kill(pid, syscall.SIGKILL)
			}
			return len(left)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// apiStatus is an API error's status and code.
func apiStatus(err error) (int, string) {
	var ae *api.Error
	if errors.As(err, &ae) {
		return ae.Status, ae.Code
	}
	return 0, ""
}
