package terminal_test

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/harnessd/harnessd/core/event"
	"github.com/harnessd/harnessd/core/terminal"
)

func ExampleTerminal_Run() {
	ctx := context.Background()
	term, err := terminal.New(ctx, terminal.Options{})
	if err != nil {
		panic(err)
	}
	defer term.Close()

	var out bytes.Buffer
	res, _ := term.Run(ctx, event.CmdRun{Command: "cd /tmp && echo hi; (exit 3)"}, &out)
	fmt.Printf("%q exit=%d cwd=%s\n", out.String(), res.ExitCode, res.Cwd)

	// A program that waits for input: the call returns when the soft
	// timeout passes with nothing new, and input answers it.
	out.Reset()
	res, _ = term.Run(ctx, event.CmdRun{Command: `read -r -p "name? " x; echo "hi $x"`}, &out, terminal.WithSoftTimeout(300*time.Millisecond))
	fmt.Printf("%q running=%v\n", out.String(), res.Running)
	out.Reset()
	res, _ = term.Run(ctx, event.CmdRun{Command: "bob", IsInput: true}, &out)
	fmt.Printf("%q exit=%d\n", out.String(), res.ExitCode)
	// Output:
	// "hi\n" exit=3 cwd=/tmp
	// "name? " running=true
	// "hi bob\n" exit=0
}
