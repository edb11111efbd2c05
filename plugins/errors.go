package plugins

import "errors"

// Errors of the host side.
var (
	// ErrHandshake: the process did not complete go-plugin's handshake
	// (it exited, printed something else, spoke another protocol version
	// or another protocol), or failed its SHA-256 check.
	ErrHandshake = errors.New("plugin handshake failed")

	// ErrGarbage: the plugin answered with something the contract does
	// not allow (see Validate).
	ErrGarbage = errors.New("plugin broke the contract")

	// ErrExited: the plugin process is gone.
	ErrExited = errors.New("plugin process exited")

	// ErrNoHost: the host offered no services to this plugin (see
	// StepRequest.host_services).
	ErrNoHost = errors.New("no host services")
)
