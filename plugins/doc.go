// Package plugins is the contract between harnessd and its agent plugins,
// which run as separate processes through hashicorp/go-plugin, and both
// sides of it: Start runs a plugin for the host, Serve runs an Agent as a
// plugin.
//
// # Basics
//
// The wire contract is the gRPC service in plugins/proto (agent.proto):
// Agent.Info and Agent.Step, served by the plugin, and the Host service
// (read a full output, read events, report usage) that the host offers
// back over go-plugin's GRPCBroker. Handshake is the go-plugin handshake
// both sides must agree on: a magic cookie and ProtocolVersion, which the
// host checks before it trusts anything the process says.
//
// The host side (Start, Process) runs the plugin's executable with an
// environment it builds (the daemon's own is not passed on), in a process
// group of its own, pinned by SHA-256 when Config.SHA256 is set
// (go-plugin's SecureConfig), with mutual TLS (go-plugin's AutoMTLS
// protocol on P-256 certificates the host makes for both sides, see
// tls.go): only this host may talk to this plugin, and the host talks only
// to the process it started. The
// plugin's stderr, what it prints and go-plugin's own log go to the
// host's slog.Logger with the caller's attributes (session, run, agent).
// Kill ends the process and everything in its group; it is safe to call
// twice and returns when the process is gone.
//
// The plugin side (Serve) serves an Agent and exits when its parent is
// gone, so that a daemon killed with SIGKILL leaves no plugin behind.
//
// # Caveats
//
// The host never trusts what a plugin returns: Process.Step checks every
// field (see Validate), and a plugin that breaks the contract is an error
// the caller records, never a panic. SecureConfig checks the executable's
// hash before it runs; a file swapped between that check and the exec is
// not caught (go-plugin's limitation).
package plugins
