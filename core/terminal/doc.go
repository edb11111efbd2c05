// Package terminal runs one long-lived bash per session on a real PTY and
// turns each command into a result with its exit code, working directory and
// the shell's pid.
//
// # Basics
//
// New starts bash (no rc files, no line editing, echo off, a fixed TERM) on a
// pseudo-terminal. Run hands a command to that same shell, so cd, export,
// functions, aliases and background jobs persist from one command to the
// next. The command text never travels through the terminal's line
// discipline, whose canonical mode cuts a line at 4095 bytes: it is written to
// a control file and the shell is typed one short line that reads and evals
// it. Completion is read from the prompt: PROMPT_COMMAND renders JSON
// metadata (exit code, cwd, pid, a prompt counter) between markers that
// carry a random per-terminal nonce. The markers are cut out of the byte
// stream before anything else sees it, so the nonce never reaches the output.
//
// Output streams to the writer given to Run, cleaned for a model by package
// clean (escape sequences removed, carriage-return redraws collapsed, UTF-8
// repaired), so a caller can trim and spill it with constant memory.
//
// # Timeouts
//
// A soft timeout (no new output for a while) returns control with
// Result.Running set and exit code -1; the command goes on, and a later Run
// with an empty command reads more, or with IsInput sends text or keys (C-c,
// C-d, C-z) to it. A hard timeout interrupts the foreground process group
// (SIGINT, then SIGKILL after a grace period); if the shell itself no longer
// answers it is rebuilt, and the result says so.
//
// # Sandboxes
//
// Options.Prepare and Options.Started let a sandbox driver (package
// sandbox) wrap the shell. With Options.InitWrapped the started process is
// a sandbox init whose one child is bash: the terminal finds bash's host
// pid among the init's children right after Started and uses it for the
// foreground check, /proc/PID/syscall, signals and Result.PID, while Close
// and rebuild kill the init, which ends the sandbox's pid namespace. A
// rebuild starts a fresh init, so a fresh sandbox over the same workspace.
//
// # Caveats
//
// The nonce is in the shell's own variables, so a command that deliberately
// evaluates PS1 can print a marker; the prompt counter makes a replayed
// marker stale, and stale markers are dropped rather than trusted. A command
// that unsets PROMPT_COMMAND loses completion detection until Reset.
package terminal
