package agent

import "github.com/harnessd/harnessd/core/event"

// The kinds of event the controller records, all observations (source
// runtime). Their payloads are declared here, with their JSON, and
// registered in core/event's open registry by registerKinds at init.
const (
	KindRunStarted     event.Kind = "run_started"
	KindRunEnded       event.Kind = "run_ended"
	KindAgentStep      event.Kind = "agent_step"
	KindGuidanceLoaded event.Kind = "guidance_loaded"
	KindContextMasked  event.Kind = "context_masked"
	KindDelegateResult event.Kind = "delegate_result"
)

// RunStarted opens a run: which agent, what task, within what limits.
// Every event up to the run's RunEnded belongs to it (or to a sub-run it
// delegated to, between that sub-run's own RunStarted and RunEnded).
type RunStarted struct {
	Run    string `json:"run"`
	Parent string `json:"parent,omitempty"` // the delegating run
	Agent  string `json:"agent"`
	Task   string `json:"task"`
	Limits Limits `json:"limits"`
}

// RunEnded closes a run: why, and what it used.
type RunEnded struct {
	Run        string  `json:"run"`
	Parent     string  `json:"parent,omitempty"`
	Reason     string  `json:"reason"`            // one of the Reason constants
	Message    string  `json:"message,omitempty"` // the agent's finish message
	Error      string  `json:"error,omitempty"`   // what went wrong, for agent_failed and error
	Steps      int     `json:"steps"`
	Tokens     int64   `json:"tokens"`
	Cost       float64 `json:"cost"`
	DurationMS int64   `json:"duration_ms"`
}

// AgentStep records one step of a run, before its action: what the agent
// asked for, what the step cost, and the agent's thought.
type AgentStep struct {
	Run              string  `json:"run"`
	Step             int     `json:"step"`
	Action           string  `json:"action"` // cmd_run, message, finish, delegate, reply (parsed by the host) or think
	Model            string  `json:"model,omitempty"`
	PromptTokens     int64   `json:"prompt_tokens,omitempty"`
	CompletionTokens int64   `json:"completion_tokens,omitempty"`
	Cost             float64 `json:"cost,omitempty"`
	Thought          string  `json:"thought,omitempty"`
	DurationMS       int64   `json:"duration_ms"` // the plugin's Step
}

// GuidanceLoaded lists the repository guidance handed to a run's agent.
type GuidanceLoaded struct {
	Run     string   `json:"run"`
	Files   []string `json:"files"`             // relative to the workspace, in the order given
	Bytes   int      `json:"bytes"`             // their total size
	Skipped []string `json:"skipped,omitempty"` // "path: why" for files left out
}

// ContextMasked says which observations an agent showed its model without
// their bodies (first and last lines, exit code and output id kept) to fit
// its context budget.
type ContextMasked struct {
	Run          string   `json:"run"`
	Step         int      `json:"step"`
	Seqs         []uint64 `json:"seqs"`
	TokensBefore int64    `json:"tokens_before"`
	TokensAfter  int64    `json:"tokens_after"`
}

// DelegateResult answers a delegate action: how the sub-run ended, and its
// finish message.
type DelegateResult struct {
	Run     string  `json:"run"` // the sub-run
	Agent   string  `json:"agent"`
	Reason  string  `json:"reason"`
	Message string  `json:"message,omitempty"`
	Error   string  `json:"error,omitempty"`
	Steps   int     `json:"steps"`
	Tokens  int64   `json:"tokens"`
	Cost    float64 `json:"cost"`
}

// Kind implements event.Payload.
func (RunStarted) Kind() event.Kind { return KindRunStarted }

// Kind implements event.Payload.
func (RunEnded) Kind() event.Kind { return KindRunEnded }

// Kind implements event.Payload.
func (AgentStep) Kind() event.Kind { return KindAgentStep }

// Kind implements event.Payload.
func (GuidanceLoaded) Kind() event.Kind { return KindGuidanceLoaded }

// Kind implements event.Payload.
func (ContextMasked) Kind() event.Kind { return KindContextMasked }

// Kind implements event.Payload.
func (DelegateResult) Kind() event.Kind { return KindDelegateResult }

func init() { registerKinds() }

// registerKinds adds the controller's kinds to the event schema.
func registerKinds() {
	event.Register[RunStarted](KindRunStarted, event.Observation)
	event.Register[RunEnded](KindRunEnded, event.Observation)
	event.Register[AgentStep](KindAgentStep, event.Observation)
	event.Register[GuidanceLoaded](KindGuidanceLoaded, event.Observation)
	event.Register[ContextMasked](KindContextMasked, event.Observation)
	event.Register[DelegateResult](KindDelegateResult, event.Observation)
}

// Wrap makes one of this package's payloads an event payload. With the
// open registry they are event payloads already; Wrap stays for callers.
func Wrap(p event.Payload) event.Payload { return p }

// Unwrap returns an event's payload as its own type.
func Unwrap(ev event.Event) any { return ev.Payload }
