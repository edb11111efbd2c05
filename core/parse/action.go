package parse

import "time"

// What the parser returns is an event payload, the same type the event
// stream records and the pipeline runs, so nothing converts between a
// "parsed" and a "recorded" form of one action. It is exactly one of:
//
//   - event.CmdRun: run Command in the session's persistent shell. From
//     Text, Command is never empty. From ToolCall, an empty Command is
//     allowed in two cases the terminal gives a meaning to: with Reset it
//     means "only rebuild the shell", and with neither Reset nor IsInput it
//     means "show more output of the command that is still running" (the
//     reply to an exit code of -1). IsInput with an empty Command is
//     malformed. TimeoutS is never negative and never above MaxTimeout.
//   - event.Finish: the task is over; Message is the model's closing
//     summary and may be empty.
//   - event.Message: plain text; the model is talking (or showing code it
//     does not want run), not acting.
//   - event.InvalidAction: a reply the parser could not turn into an
//     action. It is not an error to return to a caller: it is the
//     observation the model reads next turn, so Reason says what was wrong
//     in a few words and Guidance, written for the model, shows the correct
//     form to resend. Both are always non-empty.
//
// Always a value, never a pointer, so a type switch over the four is
// exhaustive.

// MaxTimeout is the longest timeout a tool call may ask for. Anything longer
// is far more likely a unit mistake (milliseconds sent as seconds) than a
// real wish, and a long wait is better spent polling: the terminal's soft
// timeout hands control back with exit code -1 and the model can ask for
// more output with an empty command.
const MaxTimeout = time.Hour
