package plugins

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	plugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/harnessd/harnessd/plugins/proto"
)

// Config says how to start one plugin process. Zero fields mean their
// defaults.
type Config struct {
	// Command is the plugin's argv: an executable (a path, or a name
	// looked up in PATH) and its arguments. Required.
	Command []string
	// SHA256, if set, is the hex SHA-256 the executable must have
	// (go-plugin's SecureConfig): a different file is refused before it
	// runs.
	SHA256 string
	// Env is the plugin's whole environment as KEY=VALUE, besides what
	// go-plugin and Start add (the magic cookie, the TLS certificates): the
	// host's own environment is not passed on.
	Env []string
	// Dir is the plugin's working directory; default the host's.
	Dir string
	// Logger gets the plugin's stderr and stdout lines (at info) and
	// go-plugin's log, with the logger's attributes; default
	// slog.Default().
	Logger *slog.Logger
	// StartTimeout bounds the exec, the handshake and Info. Default 10s.
	StartTimeout time.Duration
	// Host is served to the plugin over the broker, if it says it can
	// reach it (InfoResponse.host_services); nil offers nothing.
	Host Host
}

// DefaultStartTimeout is Config.StartTimeout's default.
const DefaultStartTimeout = 10 * time.Second

// Process is one running plugin, on the host side. Its methods are safe
// for concurrent use.
type Process struct {
	client *plugin.Client
	agent  *agentClient
	cmd    *exec.Cmd
	info   *pb.InfoResponse
	hostID uint32
	log    *slog.Logger

	lines  []*lineWriter
	served sync.WaitGroup // the host services' goroutine

	killOnce sync.Once
}

// Start runs a plugin: exec, go-plugin's handshake (magic cookie,
// protocol version, mutual TLS), then Info, whose answer it checks. A
// process that fails any of it is killed, with its process group, before
// Start returns an error matching ErrHandshake or ErrGarbage.
func Start(ctx context.Context, cfg Config) (*Process, error) {
	if len(cfg.Command) == 0 || cfg.Command[0] == "" {
		return nil, errors.New("plugins: no command")
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = DefaultStartTimeout
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	path, err := exec.LookPath(cfg.Command[0])
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrHandshake, err)
	}
	var secure *plugin.SecureConfig
	if cfg.SHA256 != "" {
		sum, err := hex.DecodeString(strings.ToLower(cfg.SHA256))
		if err != nil || len(sum) != sha256.Size {
			return nil, fmt.Errorf("%w: sha256 %q is not 64 hex digits", ErrHandshake, cfg.SHA256)
		}
		secure = &plugin.SecureConfig{Checksum: sum, Hash: sha256.New()}
	}
	tlsConfig, tlsEnv, err := startTLS()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, cfg.Command[1:]...)
	cmd.Env = append(append([]string{}, cfg.Env...), tlsEnv...)
	cmd.Dir = cfg.Dir
	// A group of its own: Kill takes whatever the plugin started with it,
	// and a terminal's Ctrl-C (meant for harnessd run) never reaches it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}

	p := &Process{cmd: cmd, log: log}
	stderr := &lineWriter{log: func(l string) { log.Info("plugin stderr", "line", l) }, json: true}
	syncErr := &lineWriter{log: func(l string) { log.Info("plugin stderr", "line", l) }}
	syncOut := &lineWriter{log: func(l string) { log.Info("plugin stdout", "line", l) }}
	p.lines = []*lineWriter{stderr, syncErr, syncOut}
	p.client = plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  Handshake,
		Plugins:          plugin.PluginSet{PluginName: &GRPCPlugin{}},
		Cmd:              cmd,
		SecureConfig:     secure,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		// Not AutoMTLS, which makes P-521 keys on both sides at every
		// start: the same protocol with P-256 keys (see tls.go).
		TLSConfig:       tlsConfig,
		SkipHostEnv:     true,
		StartTimeout:    cfg.StartTimeout,
		Logger:          newHCLogger(log),
		Stderr:          stderr,
		SyncStderr:      syncErr,
		SyncStdout:      syncOut,
		GRPCDialOptions: []grpc.DialOption{grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(MaxMessage))},
	})

	startCtx, cancel := context.WithTimeout(ctx, cfg.StartTimeout)
	defer cancel()
	if err := p.start(startCtx, cfg.Host); err != nil {
		p.Kill()
		if st := cmd.ProcessState; p.agent == nil && st != nil && st.Exited() {
			// It exited by itself before the handshake (Kill would have
			// signalled it): say how, rather than what it did not print.
			err = fmt.Errorf("%w: the plugin exited (%s) before its handshake", ErrHandshake, st)
		}
		return nil, err
	}
	return p, nil
}

