package event

import "time"

// Version is the schema version this build writes and the newest it reads:
// the version of the envelope and of the built-in kinds. Adding a field to
// them changes what strict decoding accepts, so it bumps Version; decoders
// for older versions stay, so an old store stays readable. A kind
// registered elsewhere is versioned by its own name: a new form is a new
// kind.
const Version = 1

// Source says who caused an event.
type Source string

// The sources an event can have.
const (
	SourceAgent   Source = "agent"   // the model, through its agent plugin
	SourceUser    Source = "user"    // a person, through the API or CLI
	SourceHook    Source = "hook"    // a Lua hook (a veto, a rewrite)
	SourceRuntime Source = "runtime" // the daemon itself (terminal, sandbox)
)

// Valid reports whether s is one of the four known sources.
func (s Source) Valid() bool {
	switch s {
	case SourceAgent, SourceUser, SourceHook, SourceRuntime:
		return true
	}
	return false
}

// Kind names an event's type; it is the "kind" field of the JSON form. The
// set of kinds is open: Register adds one, with its payload type and its
// class (action or observation).
type Kind string

// The built-in actions: what an agent (or a person) asks for.
const (
	KindCmdRun   Kind = "cmd_run"
	KindMessage  Kind = "message"
	KindFinish   Kind = "finish"
	KindDelegate Kind = "delegate"
)

// The built-in observations: what happened, each answering an action
// (Cause) or reporting on the runtime.
const (
	KindCmdOutput      Kind = "cmd_output"
	KindInvalidAction  Kind = "invalid_action"
	KindHookVeto       Kind = "hook_veto"
	KindAgentCrashed   Kind = "agent_crashed"
	KindSandboxStarted Kind = "sandbox_started"
	KindSandboxStopped Kind = "sandbox_stopped"
	KindNetConnect     Kind = "net_connect"
)

// Event is one recorded action or observation: an envelope and a typed
// payload. Its JSON form is flat, the payload's fields beside the envelope's:
//
//	{"v":1,"session":"s1","seq":3,"time":"2025-01-02T03:04:05.000000006Z",
//	 "source":"agent","kind":"cmd_run","command":"ls","timeout_s":30}
//
// The kind is not a field: it is the payload's Kind, so the two can never
// disagree.
type Event struct {
	// V is the schema version the event was written with. The store sets it
	// to Version; 0 means "unversioned", as in an API request body, and is
	// read as the current version.
	V int
	// Session is the id of the session the event belongs to.
	Session string
	// Seq is the event's position in its session: 1, 2, 3 … with no gaps.
	// The store assigns it.
	Seq uint64
	// Time is when the event was recorded, in UTC. The store sets it if it
	// is zero.
	Time time.Time
	// Source says who caused the event.
	Source Source
	// Cause is the Seq of the action an observation answers; 0 if none.
	Cause uint64
	// Payload is the kind-specific part: a value of the type registered
	// for its kind.
	Payload Payload
}

// Kind returns the kind of e's payload, or "" if e has none.
func (e Event) Kind() Kind {
	if e.Payload == nil {
		return ""
	}
	return e.Payload.Kind()
}

// IsAction reports whether e is an action.
func (e Event) IsAction() bool { return e.Kind().IsAction() }

// IsObservation reports whether e is an observation.
func (e Event) IsObservation() bool { return e.Kind().IsObservation() }

// Payload is the kind-specific part of an event: a value of the struct
// type registered for its kind (see Register).
type Payload interface {
	// Kind names the payload's type. It is a method of the type, not of
	// the value: every value of a type has the same kind.
	Kind() Kind
}

// CmdRun runs a command in the session's shell (or, with IsInput, sends
// keys to the program running there). An empty Command reads more output of
// a command that is still running.
type CmdRun struct {
	Command  string  `json:"command"`
	IsInput  bool    `json:"is_input,omitempty"`  // send Command as keys ("C-c", "C-d") to the running program
	TimeoutS float64 `json:"timeout_s,omitempty"` // hard timeout in seconds: past it the command is interrupted (SIGINT, then SIGKILL); 0 = the configured hard_timeout
	Reset    bool    `json:"reset,omitempty"`     // kill the shell and start a fresh one first
	// Rewritten is set when a hook rewrote the action: this is what ran,
	// and Rewritten keeps what was asked for.
	Rewritten *Rewritten `json:"rewritten,omitempty"`
}

// Rewritten is what a hook's rewrite replaced.
type Rewritten struct {
	Hook    string `json:"hook"`    // the hook that rewrote it (file:line)
	Command string `json:"command"` // the command that was asked for
}

