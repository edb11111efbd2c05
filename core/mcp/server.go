package mcp

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harnessd/harnessd/core/api"
	"github.com/harnessd/harnessd/core/daemon"
)

// Options configures a Server. The zero value is usable.
type Options struct {
	// Keep leaves the default session live when the client disconnects;
	// by default it is ended (its history stays in the store).
	Keep bool
	// Workspace is the host directory the default session works in,
	// bound at /workspace; "" gives it a fresh empty one.
	Workspace string
	// BaseDir resolves a relative workspace given to session_create (the
	// directory `harnessd mcp` was started in); "" refuses relative ones,
	// as the daemon's own /mcp endpoint must, having no cwd of the
	// client's.
	BaseDir string
	// Version is reported to clients; default "dev".
	Version string
	// Progress is how often a running exec reports progress to a client
	// that asked for it; default one second.
	Progress time.Duration
	Logger   *slog.Logger
}

// Server is one MCP connection's server: the tools, over one API
// client, and the connection's default session. Serve one connection
// with Run, or hand SDK() to a transport that makes one per session.
type Server struct {
	cl   *api.Client
	opts Options
	sdk  *sdk.Server

	mu       sync.Mutex
	def      string // the default session's id, once made
	defErr   error  // why it could not be made (kept so every exec says so)
	closed   bool
	watchers sync.WaitGroup // ends the default session when its MCP session ends
	turns    map[string]chan struct{}
}

// turn waits for the session's turn among this connection's execs and
// returns its release. An exec holds it until its command's answer is
// in, or, when cancelled, until its C-c has been sent: the client sees
// the cancel at once, and its next command must find the old one gone,
// not still running. Keys (is_input) never wait: they are how a running
// command is reached.
func (s *Server) turn(ctx context.Context, id string) (release func(), err error) {
	s.mu.Lock()
	if s.turns == nil {
		s.turns = map[string]chan struct{}{}
	}
	ch, ok := s.turns[id]
	if !ok {
		ch = make(chan struct{}, 1)
		s.turns[id] = ch
	}
	s.mu.Unlock()
	select {
	case ch <- struct{}{}:
		return func() { <-ch }, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("exec cancelled while the previous one was still being answered: %w", context.Cause(ctx))
	}
}

// New returns a Server whose tools call cl.
func New(cl *api.Client, opts Options) *Server {
	if opts.Version == "" {
		opts.Version = "dev"
	}
	if opts.Progress <= 0 {
		opts.Progress = time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{cl: cl, opts: opts}
	s.sdk = sdk.NewServer(&sdk.Implementation{Name: "harnessd", Title: "harnessd: a sandboxed, persistent terminal", Version: opts.Version}, &sdk.ServerOptions{
		Instructions: instructions,
		Logger:       opts.Logger,
		// Tools only, and a list that never changes.
		Capabilities: &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{}},
	})
	s.addTools()
	s.addFileTools()
	s.addPythonTool()
	return s
}

const instructions = `harnessd runs your commands in a persistent bash inside a sandbox: cd, exports, functions and background jobs carry over from one exec to the next. ` +
	`Call exec with a command; without a session it uses this connection's own session, created on first use. ` +
	`Long outputs come back trimmed (head, tail and error lines); read any range of the full output with output_read. ` +
	`exit_code -1 means the command is still running: call exec with an empty command to read more, or with is_input true and command "C-c" to interrupt it.`

// SDK is the underlying MCP server, for a transport to serve.
func (s *Server) SDK() *sdk.Server { return s.sdk }

// Run serves one connection on t until the client disconnects or ctx
// ends, then ends the default session (unless Options.Keep) and
// returns.
func (s *Server) Run(ctx context.Context, t sdk.Transport) error {
	err := s.sdk.Run(ctx, t)
	s.Close()
	if err != nil && ctx.Err() == nil {
		return fmt.Errorf("mcp: %w", err)
	}
	return nil
}

// Close ends the default session now (unless Options.Keep) and waits
// for the goroutines that watch for disconnection. It is safe to call
// twice.
func (s *Server) Close() {
	s.mu.Lock()
	id := s.def
	first := !s.closed
	s.closed = true
	s.mu.Unlock()
	if first {
		s.endDefault(id)
	}
	s.watchers.Wait()
}

// endDefault ends the default session, on a context of its own: the
// connection's is gone by now.
func (s *Server) endDefault(id string) {
	if id == "" || s.opts.Keep {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.cl.DeleteSession(ctx, id, false); err != nil {
		s.opts.Logger.Warn("mcp: ending the default session", "session", id, "err", err)
	}
}

// defaultSession returns the connection's default session, creating it
// on first use. ss is the MCP session asking: when it ends (the client
// disconnects) so does the default session.
func (s *Server) defaultSession(ctx context.Context, ss *sdk.ServerSession) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.def != "" {
		return s.def, nil
	}
	if s.closed {
		return "", fmt.Errorf("the MCP connection is closing")
	}
	req := daemon.CreateRequest{Labels: map[string]string{"client": "mcp"}, Workspace: s.opts.Workspace}
	info, err := s.cl.CreateSession(ctx, req)
	if err != nil {
		return "", actionable("creating this connection's session", err)
	}
	s.def = info.ID
	if ss != nil {
		s.watchers.Go(func() {
			ss.Wait()
			s.mu.Lock()
			first := !s.closed
			s.closed = true
			s.mu.Unlock()
			if first {
				s.endDefault(info.ID)
			}
		})
	}
	return info.ID, nil
}

// resolveWorkspace makes a workspace path absolute against BaseDir.
func (s *Server) resolveWorkspace(p string) (string, error) {
	if p == "" || filepath.IsAbs(p) {
		return p, nil
	}
	if s.opts.BaseDir == "" {
		return "", fmt.Errorf("workspace %q: give an absolute host path", p)
	}
	return filepath.Join(s.opts.BaseDir, p), nil
}
