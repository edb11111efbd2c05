package builtin

import (
	"encoding/json"
	"maps"

	"github.com/harnessd/harnessd/core/agent"
	"github.com/harnessd/harnessd/core/config"
	"github.com/harnessd/harnessd/plugins"
	"github.com/harnessd/harnessd/plugins/openai"
	"github.com/harnessd/harnessd/plugins/scripted"
)

// Launcher returns the launcher of the agents cfg configures. exe serves
// the built-in ones ("" means the running binary).
func Launcher(cfg config.Config, exe string) *plugins.Launcher {
	l := &plugins.Launcher{Agents: map[string]plugins.AgentCommand{}, Exe: exe}
	for name, a := range cfg.Agents {
		ac := plugins.AgentCommand{
			Command:      a.Command,
			Builtin:      a.Builtin,
			SHA256:       a.SHA256,
			Env:          maps.Clone(a.Env),
			StartTimeout: a.StartTimeout.Duration,
		}
		var settings any = a.Settings
		switch a.Builtin {
		case config.BuiltinScripted:
			settings = scripted.Settings{Script: a.Script}
		case config.BuiltinOpenAI:
			settings = openai.SettingsFrom(a)
			if a.APIKeyEnv != "" {
				ac.PassEnv = []string{a.APIKeyEnv}
			}
		}
		if settings != nil {
			ac.Settings, _ = json.Marshal(settings)
		}
		l.Agents[name] = ac
	}
	return l
}

// Defaults returns, for agent.Options.Agent, each configured agent's
// default limits: [run]'s, with the agent's own step_timeout and
// max_steps.
func Defaults(cfg config.Config) func(name string) (agent.Limits, bool) {
	r := cfg.Run
	return func(name string) (agent.Limits, bool) {
		a, ok := cfg.Agents[name]
		if !ok {
			return agent.Limits{}, false
		}
		l := agent.Limits{
			MaxSteps:     r.MaxSteps,
			WallS:        r.Wall.Seconds(),
			MaxTokens:    int64(r.MaxTokens),
			MaxCost:      r.MaxCost,
			StepTimeoutS: r.StepTimeout.Seconds(),
			MaxRestarts:  r.MaxRestarts,
		}
		if a.MaxSteps > 0 {
			l.MaxSteps = a.MaxSteps
		}
		if a.StepTimeout.Duration > 0 {
			l.StepTimeoutS = a.StepTimeout.Seconds()
		}
		return l, true
	}
}