func (p *Process) start(ctx context.Context, host Host) error {
	type dispensed struct {
		ac  *agentClient
		err error
	}
	ch := make(chan dispensed, 1)
	go func() {
		rpc, err := p.client.Client()
		if err != nil {
			ch <- dispensed{err: err}
			return
		}
		raw, err := rpc.Dispense(PluginName)
		if err != nil {
			ch <- dispensed{err: err}
			return
		}
		ac, ok := raw.(*agentClient)
		if !ok {
			ch <- dispensed{err: fmt.Errorf("dispensed %T", raw)}
			return
		}
		ch <- dispensed{ac: ac}
	}()
	select {
	case d := <-ch:
		if d.err != nil {
			return fmt.Errorf("%w: %w", ErrHandshake, d.err)
		}
		p.agent = d.ac
	case <-ctx.Done():
		return fmt.Errorf("%w: %w", ErrHandshake, context.Cause(ctx))
	}
	info, err := p.agent.client.Info(ctx, &pb.InfoRequest{})
	if err != nil {
		return fmt.Errorf("%w: info: %w", ErrHandshake, err)
	}
	if err := ValidateInfo(info); err != nil {
		return err
	}
	p.info = info
	if host != nil && info.GetHostServices() {
		b := p.agent.broker
		p.hostID = b.NextId()
		p.served.Go(func() {
			b.AcceptAndServe(p.hostID, func(opts []grpc.ServerOption) *grpc.Server {
				s := grpc.NewServer(append(opts, grpc.MaxRecvMsgSize(MaxMessage))...)
				pb.RegisterHostServer(s, hostServer{h: host})
				return s
			})
		})
	}
	return nil
}

// Info is what the plugin said of itself at Start.
func (p *Process) Info() *pb.InfoResponse { return p.info }

// PID is the plugin's process id.
func (p *Process) PID() int {
	if p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Exited reports whether the plugin process has exited.
func (p *Process) Exited() bool { return p.client.Exited() }

// Step asks the plugin for its next action and checks the answer
// (Validate). Errors: the context's (the plugin took too long), one
// matching ErrExited (the process is gone or went away mid-step),
// ErrGarbage, or the status the plugin answered with.
func (p *Process) Step(ctx context.Context, req *pb.StepRequest) (*pb.StepResponse, error) {
	req.HostServices = p.hostID
	resp, err := p.agent.client.Step(ctx, req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		switch status.Code(err) {
		case codes.DeadlineExceeded:
			// gRPC's own timer can fire before the context's.
			return nil, fmt.Errorf("%w: %w", context.DeadlineExceeded, err)
		case codes.Unavailable, codes.Canceled:
			return nil, fmt.Errorf("%w: %w", ErrExited, err)
		case codes.Internal:
			// A reply the client could not decode (bad UTF-8, a
			// truncated message) is the plugin's garbage.
			if !p.Exited() {
				return nil, fmt.Errorf("%w: %w", ErrGarbage, err)
			}
			return nil, fmt.Errorf("%w: %w", ErrExited, err)
		}
		return nil, err
	}
	if err := Validate(resp, p.info.GetActions()); err != nil {
		return nil, err
	}
	return resp, nil
}

// Kill ends the plugin: go-plugin's graceful close (at most 2s), then
// SIGKILL to its process group, which also takes anything it started. It
// returns when the process and every goroutine serving it are gone, and is
// safe to call more than once.
func (p *Process) Kill() {
	p.killOnce.Do(func() {
		p.client.Kill()
		if pid := p.PID(); pid > 0 {
			// The group outlives its leader only if the plugin left
			// children; they go too.
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}
		done := make(chan struct{})
		go func() { p.served.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			p.log.Warn("plugin host services did not stop within 5s")
		}
		for _, l := range p.lines {
			l.Flush()
		}
	})
}

// FileSHA256 is the hex SHA-256 of the file at path, as Config.SHA256
// wants it.
func FileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
