package api

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/harnessd/harnessd/core/agent"
	"github.com/harnessd/harnessd/core/daemon"
	"github.com/harnessd/harnessd/core/event"
	"github.com/harnessd/harnessd/core/live"
	"github.com/harnessd/harnessd/core/pipeline"
)

// Options configures a Server.
type Options struct {
	// MaxBody is the largest request body read, in bytes; a larger one is
	// refused with 413. Default 1 MiB.
	MaxBody int64
	// Allow decides whether a peer may use the API. nil allows root and
	// the daemon's own uid only.
	Allow func(Peer) bool
	// BodyTimeout bounds how long a request body may take to arrive; a
	// client that trickles it is answered 408 and its connection closed.
	// Default 30 seconds.
	BodyTimeout time.Duration
	// MaxConnsPerPeer caps the connections one uid may hold open at once
	// (followers included); past it a new connection is closed at once.
	// Default 512.
	MaxConnsPerPeer int
	Logger          *slog.Logger
	// Runs drives agent runs (/v1/sessions/{id}/runs, /v1/runs/{id});
	// nil answers those routes with 501.
	Runs *agent.Controller
}

// Server serves the API of one Daemon.
type Server struct {
	d    *daemon.Daemon
	opts Options // as given to NewServer; the live settings are in live
	live atomic.Pointer[Options]
	mux  *http.ServeMux
	http *http.Server
	base context.Context // parent of every request's context
	stop context.CancelFunc

	stopOnce sync.Once
	stopped  chan struct{} // closed when the first http.Server.Shutdown returns

	connMu sync.Mutex
	conns  map[int]int      // open connections by peer uid
	connOf map[net.Conn]int // each counted connection's uid
}

// NewServer returns a Server for d. Serve it with Serve; end it with
// Shutdown.
func NewServer(d *daemon.Daemon, opts Options) *Server {
	if opts.MaxBody <= 0 {
		opts.MaxBody = 1 << 20
	}
	if opts.BodyTimeout <= 0 {
		opts.BodyTimeout = 30 * time.Second
	}
	if opts.MaxConnsPerPeer <= 0 {
		opts.MaxConnsPerPeer = 512
	}
	if opts.Allow == nil {
		opts.Allow = AllowUsers(nil, nil)
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	s := &Server{d: d, opts: opts, mux: http.NewServeMux(), stopped: make(chan struct{}),
		conns: map[int]int{}, connOf: map[net.Conn]int{}}
	s.base, s.stop = context.WithCancel(context.Background())
	s.live.Store(&opts)
	s.routes()
	s.http = &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		// No write timeout: an action answers when its command ends, and
		// a follower's stream lasts as long as the session.
		IdleTimeout: 2 * time.Minute,
		BaseContext: func(net.Listener) context.Context { return s.base },
		ConnContext: withPeer,
		ConnState:   s.connState,
		ErrorLog:    slog.NewLogLogger(opts.Logger.Handler(), slog.LevelDebug),
	}
	return s
}

// SetLimits replaces the settings a reload may change: who may connect,
// the body's size and time limits, and the per-peer connection cap. Zero
// fields keep their current values.
func (s *Server) SetLimits(allow func(Peer) bool, maxBody int64, bodyTimeout time.Duration, maxConnsPerPeer int) {
	o := *s.live.Load()
	if allow != nil {
		o.Allow = allow
	}
	if maxBody > 0 {
		o.MaxBody = maxBody
	}
	if bodyTimeout > 0 {
		o.BodyTimeout = bodyTimeout
	}
	if maxConnsPerPeer > 0 {
		o.MaxConnsPerPeer = maxConnsPerPeer
	}
	s.live.Store(&o)
}

