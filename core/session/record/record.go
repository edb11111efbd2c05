// Package record declares what is kept of a session besides its events: its
// metadata (Session), the states of its life, and the Catalog that keeps
// them. core/daemon uses a Catalog; store implements it. The package
// depends on nothing, so the store can implement it without reaching into
// the rest of core.
package record

import (
	"context"
	"errors"
	"time"
)

// States of a session, as the catalog keeps them.
const (
	StateLive        = "live"        // its shell is running; actions are accepted
	StateStopped     = "stopped"     // deleted by a client; history readable
	StateInterrupted = "interrupted" // ended by a daemon shutdown or crash; history readable
)

// Session is a session's metadata. The catalog does not interpret State;
// the daemon owns the lifecycle.
type Session struct {
	ID      string            `json:"id"`
	State   string            `json:"state,omitempty"`
	Created time.Time         `json:"created"`
	Ended   time.Time         `json:"ended,omitzero"` // zero while the session lives
	Labels  map[string]string `json:"labels,omitempty"`
	// Workspace is the host directory the session works in, if any.
	Workspace string `json:"workspace,omitempty"`
	// Owner is the uid of the API client that created the session: with
	// root and the daemon's own user, the only one who may use it. 0 is
	// root, or a session made before owners were kept.
	Owner int `json:"owner,omitempty"`
	// Profile is the [profiles.NAME] of harness.toml the session's
	// sandbox was made with; "" for [sandbox]'s settings.
	Profile string `json:"profile,omitempty"`

	// LastSeq is the seq of the session's last event. A catalog fills it
	// in on reads; it is not part of what a caller writes.
	LastSeq uint64 `json:"last_seq"`
}

// Catalog keeps sessions' metadata. Every method is safe for concurrent
// use.
type Catalog interface {
	// CreateSession records a new session; Created defaults to now. It
	// fails with ErrExists if the id is in use.
	CreateSession(ctx context.Context, s Session) (Session, error)
	// Session returns one session, or ErrNotFound.
	Session(ctx context.Context, id string) (Session, error)
	// Sessions returns every session kept.
	Sessions(ctx context.Context) ([]Session, error)
	// UpdateSession changes one session through fn, atomically; an error
	// from fn changes nothing and is returned.
	UpdateSession(ctx context.Context, id string, fn func(*Session) error) (Session, error)
	// DeleteSession removes a session with its events and outputs.
	DeleteSession(ctx context.Context, id string) error
}

// Errors a Catalog returns, wrapped with detail.
var (
	// ErrNotFound: the catalog holds no session with that id.
	ErrNotFound = errors.New("session not found")
	// ErrExists: CreateSession was given an id in use (or one still being
	// swept after a delete).
	ErrExists = errors.New("session already exists")
	// ErrRunNotFound: the store keeps no record of an agent run with that
	// id (core/agent's RunStore). Declared here, beside the sessions'
	// errors, so the store can return it without importing core/agent.
	ErrRunNotFound = errors.New("run not found")
)
