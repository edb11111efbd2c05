package daemon

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/harnessd/harnessd/core/config"
	"github.com/harnessd/harnessd/core/event"
	"github.com/harnessd/harnessd/core/live"
	"github.com/harnessd/harnessd/core/sandbox"
	"github.com/harnessd/harnessd/core/session"
	"github.com/harnessd/harnessd/core/session/record"
)

// liveSession is a session whose shell runs.
type liveSession struct {
	sess      *session.Session
	workspace string
	proxy     *egress       // nil unless network = "proxy"
	turn      chan struct{} // one action at a time: hold the token to act
	gone      chan struct{} // closed once sandbox_stopped is recorded
	ending    chan struct{} // closed when end begins
	mu        sync.Mutex
	ended     bool // Close has been called (under mu)
	// running is the seq of the cmd_run whose last observation said
	// "still running" (exit code -1), 0 when none: what shutdown's grace
	// waits for.
	running atomic.Uint64
}

// Info is a session as the API shows it.
type Info struct {
	ID        string            `json:"id"`
	State     string            `json:"state"`
	Created   time.Time         `json:"created"`
	Ended     time.Time         `json:"ended,omitzero"`
	Labels    map[string]string `json:"labels,omitempty"`
	LastSeq   uint64            `json:"last_seq"`
	Workspace string            `json:"workspace,omitempty"` // on the host; only while live
	Owner     int               `json:"owner,omitempty"`     // uid of the client that made it (0: root)
	PID       int               `json:"pid,omitempty"`       // the shell's, only while live
	Profile   string            `json:"profile,omitempty"`   // the [profiles.NAME] it was made with
}

// CreateRequest is what a new session is made from. Every field may be
// left empty.
type CreateRequest struct {
	ID     string            `json:"id,omitempty"` // default a new random id
	Labels map[string]string `json:"labels,omitempty"`
	// Workspace is an existing host directory to work in, bound
	// read-write at /workspace, instead of a fresh empty one. The
	// requester must be able to write it; it is never removed, not even
	// by a purge.
	Workspace string `json:"workspace,omitempty"`
	// Git makes the workspace a fresh clone of a host repository at a
	// ref (see GitSource), instead of a fresh empty one; not with
	// Workspace.
	Git *GitSource `json:"git,omitempty"`
	// Network narrows sandbox.network for this session: "none", "proxy"
	// or "host", at most as open as the configured one (none < proxy <
	// host); "" is the configured one.
	Network string `json:"network,omitempty"`
	// Profile names a [profiles.NAME] table of harness.toml: the
	// sandbox settings the session is made with instead of [sandbox]'s
	// ("" for those). Network, if set too, narrows the profile's.
	Profile string `json:"profile,omitempty"`
	// Requester is who asks, from the API's peer credentials: a client's
	// workspace must be theirs to write, and the sandbox's files become
	// theirs when the requester is not root (root's go to the sandbox's
	// dedicated unprivileged user, never host root).
	Requester *Requester `json:"-"`
}