// Serve accepts connections on ln until Shutdown. It returns nil after a
// Shutdown.
func (s *Server) Serve(ln net.Listener) error {
	err := s.http.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// StopAccepting closes the listeners at once; requests in progress go on.
// Call it first on SIGTERM, then stop the daemon, then Shutdown.
func (s *Server) StopAccepting() {
	// http.Server has no "close listeners only": Shutdown does exactly that
	// first, then waits for connections to go idle; Shutdown below waits
	// for this goroutine, bounding it with its context.
	s.stopOnce.Do(func() {
		go func() {
			s.http.Shutdown(s.base)
			close(s.stopped)
		}()
	})
}

// Shutdown ends the requests still open (event followers) and waits until
// every connection is closed or ctx ends, when it closes them.
func (s *Server) Shutdown(ctx context.Context) error {
	s.StopAccepting()
	s.stop() // requests' contexts end; so does the goroutine's wait
	select {
	case <-s.stopped:
	case <-ctx.Done():
	}
	err := s.http.Shutdown(ctx)
	if err != nil {
		s.http.Close()
	}
	return err
}

// ServeHTTP checks the peer, then routes.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Body != http.NoBody {
		// Whoever reads a body reads it within the body timeout: a handler
		// (readBody), or net/http itself, which drains up to 256 KiB of a
		// body the handler left unread before it answers or reuses the
		// connection, and with no deadline would wait on a client for as
		// long as it trickles.
		if err := http.NewResponseController(w).SetReadDeadline(time.Now().Add(s.live.Load().BodyTimeout)); err != nil {
			s.opts.Logger.Warn("api: no body deadline", "err", err)
		}
	}
	if p, ok := PeerFrom(r.Context()); !ok || !s.live.Load().Allow(p) {
		who := "an unknown peer"
		if ok {
			who = fmt.Sprintf("uid %d (pid %d)", p.UID, p.PID)
		}
		s.fail(w, r, http.StatusForbidden, "forbidden", who+" may not use this harnessd; add it to daemon.allow_uids or daemon.allow_gids in harness.toml")
		return
	}
	if r.URL.Path != path.Clean(r.URL.Path) || strings.Contains(r.URL.Path, "//") {
		// The mux would answer with a redirect to the cleaned path, which
		// is no place for an API client to be sent.
		s.fail(w, r, http.StatusNotFound, "not_found", "no such endpoint: "+r.URL.Path+" (paths are not cleaned or redirected)")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, s.live.Load().MaxBody)
	s.mux.ServeHTTP(w, r)
}

// connState counts each peer's open connections and closes one past
// MaxConnsPerPeer at once, so that one local user cannot hold every file
// descriptor of the daemon (slow clients, leaked followers).
func (s *Server) connState(c net.Conn, st http.ConnState) {
	switch st {
	case http.StateNew:
		uid := -1
		if p, ok := peerOf(c); ok {
			uid = p.UID
		}
		s.connMu.Lock()
		over := s.conns[uid] >= s.live.Load().MaxConnsPerPeer
		if !over {
			s.conns[uid]++
			s.connOf[c] = uid
		}
		s.connMu.Unlock()
		if over {
			s.opts.Logger.Warn("api: connection refused: too many open for this peer", "uid", uid, "max", s.live.Load().MaxConnsPerPeer)
			c.Close()
		}
	case http.StateClosed, http.StateHijacked:
		s.connMu.Lock()
		if uid, ok := s.connOf[c]; ok {
			delete(s.connOf, c)
			if s.conns[uid]--; s.conns[uid] <= 0 {
				delete(s.conns, uid)
			}
		}
		s.connMu.Unlock()
	}
}

// route registers a path with its methods; any other method is 405.
func (s *Server) route(pattern string, handlers map[string]http.HandlerFunc) {
	allow := make([]string, 0, len(handlers))
	for m := range handlers {
		allow = append(allow, m)
	}
	allowed := strings.Join(sortStrings(allow), ", ")
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		h, ok := handlers[r.Method]
		if !ok && r.Method == http.MethodHead {
			h, ok = handlers[http.MethodGet]
		}
		if !ok {
			w.Header().Set("Allow", allowed)
			s.fail(w, r, http.StatusMethodNotAllowed, "method_not_allowed", fmt.Sprintf("%s %s: use %s", r.Method, pattern, allowed))
			return
		}
		rw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
		if what, ok := s.mayUse(r, pattern); !ok {
			// As if it did not exist: whether another user's session
			// exists is theirs to know.
			s.fail(rw, r, http.StatusNotFound, "not_found", "no such "+what)
		} else {
			h(rw, r)
		}
		s.d.Metrics().ObserveRequest(pattern, rw.code)
	})
}

