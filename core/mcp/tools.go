package mcp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harnessd/harnessd/core/daemon"
	"github.com/harnessd/harnessd/core/event"
)

// SessionCreateIn is session_create's input.
type SessionCreateIn struct {
	Workspace string            `json:"workspace,omitempty" jsonschema:"an existing host directory to work in, bound read-write at /workspace in the sandbox (default: a fresh empty one)"`
	ID        string            `json:"id,omitempty" jsonschema:"the session id: 1 to 64 letters, digits, '.', '_' or '-' (default: a new random one)"`
	Labels    map[string]string `json:"labels,omitempty" jsonschema:"labels to find the session by later"`
	Network   string            `json:"network,omitempty" jsonschema:"the sandbox's network, at most as open as the profile's (or the daemon's) allows: none (loopback only), proxy (allowed HTTP(S) hosts only) or host (default: that one)"`
	Profile   string            `json:"profile,omitempty" jsonschema:"a named set of sandbox limits (memory, processes, CPU, disk, network) from the daemon's harness.toml [profiles], e.g. small; an unknown name is answered with the names there are (default: the daemon's [sandbox] limits)"`
}

// Session is a session as the tools show it.
type Session struct {
	ID        string            `json:"id" jsonschema:"the session id, for exec and events"`
	State     string            `json:"state" jsonschema:"live, or how it ended (stopped, interrupted …)"`
	Created   time.Time         `json:"created"`
	Workspace string            `json:"workspace,omitempty" jsonschema:"the host directory bound at /workspace, while live"`
	Events    uint64            `json:"events" jsonschema:"how many events its log holds"`
	Labels    map[string]string `json:"labels,omitempty"`
	Profile   string            `json:"profile,omitempty" jsonschema:"the profile its sandbox was made with, if any"`
}

func sessionOf(in daemon.Info) Session {
	return Session{ID: in.ID, State: in.State, Created: in.Created, Workspace: in.Workspace, Events: in.LastSeq, Labels: in.Labels, Profile: in.Profile}
}

// SessionListIn is session_list's input: nothing.
type SessionListIn struct{}

// SessionList is session_list's result.
type SessionList struct {
	Sessions []Session `json:"sessions"`
}

// SessionDeleteIn is session_delete's input.
type SessionDeleteIn struct {
	Session string `json:"session" jsonschema:"the session to end"`
	Purge   bool   `json:"purge,omitempty" jsonschema:"also delete its history, outputs and (if harnessd made it) its workspace"`
}

// SessionDeleted is session_delete's result.
type SessionDeleted struct {
	Session string `json:"session"`
	Purged  bool   `json:"purged"`
}

// ExecIn is exec's input.
type ExecIn struct {
	Session  string  `json:"session,omitempty" jsonschema:"the session to run in (default: this connection's own, created on first use)"`
	Command  string  `json:"command" jsonschema:"a bash command line, run in the session's persistent shell; empty reads more output of a command still running"`
	IsInput  bool    `json:"is_input,omitempty" jsonschema:"send command as keys to the running program instead: text is typed with Enter; C-c, C-d, <Esc>, <Up>, :wq<Enter> …"`
	TimeoutS float64 `json:"timeout_s,omitempty" jsonschema:"hard timeout in seconds: past it the command gets SIGINT, then SIGKILL (default: the daemon's terminal.hard_timeout)"`
}

// Exec is exec's result: the API's cmd_output, and how to go on.
type Exec struct {
	Session      string `json:"session"`
	ExitCode     int    `json:"exit_code" jsonschema:"the command's exit status; -1: still running (call exec with an empty command to read more, or is_input with C-c to interrupt)"`
	StillRunning bool   `json:"still_running"`
	Cwd          string `json:"cwd" jsonschema:"the shell's working directory after the command"`
	Output       string `json:"output" jsonschema:"the output, trimmed to its head, tail and error lines when long"`
	OutputID     string `json:"output_id,omitempty" jsonschema:"set when the output was trimmed: read any lines of the full output with output_read"`
	LinesTotal   int    `json:"lines_total,omitempty"`
	LinesOmitted int    `json:"lines_omitted,omitempty"`
	Paging       string `json:"paging,omitempty" jsonschema:"how to read what was trimmed"`
	TimedOut     bool   `json:"timed_out,omitempty"`
	DurationMS   int64  `json:"duration_ms"`
	Note         string `json:"note,omitempty" jsonschema:"what harnessd has to say: a timeout, a rebuilt shell, what to do next"`
	Seq          uint64 `json:"seq" jsonschema:"the observation's seq in the session's event log"`
}