var validID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// Create starts a new session: its workspace, its shell, its first event
// (sandbox_started).
func (d *Daemon) Create(ctx context.Context, req CreateRequest) (Info, error) {
	id := req.ID
	if id == "" {
		var b [5]byte
		_, _ = rand.Read(b[:])
		id = "s" + hex.EncodeToString(b[:])
	} else if !validID.MatchString(id) {
		return Info{}, fmt.Errorf("%w: session id %q: use 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit", ErrBadRequest, id)
	}
	d.mu.Lock()
	switch {
	case d.closing:
		d.mu.Unlock()
		return Info{}, ErrShuttingDown
	case len(d.live)+d.creating >= d.conf().Daemon.MaxSessions:
		d.mu.Unlock()
		return Info{}, fmt.Errorf("%w: %d live (daemon.max_sessions)", ErrTooMany, d.conf().Daemon.MaxSessions)
	}
	d.creating++
	d.inflight.Add(1) // Shutdown waits for a create in progress
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		d.creating--
		d.mu.Unlock()
		d.inflight.Done()
	}()

	var warm *placement
	ws := filepath.Join(d.dataDir, "workspaces", id)
	if req.ID != "" {
		// A warm sandbox leaves the pool once and is never put back: take
		// one only for a create that can succeed. (A racing create of the
		// same id can still lose one; that costs a cold start, not a
		// wrong answer.)
		if _, err := d.st.Session(ctx, id); err == nil {
			return Info{}, fmt.Errorf("%w: session %s", ErrExists, id)
		} else if !errors.Is(err, record.ErrNotFound) {
			return Info{}, fmt.Errorf("daemon: create session %s: %w", id, err)
		}
	}
	own := owner(req.Requester)
	sc, err := d.sessionSandbox(req.Profile, req.Network)
	if err != nil {
		return Info{}, err
	}
	if req.Workspace != "" && req.Git != nil {
		return Info{}, fmt.Errorf("%w: name a workspace or a git source, not both", ErrBadRequest)
	}
	cloned := false // a clone with no placement to remove it
	if req.Git != nil {
		// A clone of the client's repository, in the daemon's own
		// workspace directory, made once the sandbox (and its disk)
		// exists and before its shell starts; never pooled (a pooled
		// sandbox has its workspace already). The directory is made
		// here, exclusively: a racing create of the same id, or a
		// leftover, is never filled, nor removed as ours.
		gc, err := d.checkGitSource(id, *req.Git, req.Requester, own)
		if err != nil {
			return Info{}, err
		}
		defer gc.close()
		if err := os.MkdirAll(filepath.Dir(ws), 0o700); err != nil {
			return Info{}, fmt.Errorf("daemon: git workspace: %w", err)
		}
		if err := os.Mkdir(ws, 0o700); err != nil {
			if errors.Is(err, os.ErrExist) {
				return Info{}, fmt.Errorf("%w: session %s: its workspace directory exists", ErrExists, id)
			}
			return Info{}, fmt.Errorf("daemon: git workspace: %w", err)
		}
		if d.conf().Sandbox.Driver == config.DriverNone {
			err = gc.into(ctx, ws) // no sandbox, no disk
		} else {
			warm, err = d.placeFilled(ctx, id, ws, own, sc, gc.into)
		}
		if err != nil {
			os.RemoveAll(ws)
			return Info{}, err
		}
		cloned = warm == nil
	} else if req.Workspace != "" {
		// A client's directory: checked, never pooled (the pool's
		// sandboxes have their own), owned by the client in the sandbox.
		real, err := d.userWorkspace(req.Workspace, req.Requester)
		if err != nil {
			return Info{}, err
		}
		ws = real
	} else if d.pool != nil && own == nil && sc == nil {
		// Pooled sandboxes were made before any client was known, for the
		// dedicated user; a session owned by a client's user starts cold.
		if p, ok := d.pool.take(); ok {
			warm, ws = p, p.ws
			defer d.pool.refill()
		}
	}
	rec := record.Session{ID: id, State: StateLive, Labels: req.Labels, Workspace: ws, Profile: req.Profile}
	if req.Requester != nil {
		rec.Owner = req.Requester.UID
	}
	// A warm sandbox's start is known already: its sandbox_started goes
	// in with the session's record, one commit for the create.
	var first []event.Event
	if warm != nil {
		first = []event.Event{{Session: id, Source: event.SourceRuntime, Time: time.Now().UTC(), Payload: session.SandboxStarted(d.driver.Name(), warm.sb)}}
	}
	rec, recorded, err := d.createRecord(ctx, rec, first)
	if err != nil {
		if warm != nil {
			warm.close() // and, but for a client's directory, its workspace
		}
		if cloned {
			os.RemoveAll(ws)
		}
		if errors.Is(err, record.ErrExists) {
			return Info{}, fmt.Errorf("%w: session %s", ErrExists, id)
		}
		return Info{}, fmt.Errorf("daemon: create session %s: %w", id, err)
	}
	ls, err := d.start(ctx, id, ws, warm, own, sc, req.Profile, recorded)
	if err != nil {
		// The record stays: it says the session never started.
		d.bus.Append(context.WithoutCancel(ctx), id, event.Event{Session: id, Source: event.SourceRuntime, Time: time.Now().UTC(),
			Payload: event.SandboxStopped{Reason: "failed to start: " + err.Error()}})
		d.setState(context.WithoutCancel(ctx), id, StateInterrupted)
		return Info{}, fmt.Errorf("daemon: start session %s: %w", id, err)
	}
	d.metrics.sessionsCreated.Inc()
	d.metrics.sessionsLive.Inc()
	d.mu.Lock()
	if d.closing {
		d.mu.Unlock()
		d.end(ctx, id, ls, StateInterrupted, "harnessd is shutting down")
		return Info{}, ErrShuttingDown
	}
	d.live[id] = ls
	d.mu.Unlock()
	d.sessionHook(ctx, ls.sess, "session.start")
	d.log.Info("session created", "session", id, "workspace", ls.workspace, "pid", ls.sess.PID())
	rec.LastSeq = 1
	return d.info(rec, ls), nil
}