// admin reports whether peer may use every session: root and the
// daemon's own user.
func admin(p Peer) bool { return p.UID == 0 || p.UID == os.Geteuid() }

// mayUse reports whether the request's peer may use what the route's
// path names: a session (or a run, output or approval of one) is its
// creator's, root's and the daemon user's only. A request with no peer
// (in process) and a thing that does not exist pass: the handler says
// what is wrong. what names the thing for the 404.
func (s *Server) mayUse(r *http.Request, pattern string) (what string, ok bool) {
	p, known := PeerFrom(r.Context())
	if !known || admin(p) {
		return "", true
	}
	ctx := r.Context()
	session := ""
	switch {
	case strings.HasPrefix(pattern, "/v1/sessions/{id}"):
		what, session = "session "+r.PathValue("id"), r.PathValue("id")
	case pattern == "/v1/approvals/{session}/{seq}":
		what, session = "session "+r.PathValue("session"), r.PathValue("session")
	case pattern == "/v1/runs/{id}":
		what = "run " + r.PathValue("id")
		if s.opts.Runs == nil {
			return what, true
		}
		info, err := s.opts.Runs.Get(ctx, r.PathValue("id"))
		if err != nil {
			return what, true
		}
		session = info.Session
	case pattern == "/v1/outputs/{id}":
		what = "output " + r.PathValue("id")
		sid, err := s.d.OutputSession(ctx, r.PathValue("id"))
		if err != nil || sid == "" {
			return what, true
		}
		session = sid
	default:
		return "", true
	}
	owner, err := s.d.OwnerOf(ctx, session)
	if err != nil {
		return what, true
	}
	return what, owner != 0 && owner == p.UID
}

// visible reports whether the request's peer may see session owner's.
func visible(r *http.Request, owner int) bool {
	p, known := PeerFrom(r.Context())
	return !known || admin(p) || (owner != 0 && owner == p.UID)
}

func (s *Server) routes() {
	s.route("/v1/sessions", map[string]http.HandlerFunc{
		http.MethodGet:  s.listSessions,
		http.MethodPost: s.createSession,
	})
	s.route("/v1/sessions/{id}", map[string]http.HandlerFunc{
		http.MethodGet:    s.getSession,
		http.MethodDelete: s.deleteSession,
	})
	s.route("/v1/sessions/{id}/actions", map[string]http.HandlerFunc{http.MethodPost: s.act})
	s.route("/v1/sessions/{id}/replies", map[string]http.HandlerFunc{http.MethodPost: s.reply})
	s.route("/v1/sessions/{id}/events", map[string]http.HandlerFunc{http.MethodGet: s.events})
	s.route("/v1/sessions/{id}/runs", map[string]http.HandlerFunc{http.MethodPost: s.startRun, http.MethodGet: s.listRuns})
	s.route("/v1/runs/{id}", map[string]http.HandlerFunc{http.MethodGet: s.getRun, http.MethodDelete: s.stopRun})
	s.route("/v1/outputs/{id}", map[string]http.HandlerFunc{http.MethodGet: s.output})
	s.route("/v1/approvals", map[string]http.HandlerFunc{http.MethodGet: s.listApprovals})
	s.route("/v1/approvals/{session}/{seq}", map[string]http.HandlerFunc{http.MethodPost: s.decide})
	s.route("/v1/profiles", map[string]http.HandlerFunc{http.MethodGet: s.listProfiles})
	s.route("/v1/hooks/reload", map[string]http.HandlerFunc{http.MethodPost: s.reloadHooks})
	s.route("/healthz", map[string]http.HandlerFunc{http.MethodGet: s.health})
	s.route("/metrics", map[string]http.HandlerFunc{http.MethodGet: s.d.Metrics().Handler().ServeHTTP})
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.fail(w, r, http.StatusNotFound, "not_found", "no such endpoint: "+r.URL.Path+" (see GET /v1/sessions, /healthz, /metrics)")
	})
}