// OutputReadIn is output_read's input.
type OutputReadIn struct {
	OutputID string `json:"output_id" jsonschema:"an output_id from exec"`
	FromLine int    `json:"from_line,omitempty" jsonschema:"first line, 1-based (default 1)"`
	ToLine   int    `json:"to_line,omitempty" jsonschema:"last line, inclusive (default: as far as one page goes)"`
}

// Page is output_read's result.
type Page struct {
	OutputID   string `json:"output_id"`
	Text       string `json:"text"`
	FromLine   int    `json:"from_line"`
	ToLine     int    `json:"to_line" jsonschema:"the last line returned (a page may stop before to_line)"`
	TotalLines int    `json:"total_lines"`
	Next       string `json:"next,omitempty" jsonschema:"how to read on, when lines are left"`
}

// EventsIn is events' input.
type EventsIn struct {
	Session string `json:"session,omitempty" jsonschema:"the session (default: this connection's own)"`
	After   uint64 `json:"after,omitempty" jsonschema:"only events after this seq (default 0: from the start)"`
	Limit   int    `json:"limit,omitempty" jsonschema:"at most this many events (default 100, at most 1000)"`
}

// Events is events' result.
type Events struct {
	Session string `json:"session"`
	Count   int    `json:"count"`
	Last    uint64 `json:"last_seq" jsonschema:"the last seq returned: pass it as after to read on"`
	More    bool   `json:"more" jsonschema:"whether more events follow"`
	Text    string `json:"text" jsonschema:"the events, one JSON object a line, as harnessd's log holds them"`
}

const (
	defaultEventLimit = 100
	maxEventLimit     = 1000
)

func ptr[T any](v T) *T { return &v }

// schema infers T's input schema and adds bounds the struct tags cannot
// say; the SDK validates arguments against it before a handler runs.
func schema[T any](edit func(props map[string]*jsonschema.Schema)) *jsonschema.Schema {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		panic(fmt.Sprintf("mcp: schema of %T: %v", *new(T), err)) // a programming error, caught by every test
	}
	if edit != nil {
		edit(s.Properties)
	}
	return s
}

func (s *Server) addTools() {
	sdk.AddTool(s.sdk, &sdk.Tool{
		Name:        "session_create",
		Title:       "Create a session",
		Description: "Start a new session: a sandbox with its own persistent bash, working in a workspace bound at /workspace. Returns its id for exec.",
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: false, DestructiveHint: ptr(false), IdempotentHint: false, OpenWorldHint: ptr(false)},
	}, s.sessionCreate)
	sdk.AddTool(s.sdk, &sdk.Tool{
		Name:        "session_list",
		Title:       "List sessions",
		Description: "List harnessd's sessions, live and ended, with their state and workspace.",
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)},
	}, s.sessionList)
	sdk.AddTool(s.sdk, &sdk.Tool{
		Name:        "session_delete",
		Title:       "End a session",
		Description: "End a session: its shell and every process in its sandbox are killed. Its history stays unless purge.",
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: false, DestructiveHint: ptr(true), IdempotentHint: true, OpenWorldHint: ptr(false)},
	}, s.sessionDelete)
	sdk.AddTool(s.sdk, &sdk.Tool{
		Name:  "exec",
		Title: "Run a command",
		Description: "Run a bash command in a session's persistent shell (cd, exports and jobs carry over), inside its sandbox. " +
			"Returns the exit code, the cwd and the output, trimmed when long (output_read pages the rest). " +
			"exit_code -1: still running; exec with an empty command reads more, is_input with C-c interrupts.",
		InputSchema: schema[ExecIn](func(p map[string]*jsonschema.Schema) { p["timeout_s"].Minimum = ptr(0.0) }),
		// A command can do anything the sandbox allows, to the workspace
		// and, where sandbox.network permits, beyond it.
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: false, DestructiveHint: ptr(true), IdempotentHint: false, OpenWorldHint: ptr(true)},
	}, s.exec)
	sdk.AddTool(s.sdk, &sdk.Tool{
		Name:        "output_read",
		Title:       "Read a full output",
		Description: "Read lines from_line..to_line of a command's full output, by the output_id exec gave when it trimmed it.",
		InputSchema: schema[OutputReadIn](func(p map[string]*jsonschema.Schema) {
			p["from_line"].Minimum = ptr(1.0)
			p["to_line"].Minimum = ptr(1.0)
		}),
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)},
	}, s.outputRead)
	sdk.AddTool(s.sdk, &sdk.Tool{
		Name:        "events",
		Title:       "Read a session's history",
		Description: "A session's recorded events (every command, output, veto and note), one JSON object a line, from after on.",
		InputSchema: schema[EventsIn](func(p map[string]*jsonschema.Schema) {
			p["limit"].Minimum = ptr(1.0)
			p["limit"].Maximum = ptr(float64(maxEventLimit))
		}),
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)},
	}, s.events)
}

