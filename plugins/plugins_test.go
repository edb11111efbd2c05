package plugins

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-plugin"

	pb "github.com/harnessd/harnessd/plugins/proto"
)

// The test binary is also every test plugin (go-plugin's helper-process
// pattern): with PLUGINS_TEST_AGENT set it serves that agent, or
// misbehaves as that agent would.
func TestMain(m *testing.M) {
	switch mode := os.Getenv("PLUGINS_TEST_AGENT"); mode {
	case "":
		os.Exit(m.Run())
	case "garbage":
		fmt.Println("hello, I am not a plugin")
		time.Sleep(30 * time.Second)
		os.Exit(0)
	case "exit":
		os.Exit(7)
	case "badversion":
		hs := Handshake
		hs.ProtocolVersion = ProtocolVersion + 1
		plugin.Serve(&plugin.ServeConfig{HandshakeConfig: hs, Plugins: plugin.PluginSet{PluginName: &GRPCPlugin{Impl: &testAgent{mode: "echo"}}}, GRPCServer: plugin.DefaultGRPCServer})
		os.Exit(0)
	case "automtls", "plaintext":
		// A plugin not built on Serve: go-plugin's own server, which does
		// AutoMTLS (its own certificate in the handshake); or, with the
		// host's certificates removed, no TLS at all.
		if mode == "plaintext" {
			os.Unsetenv("PLUGIN_CLIENT_CERT")
			os.Unsetenv(EnvPluginTLS)
		}
		plugin.Serve(&plugin.ServeConfig{HandshakeConfig: Handshake, Plugins: plugin.PluginSet{PluginName: &GRPCPlugin{Impl: &testAgent{mode: "echo"}}}, GRPCServer: plugin.DefaultGRPCServer})
		os.Exit(0)
	case "parent":
		// A host that starts a plugin, says its pid, and waits to be
		// killed.
		p, err := Start(context.Background(), Config{Command: []string{os.Args[0]}, Env: []string{"PLUGINS_TEST_AGENT=echo"}})
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Println(p.PID())
		time.Sleep(time.Minute)
		os.Exit(0)
	default:
		Serve(&testAgent{mode: mode}, &ServeOptions{ParentPoll: 50 * time.Millisecond})
		os.Exit(0)
	}
}

// testAgent is a plugin with a behaviour per mode.
type testAgent struct{ mode string }

func (a *testAgent) Info(context.Context) (*pb.InfoResponse, error) {
	if a.mode == "badinfo" {
		return &pb.InfoResponse{Name: "x", Actions: []string{"launch_missiles"}}, nil
	}
	return &pb.InfoResponse{Name: "test-" + a.mode, Version: "1", Actions: []string{"cmd_run", "finish", "think"}}, nil
}

