package config

import (
	"encoding/hex"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// Run is the [run] table: what an agent run may use unless its request
// says otherwise. An agent's own table may set its own step_timeout and
// max_steps.
type Run struct {
	// Agent is the agent of a run that names none (harnessd run without
	// --agent, POST /v1/sessions/{id}/runs without "agent").
	Agent string `toml:"agent"`

	MaxSteps    int      `toml:"max_steps"`    // steps before the run ends with max_steps
	Wall        Duration `toml:"wall"`         // wall-clock budget of a run
	MaxTokens   int      `toml:"max_tokens"`   // prompt + completion tokens; 0: no budget
	MaxCost     float64  `toml:"max_cost"`     // in the currency of the prices; 0: no budget
	StepTimeout Duration `toml:"step_timeout"` // one step's answer from the agent
	MaxRestarts int      `toml:"max_restarts"` // plugin restarts before the run ends with agent_failed
}

// Agent is one [agents.NAME] table: an agent harnessd can run. Either
// command (an external plugin) or builtin is set.
type Agent struct {
	// Command runs an external agent plugin: an executable (a path, or a
	// name looked up in PATH) and its arguments.
	Command []string `toml:"command"`
	// Builtin names an agent served by harnessd itself: "scripted" or
	// "openai".
	Builtin string `toml:"builtin"`
	// SHA256 pins Command's executable: a file with another hash is
	// refused before it runs.
	SHA256 string `toml:"sha256"`
	// Env is set in the agent's environment, which otherwise holds only
	// PATH, LANG, HOME and TMPDIR (the daemon's own is not passed on).
	Env map[string]string `toml:"env"`
	// Settings are passed to an external agent as a JSON object of
	// strings (HARNESSD_AGENT_SETTINGS).
	Settings map[string]string `toml:"settings"`
	// StartTimeout bounds the plugin's start: exec, handshake, Info.
	StartTimeout Duration `toml:"start_timeout"`
	// StepTimeout and MaxSteps override [run]'s for this agent; zero
	// keeps them.
	StepTimeout Duration `toml:"step_timeout"`
	MaxSteps    int      `toml:"max_steps"`

	// The openai agent's settings.

	// BaseURL is the OpenAI-compatible API's base, ending before
	// /chat/completions: "https://api.openai.com/v1",
	// "http://127.0.0.1:8080/v1" (llama.cpp's server), vLLM, Ollama.
	BaseURL string `toml:"base_url"`
	Model   string `toml:"model"`
	// APIKeyEnv names the daemon's environment variable holding the API
	// key; "" sends none.
	APIKeyEnv   string            `toml:"api_key_env"`
	Temperature float64           `toml:"temperature"`
	MaxTokens   int               `toml:"max_tokens"` // per reply; 0: the server's default
	Headers     map[string]string `toml:"headers"`    // extra HTTP headers
	// ContextTokens is the model's context budget: when the history would
	// not fit, the oldest observations' bodies are masked first. 0: no
	// budget.
	ContextTokens int `toml:"context_tokens"`
	// PriceInput and PriceOutput are the model's prices per million
	// prompt and completion tokens, for each step's cost.
	PriceInput  float64 `toml:"price_input"`
	PriceOutput float64 `toml:"price_output"`
	// Retries is how many times a request that failed with 429, a 5xx
	// or a timeout is retried (with backoff and jitter, honouring
	// Retry-After).
	Retries int `toml:"retries"`
	// Timeout bounds one request to the model.
	Timeout Duration `toml:"timeout"`
	// Mode is "tools" (function calling: execute_bash, finish, think; a
	// reply without a tool call is read CodeAct-style) or "codeact"
	// (fenced blocks only, for servers without tool calling).
	Mode string `toml:"mode"`

	// Script is the scripted agent's script: one JSON step per line.
	Script string `toml:"script"`
}

// The built-in agents and the openai agent's modes.
const (
	BuiltinScripted = "scripted"
	BuiltinOpenAI   = "openai"

	ModeTools   = "tools"
	ModeCodeAct = "codeact"
)

// defaultRun is [run] as harness.toml documents it.
func defaultRun() Run {
	return Run{
		Agent:       BuiltinOpenAI,
		MaxSteps:    100,
		Wall:        Duration{30 * time.Minute},
		MaxTokens:   0,
		MaxCost:     0,
		StepTimeout: Duration{5 * time.Minute},
		MaxRestarts: 3,
	}
}

// defaultAgents are the agents harness.toml documents: the two built-in
// ones.
func defaultAgents() map[string]Agent {
	return map[string]Agent{
		BuiltinScripted: {
			Builtin:      BuiltinScripted,
			Command:      []string{},
			Env:          map[string]string{},
			Settings:     map[string]string{},
			Headers:      map[string]string{},
			StartTimeout: Duration{10 * time.Second},
		},
		BuiltinOpenAI: {
			Builtin:       BuiltinOpenAI,
			Command:       []string{},
			Env:           map[string]string{},
			Settings:      map[string]string{},
			StartTimeout:  Duration{10 * time.Second},
			BaseURL:       "http://127.0.0.1:8080/v1",
			Model:         "default",
			APIKeyEnv:     "OPENAI_API_KEY",
			Temperature:   0,
			MaxTokens:     4096,
			Headers:       map[string]string{},
			ContextTokens: 32768,
			Retries:       5,
			Timeout:       Duration{10 * time.Minute},
			Mode:          ModeTools,
		},
	}
}

var (
	agentNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)
	envNameRE   = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// checkAgents returns the problems of [run] and [agents.*].
// fillAgentDefaults gives an openai agent's table from a file what it does
// not set of the settings zero cannot mean: the request timeout and the
// mode.
func (c *Config) fillAgentDefaults() {
	def := defaultAgents()[BuiltinOpenAI]
	for name, a := range c.Agents {
		if a.Builtin != BuiltinOpenAI {
			continue
		}
		if a.Timeout.Duration == 0 {
			a.Timeout = def.Timeout
		}
		if a.Mode == "" {
			a.Mode = def.Mode
		}
		c.Agents[name] = a
	}
}

func (c *Config) checkAgents() []*KeyError {
	var errs []*KeyError
	bad := func(key, format string, args ...any) {
		errs = append(errs, &KeyError{Key: key, Msg: fmt.Sprintf(format, args...), Err: ErrInvalid})
	}
	r := &c.Run
	if r.Agent != "" {
		if _, ok := c.Agents[r.Agent]; !ok {
			bad("run.agent", "names no agent in [agents] (have %s)", strings.Join(agentNames(c.Agents), ", "))
		}
	}
	if r.MaxSteps < 1 || r.MaxSteps > 100000 {
		bad("run.max_steps", "must be between 1 and 100000, got %d", r.MaxSteps)
	}
	if r.Wall.Duration <= 0 {
		bad("run.wall", "must be > 0, got %s", r.Wall)
	}
	if r.MaxTokens < 0 {
		bad("run.max_tokens", "must be >= 0, got %d", r.MaxTokens)
	}
	if math.IsNaN(r.MaxCost) || r.MaxCost < 0 || r.MaxCost > 1e9 {
		bad("run.max_cost", "must be between 0 and 1e9, got %v", r.MaxCost)
	}
	if r.StepTimeout.Duration <= 0 {
		bad("run.step_timeout", "must be > 0, got %s", r.StepTimeout)
	}
	if r.MaxRestarts < 0 || r.MaxRestarts > 100 {
		bad("run.max_restarts", "must be between 0 and 100, got %d", r.MaxRestarts)
	}
	for _, name := range agentNames(c.Agents) {
		a := c.Agents[name]
		key := func(k string) string { return toml.Key{"agents", name, k}.String() }
		if !agentNameRE.MatchString(name) {
			bad(toml.Key{"agents", name}.String(), "an agent's name is 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit")
			continue
		}
		switch {
		case len(a.Command) > 0 && a.Builtin != "":
			bad(key("command"), "set command (an external agent) or builtin, not both")
		case len(a.Command) == 0 && a.Builtin == "":
			bad(key("command"), "set command (an external agent's executable and arguments) or builtin (%q or %q)", BuiltinScripted, BuiltinOpenAI)
		case a.Builtin != "" && a.Builtin != BuiltinScripted && a.Builtin != BuiltinOpenAI:
			bad(key("builtin"), "must be %q or %q, got %s", BuiltinScripted, BuiltinOpenAI, quote(a.Builtin))
		case len(a.Command) > 0 && (a.Command[0] == "" || slices.ContainsFunc(a.Command, func(s string) bool { return strings.IndexByte(s, 0) >= 0 })):
			bad(key("command"), "the executable must not be empty, and no argument may contain NUL")
		}
		if a.SHA256 != "" {
			if b, err := hex.DecodeString(a.SHA256); err != nil || len(b) != 32 {
				bad(key("sha256"), "must be 64 hex digits (sha256sum's output), got %s", quote(a.SHA256))
			} else if len(a.Command) == 0 {
				bad(key("sha256"), "pins an external agent's command; a built-in agent is harnessd itself")
			}
		}
		for _, m := range []struct {
			k string
			m map[string]string
		}{{"env", a.Env}, {"headers", a.Headers}, {"settings", a.Settings}} {
			for _, n := range agentNames(m.m) {
				if m.k == "env" && !envNameRE.MatchString(n) {
					bad(toml.Key{"agents", name, m.k, n}.String(), "not an environment variable name")
				}
				if strings.ContainsAny(m.m[n], "\x00\r\n") || strings.ContainsAny(n, "\x00\r\n") {
					bad(toml.Key{"agents", name, m.k, n}.String(), "must not contain NUL or a line break")
				}
			}
		}
		if a.StartTimeout.Duration < 0 {
			bad(key("start_timeout"), "must be >= 0, got %s", a.StartTimeout)
		}
		if a.StepTimeout.Duration < 0 {
			bad(key("step_timeout"), "must be >= 0, got %s", a.StepTimeout)
		}
		if a.MaxSteps < 0 || a.MaxSteps > 100000 {
			bad(key("max_steps"), "must be between 0 and 100000, got %d", a.MaxSteps)
		}
		if a.Builtin != BuiltinOpenAI {
			continue
		}
		if u, err := url.Parse(a.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad(key("base_url"), "must be an http or https URL, got %s", quote(a.BaseURL))
		}
		if a.Model == "" {
			bad(key("model"), "must not be empty")
		}
		if a.APIKeyEnv != "" && !envNameRE.MatchString(a.APIKeyEnv) {
			bad(key("api_key_env"), "not an environment variable name: %s", quote(a.APIKeyEnv))
		}
		if math.IsNaN(a.Temperature) || a.Temperature < 0 || a.Temperature > 2 {
			bad(key("temperature"), "must be between 0 and 2, got %v", a.Temperature)
		}
		if a.MaxTokens < 0 {
			bad(key("max_tokens"), "must be >= 0, got %d", a.MaxTokens)
		}
		if a.ContextTokens < 0 {
			bad(key("context_tokens"), "must be >= 0, got %d", a.ContextTokens)
		}
		for _, p := range []struct {
			k string
			v float64
		}{{"price_input", a.PriceInput}, {"price_output", a.PriceOutput}} {
			if math.IsNaN(p.v) || p.v < 0 || p.v > 1e6 {
				bad(key(p.k), "must be between 0 and 1e6 (per million tokens), got %v", p.v)
			}
		}
		if a.Retries < 0 || a.Retries > 20 {
			bad(key("retries"), "must be between 0 and 20, got %d", a.Retries)
		}
		if a.Timeout.Duration <= 0 {
			bad(key("timeout"), "must be > 0, got %s", a.Timeout)
		}
		if a.Mode != ModeTools && a.Mode != ModeCodeAct {
			bad(key("mode"), "must be %q or %q, got %s", ModeTools, ModeCodeAct, quote(a.Mode))
		}
	}
	return errs
}

func agentNames[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