func (s *Server) createSession(w http.ResponseWriter, r *http.Request) {
	var req daemon.CreateRequest
	if !s.decodeJSON(w, r, &req, true) {
		return
	}
	// The client's credentials decide whose files the sandbox makes: a
	// client that is not root gets a sandbox whose files are its own (as
	// podman's --userns=keep-id), root's the sandbox's dedicated
	// unprivileged user, never host root; and whether a workspace it names
	// may be bound.
	if p, ok := PeerFrom(r.Context()); ok {
		req.Requester = &daemon.Requester{UID: p.UID, GID: p.GID, Groups: p.Groups}
	}
	info, err := s.d.Create(r.Context(), req)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	w.Header().Set("Location", "/v1/sessions/"+info.ID)
	writeJSON(w, http.StatusCreated, info)
}

// SessionList is the body of GET /v1/sessions.
type SessionList struct {
	Sessions []daemon.Info `json:"sessions"`
}

// ProfileList is GET /v1/profiles' answer: the [profiles.NAME] of
// harness.toml a session may be created with, each as its sandbox gets it.
type ProfileList struct {
	Profiles []daemon.Profile `json:"profiles"`
}

func (s *Server) listProfiles(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, ProfileList{Profiles: s.d.Profiles()})
}

func (s *Server) listSessions(w http.ResponseWriter, r *http.Request) {
	all, err := s.d.List(r.Context())
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	state := r.URL.Query().Get("state")
	kept := all[:0]
	for _, in := range all {
		if (state == "" || in.State == state) && visible(r, in.Owner) {
			kept = append(kept, in)
		}
	}
	all = kept
	writeJSON(w, http.StatusOK, SessionList{Sessions: all})
}

func (s *Server) getSession(w http.ResponseWriter, r *http.Request) {
	info, err := s.d.Get(r.Context(), r.PathValue("id"))
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, info)
}

func (s *Server) deleteSession(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	purge, ok := s.boolParam(w, r, "purge")
	if !ok {
		return
	}
	if err := s.d.Delete(r.Context(), id, purge); err != nil {
		s.failErr(w, r, err)
		return
	}
	if purge {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	info, err := s.d.Get(r.Context(), id)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, info)
}

func (s *Server) act(w http.ResponseWriter, r *http.Request) {
	body, ok := s.readBody(w, r)
	if !ok {
		return
	}
	ev, err := event.Decode(body)
	if err != nil {
		code := "malformed_json"
		if errors.Is(err, event.ErrUnknownField) {
			code = "unknown_field"
		} else if errors.Is(err, event.ErrUnknownKind) {
			code = "unknown_kind"
		}
		s.fail(w, r, http.StatusBadRequest, code, "action body: "+err.Error()+` (e.g. {"kind":"cmd_run","command":"ls","timeout_s":30})`)
		return
	}
	if id := r.PathValue("id"); ev.Session != "" && ev.Session != id {
		s.fail(w, r, http.StatusBadRequest, "bad_request", fmt.Sprintf("action body names session %q but the path names %q", ev.Session, id))
		return
	}
	if ev.Seq != 0 || ev.Cause != 0 {
		s.fail(w, r, http.StatusBadRequest, "bad_request", "an action's seq and cause are assigned by harnessd; leave them out")
		return
	}
	obs, err := s.d.Act(r.Context(), r.PathValue("id"), ev.Source, ev.Payload)
	if err != nil && obs.Seq == 0 {
		s.failErr(w, r, err)
		return
	}
	// An observation was recorded even if the session then ended: the
	// caller gets it, which says what happened.
	writeJSON(w, http.StatusOK, obs)
}

