package parse_test

import (
	"fmt"

	"github.com/harnessd/harnessd/core/event"
	"github.com/harnessd/harnessd/core/parse"
)

// The controller switches on the four kinds; an invalid_action goes back to the
// model as an observation it can correct itself from.
func Example() {
	replies := []string{
		"Let me look around.\n```bash\nls -la /tmp/x\n```",
		"Okay, let me check: ```bash ls -la /tmp/x",
		"The directory is empty.",
		"All tests pass.\n<finish></finish>",
	}
	for _, r := range replies {
		switch a := parse.Text(r).(type) {
		case event.CmdRun:
			fmt.Printf("run %q\n", a.Command)
		case event.InvalidAction:
			fmt.Printf("invalid_action: %s\n", a.Reason)
		case event.Message:
			fmt.Printf("message %q\n", a.Text)
		case event.Finish:
			fmt.Printf("finish %q\n", a.Message)
		}
	}
	// Output:
	// run "ls -la /tmp/x"
	// invalid_action: code block fence not closed
	// message "The directory is empty."
	// finish "All tests pass."
}

// A tool call that is almost right is refused, with the right form shown.
func ExampleToolCall() {
	a := parse.ToolCall("bash", []byte(`{'command': 'ls -la', 'is_input': False}`))
	m := a.(event.InvalidAction)
	fmt.Println(m.Reason)
	fmt.Println(m.Guidance)

	a = parse.ToolCall("execute_bash", []byte(`{"command": "C-c", "is_input": true}`))
	fmt.Printf("%+v\n", a)
	// Output:
	// arguments are a Python literal, not JSON
	// Tool arguments must be JSON: double quotes around strings and keys, true/false/null instead of True/False/None. Resend the call to bash with these arguments:
	// {"command": "ls -la", "is_input": false}
	// {Command:C-c IsInput:true TimeoutS:0 Reset:false Rewritten:<nil>}
}