func text(s string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
}

func (s *Server) sessionCreate(ctx context.Context, _ *sdk.CallToolRequest, in SessionCreateIn) (*sdk.CallToolResult, Session, error) {
	ws, err := s.resolveWorkspace(in.Workspace)
	if err != nil {
		return nil, Session{}, err
	}
	info, err := s.cl.CreateSession(ctx, daemon.CreateRequest{ID: in.ID, Labels: in.Labels, Workspace: ws, Network: in.Network, Profile: in.Profile})
	if err != nil {
		return nil, Session{}, actionable("session_create", err)
	}
	out := sessionOf(info)
	return text(fmt.Sprintf("session %s is live; workspace %s (at /workspace in the sandbox). Pass session %q to exec.", out.ID, out.Workspace, out.ID)), out, nil
}

func (s *Server) sessionList(ctx context.Context, _ *sdk.CallToolRequest, _ SessionListIn) (*sdk.CallToolResult, SessionList, error) {
	all, err := s.cl.Sessions(ctx)
	if err != nil {
		return nil, SessionList{}, actionable("session_list", err)
	}
	out := SessionList{Sessions: make([]Session, 0, len(all))}
	var b strings.Builder
	s.mu.Lock()
	def := s.def
	s.mu.Unlock()
	for _, in := range all {
		out.Sessions = append(out.Sessions, sessionOf(in))
		fmt.Fprintf(&b, "%s\t%s\t%d events", in.ID, in.State, in.LastSeq)
		if in.Workspace != "" {
			fmt.Fprintf(&b, "\tworkspace %s", in.Workspace)
		}
		if in.ID == def {
			b.WriteString("\t(this connection's default)")
		}
		b.WriteByte('\n')
	}
	if len(all) == 0 {
		b.WriteString("no sessions yet; exec makes one, or session_create\n")
	}
	return text(b.String()), out, nil
}

func (s *Server) sessionDelete(ctx context.Context, _ *sdk.CallToolRequest, in SessionDeleteIn) (*sdk.CallToolResult, SessionDeleted, error) {
	if in.Session == "" {
		return nil, SessionDeleted{}, errors.New("session: give the id of the session to end (session_list shows them)")
	}
	if err := s.cl.DeleteSession(ctx, in.Session, in.Purge); err != nil {
		return nil, SessionDeleted{}, actionable("session_delete "+in.Session, err)
	}
	s.mu.Lock()
	if s.def == in.Session {
		// The next exec without a session makes a new default one; this
		// one is over, and disconnecting must not end it again.
		s.def = ""
	}
	s.mu.Unlock()
	msg := "session " + in.Session + " ended; its history stays (events)"
	if in.Purge {
		msg = "session " + in.Session + " ended and purged"
	}
	return text(msg), SessionDeleted{Session: in.Session, Purged: in.Purge}, nil
}

