package api

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// The MCP endpoint and the in-process client it needs live here, apart
// from server.go: the MCP server (core/mcp) is a client of this API, so
// this package cannot import it; cmd/harnessd/serve builds the handler
// from ClientFor and mounts it with HandleMCP.

// HandleMCP serves h at /mcp, behind the same peer check and body limit
// as every other route (ServeHTTP runs first). Call it before Serve.
//
// The body is read here, within daemon.body_timeout, and the read
// deadline is then lifted, as readBody does for actions: a tool call on
// a Streamable HTTP POST lasts as long as its command, and a deadline
// left on the connection would end it (the server's background read
// would fail and cancel the request).
//
// A session's requests must come from the uid that started it: the MCP
// session id is a bearer of the creator's identity (its in-process
// client acts as that peer), so another local user who learns it gets
// 403.
func (s *Server) HandleMCP(h http.Handler) {
	owners := &mcpOwners{uid: map[string]int{}}
	s.route("/mcp", map[string]http.HandlerFunc{
		http.MethodGet:    owners.wrap(s, h),
		http.MethodPost:   owners.wrap(s, h),
		http.MethodDelete: owners.wrap(s, h),
	})
}

// mcpSessionHeader is the Streamable HTTP transport's session header.
const mcpSessionHeader = "Mcp-Session-Id"

// mcpOwners remembers which uid started each MCP session.
type mcpOwners struct {
	mu  sync.Mutex
	uid map[string]int
}

func (o *mcpOwners) wrap(s *Server, h http.Handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p, _ := PeerFrom(r.Context()) // ServeHTTP let only known peers through
		if id := r.Header.Get(mcpSessionHeader); id != "" {
			o.mu.Lock()
			uid, known := o.uid[id]
			o.mu.Unlock()
			if known && uid != p.UID {
				s.fail(w, r, http.StatusForbidden, "forbidden", "this MCP session belongs to another user")
				return
			}
			if known && r.Method == http.MethodDelete {
				defer func() {
					o.mu.Lock()
					delete(o.uid, id)
					o.mu.Unlock()
				}()
			}
		}
		if r.Body != http.NoBody {
			body, ok := s.readBody(w, r)
			if !ok {
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		h.ServeHTTP(&mcpWriter{ResponseWriter: w, seen: func(id string) {
			o.mu.Lock()
			if _, ok := o.uid[id]; !ok {
				o.uid[id] = p.UID
			}
			o.mu.Unlock()
		}}, r)
	}
}

// mcpWriter notes the session id the MCP handler assigns.
type mcpWriter struct {
	http.ResponseWriter
	seen   func(string)
	headed bool
}

func (w *mcpWriter) WriteHeader(code int) {
	if !w.headed {
		w.headed = true
		if id := w.Header().Get(mcpSessionHeader); id != "" && code < 300 {
			w.seen(id)
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *mcpWriter) Write(b []byte) (int, error) {
	if !w.headed {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

func (w *mcpWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *mcpWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// ClientFor returns a Client that calls this server's handlers in
// process, as the peer of r's connection: every call goes through the
// same checks, pipeline and error mapping as one over the socket, and a
// session it creates is the peer's (its workspace checked against the
// peer's credentials), never the daemon's.
//
// Replies are buffered whole, so it serves request-reply calls; an
// event follow (Events with follow) would not return before it ends.
func (s *Server) ClientFor(r *http.Request) *Client {
	p, ok := PeerFrom(r.Context())
	return &Client{socket: "in-process", hc: &http.Client{Transport: &inProcess{s: s, peer: p, known: ok}}}
}

// inProcess is an http.RoundTripper that serves a request with the
// Server's own ServeHTTP on the caller's goroutine.
type inProcess struct {
	s     *Server
	peer  Peer
	known bool
}

func (t *inProcess) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	if t.known {
		ctx = context.WithValue(ctx, peerKey{}, t.peer)
	}
	r := req.Clone(ctx)
	if r.Body == nil {
		r.Body = http.NoBody
	}
	r.RequestURI = r.URL.RequestURI()
	rec := &recorder{header: http.Header{}, code: http.StatusOK}
	t.s.ServeHTTP(rec, r)
	if req.Body != nil {
		req.Body.Close()
	}
	if err := ctx.Err(); err != nil && rec.buf.Len() == 0 {
		return nil, err
	}
	return &http.Response{
		Status:        strconv.Itoa(rec.code) + " " + http.StatusText(rec.code),
		StatusCode:    rec.code,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        rec.header,
		Body:          io.NopCloser(&rec.buf),
		ContentLength: int64(rec.buf.Len()),
		Request:       req,
	}, nil
}

// recorder is the ResponseWriter of an in-process request.
type recorder struct {
	header http.Header
	code   int
	wrote  bool
	buf    bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(code int) {
	if !r.wrote {
		r.code, r.wrote = code, true
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	r.wrote = true
	return r.buf.Write(b)
}

func (r *recorder) Flush() {}

// SetReadDeadline answers http.ResponseController: there is no
// connection to time out, and ServeHTTP must not log that it could not
// set one.
func (r *recorder) SetReadDeadline(time.Time) error { return nil }

var _ http.Flusher = (*recorder)(nil)