func (s *Server) reply(w http.ResponseWriter, r *http.Request) {
	var rep daemon.Reply
	if !s.decodeJSON(w, r, &rep, false) {
		return
	}
	res, err := s.d.Reply(r.Context(), r.PathValue("id"), rep)
	if err != nil && res.Observation == nil {
		s.failErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var after uint64
	if v := q.Get("after"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			s.fail(w, r, http.StatusBadRequest, "bad_request", "after: want a seq (0 or more), got "+strconv.Quote(v))
			return
		}
		after = n
	}
	follow, ok := s.boolParam(w, r, "follow")
	if !ok {
		return
	}
	progress, ok := s.boolParam(w, r, "progress")
	if !ok {
		return
	}
	id := r.PathValue("id")
	if err := s.d.Exists(r.Context(), id); err != nil {
		s.failErr(w, r, err)
		return
	}
	var watch *live.Sub
	if progress && follow {
		// Subscribed before the client sees the stream start, so that
		// an action it sends once it does has every chunk shown.
		watch = s.d.Watch(id)
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	if flusher != nil {
		flusher.Flush() // the client sees the stream start before the first event
	}
	bw := bufio.NewWriterSize(w, 32<<10)
	err := s.d.EventsRaw(r.Context(), id, after, follow, watch, func(raw []byte) error {
		if _, err := bw.Write(raw); err != nil {
			return err
		}
		if err := bw.WriteByte('\n'); err != nil {
			return err
		}
		if follow {
			// Live events go out one by one; a replay fills the buffer.
			if err := bw.Flush(); err != nil {
				return err
			}
			if flusher != nil {
				flusher.Flush()
			}
		}
		return nil
	})
	if err == nil {
		err = bw.Flush()
	}
	if err != nil && r.Context().Err() == nil {
		// The status is sent; the stream's last line says why it ended.
		line, _ := json.Marshal(errorBody{Error: errorDetail{Code: "stream_ended", Message: err.Error()}})
		bw.Write(append(line, '\n'))
		bw.Flush()
	}
}

// ApprovalList is the body of GET /v1/approvals.
type ApprovalList struct {
	Approvals []daemon.Approval `json:"approvals"`
}

// Decision is the body of POST /v1/approvals/{session}/{seq}.
type Decision struct {
	Approve bool `json:"approve"`
}

func (s *Server) reloadHooks(w http.ResponseWriter, r *http.Request) {
	rep, err := s.d.ReloadHooks()
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"reloaded": rep})
}

func (s *Server) listApprovals(w http.ResponseWriter, r *http.Request) {
	all := s.d.Approvals()
	if p, known := PeerFrom(r.Context()); !known || admin(p) {
		writeJSON(w, http.StatusOK, ApprovalList{Approvals: all})
		return
	}
	kept := all[:0]
	for _, a := range all {
		if owner, err := s.d.OwnerOf(r.Context(), a.Session); err == nil && visible(r, owner) {
			kept = append(kept, a)
		}
	}
	writeJSON(w, http.StatusOK, ApprovalList{Approvals: kept})
}