// start starts a session's shell: in warm's sandbox if the pool had one,
// else in a new sandbox (or on the host with driver none) with its
// workspace at ws, owned by own (nil: the driver's default), with the
// sandbox settings sc (nil: [sandbox]'s) of the named profile.
// recorded says its sandbox_started is in the log already (createRecord).
func (d *Daemon) start(ctx context.Context, id, ws string, warm *placement, own *sandbox.User, sc *config.Sandbox, profile string, recorded bool) (*liveSession, error) {
	cfg := session.ConfigFrom(d.conf(), ws)
	cfg.Profile, cfg.StartRecorded = profile, recorded
	cfg.Events, cfg.Outputs, cfg.Logger, cfg.Live = d.bus, d.outputs, d.log, d.hub
	cfg.Driver = d.driver.Name()
	if d.conf().Sandbox.Driver == config.DriverNone {
		if err := os.MkdirAll(ws, 0o700); err != nil {
			return nil, err
		}
	} else {
		if warm == nil {
			var err error
			if warm, err = d.place(ctx, id, ws, own, sc); err != nil {
				return nil, err
			}
		}
		cfg.Sandbox, cfg.Shell = warm.sb, warm.term
	}
	sess, err := session.New(ctx, id, cfg)
	if err != nil {
		if warm != nil {
			warm.close()
		}
		return nil, err
	}
	ls := &liveSession{sess: sess, workspace: ws, turn: make(chan struct{}, 1), gone: make(chan struct{}), ending: make(chan struct{})}
	if warm != nil && warm.proxy != nil {
		ls.proxy = warm.proxy
		ls.proxy.attach(sess, d.log)
	}
	return ls, nil
}

// createsWith is a store that records a session and its first events in
// one commit (store.Store is).
type createsWith interface {
	CreateSessionWith(ctx context.Context, s record.Session, evs ...event.Event) (record.Session, []event.Event, error)
}

// createRecord records a new session, with first if the store can take
// them in the same commit; recorded says whether it did.
func (d *Daemon) createRecord(ctx context.Context, rec record.Session, first []event.Event) (record.Session, bool, error) {
	if cw, ok := d.st.(createsWith); ok && len(first) > 0 {
		rec, _, err := cw.CreateSessionWith(ctx, rec, first...)
		return rec, err == nil, err
	}
	rec, err := d.st.CreateSession(ctx, rec)
	return rec, false, err
}

func (d *Daemon) info(s record.Session, ls *liveSession) Info {
	in := Info{ID: s.ID, State: s.State, Created: s.Created, Ended: s.Ended, Labels: s.Labels, LastSeq: s.LastSeq, Owner: s.Owner, Profile: s.Profile}
	if in.State == "" {
		in.State = StateLive
	}
	if ls != nil {
		in.Workspace = ls.workspace
		in.PID = ls.sess.PID()
	}
	return in
}