// WithOriginal returns c marked as the rewrite of orig by hook; the
// pipeline records it so the original stays in the log.
func (c CmdRun) WithOriginal(orig Payload, hook string) Payload {
	if o, ok := orig.(CmdRun); ok {
		c.Rewritten = &Rewritten{Hook: hook, Command: o.Command}
	}
	return c
}

// Message is text from the agent to the person, or from the person to the
// agent.
type Message struct {
	Text string `json:"text"`
}

// Finish ends the agent's run, with a closing message.
type Finish struct {
	Message string `json:"message,omitempty"`
}

// Delegate hands a task to another agent.
type Delegate struct {
	Agent string `json:"agent"`
	Task  string `json:"task"`
}

// CmdOutput is what a command produced, as the model sees it: Output is the
// trimmed text, and Trimmed says what was cut and where the full output is.
type CmdOutput struct {
	ExitCode     int      `json:"exit_code"` // -1: still running
	Cwd          string   `json:"cwd"`
	Output       string   `json:"output"`
	Trimmed      *Trimmed `json:"trimmed,omitempty"` // nil: nothing was cut
	DurationMS   int64    `json:"duration_ms"`
	TimedOut     bool     `json:"timed_out,omitempty"`
	PID          int      `json:"pid,omitempty"`
	Note         string   `json:"note,omitempty"` // what the model can do next (after a timeout, say)
	ShellRebuilt bool     `json:"shell_rebuilt,omitempty"`
}

// Trimmed describes what the trimmer cut from a command's output.
type Trimmed struct {
	LinesTotal   int    `json:"lines_total"`
	LinesOmitted int    `json:"lines_omitted"`
	BytesOmitted int64  `json:"bytes_omitted"`
	OutputID     string `json:"output_id"` // where the full output can be read back
}

// InvalidAction answers model output that was not a valid action, with
// guidance the model can correct itself from.
type InvalidAction struct {
	Reason   string `json:"reason"`
	Guidance string `json:"guidance,omitempty"`
}

// HookVeto answers an action a Lua hook refused.
type HookVeto struct {
	Hook   string `json:"hook"`
	Reason string `json:"reason"`
}

// AgentCrashed reports that the agent plugin crashed or hung.
type AgentCrashed struct {
	Reason string `json:"reason"`
}

// SandboxStarted reports that the session's sandbox is up.
type SandboxStarted struct {
	Driver    string `json:"driver"`               // "native", "docker", …
	SandboxID string `json:"sandbox_id,omitempty"` // the driver's id for it
	Workdir   string `json:"workdir,omitempty"`    // the shell's starting directory
}

// SandboxStopped reports that the session's sandbox is gone.
type SandboxStopped struct {
	SandboxID string `json:"sandbox_id,omitempty"`
	Reason    string `json:"reason,omitempty"`
}

// NetConnect reports one connection a sandbox asked the egress proxy for
// (network = "proxy"): once when it was allowed or refused, and, if it was
// allowed, once more when it ended (Closed, with the bytes each way).
type NetConnect struct {
	Method    string `json:"method,omitempty"` // CONNECT, GET, …
	Host      string `json:"host"`
	Port      int    `json:"port,omitempty"`
	Allowed   bool   `json:"allowed"`
	Reason    string `json:"reason,omitempty"`
	Status    int    `json:"status,omitempty"` // the HTTP status the sandbox got
	Closed    bool   `json:"closed,omitempty"`
	BytesUp   int64  `json:"bytes_up,omitempty"`
	BytesDown int64  `json:"bytes_down,omitempty"`
}

// Kind implements Payload.
func (NetConnect) Kind() Kind { return KindNetConnect }

// Kind implements Payload.
func (CmdRun) Kind() Kind { return KindCmdRun }

// Kind implements Payload.
func (Message) Kind() Kind { return KindMessage }

// Kind implements Payload.
func (Finish) Kind() Kind { return KindFinish }

// Kind implements Payload.
func (Delegate) Kind() Kind { return KindDelegate }

// Kind implements Payload.
func (CmdOutput) Kind() Kind { return KindCmdOutput }

// Kind implements Payload.
func (InvalidAction) Kind() Kind { return KindInvalidAction }

// Kind implements Payload.
func (HookVeto) Kind() Kind { return KindHookVeto }

// Kind implements Payload.
func (AgentCrashed) Kind() Kind { return KindAgentCrashed }

// Kind implements Payload.
func (SandboxStarted) Kind() Kind { return KindSandboxStarted }

// Kind implements Payload.
func (SandboxStopped) Kind() Kind { return KindSandboxStopped }
