package mcp

import (
	"net/http"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harnessd/harnessd/core/api"
)

// HTTPHandler is the Streamable HTTP transport for the daemon's /mcp
// endpoint: one Server per MCP session, each over an in-process client
// acting as the peer that started the session.
type HTTPHandler struct {
	h *sdk.StreamableHTTPHandler

	mu      sync.Mutex
	servers []served
}

// served is a Server made for an MCP session, and when.
type served struct {
	s    *Server
	made time.Time
}

// IdleTimeout ends an HTTP MCP session no request has touched for this
// long, and with it its default session: an HTTP client may vanish
// without a DELETE, and no connection's end says so.
const IdleTimeout = 30 * time.Minute

// NewHTTPHandler returns the /mcp handler. clientFor gives the API
// client a request's peer acts through (api.Server.ClientFor).
// opts.BaseDir is ignored: the daemon has no cwd of the client's.
func NewHTTPHandler(clientFor func(*http.Request) *api.Client, opts Options) *HTTPHandler {
	opts.BaseDir = ""
	hh := &HTTPHandler{}
	hh.h = sdk.NewStreamableHTTPHandler(func(r *http.Request) *sdk.Server {
		s := New(clientFor(r), opts)
		hh.mu.Lock()
		hh.servers = append(prune(hh.servers), served{s: s, made: time.Now()})
		hh.mu.Unlock()
		return s.SDK()
	}, &sdk.StreamableHTTPOptions{
		SessionTimeout: IdleTimeout,
		Logger:         opts.Logger,
		// The API reads the body first (api.Server.HandleMCP) within
		// daemon.max_body; the SDK's own cap stays as a second bound.
	})
	return hh
}

// ServeHTTP serves the MCP Streamable HTTP transport.
func (hh *HTTPHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) { hh.h.ServeHTTP(w, r) }

// Close ends every MCP session and waits until each connection's
// default session is ended. Call it when the API has stopped accepting.
func (hh *HTTPHandler) Close() {
	hh.mu.Lock()
	servers := hh.servers
	hh.servers = nil
	hh.mu.Unlock()
	for _, sv := range servers {
		for ss := range sv.s.SDK().Sessions() {
			ss.Close()
		}
		sv.s.Close()
	}
}

// prune drops the servers whose MCP session has ended, so that a
// long-lived daemon does not keep one per session it ever served. A
// server younger than a minute may not have its session yet and stays.
func prune(all []served) []served {
	kept := all[:0]
	for _, sv := range all {
		if time.Since(sv.made) < time.Minute || hasSession(sv.s) {
			kept = append(kept, sv)
			continue
		}
		sv.s.Close() // its watcher has ended the default session; this waits for it
	}
	clear(all[len(kept):])
	return kept
}

func hasSession(s *Server) bool {
	for range s.SDK().Sessions() {
		return true
	}
	return false
}
