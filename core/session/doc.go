// Package session joins one terminal, its output trimmer and the store of
// full outputs into the pipeline a command goes through: run in the
// session's shell, stream the cleaned output through the trimmer while the
// full text is spilled, and come back as one observation a model can read.
//
// # Basics
//
// New starts the session's terminal. Run takes one shell action and returns
// its Observation: exit code, cwd, the trimmed output (head, tail, and the
// lines that matter, with a placeholder that says what was cut and where the
// full output is), and whether the command is still running, timed out, or
// cost the shell its state.
//
// # Caveats
//
// A session runs one command at a time; concurrent Run calls queue.
package session
