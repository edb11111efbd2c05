package mcp

import (
	"errors"
	"fmt"

	"github.com/harnessd/harnessd/core/api"
)

// ErrNoSession: a tool that reads a session was given none and the
// connection has no default session yet.
var ErrNoSession = errors.New("no session given, and this connection has no default session yet: pass session (see session_list), or run exec first")

// actionable turns an API error into one a model can act on: what went
// wrong and which tool call fixes it. The original stays wrapped.
func actionable(what string, err error) error {
	var ae *api.Error
	if errors.As(err, &ae) {
		switch ae.Code {
		case "not_found":
			return fmt.Errorf("%s: %s; session_list shows the sessions there are, session_create makes one: %w", what, ae.Message, err)
		case "session_ended":
			return fmt.Errorf("%s: the session has ended; create a new one with session_create (or omit session to use this connection's default): %w", what, err)
		case "exists":
			return fmt.Errorf("%s: that id is taken; choose another or omit id: %w", what, err)
		case "too_many_sessions":
			return fmt.Errorf("%s: the daemon has as many sessions as it allows; delete one you no longer need with session_delete: %w", what, err)
		case "bad_request", "unknown_field", "malformed_json":
			return fmt.Errorf("%s: harnessd refused the arguments: %w", what, err)
		}
		return fmt.Errorf("%s: %w", what, err)
	}
	if errors.Is(err, api.ErrNotRunning) {
		return fmt.Errorf("%s: harnessd is not running; start `harnessd serve`, or configure this MCP server as `harnessd mcp --embedded`: %w", what, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}