// Get returns one session, live or ended.
func (d *Daemon) Get(ctx context.Context, id string) (Info, error) {
	s, err := d.st.Session(ctx, id)
	if err != nil {
		if errors.Is(err, record.ErrNotFound) {
			return Info{}, fmt.Errorf("%w: session %s", ErrNotFound, id)
		}
		return Info{}, err
	}
	d.mu.Lock()
	ls := d.live[id]
	d.mu.Unlock()
	return d.info(s, ls), nil
}

// OwnerOf returns the uid that created session id (see record.Session's
// Owner), or an error matching ErrNotFound. It never waits for a command.
func (d *Daemon) OwnerOf(ctx context.Context, id string) (int, error) {
	s, err := d.st.Session(ctx, id)
	if err != nil {
		if errors.Is(err, record.ErrNotFound) {
			return 0, fmt.Errorf("%w: session %s", ErrNotFound, id)
		}
		return 0, err
	}
	return s.Owner, nil
}

// OutputSession returns the session a stored output belongs to, where the
// output store can say (store.Outputs can); "" when it cannot.
func (d *Daemon) OutputSession(ctx context.Context, outputID string) (string, error) {
	o, ok := d.outputs.(interface {
		SessionOf(ctx context.Context, id string) (string, error)
	})
	if !ok {
		return "", nil
	}
	return o.SessionOf(ctx, outputID)
}

// networkRank orders network settings from the most closed.
var networkRank = map[string]int{config.NetworkNone: 0, config.NetworkProxy: 1, config.NetworkHost: 2}

// sessionSandbox returns the sandbox settings a session asks for: the
// named profile's over [sandbox]'s, with the network narrowed to want if
// set (never widened: none < proxy < host). It returns nil when that is
// just [sandbox] (a pooled sandbox will do). Errors match ErrBadRequest.
func (d *Daemon) sessionSandbox(profile, want string) (*config.Sandbox, error) {
	c := d.conf()
	sc := c.Sandbox
	if profile == "" && (want == "" || want == sc.Network) {
		return nil, nil
	}
	if profile != "" {
		p, ok := c.Profiles[profile]
		if !ok {
			have := "none are defined"
			if names := c.ProfileNames(); len(names) > 0 {
				have = "have " + strings.Join(names, ", ")
			}
			return nil, fmt.Errorf("%w: profile %q is not in harness.toml's [profiles] (%s)", ErrBadRequest, profile, have)
		}
		if sc.Driver == config.DriverNone {
			return nil, fmt.Errorf("%w: profile %q: sandbox.driver is none, so there is no sandbox for its settings to apply to", ErrBadRequest, profile)
		}
		sc = p.Apply(sc)
	}
	if want != "" && want != sc.Network {
		r, ok := networkRank[want]
		if !ok {
			return nil, fmt.Errorf("%w: network %q: want none, proxy or host", ErrBadRequest, want)
		}
		if sc.Driver == config.DriverNone {
			return nil, fmt.Errorf("%w: network %q: sandbox.driver is none, so sessions run on the host's network", ErrBadRequest, want)
		}
		if r > networkRank[sc.Network] {
			of := "this daemon's sandbox.network"
			if profile != "" {
				of = fmt.Sprintf("profile %s's network", profile)
			}
			return nil, fmt.Errorf("%w: network %q is more open than %s (%s); a session may only narrow it", ErrBadRequest, want, of, sc.Network)
		}
		sc.Network = want
	}
	return &sc, nil
}

// Exists reports, as an error matching ErrNotFound, a session the store
// does not hold. Unlike Get it never waits for a running command.
func (d *Daemon) Exists(ctx context.Context, id string) error {
	if _, err := d.st.Session(ctx, id); err != nil {
		if errors.Is(err, record.ErrNotFound) {
			return fmt.Errorf("%w: session %s", ErrNotFound, id)
		}
		return err
	}
	return nil
}

