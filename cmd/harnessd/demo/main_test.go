package demo

import (
	"os"
	"testing"

	"github.com/harnessd/harnessd/core/sandbox"
)

// TestMain doubles as the sandbox init: native sandboxes re-execute this
// test binary as `demo.test sandbox-init`, as they re-execute harnessd.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == sandbox.InitCommand {
		sandbox.InitMain()
	}
	os.Exit(m.Run())
}
