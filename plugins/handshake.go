package plugins

import plugin "github.com/hashicorp/go-plugin"

// ProtocolVersion is the version of agent.proto this build speaks. A
// plugin built for another version fails the handshake with a message
// naming both.
const ProtocolVersion = 1

// The magic cookie go-plugin passes in the environment. It is not a
// secret: it only stops a plugin executable from serving when it is run by
// hand, and says which host started it.
const (
	MagicCookieKey   = "HARNESSD_AGENT_PLUGIN"
	MagicCookieValue = "9c1f6e2a0b7d4e58a3f1c2d4e6b8a0f2"
)

// PluginName is the name of the one plugin a harnessd agent process
// serves, in go-plugin's plugin set.
const PluginName = "agent"

// Handshake is what host and plugin must agree on.
var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  ProtocolVersion,
	MagicCookieKey:   MagicCookieKey,
	MagicCookieValue: MagicCookieValue,
}

// Environment variables the host sets for every agent plugin besides
// go-plugin's own.
const (
	// EnvSettings holds the agent's settings from harness.toml as a JSON
	// object ({} when it has none).
	EnvSettings = "HARNESSD_AGENT_SETTINGS"
	// EnvAgent is the agent's name in harness.toml.
	EnvAgent = "HARNESSD_AGENT"
)