func (s *Server) decide(w http.ResponseWriter, r *http.Request) {
	seq, err := strconv.ParseUint(r.PathValue("seq"), 10, 64)
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, "bad_request", "seq: want the waiting action's seq, got "+strconv.Quote(r.PathValue("seq")))
		return
	}
	var dec struct {
		Approve *bool `json:"approve"`
	}
	if !s.decodeJSON(w, r, &dec, false) {
		return
	}
	if dec.Approve == nil {
		s.fail(w, r, http.StatusBadRequest, "bad_request", `say {"approve": true} or {"approve": false}`)
		return
	}
	by := "an unknown peer"
	if p, ok := PeerFrom(r.Context()); ok {
		by = fmt.Sprintf("uid %d (pid %d)", p.UID, p.PID)
	}
	if err := s.d.Decide(r.PathValue("session"), seq, *dec.Approve, by); err != nil {
		s.failErr(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// Page is the body of GET /v1/outputs/{id}: lines from_line..to_line of a
// stored output (1-based, inclusive; the daemon may return fewer than
// asked, and to_line says where it stopped), and how many lines it has.
type Page struct {
	ID    string `json:"id"`
	Text  string `json:"text"`
	From  int    `json:"from_line"`
	To    int    `json:"to_line"`
	Total int    `json:"total_lines"`
}

func (s *Server) output(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	from, to := 1, 0
	for _, p := range []struct {
		name string
		v    *int
	}{{"from_line", &from}, {"to_line", &to}} {
		if v := q.Get(p.name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				s.fail(w, r, http.StatusBadRequest, "bad_request", p.name+": want a line number (1 or more), got "+strconv.Quote(v))
				return
			}
			*p.v = n
		}
	}
	id := r.PathValue("id")
	lines, err := s.d.ReadLines(r.Context(), id, from, to)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, Page{ID: id, Text: lines.Text, From: lines.From, To: lines.To, Total: lines.Total})
}

// Health is the body of GET /healthz.
type Health struct {
	Status  string `json:"status"`
	Version string `json:"version,omitempty"`
	PID     int    `json:"pid"`
}

func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	if err := s.d.Healthy(ctx); err != nil {
		status, code := http.StatusServiceUnavailable, "unhealthy"
		if errors.Is(err, daemon.ErrStoreCannotWrite) {
			status, code = http.StatusInsufficientStorage, "store_full"
		}
		s.fail(w, r, status, code, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, Health{Status: "ok", Version: Version, PID: os.Getpid()})
}

// Version is reported by /healthz; cmd/harnessd sets it.
var Version = "dev"

// readBody reads the whole body within MaxBody and within BodyTimeout of
// the request's start (ServeHTTP set the deadline).
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		// The deadline stays: net/http's drain of the rest gives up at
		// once, and the connection is closed.
		if errors.Is(err, os.ErrDeadlineExceeded) {
			w.Header().Set("Connection", "close")
			s.fail(w, r, http.StatusRequestTimeout, "body_timeout", fmt.Sprintf("the request body did not arrive within %v", s.live.Load().BodyTimeout))
			return nil, false
		}
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			s.fail(w, r, http.StatusRequestEntityTooLarge, "body_too_large", fmt.Sprintf("request body is over %d bytes (daemon.max_body)", tooBig.Limit))
			return nil, false
		}
		s.fail(w, r, http.StatusBadRequest, "bad_request", "reading the body: "+err.Error())
		return nil, false
	}
	// No deadline past the body: the server's background read, which
	// notices a client that hangs up mid-action, must not time out.
	http.NewResponseController(w).SetReadDeadline(time.Time{})
	return body, true
}

// decodeJSON decodes a JSON body strictly: one object, known fields only.
// An empty body is allowed when optional.
func (s *Server) decodeJSON(w http.ResponseWriter, r *http.Request, v any, optional bool) bool {
	body, ok := s.readBody(w, r)
	if !ok {
		return false
	}
	if optional && len(strings.TrimSpace(string(body))) == 0 {
		return true
	}
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		code := "malformed_json"
		if strings.HasPrefix(err.Error(), "json: unknown field") {
			code = "unknown_field"
		}
		s.fail(w, r, http.StatusBadRequest, code, "request body: "+err.Error())
		return false
	}
	if dec.More() {
		s.fail(w, r, http.StatusBadRequest, "malformed_json", "request body: more than one JSON value")
		return false
	}
	return true
}

func (s *Server) boolParam(w http.ResponseWriter, r *http.Request, name string) (bool, bool) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return false, true
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, "bad_request", name+": want true or false, got "+strconv.Quote(v))
		return false, false
	}
	return b, true
}

