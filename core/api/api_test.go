package api_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/harnessd/harnessd/cmd/harnessd/serve"
	"github.com/harnessd/harnessd/core/api"
	"github.com/harnessd/harnessd/core/config"
	"github.com/harnessd/harnessd/core/daemon"
	"github.com/harnessd/harnessd/core/event"
	"github.com/harnessd/harnessd/core/live"
	"github.com/harnessd/harnessd/store"
)

// testDaemon is a real `harnessd serve` (in-process) on a real socket over
// a real bbolt file in a temp dir.
type testDaemon struct {
	t      testing.TB
	cfg    config.Config
	socket string
	cl     *api.Client
	stop   context.CancelFunc
	done   chan error
}

func testConfig(_ testing.TB, dir string) config.Config {
	cfg := config.Default()
	cfg.Daemon.DataDir = dir
	cfg.Daemon.Socket = filepath.Join(dir, "h.sock")
	cfg.Daemon.ShutdownGrace = config.Duration{Duration: 500 * time.Millisecond}
	cfg.Sandbox.Driver = config.DriverNone
	cfg.Terminal.SoftTimeout = config.Duration{Duration: 5 * time.Second}
	return cfg
}

func startDaemon(t testing.TB, cfg config.Config) *testDaemon {
	t.Helper()
	return startDaemonWith(t, cfg, daemon.Options{})
}

// startDaemonWith passes the daemon options serve cannot set from a
// config (ProxyHosts).
func startDaemonWith(t testing.TB, cfg config.Config, extra daemon.Options) *testDaemon {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	td := &testDaemon{t: t, cfg: cfg, stop: cancel, done: make(chan error, 1)}
	ready := make(chan string, 1)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	go func() {
		td.done <- serve.Run(ctx, serve.Options{Config: cfg, Logger: log, Ready: func(s string) { ready <- s }, ProxyHosts: extra.ProxyHosts})
	}()
	select {
	case td.socket = <-ready:
	case err := <-td.done:
		t.Fatalf("serve: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("daemon not ready in 20s")
	}
	td.cl = api.NewClient(td.socket)
	t.Cleanup(func() { td.shutdown() })
	return td
}

// shutdown stops the daemon as SIGTERM does and returns serve's result.
func (td *testDaemon) shutdown() error {
	if td.stop == nil {
		return nil
	}
	td.stop()
	td.stop = nil
	td.cl.Close()
	select {
	case err := <-td.done:
		return err
	case <-time.After(30 * time.Second):
		td.t.Fatal("daemon did not stop in 30s")
		return nil
	}
}

func run(t *testing.T, cl *api.Client, id, command string) event.CmdOutput {
	t.Helper()
	obs, err := cl.Act(context.Background(), id, event.SourceUser, event.CmdRun{Command: command})
	if err != nil {
		t.Fatalf("%s: %q: %v", id, command, err)
	}
	out, ok := obs.Payload.(event.CmdOutput)
	if !ok {
		t.Fatalf("%s: %q: got %s", id, command, obs.Kind())
	}
	return out
}

// raw sends one request with the socket as plain HTTP, as curl would.
func raw(t *testing.T, socket, method, path, body string) (int, string) {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{DialContext: dialer(socket)}}
	defer hc.CloseIdleConnections()
	req, _ := http.NewRequest(method, "http://x"+path, strings.NewReader(body))
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func dialer(socket string) func(ctx context.Context, _, _ string) (net.Conn, error) {
	return func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", socket)
	}
}

