package agent

import (
	"testing"
	"time"
)

// SetSettleDelay widens the moment between run_ended's commit and the
// run's Info (settleDelay) for the test's daemons. Call it before they
// start.
func SetSettleDelay(t testing.TB, d time.Duration) {
	settleDelay = d
	t.Cleanup(func() { settleDelay = 0 })
}
