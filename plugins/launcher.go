package plugins

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/harnessd/harnessd/core/agent"
)

// AgentCommand says how one configured agent runs.
type AgentCommand struct {
	// Command is an external agent's argv. Empty for a built-in agent.
	Command []string
	// Builtin names an agent served by the harnessd binary itself
	// (`harnessd plugin NAME`): "scripted" or "openai".
	Builtin string
	// SHA256 pins an external agent's executable (Config.SHA256).
	SHA256 string
	// Env is set in the agent's environment.
	Env map[string]string
	// PassEnv names variables of the daemon's environment passed on as
	// they are (an API key the settings name).
	PassEnv []string
	// Settings is the agent's settings as a JSON object (EnvSettings).
	Settings []byte
	// StartTimeout bounds exec, handshake and Info; default 10s.
	StartTimeout time.Duration
}

// Launcher starts configured agents for the controller (agent.Launcher).
type Launcher struct {
	Agents map[string]AgentCommand
	// Exe is the binary that serves the built-in agents; default
	// /proc/self/exe, the running harnessd.
	Exe string
	// Getenv reads the daemon's environment for PassEnv; nil: os.Getenv.
	Getenv func(string) string
}

var _ agent.Launcher = (*Launcher)(nil)

// BaseEnv is what every agent's environment starts from.
var BaseEnv = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8"}

// Command returns the argv that runs a configured agent.
func (l *Launcher) Command(name string) ([]string, error) {
	ac, ok := l.Agents[name]
	if !ok {
		return nil, fmt.Errorf("%w %q (configured: %s)", agent.ErrUnknownAgent, name, strings.Join(slices.Sorted(maps.Keys(l.Agents)), ", "))
	}
	if len(ac.Command) > 0 {
		return ac.Command, nil
	}
	exe := l.Exe
	if exe == "" {
		exe = "/proc/self/exe"
	}
	return []string{exe, "plugin", ac.Builtin}, nil
}

// Launch starts the agent spec names, with the run's host services and
// logger.
func (l *Launcher) Launch(ctx context.Context, spec agent.Spec) (agent.Agent, error) {
	argv, err := l.Command(spec.Agent)
	if err != nil {
		return nil, err
	}
	ac := l.Agents[spec.Agent]
	getenv := l.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	env := append([]string{}, BaseEnv...)
	for _, k := range []string{"HOME", "TMPDIR"} {
		if v := getenv(k); v != "" {
			env = append(env, k+"="+v)
		}
	}
	for _, k := range ac.PassEnv {
		if v := getenv(k); v != "" {
			env = append(env, k+"="+v)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(ac.Env)) {
		env = append(env, k+"="+ac.Env[k])
	}
	settings := ac.Settings
	if len(settings) == 0 {
		settings = []byte("{}")
	}
	env = append(env, EnvAgent+"="+spec.Agent, EnvSettings+"="+string(settings))
	p, err := Start(ctx, Config{
		Command:      argv,
		SHA256:       ac.SHA256,
		Env:          env,
		Logger:       spec.Logger,
		StartTimeout: ac.StartTimeout,
		Host:         spec.Host,
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}
