package netproxy

import (
	"errors"
	"fmt"
)

// Errors from Serve.
var (
	// ErrClosed is returned by Serve on a Proxy that was already closed, or
	// that already served: a Proxy serves once, so that everything it
	// reported belongs to one listener and one session. It is also the
	// closing Decision's Err for a request or tunnel cut off by Close or
	// by the end of Serve's context.
	ErrClosed = errors.New("netproxy: proxy closed")

	// ErrServing is returned by a second Serve while the first is running.
	ErrServing = errors.New("netproxy: proxy already serving")
)

// Errors in a closing Decision's Err, besides ErrClosed and the network's
// own (a refused or timed-out dial, a name that does not resolve).
var (
	// ErrIdleTimeout: no bytes moved in either direction for
	// Config.IdleTimeout, or one side stopped reading for that long.
	ErrIdleTimeout = errors.New("netproxy: idle timeout")

	// errAborted: a plain-HTTP response was broken off while it was being
	// relayed, and neither side's own error was seen.
	errAborted = errors.New("netproxy: response broken off")
)

// PatternError is returned by New for a host pattern or Hosts entry it
// cannot use. List is the Config field it came from ("Allow", "Deny" or
// "Hosts"), so the caller can name the setting in its own terms.
type PatternError struct {
	List    string // "Allow", "Deny" or "Hosts"
	Pattern string // the pattern (for Hosts, the name) exactly as given
	Reason  string // what is wrong with it
}

func (e *PatternError) Error() string {
	return fmt.Sprintf("netproxy: %s pattern %q: %s", e.List, e.Pattern, e.Reason)
}
