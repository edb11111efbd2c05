package event

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// MaxTimeoutS is the longest hard timeout a cmd_run may ask for, in
// seconds: a day. Larger values are refused rather than clamped, because
// what is recorded must be what runs.
const MaxTimeoutS = 24 * 60 * 60

// Validate reports what makes c impossible to run as recorded: a NUL in
// the command (a shell cannot carry it, so it would run without it while
// the record kept it), or a timeout that is negative, not a number, or
// above MaxTimeoutS.
func (c CmdRun) Validate() error {
	if strings.IndexByte(c.Command, 0) >= 0 {
		return errors.New("command contains a NUL byte, which a shell cannot run")
	}
	if math.IsNaN(c.TimeoutS) || c.TimeoutS < 0 || c.TimeoutS > MaxTimeoutS {
		return fmt.Errorf("timeout_s %v: want 0 (the configured hard_timeout) to %d seconds", c.TimeoutS, MaxTimeoutS)
	}
	return nil
}
