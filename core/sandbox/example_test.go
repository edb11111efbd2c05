package sandbox_test

import (
	"context"
	"fmt"
	"os"

	"github.com/harnessd/harnessd/core/event"
	"github.com/harnessd/harnessd/core/sandbox"
	"github.com/harnessd/harnessd/core/terminal"
)

// A terminal whose bash runs in a native sandbox. Its init is the program
// harnessd carries (package initbin); on an architecture without one, the
// running binary, whose main must call sandbox.InitMain when os.Args[1] is
// sandbox.InitCommand.
func Example() {
	ctx := context.Background()
	d, err := sandbox.NewNative(nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	sb, err := d.Create(ctx, sandbox.Spec{Workspace: "/srv/work/session-1", Limits: sandbox.Limits{MemoryBytes: 2 << 30, Pids: 512}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err) // sandbox.ErrUserNamespaces names the setting to change
		return
	}
	defer sb.Destroy(ctx)
	term, err := terminal.New(ctx, terminal.Options{
		Prepare:          sb.Prepare,
		Started:          sb.Started,
		InitWrapped:      sb.InitWrapped(),
		ControlDir:       sb.ControlDir(),
		ControlDirInside: sb.ControlDirInside(),
		Dir:              sb.Workdir(),
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err) // a setup failure is a *sandbox.InitError
		return
	}
	defer term.Close()
	res, _ := term.Run(ctx, event.CmdRun{Command: "id -u; hostname"}, os.Stdout)
	fmt.Println(res.ExitCode)
}
