package config

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestAgentsParse reads [run] and [agents.NAME] tables.
func TestAgentsParse(t *testing.T) {
	src := `
[run]
agent = "local"
max_cost = 2.5
max_steps = 20
[agents.local]
builtin = "openai"
base_url = "http://127.0.0.1:11434/v1"
model = "qwen2.5-coder"
temperature = 0.2
headers = { "X-Team" = "a" }
price_input = 0.15
price_output = 0.6
[agents.py]
command = ["/usr/bin/python3", "agent.py"]
sha256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
env = { LOG = "1" }
`
	c, err := Parse([]byte(src), "t.toml")
	if err != nil {
		t.Fatal(err)
	}
	l := c.Agents["local"]
	if c.Run.Agent != "local" || c.Run.MaxCost != 2.5 || c.Run.MaxSteps != 20 || c.Run.Wall.Duration != 30*time.Minute ||
		l.Model != "qwen2.5-coder" || l.Temperature != 0.2 || l.Headers["X-Team"] != "a" || l.PriceOutput != 0.6 ||
		!reflect.DeepEqual(c.Agents["py"].Command, []string{"/usr/bin/python3", "agent.py"}) {
		t.Fatalf("%+v", c)
	}
	// Agents the file adds go beside the built-in ones.
	if c.Agents["scripted"].Builtin != BuiltinScripted || c.Agents["openai"].Builtin != BuiltinOpenAI {
		t.Errorf("[agents] in the file removed the built-in agents: %+v", c.Agents)
	}
}

// TestAgentsOverBuiltin: a table named after a built-in agent changes the
// keys it sets and keeps the rest, as the README's example does with
// [agents.openai] base_url alone.
func TestAgentsOverBuiltin(t *testing.T) {
	c, err := Parse([]byte("[agents.openai]\nbase_url = \"http://127.0.0.1:9999/v1\"\n[agents.scripted]\nscript = \"/tmp/s.jsonl\"\n"), "t.toml")
	if err != nil {
		t.Fatal(err)
	}
	o, want := c.Agents["openai"], Default().Agents["openai"]
	want.BaseURL = "http://127.0.0.1:9999/v1"
	if !reflect.DeepEqual(o, want) {
		t.Errorf("openai: got  %+v\nwant %+v", o, want)
	}
	if s := c.Agents["scripted"]; s.Builtin != BuiltinScripted || s.Script != "/tmp/s.jsonl" {
		t.Errorf("scripted: %+v", s)
	}
	if Default().Agents["openai"].BaseURL != "http://127.0.0.1:8080/v1" {
		t.Error("Parse changed the defaults")
	}
}

// TestAgentsValidate runs without the decoder: the checks of [run] and
// [agents.NAME] on a Config built in code.
func TestAgentsValidate(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(*Config)
		key  string
	}{
		{"unknown run agent", func(c *Config) { c.Run.Agent = "nope" }, "run.agent"},
		{"negative cost", func(c *Config) { c.Run.MaxCost = -1 }, "run.max_cost"},
		{"zero steps", func(c *Config) { c.Run.MaxSteps = 0 }, "run.max_steps"},
		{"both", func(c *Config) { a := c.Agents["scripted"]; a.Command = []string{"x"}; c.Agents["scripted"] = a }, "agents.scripted.command"},
		{"neither", func(c *Config) { c.Agents["x"] = Agent{} }, "agents.x.command"},
		{"bad builtin", func(c *Config) { c.Agents["x"] = Agent{Builtin: "claude"} }, "agents.x.builtin"},
		{"bad sha", func(c *Config) { c.Agents["x"] = Agent{Command: []string{"/bin/x"}, SHA256: "abc"} }, "agents.x.sha256"},
		{"sha on builtin", func(c *Config) {
			c.Agents["x"] = Agent{Builtin: "scripted", SHA256: strings.Repeat("a", 64)}
		}, "agents.x.sha256"},
		{"bad env", func(c *Config) {
			c.Agents["x"] = Agent{Command: []string{"/bin/x"}, Env: map[string]string{"A=B": "1"}}
		}, `agents.x.env."A=B"`},
		{"bad name", func(c *Config) { c.Agents["../x"] = Agent{Builtin: "scripted"} }, `agents."../x"`},
		{"bad url", func(c *Config) { a := c.Agents["openai"]; a.BaseURL = "ftp://x"; c.Agents["openai"] = a }, "agents.openai.base_url"},
		{"hot", func(c *Config) { a := c.Agents["openai"]; a.Temperature = 3; c.Agents["openai"] = a }, "agents.openai.temperature"},
		{"mode", func(c *Config) { a := c.Agents["openai"]; a.Mode = "chat"; c.Agents["openai"] = a }, "agents.openai.mode"},
	} {
		cfg := Default()
		c.edit(&cfg)
		err := cfg.Validate()
		var ke *KeyError
		if !errors.As(err, &ke) || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.key) {
			t.Errorf("%s: %v, want an error naming %s", c.name, err, c.key)
		}
	}
	if err := Default().Validate(); err != nil {
		t.Fatal(err)
	}
}