func (a *testAgent) Step(ctx context.Context, req *pb.StepRequest, host Host) (*pb.StepResponse, error) {
	switch a.mode {
	case "hang":
		<-ctx.Done()
		time.Sleep(time.Hour)
	case "suicide":
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		time.Sleep(time.Hour)
	case "children":
		// Something the plugin started and forgot: Kill must take it.
		c := exec.Command("/bin/sleep", "300")
		c.Start()
		return &pb.StepResponse{Action: &pb.StepResponse_CmdRun{CmdRun: &pb.CmdRun{Command: strconv.Itoa(c.Process.Pid)}}}, nil
	case "garbage-step":
		return &pb.StepResponse{Action: &pb.StepResponse_Delegate{Delegate: &pb.Delegate{Agent: "../../etc", Task: "x"}}}, nil
	case "undeclared":
		return &pb.StepResponse{Action: &pb.StepResponse_Message{Message: &pb.Message{Text: "hi"}}}, nil
	case "host":
		out, err := host.ReadOutput(ctx, "o1", 2, 3)
		if err != nil {
			return nil, err
		}
		evs, err := host.ReadEvents(ctx, 1, 0)
		if err != nil {
			return nil, err
		}
		u, err := host.ReportUsage(ctx, &pb.Usage{PromptTokens: 10, CompletionTokens: 5, Cost: 0.5})
		if err != nil {
			return nil, err
		}
		msg := fmt.Sprintf("%s|%d|%s|%d|%g", out.GetText(), len(evs.GetEvents()), evs.GetEvents()[0], u.GetRunTokens(), u.GetRunCost())
		return &pb.StepResponse{Action: &pb.StepResponse_Finish{Finish: &pb.Finish{Message: msg}}}, nil
	case "nohost":
		_, err := host.ReadOutput(ctx, "o1", 1, 1)
		return &pb.StepResponse{Action: &pb.StepResponse_Finish{Finish: &pb.Finish{Message: fmt.Sprint(errors.Is(err, ErrNoHost))}}}, nil
	case "stderr":
		fmt.Fprintln(os.Stderr, "a line on stderr")
	case "tlsenv":
		// What a plugin built on Serve has left of the host's TLS
		// material: the host's certificate, not its own key.
		msg := fmt.Sprintf("key=%t cert=%t", os.Getenv(EnvPluginTLS) != "", strings.Contains(os.Getenv("PLUGIN_CLIENT_CERT"), "BEGIN CERTIFICATE"))
		return &pb.StepResponse{Action: &pb.StepResponse_Finish{Finish: &pb.Finish{Message: msg}}}, nil
	}
	return &pb.StepResponse{
		Action: &pb.StepResponse_CmdRun{CmdRun: &pb.CmdRun{Command: fmt.Sprintf("echo %s %s %d", req.GetTask(), req.GetSession(), len(req.GetEvents()))}},
		Usage:  &pb.Usage{PromptTokens: 3, CompletionTokens: 2},
	}, nil
}

// fakeHost is the host side of the Host service.
type fakeHost struct {
	mu     sync.Mutex
	tokens int64
	cost   float64
}

func (h *fakeHost) ReadOutput(_ context.Context, id string, from, to int64) (*pb.ReadOutputResponse, error) {
	return &pb.ReadOutputResponse{Text: fmt.Sprintf("%s:%d-%d", id, from, to), FromLine: from, ToLine: to, TotalLines: 10}, nil
}

func (h *fakeHost) ReadEvents(_ context.Context, after uint64, _ uint32) (*pb.ReadEventsResponse, error) {
	return &pb.ReadEventsResponse{Events: [][]byte{[]byte(fmt.Sprintf(`{"seq":%d}`, after+1))}}, nil
}

func (h *fakeHost) ReportUsage(_ context.Context, u *pb.Usage) (*pb.ReportUsageResponse, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.tokens += u.GetPromptTokens() + u.GetCompletionTokens()
	h.cost += u.GetCost()
	return &pb.ReportUsageResponse{RunTokens: h.tokens, RunCost: h.cost}, nil
}

// start starts the test binary as the plugin of mode and checks, when the
// test ends, that it was killed and nothing of its group is left.
func start(t *testing.T, mode string, cfg Config) (*Process, error) {
	t.Helper()
	cfg.Command = []string{os.Args[0]}
	token := fmt.Sprintf("PLUGINS_TEST_TOKEN=%s-%d", t.Name(), time.Now().UnixNano())
	cfg.Env = append(cfg.Env, "PLUGINS_TEST_AGENT="+mode, token)
	t.Cleanup(func() { noneWith(t, token) })
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	p, err := Start(context.Background(), cfg)
	if p != nil {
		t.Cleanup(func() {
			pid := p.PID()
			p.Kill()
			p.Kill() // twice is fine
			noGroup(t, pid)
		})
	}
	return p, err
}