// session picks the session a call names, or the connection's default.
func (s *Server) session(ctx context.Context, req *sdk.CallToolRequest, named string, create bool) (string, error) {
	if named != "" {
		return named, nil
	}
	if !create {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.def == "" {
			return "", ErrNoSession
		}
		return s.def, nil
	}
	var ss *sdk.ServerSession
	if req != nil {
		ss = req.Session
	}
	return s.defaultSession(ctx, ss)
}

func (s *Server) exec(ctx context.Context, req *sdk.CallToolRequest, in ExecIn) (*sdk.CallToolResult, Exec, error) {
	id, err := s.session(ctx, req, in.Session, true)
	if err != nil {
		return nil, Exec{}, err
	}
	if !in.IsInput {
		release, err := s.turn(ctx, id)
		if err != nil {
			return nil, Exec{}, err
		}
		defer release()
	}
	run := event.CmdRun{Command: in.Command, IsInput: in.IsInput, TimeoutS: in.TimeoutS}
	stop := s.progress(ctx, req)
	obs, err := s.cl.Act(ctx, id, event.SourceAgent, run)
	stop()
	if ctx.Err() != nil && !in.IsInput {
		// The client cancelled (or went away): the command must not run
		// on unseen. C-c through the same pipeline, so the log says so.
		s.interrupt(id)
		return nil, Exec{}, fmt.Errorf("exec cancelled; C-c was sent to the command in session %s: %w", id, context.Cause(ctx))
	}
	if err != nil {
		return nil, Exec{}, actionable("exec in session "+id, err)
	}
	switch p := obs.Payload.(type) {
	case event.CmdOutput:
		out := execOf(id, obs.Seq, p)
		return text(execText(out)), out, nil
	case event.HookVeto:
		return nil, Exec{}, fmt.Errorf("refused by harnessd policy %s: %s. The command did not run; change it, or ask the user to allow it", p.Hook, p.Reason)
	case event.InvalidAction:
		return nil, Exec{}, fmt.Errorf("invalid action: %s %s", p.Reason, p.Guidance)
	}
	return nil, Exec{}, fmt.Errorf("exec in session %s: harnessd answered %s, not a command's output", id, obs.Kind())
}

// interrupt sends C-c to a session's running command on a context of its
// own: the caller's has ended.
func (s *Server) interrupt(id string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := s.cl.Act(ctx, id, event.SourceAgent, event.CmdRun{Command: "C-c", IsInput: true}); err != nil {
		s.opts.Logger.Warn("mcp: interrupting a cancelled exec", "session", id, "err", err)
	}
}

// progress sends a progress notification every Options.Progress while
// an exec waits, if the client gave a progress token; the returned stop
// ends it and waits for its goroutine.
func (s *Server) progress(ctx context.Context, req *sdk.CallToolRequest) (stop func()) {
	if req == nil || req.Session == nil || req.Params == nil || req.Params.GetProgressToken() == nil {
		return func() {}
	}
	token := req.Params.GetProgressToken()
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		start := time.Now()
		tick := time.NewTicker(s.opts.Progress)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-tick.C:
				el := now.Sub(start)
				err := req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{
					ProgressToken: token,
					Progress:      el.Seconds(),
					Message:       fmt.Sprintf("running for %s", el.Round(time.Second)),
				})
				if err != nil {
					return
				}
			}
		}
	}()
	return func() { cancel(); <-done }
}

func execOf(id string, seq uint64, p event.CmdOutput) Exec {
	out := Exec{Session: id, ExitCode: p.ExitCode, StillRunning: p.ExitCode == -1, Cwd: p.Cwd, Output: p.Output,
		TimedOut: p.TimedOut, DurationMS: p.DurationMS, Note: p.Note, Seq: seq}
	out.OutputID, out.LinesTotal, out.LinesOmitted, out.Paging = paging(p.Trimmed, "")
	return out
}

