package demo

import (
	"os"
	"testing"

	"github.com/harnessd/harnessd/core/sandbox"
	"github.com/harnessd/harnessd/plugins/builtin"
)

// TestMain doubles as the sandbox init: native sandboxes re-execute this
// test binary as `demo.test sandbox-init`, as they re-execute harnessd.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == sandbox.InitCommand {
		sandbox.InitMain()
	}
	// And the built-in agents, which the daemon runs as `demo.test plugin NAME`.
	if len(os.Args) > 2 && os.Args[1] == builtin.Command {
		os.Exit(builtin.Main(os.Args[2:]))
	}
	os.Exit(m.Run())
}
