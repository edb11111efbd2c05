package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/harnessd/harnessd/core/event"
	"github.com/harnessd/harnessd/core/terminal"
)

// TestHundredConcurrent creates 100 sandboxes at once, each with its own
// terminal, runs a command in each and destroys them: no errors, no
// cross-talk. (Not timed: the figures are in the benchmarks.)
func TestHundredConcurrent(t *testing.T) {
	requireRoot(t)
	if testing.Short() {
		t.Skip("-short")
	}
	const n = 100
	d := newDriver(t, NativeOptions{StartTimeout: 2 * time.Minute})
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	t0 := time.Now()
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- func() error {
				sb, err := d.Create(ctx, Spec{Workspace: t.TempDir(), Hostname: fmt.Sprintf("box%d", i)})
				if err != nil {
					return fmt.Errorf("create %d: %w", i, err)
				}
				defer sb.Destroy(ctx)
				opts := termOptions(sb)
				opts.StartWait = 2 * time.Minute
				term, err := terminal.New(ctx, opts)
				if err != nil {
					return fmt.Errorf("terminal %d: %w", i, err)
				}
				defer term.Close()
				var out bytes.Buffer
				res, err := term.Run(ctx, event.CmdRun{Command: "echo $(hostname) > mine; cat mine"}, &out)
				if err != nil || res.ExitCode != 0 || out.String() != fmt.Sprintf("box%d\n", i) {
					return fmt.Errorf("sandbox %d: %q %+v %v", i, out.String(), res, err)
				}
				term.Close()
				return sb.Destroy(ctx)
			}()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	t.Logf("%d sandboxes created, used and destroyed concurrently in %s", n, time.Since(t0).Round(time.Millisecond))
}