// List returns every session the store holds, oldest first.
func (d *Daemon) List(ctx context.Context) ([]Info, error) {
	all, err := d.st.Sessions(ctx)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	live := maps.Clone(d.live)
	d.mu.Unlock()
	out := make([]Info, 0, len(all))
	for _, s := range all {
		out = append(out, d.info(s, live[s.ID]))
	}
	slices.SortStableFunc(out, func(a, b Info) int { return a.Created.Compare(b.Created) })
	return out, nil
}

// Delete ends a session: its shell and everything it started are killed
// (a running command with them), sandbox_stopped is recorded, and the
// session becomes stopped, its history still readable. With purge, its
// history, outputs and workspace are removed too.
func (d *Daemon) Delete(ctx context.Context, id string, purge bool) error {
	d.mu.Lock()
	if d.closing {
		d.mu.Unlock()
		return ErrShuttingDown
	}
	ls := d.live[id]
	delete(d.live, id)
	d.inflight.Add(1) // Shutdown waits for this end to be recorded
	d.mu.Unlock()
	defer d.inflight.Done()
	rec, err := d.st.Session(ctx, id)
	if err != nil && ls == nil {
		if errors.Is(err, record.ErrNotFound) {
			return fmt.Errorf("%w: session %s", ErrNotFound, id)
		}
		return err
	}
	if ls != nil {
		d.end(ctx, id, ls, StateStopped, "deleted by a client")
	}
	if !purge {
		return nil
	}
	ws := rec.Workspace
	if err := d.st.DeleteSession(ctx, id); err != nil && !errors.Is(err, record.ErrNotFound) {
		return fmt.Errorf("daemon: purge session %s: %w", id, err)
	}
	if ws != "" && d.ownWorkspace(ws) { // a client's directory stays
		if err := os.RemoveAll(ws); err != nil {
			return fmt.Errorf("daemon: purge session %s: %w", id, err)
		}
	}
	return nil
}

// end stops a live session once: its shell and sandbox are killed (a
// running command with them), the action in flight, if any, records its
// observation, the egress proxy records its last decisions, and then
// sandbox_stopped is recorded and the final state set, so that
// sandbox_stopped is always the session's last event.
func (d *Daemon) end(ctx context.Context, id string, ls *liveSession, state, reason string) {
	ls.mu.Lock()
	if ls.ended {
		ls.mu.Unlock()
		return
	}
	ls.ended = true
	close(ls.ending)
	ls.mu.Unlock()
	ctx = context.WithoutCancel(ctx) // the end is recorded whoever asked for it
	d.approvals.endSession(id, "the session ended: "+reason)
	if err := ls.sess.Stop(ctx); err != nil {
		d.log.Warn("session stop", "session", id, "err", err)
	}
	select {
	case ls.turn <- struct{}{}: // the action in flight has answered
		<-ls.turn // waiters see ended and give up
	case <-time.After(30 * time.Second):
		d.log.Warn("session end: the action in flight did not finish", "session", id)
	}
	if ls.proxy != nil {
		ls.proxy.close()
	}
	d.sessionHook(ctx, ls.sess, "session.end")
	if err := d.pipe.Flush(ctx, ls.sess); err != nil {
		d.log.Warn("session end: an observation is still unrecorded", "session", id, "err", err)
	}
	if err := ls.sess.Close(ctx, reason); err != nil {
		d.log.Warn("session close", "session", id, "err", err)
	}
	if err := d.setState(ctx, id, state); err != nil {
		d.log.Warn("session state", "session", id, "err", err)
	}
	close(ls.gone)
	d.metrics.sessionsLive.Dec()
	d.log.Info("session ended", "session", id, "state", state, "reason", reason)
}

