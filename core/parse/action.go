package parse

import "time"

// Action is what one model turn asks the harness to do. It is exactly one of
// RunBash, Finish, Message or Malformed, always as a value (never a pointer),
// so a type switch over those four is exhaustive.
type Action interface{ isAction() }

// RunBash runs Command in the session's persistent shell.
//
// From Text, Command is never empty. From ToolCall, an empty Command is
// allowed in two cases the terminal contract gives a meaning to: with Reset
// it means "only rebuild the shell", and with neither Reset nor IsInput it
// means "show more output of the command that is still running" (the reply
// to an exit code of -1). IsInput with an empty Command is Malformed.
type RunBash struct {
	// Command is the shell text to run, or with IsInput the text or keys
	// (such as "C-c") to send to the program in the foreground.
	Command string
	// IsInput sends Command to the running program instead of starting a
	// new command. The parser passes key names through untouched: what they
	// mean is the terminal's business.
	IsInput bool
	// Timeout is how long the model asked to wait; zero means the session's
	// default. It is never negative and never above MaxTimeout.
	Timeout time.Duration
	// Reset asks for the shell to be killed and rebuilt before Command runs.
	Reset bool
}

// Finish ends the task. Message is the model's closing summary; it may be
// empty.
type Finish struct {
	Message string
}

// Message is plain text: the model is talking (or showing code it does not
// want run), not acting.
type Message struct {
	Text string
}

// Malformed is a reply the parser could not turn into an action. It is not an
// error to return to a caller: it becomes an invalid_action observation the
// model reads next turn, so Reason says what was wrong in a few words and
// Guidance, written for the model, shows the correct form to resend. Both are
// always non-empty.
type Malformed struct {
	Reason   string
	Guidance string
}

func (RunBash) isAction()   {}
func (Finish) isAction()    {}
func (Message) isAction()   {}
func (Malformed) isAction() {}

// Compile-time checks that the four kinds are Actions.
var (
	_ Action = RunBash{}
	_ Action = Finish{}
	_ Action = Message{}
	_ Action = Malformed{}
)

// MaxTimeout is the longest Timeout a tool call may ask for. Anything longer
// is far more likely a unit mistake (milliseconds sent as seconds) than a
// real wish, and a long wait is better spent polling: the terminal's soft
// timeout hands control back with exit code -1 and the model can ask for
// more output with an empty command.
const MaxTimeout = time.Hour