// errorBody is every error's JSON: {"error": {"code": …, "message": …}}.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (s *Server) fail(w http.ResponseWriter, r *http.Request, status int, code, msg string) {
	if status >= 500 {
		s.opts.Logger.Error("api", "method", r.Method, "path", r.URL.Path, "status", status, "err", msg)
	}
	writeJSON(w, status, errorBody{Error: errorDetail{Code: code, Message: msg}})
}

// failErr maps the daemon's errors to statuses, in one place.
func (s *Server) failErr(w http.ResponseWriter, r *http.Request, err error) {
	status, code := http.StatusInternalServerError, "internal"
	switch {
	case errors.Is(err, daemon.ErrNotFound):
		status, code = http.StatusNotFound, "not_found"
	case errors.Is(err, daemon.ErrExists):
		status, code = http.StatusConflict, "exists"
	case errors.Is(err, daemon.ErrStopped):
		status, code = http.StatusConflict, "session_ended"
	case errors.Is(err, daemon.ErrBadRequest):
		status, code = http.StatusBadRequest, "bad_request"
	case errors.Is(err, daemon.ErrTooMany):
		status, code = http.StatusTooManyRequests, "too_many_sessions"
	case errors.Is(err, daemon.ErrShuttingDown), errors.Is(err, agent.ErrShuttingDown):
		status, code = http.StatusServiceUnavailable, "shutting_down"
	case errors.Is(err, pipeline.ErrUnrecorded):
		status, code = http.StatusInsufficientStorage, "record_incomplete"
	case errors.Is(err, daemon.ErrStoreCannotWrite), errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		status, code = http.StatusInsufficientStorage, "store_full"
	case errors.Is(err, agent.ErrBusy):
		status, code = http.StatusConflict, "run_active"
	case errors.Is(err, agent.ErrNotFound):
		status, code = http.StatusNotFound, "not_found"
	case errors.Is(err, agent.ErrUnknownAgent):
		status, code = http.StatusBadRequest, "unknown_agent"
	case errors.Is(err, agent.ErrBadRequest):
		status, code = http.StatusBadRequest, "bad_request"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		status, code = http.StatusServiceUnavailable, "canceled"
	}
	s.fail(w, r, status, code, err.Error())
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	var b []byte
	var err error
	if m, ok := v.(json.Marshaler); ok {
		b, err = m.MarshalJSON()
	} else {
		b, err = json.Marshal(v)
	}
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"error":{"code":"internal","message":"encoding the reply failed"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// statusWriter remembers the status for the metrics.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) { w.code = code; w.ResponseWriter.WriteHeader(code) }

// Unwrap lets http.ResponseController reach the connection (read
// deadlines).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func sortStrings(s []string) []string {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	return s
}

// Listen creates the API's unix socket at path with mode 0660, making its
// directory (0755) if needed. A socket file left by a daemon that is gone
// is replaced; one that a live daemon answers on is an error.
func Listen(path string) (net.Listener, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("listen %s: %w", path, err)
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("listen %s: exists and is not a socket; remove it or set daemon.socket", path)
		}
		c, err := net.DialTimeout("unix", path, time.Second)
		if err == nil {
			c.Close()
			return nil, fmt.Errorf("listen %s: another harnessd is serving on it", path)
		}
		if !errors.Is(err, syscall.ECONNREFUSED) {
			return nil, fmt.Errorf("listen %s: a socket is there and does not answer normally: %w", path, err)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("listen %s: remove stale socket: %w", path, err)
		}
	}
	// The mode is set by umask at bind time: narrow it so that the socket
	// is never, even for an instant, open wider than 0660.
	old := syscall.Umask(0o117)
	ln, err := net.Listen("unix", path)
	syscall.Umask(old)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", path, err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(true)
	if err := os.Chmod(path, 0o660); err != nil {
		ln.Close()
		return nil, fmt.Errorf("listen %s: %w", path, err)
	}
	return ln, nil
}
