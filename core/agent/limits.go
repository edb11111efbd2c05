package agent

import (
	"fmt"
	"math"
	"time"
)

// Limits bound a run. In a request a zero field means the agent's
// default (harness.toml); a run's own Limits are complete.
type Limits struct {
	MaxSteps     int     `json:"max_steps,omitempty"`      // steps, each a plugin Step or a nudge
	WallS        float64 `json:"wall_s,omitempty"`         // wall-clock budget, seconds
	MaxTokens    int64   `json:"max_tokens,omitempty"`     // prompt + completion tokens; 0: none
	MaxCost      float64 `json:"max_cost,omitempty"`       // in the currency of the prices; 0: none
	StepTimeoutS float64 `json:"step_timeout_s,omitempty"` // one Step's answer, seconds
	MaxRestarts  int     `json:"max_restarts,omitempty"`   // plugin restarts before agent_failed
	// Attended: a person answers the agent's messages (the run ends with
	// awaiting_user); otherwise each message gets a recorded nudge.
	Attended bool `json:"attended,omitempty"`
}

// Built-in defaults, for limits neither the request nor harness.toml set.
const (
	DefaultMaxSteps    = 100
	DefaultWall        = 30 * time.Minute
	DefaultStepTimeout = 5 * time.Minute
	DefaultMaxRestarts = 3
)

// Upper bounds of a request's limits.
const (
	maxSteps  = 100000
	maxWallS  = 7 * 24 * 3600
	maxTokens = 1 << 40
	maxCost   = 1e9
)

// Or returns l with its zero fields taken from def, then from the
// built-in defaults.
func (l Limits) Or(def Limits) Limits {
	pick := func(a, b, c float64) float64 {
		if a > 0 {
			return a
		}
		if b > 0 {
			return b
		}
		return c
	}
	l.MaxSteps = int(pick(float64(l.MaxSteps), float64(def.MaxSteps), DefaultMaxSteps))
	l.WallS = pick(l.WallS, def.WallS, DefaultWall.Seconds())
	l.MaxTokens = int64(pick(float64(l.MaxTokens), float64(def.MaxTokens), 0))
	l.MaxCost = pick(l.MaxCost, def.MaxCost, 0)
	l.StepTimeoutS = pick(l.StepTimeoutS, def.StepTimeoutS, DefaultStepTimeout.Seconds())
	l.MaxRestarts = int(pick(float64(l.MaxRestarts), float64(def.MaxRestarts), DefaultMaxRestarts))
	l.Attended = l.Attended || def.Attended
	return l
}

// Validate reports a limit out of range.
func (l Limits) Validate() error {
	bad := func(name string, v any, rng string) error {
		return fmt.Errorf("%w: limits.%s = %v (want %s)", ErrBadRequest, name, v, rng)
	}
	switch {
	case l.MaxSteps < 0 || l.MaxSteps > maxSteps:
		return bad("max_steps", l.MaxSteps, fmt.Sprintf("0 to %d", maxSteps))
	case !finite(l.WallS) || l.WallS < 0 || l.WallS > maxWallS:
		return bad("wall_s", l.WallS, fmt.Sprintf("0 to %d", maxWallS))
	case l.MaxTokens < 0 || l.MaxTokens > maxTokens:
		return bad("max_tokens", l.MaxTokens, fmt.Sprintf("0 to %d", int64(maxTokens)))
	case !finite(l.MaxCost) || l.MaxCost < 0 || l.MaxCost > maxCost:
		return bad("max_cost", l.MaxCost, "0 to 1e9")
	case !finite(l.StepTimeoutS) || l.StepTimeoutS < 0 || l.StepTimeoutS > maxWallS:
		return bad("step_timeout_s", l.StepTimeoutS, fmt.Sprintf("0 to %d", maxWallS))
	case l.MaxRestarts < 0 || l.MaxRestarts > 100:
		return bad("max_restarts", l.MaxRestarts, "0 to 100")
	}
	return nil
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

func (l Limits) wall() time.Duration        { return seconds(l.WallS) }
func (l Limits) stepTimeout() time.Duration { return seconds(l.StepTimeoutS) }

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