// busy reports a live session whose turn is held by a call waiting on a
// running command, counted as in flight (the caller calls
// d.inflight.Done); otherwise nil and false, and nothing is counted.
func (d *Daemon) busy(id string) (*liveSession, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	ls := d.live[id]
	if d.closing || ls == nil || len(ls.turn) == 0 || !ls.sess.Running() {
		return nil, false
	}
	d.inflight.Add(1)
	return ls, true
}

// acquire waits for a session's turn, unless ctx says its holder has it
// already (held).
func (d *Daemon) acquire(ctx context.Context, id string) (ls *liveSession, held bool, err error) {
	d.mu.Lock()
	ls = d.live[id]
	if mine, _ := ctx.Value(turnKey{}).(*liveSession); mine != nil && mine == ls {
		// Shutdown waits for the holder; it must not be refused midway.
		d.mu.Unlock()
		if ls.isEnded() {
			return nil, false, fmt.Errorf("%w: session %s has ended", ErrStopped, id)
		}
		return ls, true, nil
	}
	if d.closing {
		d.mu.Unlock()
		return nil, false, ErrShuttingDown
	}
	if ls != nil {
		d.inflight.Add(1)
	}
	d.mu.Unlock()
	if ls == nil {
		if _, err := d.Get(ctx, id); err != nil {
			return nil, false, err
		}
		return nil, false, fmt.Errorf("%w: session %s has ended; its events can still be read", ErrStopped, id)
	}
	select {
	case ls.turn <- struct{}{}:
	case <-ctx.Done():
		d.inflight.Done()
		return nil, false, ctx.Err()
	}
	if ls.isEnded() {
		d.release(ls)
		return nil, false, fmt.Errorf("%w: session %s has ended", ErrStopped, id)
	}
	return ls, false, nil
}

func (ls *liveSession) isEnded() bool {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return ls.ended
}

// Ending returns a channel closed once the session begins to end
// (deleted, or the daemon shutting down), or at once for a session that is
// not live: a long wait on the session's behalf (an agent's model call)
// should give up then.
func (d *Daemon) Ending(id string) <-chan struct{} {
	d.mu.Lock()
	ls := d.live[id]
	d.mu.Unlock()
	if ls == nil {
		c := make(chan struct{})
		close(c)
		return c
	}
	return ls.ending
}

// Workspace returns a live session's workspace directory on the host.
func (d *Daemon) Workspace(id string) (string, error) {
	d.mu.Lock()
	ls := d.live[id]
	d.mu.Unlock()
	if ls == nil {
		if _, err := d.Get(context.Background(), id); err != nil {
			return "", err
		}
		return "", fmt.Errorf("%w: session %s has ended", ErrStopped, id)
	}
	return ls.workspace, nil
}

func (d *Daemon) release(ls *liveSession) {
	<-ls.turn
	d.inflight.Done()
}

// Events calls fn with a session's events after seq after, in order. With
// follow it then waits for new ones, and returns nil after the session's
// last event (sandbox_stopped), at once for a session that has ended, or
// an error when ctx ends.
func (d *Daemon) Events(ctx context.Context, id string, after uint64, follow bool, fn func(event.Event) error) error {
	// Exists, not Get: Get asks a live session's terminal for its
	// shell's pid, which waits while a command runs.
	if err := d.Exists(ctx, id); err != nil {
		return err
	}
	d.mu.Lock()
	ls := d.live[id]
	d.mu.Unlock()
	if !follow || ls == nil {
		return d.bus.Read(ctx, id, after, fn)
	}
	sub, cancel := context.WithCancel(ctx)
	defer cancel()
	evs, errs := d.bus.Subscribe(sub, id, after)
	last := after
	for {
		select {
		case ev, ok := <-evs:
			if !ok {
				return <-errs
			}
			if err := fn(ev); err != nil {
				return err
			}
			last = ev.Seq
			if ev.Kind() == event.KindSandboxStopped {
				return nil
			}
		case err := <-errs:
			return err
		case <-ls.gone:
			// Ended (sandbox_stopped is recorded): the rest of the
			// history, then done, whatever the subscription has yet
			// to deliver.
			cancel()
			return d.bus.Read(ctx, id, last, fn)
		}
	}
}