// noneWith fails if a process with env in its environment is still
// running once the test's cleanups have killed what they started.
func noneWith(t *testing.T, env string) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		left := ""
		dirs, _ := os.ReadDir("/proc")
		for _, d := range dirs {
			pid, err := strconv.Atoi(d.Name())
			if err != nil {
				continue
			}
			b, err := os.ReadFile("/proc/" + d.Name() + "/environ")
			if err != nil || !strings.Contains("\x00"+string(b)+"\x00", "\x00"+env+"\x00") {
				continue
			}
			if st, _ := os.ReadFile("/proc/" + d.Name() + "/stat"); strings.Contains(string(st), ") Z ") {
				continue
			}
			left += " " + strconv.Itoa(pid)
		}
		if left == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("stray plugin processes:%s", left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// noGroup fails unless no process is left in process group pgid.
func noGroup(t *testing.T, pgid int) {
	t.Helper()
	if pgid <= 0 {
		return
	}
	deadline := time.Now().Add(3 * time.Second)
	for {
		err := syscall.Kill(-pgid, 0)
		if errors.Is(err, syscall.ESRCH) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process group %d still has processes after Kill (%v)", pgid, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestStep(t *testing.T) {
	var log strings.Builder
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(&lockedWriter{w: &log, mu: &mu}, nil)).With("session", "s1", "run", "r1", "agent", "test")
	p, err := start(t, "stderr", Config{Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	if p.Info().GetName() != "test-stderr" {
		t.Fatalf("info %+v", p.Info())
	}
	resp, err := p.Step(context.Background(), &pb.StepRequest{Session: "s1", Task: "hi", Events: [][]byte{[]byte("{}"), []byte("{}")}})
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.GetCmdRun().GetCommand(); got != "echo hi s1 2" {
		t.Fatalf("command %q", got)
	}
	// What the plugin prints travels on go-plugin's stdio stream, beside
	// the step's answer, not before it.
	want := `msg="plugin stderr" session=s1 run=r1 agent=test line="a line on stderr"`
	logged := func() string { mu.Lock(); defer mu.Unlock(); return log.String() }
	for begin := time.Now(); !strings.Contains(logged(), want); time.Sleep(10 * time.Millisecond) {
		if time.Since(begin) > 3*time.Second {
			t.Fatalf("plugin stderr not logged with its tags:\n%s", logged())
		}
	}
}

type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Write(p)
}

func TestHostServices(t *testing.T) {
	h := &fakeHost{}
	p, err := start(t, "host", Config{Host: h})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := p.Step(context.Background(), &pb.StepRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := resp.GetFinish().GetMessage(), `o1:2-3|1|{"seq":2}|15|0.5`; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}

	p, err = start(t, "nohost", Config{})
	if err != nil {
		t.Fatal(err)
	}
	resp, err = p.Step(context.Background(), &pb.StepRequest{})
	if err != nil || resp.GetFinish().GetMessage() != "true" {
		t.Fatalf("%v, %v: want ErrNoHost in the plugin", resp, err)
	}
}

// TestBadPlugins: each way a plugin can fail is an error of its class,
// never a hang or a panic, and leaves no process behind.
func TestBadPlugins(t *testing.T) {
	for _, c := range []struct {
		mode string
		want error
	}{
		{"garbage", ErrHandshake},
		{"exit", ErrHandshake},
		{"badversion", ErrHandshake},
		{"badinfo", ErrGarbage},
	} {
		t.Run(c.mode, func(t *testing.T) {
			begin := time.Now()
			p, err := start(t, c.mode, Config{StartTimeout: 3 * time.Second})
			if !errors.Is(err, c.want) || p != nil {
				t.Fatalf("%v, %v: want %v", p, err, c.want)
			}
			t.Logf("%s: %v (%s)", c.mode, err, time.Since(begin).Round(time.Millisecond))
		})
	}
}

func TestStepFailures(t *testing.T) {
	t.Run("hang", func(t *testing.T) {
		p, err := start(t, "hang", Config{})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		if _, err := p.Step(ctx, &pb.StepRequest{}); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("%v, want the deadline", err)
		}
	})
	t.Run("sigkill mid-step", func(t *testing.T) {
		p, err := start(t, "suicide", Config{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Step(context.Background(), &pb.StepRequest{}); !errors.Is(err, ErrExited) {
			t.Fatalf("%v, want ErrExited", err)
		}
	})
	t.Run("killed from outside mid-step", func(t *testing.T) {
		p, err := start(t, "hang", Config{})
		if err != nil {
			t.Fatal(err)
		}
		time.AfterFunc(200*time.Millisecond, func() { syscall.Kill(p.PID(), syscall.SIGKILL) })
		if _, err := p.Step(context.Background(), &pb.StepRequest{}); !errors.Is(err, ErrExited) {
			t.Fatalf("%v, want ErrExited", err)
		}
	})
	for _, mode := range []string{"garbage-step", "undeclared"} {
		t.Run(mode, func(t *testing.T) {
			p, err := start(t, mode, Config{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.Step(context.Background(), &pb.StepRequest{}); !errors.Is(err, ErrGarbage) {
				t.Fatalf("%v, want ErrGarbage", err)
			}
		})
	}
	t.Run("children", func(t *testing.T) {
		p, err := start(t, "children", Config{})
		if err != nil {
			t.Fatal(err)
		}
		resp, err := p.Step(context.Background(), &pb.StepRequest{})
		if err != nil {
			t.Fatal(err)
		}
		child, _ := strconv.Atoi(resp.GetCmdRun().GetCommand())
		pid := p.PID()
		p.Kill()
		noGroup(t, pid)
		if err := syscall.Kill(child, 0); !errors.Is(err, syscall.ESRCH) {
			t.Fatalf("the plugin's child %d survived Kill: %v", child, err)
		}
	})
}

func TestSHA256(t *testing.T) {
	if _, err := start(t, "echo", Config{SHA256: strings.Repeat("0", 64)}); !errors.Is(err, ErrHandshake) || !strings.Contains(err.Error(), "checksum") {
		t.Fatalf("%v: want a checksum mismatch", err)
	}
	if _, err := start(t, "echo", Config{SHA256: "xyz"}); !errors.Is(err, ErrHandshake) {
		t.Fatalf("%v", err)
	}
	sum, err := FileSHA256(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := start(t, "echo", Config{SHA256: sum}); err != nil {
		t.Fatal(err)
	}
}

// TestParentKilled: a host killed with SIGKILL leaves no plugin behind.
func TestParentKilled(t *testing.T) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "PLUGINS_TEST_AGENT=parent")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var line [64]byte
	n, _ := out.Read(line[:])
	pid, err := strconv.Atoi(strings.TrimSpace(string(line[:n])))
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("parent said %q", line[:n])
	}
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("plugin %d not running: %v", pid, err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	begin := time.Now()
	for {
		// The orphan is reaped by whoever adopts it; a zombie counts as gone.
		st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil || strings.Contains(string(st), ") Z ") {
			break
		}
		if time.Since(begin) > 3*time.Second {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("plugin %d still running 3s after its parent was killed", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("plugin exited %s after its parent", time.Since(begin).Round(time.Millisecond))
}

// BenchmarkStep is a Step round trip through go-plugin (gRPC on a unix
// socket, AutoMTLS) to a plugin process; target under 300 µs at p50.
func BenchmarkStep(b *testing.B) {
	cfg := Config{Command: []string{os.Args[0]}, Env: []string{"PLUGINS_TEST_AGENT=echo"}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	p, err := Start(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer p.Kill()
	req := &pb.StepRequest{Session: "s", Task: "t", Events: [][]byte{[]byte(`{"seq":1,"kind":"sandbox_started"}`)}}
	lat := make([]time.Duration, 0, b.N)
	for b.Loop() {
		begin := time.Now()
		if _, err := p.Step(context.Background(), req); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(begin))
	}
	reportP50(b, lat)
}

// BenchmarkStepInProcess is the same agent's Step called directly.
func BenchmarkStepInProcess(b *testing.B) {
	a := &testAgent{mode: "echo"}
	req := &pb.StepRequest{Session: "s", Task: "t", Events: [][]byte{[]byte(`{"seq":1,"kind":"sandbox_started"}`)}}
	for b.Loop() {
		if _, err := a.Step(context.Background(), req, NoHost{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStart is a plugin's start: exec, handshake with AutoMTLS, Info.
func BenchmarkStart(b *testing.B) {
	cfg := Config{Command: []string{os.Args[0]}, Env: []string{"PLUGINS_TEST_AGENT=echo"}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	lat := make([]time.Duration, 0, b.N)
	for b.Loop() {
		begin := time.Now()
		p, err := Start(context.Background(), cfg)
		if err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(begin))
		b.StopTimer()
		p.Kill()
		b.StartTimer()
	}
	reportP50(b, lat)
}

func reportP50(b *testing.B, lat []time.Duration) {
	slices.Sort(lat)
	if len(lat) > 0 {
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
	}
}