func TestSessionLifecycle(t *testing.T) {
	td := startDaemon(t, testConfig(t, t.TempDir()))
	ctx := context.Background()
	info, err := td.cl.CreateSession(ctx, daemon.CreateRequest{ID: "one", Labels: map[string]string{"who": "test"}})
	if err != nil {
		t.Fatal(err)
	}
	if info.ID != "one" || info.State != daemon.StateLive || info.PID == 0 || info.Workspace == "" {
		t.Fatalf("created %+v", info)
	}
	if out := run(t, td.cl, "one", "cd /tmp && export X=42"); out.ExitCode != 0 {
		t.Fatalf("%+v", out)
	}
	if out := run(t, td.cl, "one", `echo "$X $PWD"; false`); out.Output != "42 /tmp\n" || out.ExitCode != 1 || out.Cwd != "/tmp" {
		t.Fatalf("state did not persist: %+v", out)
	}
	big := run(t, td.cl, "one", "seq 1 5000")
	if big.Trimmed == nil || big.Trimmed.LinesTotal != 5000 || big.Trimmed.OutputID == "" {
		t.Fatalf("not trimmed: %+v", big.Trimmed)
	}
	page, err := td.cl.Output(ctx, big.Trimmed.OutputID, 2500, 2502)
	if err != nil || page.Text != "2500\n2501\n2502\n" || page.Total != 5000 {
		t.Fatalf("page %+v %v", page, err)
	}
	list, err := td.cl.Sessions(ctx)
	if err != nil || len(list) != 1 || list[0].LastSeq != 7 {
		t.Fatalf("list %+v %v", list, err)
	}
	var kinds []string
	if err := td.cl.Events(ctx, "one", 0, false, func(ev event.Event) error {
		kinds = append(kinds, string(ev.Kind()))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(kinds, ","); got != "sandbox_started,cmd_run,cmd_output,cmd_run,cmd_output,cmd_run,cmd_output" {
		t.Fatalf("events %s", got)
	}
	if err := td.cl.DeleteSession(ctx, "one", false); err != nil {
		t.Fatal(err)
	}
	got, err := td.cl.Session(ctx, "one")
	if err != nil || got.State != daemon.StateStopped || got.Ended.IsZero() || got.PID != 0 {
		t.Fatalf("after delete %+v %v", got, err)
	}
	_, err = td.cl.Act(ctx, "one", event.SourceUser, event.CmdRun{Command: "true"})
	var apiErr *api.Error
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusConflict || apiErr.Code != "session_ended" {
		t.Fatalf("act on deleted: %v", err)
	}
	// The history is still whole.
	n := 0
	td.cl.Events(ctx, "one", 0, false, func(event.Event) error { n++; return nil })
	if n != 8 {
		t.Fatalf("%d events after delete, want 8", n)
	}
	if err := td.cl.DeleteSession(ctx, "one", true); err != nil {
		t.Fatal(err)
	}
	if _, err := td.cl.Session(ctx, "one"); !errors.As(err, &apiErr) || apiErr.Status != http.StatusNotFound {
		t.Fatalf("after purge: %v", err)
	}
	if _, err := os.Stat(info.Workspace); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("workspace left after purge: %v", err)
	}
}

// TestBadInput: every bad request gets a JSON error with the right status
// and changes nothing.
func TestBadInput(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	cfg.Daemon.MaxBody = 4096
	td := startDaemon(t, cfg)
	ctx := context.Background()
	if _, err := td.cl.CreateSession(ctx, daemon.CreateRequest{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	before, _ := td.cl.Session(ctx, "s")
	cases := []struct {
		method, path, body string
		status             int
		code               string
	}{
		{"POST", "/v1/sessions/s/actions", `{"kind":"cmd_run","command":`, 400, "malformed_json"},
		{"POST", "/v1/sessions/s/actions", `{"kind":"cmd_run","command":"ls","sudo":true}`, 400, "unknown_field"},
		{"POST", "/v1/sessions/s/actions", `{"kind":"rm_rf"}`, 400, "unknown_kind"},
		{"POST", "/v1/sessions/s/actions", `{"kind":"cmd_output","exit_code":0}`, 400, "bad_request"},
		{"POST", "/v1/sessions/s/actions", `{"kind":"cmd_run","command":"ls","seq":9}`, 400, "bad_request"},
		{"POST", "/v1/sessions/s/actions", `{"kind":"cmd_run","command":"ls","source":"runtime"}`, 400, "bad_request"},
		{"POST", "/v1/sessions/s/actions", `{"kind":"cmd_run","command":"` + strings.Repeat("x", 5000) + `"}`, 413, "body_too_large"},
		{"POST", "/v1/sessions/nope/actions", `{"kind":"cmd_run","command":"ls"}`, 404, "not_found"},
		// What is recorded must be what runs: refused, not cleaned or clamped.
		{"POST", "/v1/sessions/s/actions", `{"kind":"cmd_run","command":"echo a\u0000b"}`, 400, "bad_request"},
		{"POST", "/v1/sessions/s/actions", `{"kind":"cmd_run","command":"ls","timeout_s":-5}`, 400, "bad_request"},
		{"POST", "/v1/sessions/s/actions", `{"kind":"cmd_run","command":"ls","timeout_s":1e308}`, 400, "bad_request"},
		{"GET", "/v1/sessions/../../etc/passwd", ``, 404, "not_found"},
		{"GET", "/v1/sessions//s", ``, 404, "not_found"},
		{"POST", "/v1/sessions", `{"id":"x","color":"red"}`, 400, "unknown_field"},
		{"POST", "/v1/sessions", `{"id":"bad id!"}`, 400, "bad_request"},
		{"POST", "/v1/sessions", `{"id":"s"}`, 409, "exists"},
		{"POST", "/v1/sessions", `[1,2]`, 400, "malformed_json"},
		{"POST", "/v1/sessions/s/replies", `{"text":"x","tool":"bash"}`, 400, "bad_request"},
		{"PUT", "/v1/sessions/s", ``, 405, "method_not_allowed"},
		{"GET", "/v1/sessions/s/actions", ``, 405, "method_not_allowed"},
		{"DELETE", "/v1/sessions", ``, 405, "method_not_allowed"},
		{"GET", "/v1/sessions/nope", ``, 404, "not_found"},
		{"GET", "/v1/sessions/nope/events", ``, 404, "not_found"},
		{"GET", "/v1/sessions/s/events?after=-1", ``, 400, "bad_request"},
		{"GET", "/v1/sessions/s/events?follow=maybe", ``, 400, "bad_request"},
		{"GET", "/v1/outputs/o999", ``, 404, "not_found"},
		{"GET", "/v1/outputs/zzz", ``, 404, "not_found"},
		{"GET", "/v1/outputs/o1?from_line=0", ``, 400, "bad_request"},
		{"GET", "/v2/anything", ``, 404, "not_found"},
	}
	for _, c := range cases {
		status, body := raw(t, td.socket, c.method, c.path, c.body)
		var eb struct {
			Error struct{ Code, Message string }
		}
		if err := json.Unmarshal([]byte(body), &eb); err != nil {
			t.Errorf("%s %s: body is not JSON: %q", c.method, c.path, body)
			continue
		}
		if status != c.status || eb.Error.Code != c.code || eb.Error.Message == "" {
			t.Errorf("%s %s %.40q: got %d %s %q, want %d %s", c.method, c.path, c.body, status, eb.Error.Code, eb.Error.Message, c.status, c.code)
		}
	}
	if status, body := raw(t, td.socket, "GET", "/v1/sessions/s/events?after=18446744073709551615", ""); status != 200 || body != "" {
		t.Errorf("events after the largest seq: %d %q, want 200 and nothing", status, body)
	}
	after, _ := td.cl.Session(ctx, "s")
	if after.LastSeq != before.LastSeq {
		t.Errorf("bad requests changed the session: last_seq %d -> %d", before.LastSeq, after.LastSeq)
	}
	list, _ := td.cl.Sessions(ctx)
	if len(list) != 1 {
		t.Errorf("bad requests created sessions: %+v", list)
	}
	// Too many sessions.
	cfg2 := testConfig(t, t.TempDir())
	cfg2.Daemon.MaxSessions = 1
	td2 := startDaemon(t, cfg2)
	td2.cl.CreateSession(ctx, daemon.CreateRequest{})
	var apiErr *api.Error
	if _, err := td2.cl.CreateSession(ctx, daemon.CreateRequest{}); !errors.As(err, &apiErr) || apiErr.Status != http.StatusTooManyRequests {
		t.Errorf("over max_sessions: %v", err)
	}
}

// TestHundredSessions runs 100 sessions at once, each with its own
// directory and variables, and one long command that must not hold up
// anyone else.
func TestHundredSessions(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	// The slow command prints nothing until released: the soft timeout
	// must not hand it back while a loaded machine still runs the
	// hundred sessions (it did, at 5 s, under load 7).
	cfg.Terminal.SoftTimeout = config.Duration{Duration: 2 * time.Minute}
	td := startDaemon(t, cfg)
	ctx := context.Background()
	const n = 100
	if _, err := td.cl.CreateSession(ctx, daemon.CreateRequest{ID: "slow"}); err != nil {
		t.Fatal(err)
	}
	slowDone := make(chan event.CmdOutput, 1)
	// The slow command runs until the test releases it (or a minute
	// passes): the hundred sessions must all finish meanwhile, however
	// loaded the machine, unless they wait for it.
	release := filepath.Join(t.TempDir(), "release")
	go func() {
		// Not run(): a t.Fatal here would leave the test waiting forever.
		slow := fmt.Sprintf("for i in $(seq 1 1200); do [ -e %s ] && break; sleep 0.05; done; echo slept", release)
		obs, err := td.cl.Act(ctx, "slow", event.SourceUser, event.CmdRun{Command: slow})
		out, _ := obs.Payload.(event.CmdOutput)
		if err != nil {
			out.Note = "error: " + err.Error()
		}
		slowDone <- out
	}()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("p%03d", i)
			if _, err := td.cl.CreateSession(ctx, daemon.CreateRequest{ID: id}); err != nil {
				errs <- err
				return
			}
			dir := fmt.Sprintf("/tmp/%s-%d", id, os.Getpid())
			steps := []struct{ cmd, want string }{
				{fmt.Sprintf("mkdir -p %s && cd %s && export MINE=%d", dir, dir, i), ""},
				{"echo $MINE $PWD", fmt.Sprintf("%d %s\n", i, dir)},
				{"for j in 1 2 3; do echo $MINE-$j; done", fmt.Sprintf("%d-1\n%d-2\n%d-3\n", i, i, i)},
				{"cd / && rmdir " + dir + " && echo $MINE", fmt.Sprintf("%d\n", i)},
			}
			for _, s := range steps {
				obs, err := td.cl.Act(ctx, id, event.SourceUser, event.CmdRun{Command: s.cmd})
				if err != nil {
					errs <- fmt.Errorf("%s: %w", id, err)
					return
				}
				out := obs.Payload.(event.CmdOutput)
				if out.ExitCode != 0 || (s.want != "" && out.Output != s.want) {
					errs <- fmt.Errorf("%s: %q -> exit %d %q, want %q (cross-talk?)", id, s.cmd, out.ExitCode, out.Output, s.want)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// Every short session finished while the slow one still ran.
	var out event.CmdOutput
	select {
	case out = <-slowDone:
		t.Errorf("the slow command finished (%+v) before the 100 sessions did: they waited for it", out)
	default:
		if err := os.WriteFile(release, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		out = <-slowDone
	}
	if out.Output != "slept\n" {
		t.Errorf("slow: %+v", out)
	}
	list, err := td.cl.Sessions(ctx)
	if err != nil || len(list) != n+1 {
		t.Fatalf("%d sessions listed, %v", len(list), err)
	}
	for _, s := range list {
		if s.ID != "slow" && s.LastSeq != 9 {
			t.Errorf("%s has %d events, want 9", s.ID, s.LastSeq)
		}
	}
}

// TestFollow: a follower from seq 0 sees the replay, then every live event,
// each once and in order, and its stream ends when the session is deleted.
func TestFollow(t *testing.T) {
	td := startDaemon(t, testConfig(t, t.TempDir()))
	ctx := context.Background()
	td.cl.CreateSession(ctx, daemon.CreateRequest{ID: "f"})
	run(t, td.cl, "f", "echo before")
	var got []uint64
	var last event.Kind
	followed := make(chan error, 1)
	go func() {
		followed <- td.cl.Events(ctx, "f", 0, true, func(ev event.Event) error {
			got = append(got, ev.Seq)
			last = ev.Kind()
			return nil
		})
	}()
	for i := range 20 {
		run(t, td.cl, "f", fmt.Sprintf("echo %d", i))
	}
	// A second follower starting midway sees exactly the rest.
	var mid []uint64
	midDone := make(chan error, 1)
	go func() {
		midDone <- td.cl.Events(ctx, "f", 30, true, func(ev event.Event) error { mid = append(mid, ev.Seq); return nil })
	}()
	time.Sleep(100 * time.Millisecond)
	if err := td.cl.DeleteSession(ctx, "f", false); err != nil {
		t.Fatal(err)
	}
	for _, ch := range []chan error{followed, midDone} {
		select {
		case err := <-ch:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("follow did not end after the session was deleted")
		}
	}
	const total = 1 + 2 + 40 + 1
	if len(got) != total || last != event.KindSandboxStopped {
		t.Fatalf("follower got %d events ending in %s, want %d ending in sandbox_stopped", len(got), last, total)
	}
	for i, s := range got {
		if s != uint64(i+1) {
			t.Fatalf("follower: event %d has seq %d (gap or duplicate)", i, s)
		}
	}
	if len(mid) != total-30 || mid[0] != 31 {
		t.Fatalf("mid follower got %v", mid)
	}
	// Resuming a follow on an ended session returns what is left, then
	// ends, even from its last seq.
	for _, after := range []uint64{0, total - 1, total, total + 5} {
		n := 0
		fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := td.cl.Events(fctx, "f", after, true, func(event.Event) error { n++; return nil })
		cancel()
		if want := max(0, int(total)-int(after)); err != nil || n != want {
			t.Errorf("follow after=%d on an ended session: %d events, %v; want %d and the end", after, n, err, want)
		}
	}
}

// TestDeleteDuringCommand: DELETE kills a running command at once; its
// observation is recorded before sandbox_stopped.
func TestDeleteDuringCommand(t *testing.T) {
	td := startDaemon(t, testConfig(t, t.TempDir()))
	ctx := context.Background()
	td.cl.CreateSession(ctx, daemon.CreateRequest{ID: "d"})
	acted := make(chan error, 1)
	go func() {
		_, err := td.cl.Act(ctx, "d", event.SourceUser, event.CmdRun{Command: "while :; do echo tick; sleep 0.1; done"})
		acted <- err
	}()
	time.Sleep(400 * time.Millisecond)
	begin := time.Now()
	if err := td.cl.DeleteSession(ctx, "d", false); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(begin); d > 5*time.Second {
		t.Errorf("delete took %s", d)
	}
	<-acted
	var kinds []event.Kind
	td.cl.Events(ctx, "d", 0, false, func(ev event.Event) error { kinds = append(kinds, ev.Kind()); return nil })
	if fmt.Sprint(kinds) != "[sandbox_started cmd_run cmd_output sandbox_stopped]" {
		t.Errorf("events %v", kinds)
	}
}

// TestShutdownAndRestart: SIGTERM's path lets a running command be
// interrupted within the grace period, records every live session as
// interrupted, closes the store, and serve returns nil; a new daemon on the
// same data lists them as interrupted, their history readable.
func TestShutdownAndRestart(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	td := startDaemon(t, cfg)
	ctx := context.Background()
	for _, id := range []string{"busy", "idle"} {
		if _, err := td.cl.CreateSession(ctx, daemon.CreateRequest{ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	run(t, td.cl, "idle", "echo hi")
	type reply struct {
		ev  event.Event
		err error
	}
	busy := make(chan reply, 1)
	go func() {
		// It prints every 100ms, so the soft timeout never hands control
		// back: only the shutdown can end it.
		ev, err := td.cl.Act(ctx, "busy", event.SourceUser, event.CmdRun{Command: "while :; do echo tick; sleep 0.1; done"})
		busy <- reply{ev, err}
	}()
	time.Sleep(300 * time.Millisecond) // let it start
	begin := time.Now()
	if err := td.shutdown(); err != nil {
		t.Fatalf("serve returned %v, want nil", err)
	}
	if d := time.Since(begin); d > 8*time.Second {
		t.Errorf("shutdown took %s with a 500ms grace: the running command was not interrupted", d)
	}
	r := <-busy
	if r.err == nil {
		// The observation came back before the connection closed.
		if out := r.ev.Payload.(event.CmdOutput); out.ExitCode == 0 {
			t.Errorf("sleep 60 finished? %+v", out)
		}
	}
	if _, err := os.Stat(cfg.Daemon.Socket); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket left behind: %v", err)
	}
	// The store is closed and whole.
	st, err := store.Open(filepath.Join(dir, "harnessd.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Verify(ctx); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"busy", "idle"} {
		s, _ := st.Session(ctx, id)
		if s.State != daemon.StateInterrupted {
			t.Errorf("%s: state %q, want interrupted", id, s.State)
		}
		var lastEv event.Event
		st.Read(ctx, id, 0, func(ev event.Event) error { lastEv = ev; return nil })
		if stop, ok := lastEv.Payload.(event.SandboxStopped); !ok || !strings.Contains(stop.Reason, "shut down") {
			t.Errorf("%s: last event %+v", id, lastEv)
		} else if id == "busy" && !strings.Contains(stop.Reason, "interrupted") {
			t.Errorf("busy: reason %q should say its command was interrupted", stop.Reason)
		}
	}
	var busyKinds []event.Kind
	st.Read(ctx, "busy", 0, func(ev event.Event) error { busyKinds = append(busyKinds, ev.Kind()); return nil })
	if fmt.Sprint(busyKinds) != "[sandbox_started cmd_run cmd_output sandbox_stopped]" {
		t.Errorf("busy: %v (the interrupted command must be answered)", busyKinds)
	}
	st.Close()

	td2 := startDaemon(t, cfg)
	list, err := td2.cl.Sessions(ctx)
	if err != nil || len(list) != 2 {
		t.Fatalf("after restart: %+v %v", list, err)
	}
	for _, s := range list {
		if s.State != daemon.StateInterrupted {
			t.Errorf("after restart %s is %s", s.ID, s.State)
		}
	}
	var apiErr *api.Error
	if _, err := td2.cl.Act(ctx, "idle", event.SourceUser, event.CmdRun{Command: "true"}); !errors.As(err, &apiErr) || apiErr.Status != http.StatusConflict {
		t.Errorf("act on interrupted: %v", err)
	}
	n := 0
	if err := td2.cl.Events(ctx, "idle", 0, true, func(event.Event) error { n++; return nil }); err != nil || n != 4 {
		t.Errorf("idle history after restart: %d events, %v", n, err)
	}
}

// TestCrashRecovery: sessions a killed daemon left live are marked
// interrupted, with an event saying so, by the next one; every action left
// without its observation gets one that says the daemon stopped while it
// ran, and nothing is answered twice.
func TestCrashRecovery(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	st, err := store.Open(filepath.Join(dir, "harnessd.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	st.CreateSession(ctx, store.Session{ID: "orphan", State: daemon.StateLive})
	at := time.Now()
	for _, ev := range []event.Event{
		{Source: event.SourceRuntime, Payload: event.SandboxStarted{Driver: "none"}}, // 1
		{Source: event.SourceUser, Payload: event.CmdRun{Command: "true"}},           // 2
		{Source: event.SourceRuntime, Cause: 2, Payload: event.CmdOutput{}},          // 3
		{Source: event.SourceAgent, Payload: event.Message{Text: "hi"}},              // 4
		{Source: event.SourceUser, Payload: event.CmdRun{Command: "make"}},           // 5: in flight
	} {
		ev.Session, ev.Time = "orphan", at
		if _, err := st.Append(ctx, "orphan", ev); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	td := startDaemon(t, cfg)
	s, err := td.cl.Session(ctx, "orphan")
	if err != nil || s.State != daemon.StateInterrupted || s.LastSeq != 7 {
		t.Fatalf("%+v %v", s, err)
	}
	var evs []event.Event
	td.cl.Events(ctx, "orphan", 5, false, func(ev event.Event) error { evs = append(evs, ev); return nil })
	if len(evs) != 2 {
		t.Fatalf("after the crash: %+v", evs)
	}
	if o, ok := evs[0].Payload.(event.CmdOutput); !ok || evs[0].Cause != 5 || o.ExitCode != -1 || !strings.Contains(o.Note, "stopped") {
		t.Errorf("the in-flight make's answer: %+v", evs[0])
	}
	if p, ok := evs[1].Payload.(event.SandboxStopped); !ok || !strings.Contains(p.Reason, "crashed") {
		t.Fatalf("last event %+v", evs[1])
	}
}

// TestPeerCredentials: a peer that is not root, the daemon's user, or in
// the allow lists gets 403, decided from SO_PEERCRED.
func TestPeerCredentials(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to connect as another uid")
	}
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Fatal("curl is needed (scripts/test installs it): ", err)
	}
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	os.Chmod(filepath.Dir(dir), 0o755) // t.TempDir's parent is 0700
	cfg := testConfig(t, dir)
	cfg.Daemon.AllowUIDs = []int{65533}
	cfg.Daemon.AllowGIDs = []int{4242}
	td := startDaemon(t, cfg)
	os.Chmod(td.socket, 0o666) // past the file mode, so the credential check is what decides
	as := func(uid int, groups ...uint32) (int, string) {
		cmd := exec.Command(curl, "-s", "-o", "-", "-w", "\n%{http_code}", "--unix-socket", td.socket, "http://x/v1/sessions")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: 65534, Groups: groups}}
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("curl as %d: %v", uid, err)
		}
		i := bytes.LastIndexByte(out, '\n')
		var code int
		fmt.Sscan(string(out[i+1:]), &code)
		return code, string(out[:i])
	}
	if code, body := as(65534); code != 403 || !strings.Contains(body, `"forbidden"`) || !strings.Contains(body, "uid 65534") {
		t.Errorf("uid 65534: %d %s", code, body)
	}
	if code, body := as(65533); code != 200 {
		t.Errorf("allowed uid 65533: %d %s", code, body)
	}
	if code, body := as(65534, 4242); code != 200 {
		t.Errorf("uid 65534 in allowed supplementary group 4242: %d %s", code, body)
	}
	if code, _ := as(65534, 4243); code != 403 {
		t.Errorf("uid 65534 in group 4243: %d, want 403", code)
	}
}

func TestSocketMode(t *testing.T) {
	dir := t.TempDir()
	td := startDaemon(t, testConfig(t, dir))
	fi, err := os.Stat(td.socket)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o660 {
		t.Errorf("socket mode %s, want 0660 socket", fi.Mode())
	}
	// A second daemon on the same socket refuses, naming the problem.
	_, err = api.Listen(td.socket)
	if err == nil || !strings.Contains(err.Error(), "another harnessd") {
		t.Errorf("second listener: %v", err)
	}
}

func TestNotRunning(t *testing.T) {
	cl := api.NewClient(filepath.Join(t.TempDir(), "none.sock"))
	_, err := cl.Sessions(context.Background())
	if !errors.Is(err, api.ErrNotRunning) || !strings.Contains(err.Error(), "is harnessd serve running? socket: ") {
		t.Fatalf("%v", err)
	}
}

func TestRepliesAndMetrics(t *testing.T) {
	td := startDaemon(t, testConfig(t, t.TempDir()))
	ctx := context.Background()
	td.cl.CreateSession(ctx, daemon.CreateRequest{ID: "m"})
	res, err := td.cl.Reply(ctx, "m", daemon.Reply{Text: "```bash\necho hi"})
	if err != nil || res.Action != nil || res.Observation == nil || res.Observation.Kind() != event.KindInvalidAction {
		t.Fatalf("malformed reply: %+v %v", res, err)
	}
	res, err = td.cl.Reply(ctx, "m", daemon.Reply{Tool: "bash", Arguments: json.RawMessage(`{"command":"echo hi"}`)})
	if err != nil || res.Action == nil || res.Observation.Payload.(event.CmdOutput).Output != "hi\n" {
		t.Fatalf("tool reply: %+v %v", res, err)
	}
	status, body := raw(t, td.socket, "GET", "/metrics", "")
	for _, want := range []string{"harnessd_sessions_live 1", `harnessd_commands_total{outcome="ok"} 1`, "harnessd_invalid_actions_total 1",
		"harnessd_command_duration_seconds_bucket", "harnessd_store_commit_seconds_count", "harnessd_output_bytes_trimmed_total", "go_goroutines"} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics (%d) lacks %q", status, want)
		}
	}
	if status, body := raw(t, td.socket, "GET", "/healthz", ""); status != 200 || !strings.Contains(body, `"ok"`) {
		t.Errorf("healthz %d %s", status, body)
	}
}

// TestSlowClients: a body that trickles in is cut off at the body
// timeout (408), past it the connection is closed; one uid cannot hold
// more than its share of connections; followers are unaffected.
func TestSlowClients(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	cfg.Daemon.BodyTimeout = config.Duration{Duration: 300 * time.Millisecond}
	cfg.Daemon.MaxConnsPerPeer = 4
	td := startDaemon(t, cfg)
	ctx := context.Background()
	if _, err := td.cl.CreateSession(ctx, daemon.CreateRequest{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	td.cl.Close() // its idle connection would count against the cap
	sock := td.socket

	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST /v1/sessions/s/actions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"kind\":")
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer to a trickling body: %v", err)
	}
	if resp.StatusCode != http.StatusRequestTimeout {
		t.Fatalf("trickling body: %d, want 408", resp.StatusCode)
	}
	c.Close()

	// Answered or not, a body that keeps trickling does not keep its
	// connection: the server's drain of an unread body after the handler
	// gives up at the body timeout too, for a handler that read part of
	// it (an action) and for one that reads none (health).
	for _, req := range []string{"POST /v1/sessions/s/actions", "GET /healthz"} {
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "%s HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{", req)
		stop := make(chan struct{})
		go func() {
			for {
				select {
				case <-stop:
					return
				case <-time.After(200 * time.Millisecond):
				}
				if _, err := c.Write([]byte(" ")); err != nil {
					return
				}
			}
		}()
		t0 := time.Now()
		c.SetReadDeadline(t0.Add(5 * time.Second))
		_, err = io.Copy(io.Discard, c)
		close(stop)
		if err != nil {
			t.Fatalf("%s with a trickling body: still open after %v: %v", req, time.Since(t0).Round(time.Millisecond), err)
		}
	}
	time.Sleep(200 * time.Millisecond) // the server sees both closes

	// Four connections are the cap; a fifth is closed at once, and once one
	// of the four goes, a new one is served.
	var held []net.Conn
	for range 4 {
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(c, "GET /v1/sessions/s/events?follow=true HTTP/1.1\r\nHost: x\r\n\r\n")
		held = append(held, c)
	}
	time.Sleep(100 * time.Millisecond)
	extra, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(extra, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
	extra.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := http.ReadResponse(bufio.NewReader(extra), nil); err == nil {
		t.Fatal("a connection over the per-peer cap was served")
	}
	extra.Close()
	for _, c := range held {
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("follower under the cap: %v", err)
		}
	}
	held[0].Close()
	time.Sleep(100 * time.Millisecond)
	hc := &http.Client{Transport: &http.Transport{DialContext: dialer(sock)}}
	defer hc.CloseIdleConnections()
	r, err := hc.Get("http://x/healthz")
	if err != nil {
		t.Fatalf("after one closed, a new connection: %v", err)
	}
	r.Body.Close()
	for _, c := range held[1:] {
		c.Close()
	}
}

// TestInterruptNotQueued: C-c from a second client reaches a command that
// another call is waiting on at once, instead of waiting behind it; the
// waiting call then returns what the interrupt caused. Reads never wait.
func TestInterruptNotQueued(t *testing.T) {
	td := startDaemon(t, testConfig(t, t.TempDir()))
	ctx := context.Background()
	if _, err := td.cl.CreateSession(ctx, daemon.CreateRequest{ID: "i"}); err != nil {
		t.Fatal(err)
	}
	done := make(chan event.CmdOutput, 1)
	go func() {
		ev, _ := td.cl.Act(ctx, "i", event.SourceAgent, event.CmdRun{Command: "while :; do echo tick; sleep 0.1; done"})
		o, _ := ev.Payload.(event.CmdOutput)
		done <- o
	}()
	time.Sleep(700 * time.Millisecond)
	begin := time.Now()
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if info, err := td.cl.Session(rctx, "i"); err != nil || info.PID == 0 {
		t.Fatalf("reading a session while its command runs: %+v %v", info, err)
	}
	ev, err := td.cl.Act(ctx, "i", event.SourceUser, event.CmdRun{Command: "C-c", IsInput: true})
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := ev.Payload.(event.CmdOutput); !ok || !strings.Contains(o.Note, "sent") {
		t.Fatalf("the keys' answer: %+v", ev)
	}
	select {
	case o := <-done:
		if o.ExitCode == -1 || !strings.Contains(o.Output, "tick") {
			t.Errorf("the interrupted loop: %+v", o)
		}
		if d := time.Since(begin); d > 10*time.Second {
			t.Errorf("the waiting call returned %v after C-c", d)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("C-c from a second client did not end the loop")
	}
	if out := run(t, td.cl, "i", "echo after"); out.Output != "after\n" {
		t.Fatalf("after: %+v", out)
	}
}

// TestShutdownGraceForRunningCommands: a command still running after its
// call returned at the soft timeout gets the shutdown grace too; its
// output is recorded, and each session's reason says what happened to it.
func TestShutdownGraceForRunningCommands(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	cfg.Terminal.SoftTimeout = config.Duration{Duration: 300 * time.Millisecond}
	cfg.Daemon.ShutdownGrace = config.Duration{Duration: 4 * time.Second}
	td := startDaemon(t, cfg)
	ctx := context.Background()
	for id, cmd := range map[string]string{"late": "sleep 1.5; echo done-late", "long": "sleep 100"} {
		if _, err := td.cl.CreateSession(ctx, daemon.CreateRequest{ID: id}); err != nil {
			t.Fatal(err)
		}
		if out := run(t, td.cl, id, cmd); out.ExitCode != -1 {
			t.Fatalf("%s: want it still running at the soft timeout: %+v", id, out)
		}
	}
	begin := time.Now()
	if err := td.shutdown(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(begin); d < 3*time.Second || d > 15*time.Second {
		t.Errorf("shutdown took %v with a 4s grace and a command that never ends", d)
	}
	st, err := store.Open(filepath.Join(cfg.Daemon.DataDir, "harnessd.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for id, want := range map[string]string{"late": "finished within the grace period", "long": "was interrupted"} {
		var late bool
		var stopped string
		st.Read(ctx, id, 0, func(ev event.Event) error {
			switch p := ev.Payload.(type) {
			case event.CmdOutput:
				late = late || strings.Contains(p.Output, "done-late")
			case event.SandboxStopped:
				stopped = p.Reason
			}
			return nil
		})
		if !strings.Contains(stopped, want) {
			t.Errorf("%s: sandbox_stopped %q, want it to say %q", id, stopped, want)
		}
		if id == "late" && !late {
			t.Errorf("late: the output printed during the grace was not recorded")
		}
	}
}

// TestEventsDuringCommand: a session's events can be read while a command
// runs in it (an agent's controller and host services read them then).
func TestEventsDuringCommand(t *testing.T) {
	td := startDaemon(t, testConfig(t, t.TempDir()))
	ctx := context.Background()
	if _, err := td.cl.CreateSession(ctx, daemon.CreateRequest{ID: "busy"}); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		td.cl.Act(ctx, "busy", event.SourceUser, event.CmdRun{Command: "sleep 3"})
	}()
	defer func() { <-done }()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		begin := time.Now()
		var kinds []event.Kind
		if err := td.cl.Events(ctx, "busy", 0, false, func(ev event.Event) error { kinds = append(kinds, ev.Kind()); return nil }); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(begin); took > time.Second {
			t.Fatalf("reading the events took %s while a command ran", took)
		}
		if kinds[len(kinds)-1] == event.KindCmdRun {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no cmd_run: %v", kinds)
		}
	}
}

// TestLiveOutput: a client watching a session gets a command's output as
// it is printed, before the call that runs it returns, with offsets that
// add up to the whole output and an end; a client that only follows
// events is not sent any of it.
func TestLiveOutput(t *testing.T) {
	td := startDaemon(t, testConfig(t, t.TempDir()))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := td.cl.CreateSession(ctx, daemon.CreateRequest{ID: "lv"}); err != nil {
		t.Fatal(err)
	}
	type got struct {
		c    live.Chunk
		when time.Time
	}
	chunks := make(chan got, 1000)
	started := make(chan struct{})
	var plain []event.Kind
	watchDone := make(chan error, 1)
	go func() {
		watchDone <- td.cl.Watch(ctx, "lv", 0, func() { close(started) },
			func(event.Event) error { return nil },
			func(c live.Chunk) error { chunks <- got{c, time.Now()}; return nil })
	}()
	plainDone := make(chan error, 1)
	go func() {
		plainDone <- td.cl.Events(ctx, "lv", 0, true, func(ev event.Event) error { plain = append(plain, ev.Kind()); return nil })
	}()
	<-started
	obs, err := td.cl.Act(ctx, "lv", event.SourceUser, event.CmdRun{Command: "for i in 1 2 3; do echo tick $i; sleep 0.4; done; seq 1 5000 | tail -n 2"})
	if err != nil {
		t.Fatal(err)
	}
	returned := time.Now()
	out := obs.Payload.(event.CmdOutput)
	var text strings.Builder
	var first time.Time
	var next int64
	for {
		var g got
		select {
		case g = <-chunks:
		case <-time.After(5 * time.Second):
			t.Fatalf("no end chunk; got %q so far", text.String())
		}
		if g.c.Cause != obs.Cause {
			t.Fatalf("chunk of action %d, want %d", g.c.Cause, obs.Cause)
		}
		if g.c.Offset != next || g.c.Lost != 0 {
			t.Fatalf("chunk at %d (lost %d), want %d", g.c.Offset, g.c.Lost, next)
		}
		if first.IsZero() && g.c.Output != "" {
			first = g.when
		}
		text.WriteString(g.c.Output)
		next += int64(len(g.c.Output))
		if g.c.End {
			break
		}
	}
	if want := "tick 1\ntick 2\ntick 3\n4999\n5000\n"; text.String() != want || out.Output != want {
		t.Fatalf("live output %q, observation %q; want %q", text.String(), out.Output, want)
	}
	if d := returned.Sub(first); d < 500*time.Millisecond {
		t.Fatalf("first output arrived %v before the call returned; want it as it was printed (about 1.2 s before)", d)
	}
	if err := td.cl.DeleteSession(ctx, "lv", false); err != nil {
		t.Fatal(err)
	}
	for _, ch := range []chan error{watchDone, plainDone} {
		select {
		case err := <-ch:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a follow did not end with the session")
		}
	}
	if len(plain) == 0 || plain[len(plain)-1] != event.KindSandboxStopped {
		t.Fatalf("plain follower: %v", plain)
	}
	// progress without follow is not an error, and sends no progress.
	if code, body := raw(t, td.socket, "GET", "/v1/sessions/lv/events?progress=true", ""); code != 200 || strings.Contains(body, `"progress"`) {
		t.Fatalf("progress without follow: %d %s", code, body)
	}
	if code, body := raw(t, td.socket, "GET", "/v1/sessions/lv/events?follow=true&progress=maybe", ""); code != 400 {
		t.Fatalf("progress=maybe: %d %s", code, body)
	}
}