// paging says how to read what a trimmed output left out (all zero if it
// was not trimmed, or its full output was not kept); also, if not "",
// names another way.
func paging(t *event.Trimmed, also string) (id string, total, omitted int, how string) {
	if t == nil || t.OutputID == "" {
		return "", 0, 0, ""
	}
	how = fmt.Sprintf("%d of %d lines were left out; read them with output_read {\"output_id\": %q, \"from_line\": N, \"to_line\": M}", t.LinesOmitted, t.LinesTotal, t.OutputID)
	if also != "" {
		how += ", or " + also
	}
	return t.OutputID, t.LinesTotal, t.LinesOmitted, how
}

// execText is what a model reads: the output, then one line of facts.
func execText(e Exec) string {
	var b strings.Builder
	b.WriteString(e.Output)
	if e.Output != "" && !strings.HasSuffix(e.Output, "\n") {
		b.WriteByte('\n')
	}
	if e.StillRunning {
		fmt.Fprintf(&b, "[still running after %d ms; cwd %s. exec with an empty command reads more; exec with is_input true and command \"C-c\" interrupts]\n", e.DurationMS, e.Cwd)
	} else {
		fmt.Fprintf(&b, "[exit %d; cwd %s; %d ms]\n", e.ExitCode, e.Cwd, e.DurationMS)
	}
	if e.Paging != "" {
		fmt.Fprintf(&b, "[trimmed: %s]\n", e.Paging)
	}
	if e.Note != "" {
		fmt.Fprintf(&b, "[note: %s]\n", e.Note)
	}
	return b.String()
}

func (s *Server) outputRead(ctx context.Context, _ *sdk.CallToolRequest, in OutputReadIn) (*sdk.CallToolResult, Page, error) {
	if in.OutputID == "" {
		return nil, Page{}, errors.New("output_id: give the output_id an exec result named")
	}
	if in.ToLine > 0 && in.FromLine > in.ToLine {
		return nil, Page{}, fmt.Errorf("from_line %d is past to_line %d", in.FromLine, in.ToLine)
	}
	p, err := s.cl.Output(ctx, in.OutputID, in.FromLine, in.ToLine)
	if err != nil {
		return nil, Page{}, actionable("output_read "+in.OutputID, err)
	}
	out := Page{OutputID: p.ID, Text: p.Text, FromLine: p.From, ToLine: p.To, TotalLines: p.Total}
	if p.To < p.Total && (in.ToLine == 0 || p.To < in.ToLine) {
		out.Next = fmt.Sprintf("lines %d-%d are left; output_read from_line %d", p.To+1, p.Total, p.To+1)
	}
	msg := p.Text
	if msg != "" && !strings.HasSuffix(msg, "\n") {
		msg += "\n"
	}
	msg += fmt.Sprintf("[lines %d-%d of %d]", p.From, p.To, p.Total)
	if out.Next != "" {
		msg += " [" + out.Next + "]"
	}
	return text(msg), out, nil
}

func (s *Server) events(ctx context.Context, req *sdk.CallToolRequest, in EventsIn) (*sdk.CallToolResult, Events, error) {
	id, err := s.session(ctx, req, in.Session, false)
	if err != nil {
		return nil, Events{}, err
	}
	limit := in.Limit
	if limit <= 0 {
		limit = defaultEventLimit
	}
	limit = min(limit, maxEventLimit)
	out := Events{Session: id, Last: in.After}
	var b strings.Builder
	errEnough := errors.New("enough")
	err = s.cl.Events(ctx, id, in.After, false, func(ev event.Event) error {
		if out.Count == limit {
			out.More = true
			return errEnough
		}
		raw, err := ev.MarshalJSON()
		if err != nil {
			return fmt.Errorf("event %d: %w", ev.Seq, err)
		}
		b.Write(raw)
		b.WriteByte('\n')
		out.Count++
		out.Last = ev.Seq
		return nil
	})
	if err != nil && !errors.Is(err, errEnough) {
		return nil, Events{}, actionable("events of "+id, err)
	}
	out.Text = b.String()
	msg := out.Text
	if out.More {
		msg += fmt.Sprintf("[more events follow: events {\"session\": %q, \"after\": %d}]\n", id, out.Last)
	} else if out.Count == 0 {
		msg = fmt.Sprintf("no events after seq %d\n", in.After)
	}
	return text(msg), out, nil
}
