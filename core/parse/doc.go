// Package parse turns what a model wrote into exactly one event payload:
// event.CmdRun, event.Finish, event.Message, or event.InvalidAction for a
// reply it cannot use. It never panics and never returns an error: the
// InvalidAction is an observation whose Guidance
// tells the model, in a line or two and with the correct form shown, what to
// resend. The session records it as an invalid_action observation, so bad
// output costs the agent one turn, never the run.
//
// # Basics
//
// Text reads a text reply in the CodeAct style, where commands travel in
// fenced code blocks:
//
//   - A block whose label names a shell is a command: bash, sh, shell, zsh,
//     console, terminal and the like, an unlabelled fence, and misspellings
//     within one edit of a short name or two of a long one ("bassh", "Bash",
//     "bsah", "she bash"). Fences are ``` or ~~~, three or more long; the
//     closing fence must be at least as long as the opening one. A fence may
//     open mid-line ("let me check: ```bash") or hold a whole one-line
//     command ("```bash ls -la```").
//   - console and terminal blocks are transcripts: "$ " prompt lines (and their
//     "> " continuations) are the commands and other lines are expected output,
//     which is dropped. In other shell blocks a "$ " prompt is stripped when
//     every line carries one.
//   - Blocks in another language (python, json, diff...) are the model showing
//     code, not running it: a reply with only such blocks is a Message. (The
//     reference harness calls these malformed; here the one thing we can run
//     is bash, and a reply quoting a file or a patch for a person is normal
//     talk, so Message it is. A reply meaning to act should use a shell block.)
//   - The task ends with a <finish>summary</finish> tag in the prose (case is
//     ignored; <finish/> also works). An empty tag takes the surrounding text
//     as the summary; without a closing tag the summary runs to the end.
//     Shell blocks inside the tag are part of the summary, not commands.
//   - No fence and no tag: a Message.
//   - Bare fences after the one labelled shell block are the output the
//     model expects to see ("```bash\nls\n```\nOutput:\n```\nfile1\n```"),
//     not more commands.
//
// What is InvalidAction: a fence that is never closed (truncated replies land
// here), more than one command block (one action per turn), an empty block,
// a command typed on the fence line ("```bash ls"), text after the label that
// is not a renderer attribute ("```bash copy"), a command and a finish tag in
// one reply, and an empty reply.
//
// ToolCall reads an OpenAI-style tool call, a function name (case ignored,
// a "functions." prefix dropped) and its JSON arguments:
//
//	bash, execute_bash, terminal, run  {"command": "ls -la", "is_input": false, "timeout": 30, "reset": false}
//	finish                             {"message": "summary"}       (message optional)
//	message                            {"text": "what to say"}      -> Message
//	think                              {"thought": "reasoning"}     -> Message
//
// command is required; is_input, timeout (seconds, 0 to MaxTimeout, 0 meaning
// the session default) and reset are optional and null means absent.
// Following the terminal contract, an empty command asks for more output of
// the command still running, or with reset only rebuilds the shell. With
// is_input the command (text or keys such as "C-c") passes through untouched.
//
// Decoding is strict: exact field names, exact JSON types, no duplicate
// fields, one object with nothing after it. Each failure is an InvalidAction whose
// guidance shows the corrected JSON when it can be worked out: Python
// literals ({'command': 'ls', 'is_input': False}, triple-quoted and raw
// strings, dict(command='ls')), arguments encoded twice as a string (one
// level of string is accepted: it is how OpenAI's function.arguments carries
// the JSON text), raw newlines inside strings, trailing commas, "true" for true,
// misspelt fields, a command written as an argv list, or the whole arguments
// object stuffed into the command field. The corrected form is only ever
// shown, never run: a guess must not execute.
//
// # Caveats
//
// Text is a heuristic over markdown a model wrote, not a CommonMark parser.
// Inside a shell block it tracks heredocs, so a command writing a markdown
// file with its own fences stays whole, and it treats a labelled fence line
// ("```python") as opening a nested block; both fall back to plain fence
// matching when they fail. A stray run of three backticks in prose, outside
// any block, counts as an unclosed fence. A one-line block in running prose
// is a command only with an explicit shell label, so "run ```make clean```
// later" is talk. Labels outside the known lists that are not near a shell
// name are taken as other languages.
//
// Text never produces IsInput, TimeoutS or Reset: those need a tool call.
// The think tool comes back as a Message, indistinguishable from message.
package parse