// Watch subscribes to the live output of session id's commands, for
// EventsRaw. It is not an error for the session not to exist or be live:
// nothing is then published.
func (d *Daemon) Watch(id string) *live.Sub { return d.hub.Subscribe(id) }

// EventsRaw calls fn with a session's events after seq after, in order, each
// as its flat JSON (valid only until fn returns). What is stored goes out
// as stored, without decoding (a replay only forwards it); with follow,
// the live tail follows, and Events returns nil after the session's last
// event (sandbox_stopped), at once for a session that has ended, or an
// error when ctx ends.
//
// progress, if not nil, is a subscription to the session's live output
// (from Watch, taken before the caller answered its client): while
// following, each chunk goes to fn too, as a "progress" line (see
// live.Chunk.AppendJSON), between the events. EventsRaw closes it.
func (d *Daemon) EventsRaw(ctx context.Context, id string, after uint64, follow bool, progress *live.Sub, fn func(raw []byte) error) error {
	if progress != nil {
		defer progress.Close()
	}
	// Exists, not Get: reads never wait for a command.
	if err := d.Exists(ctx, id); err != nil {
		return err
	}
	d.mu.Lock()
	ls := d.live[id]
	d.mu.Unlock()
	last := after
	replay := func(from uint64) error {
		return d.bus.ReadRaw(ctx, id, from, func(seq uint64, raw []byte) error {
			last = seq
			return fn(raw)
		})
	}
	if err := replay(after); err != nil || !follow || ls == nil {
		return err
	}
	// The live tail, from where the stored history ended.
	sub, cancel := context.WithCancel(ctx)
	defer cancel()
	evs, errs := d.bus.Subscribe(sub, id, last)
	var buf []byte
	var ready <-chan struct{} // nil: no progress wanted
	if progress != nil {
		ready = progress.Ready()
	}
	for {
		select {
		case <-ready:
			for _, c := range progress.Take() {
				buf = c.AppendJSON(buf[:0])
				if err := fn(buf); err != nil {
					return err
				}
			}
		case ev, ok := <-evs:
			if !ok {
				return <-errs
			}
			var err error
			if buf, err = ev.AppendJSON(buf[:0]); err != nil {
				return err
			}
			if err := fn(buf); err != nil {
				return err
			}
			last = ev.Seq
			if ev.Kind() == event.KindSandboxStopped {
				return nil
			}
		case err := <-errs:
			return err
		case <-ls.gone:
			// Ended (sandbox_stopped is recorded): the rest of the
			// history, then done, whatever the subscription has yet
			// to deliver.
			cancel()
			return replay(last)
		}
	}
}

// Profile is one of harness.toml's [profiles.NAME] as a session made with
// it gets it: its settings over [sandbox]'s.
type Profile struct {
	Name      string `json:"name"`
	Network   string `json:"network"`
	Image     string `json:"image,omitempty"`
	MemoryMB  int    `json:"memory_mb"`
	Pids      int    `json:"pids"`
	CPUWeight int    `json:"cpu_weight"`
	TmpMB     int    `json:"tmp_mb"`
	DiskMB    int    `json:"disk_mb"`
}

// Profiles returns the profiles a session may be created with, by name.
func (d *Daemon) Profiles() []Profile {
	c := d.conf()
	out := make([]Profile, 0, len(c.Profiles))
	for _, name := range c.ProfileNames() {
		sb := c.Profiles[name].Apply(c.Sandbox)
		out = append(out, Profile{Name: name, Network: sb.Network, Image: sb.Image, MemoryMB: sb.MemoryMB, Pids: sb.Pids, CPUWeight: sb.CPUWeight, TmpMB: sb.TmpMB, DiskMB: sb.DiskMB})
	}
	return out
}
