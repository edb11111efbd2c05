// Package python is the python_run action: a persistent python3 per
// session (IPython's InteractiveShell when the interpreter has it),
// started on first use on a PTY of its own, in the session's sandbox,
// running cells with the terminal's discipline.
//
// # Basics
//
// An Interp starts the interpreter through its Options.Start (the
// sandbox's init, or the host for the driver "none") with a small
// driver script (driver.py, embedded) as its program, the PTY as its
// stdin, stdout, stderr and controlling terminal, and one end of a
// socket pair as its fd 3. A cell's code goes down the socket; what it
// prints comes up the PTY, through core/terminal/clean, to the writer
// Run is given (the session's trimmer and output store). That the cell
// is over, and which exception ended it, comes up the socket only: no
// output can end or fake a cell. After the end the daemon asks for a
// fence, a nonce it draws then, which the driver writes to the PTY: the
// output before it is the cell's, whatever the kernel delivers late.
//
// Variables and imports persist in one namespace between cells; the
// value of a last expression is shown as the REPL shows it; a traceback
// is printed without the driver's frames.
//
// A call returns when the cell ends, after the soft timeout without
// output, after MaxWait whatever is printed, and after input once
// output settles, with ExitCode -1 (still running); an empty code waits
// for more. Input (IsInput) is typed into the PTY (input() reads it);
// C-c sends SIGINT to the interpreter's process group (a
// KeyboardInterrupt); a cell that does not end within KillGrace after
// it is killed with its process group, and the next cell starts a fresh
// interpreter, with a note that its state is gone. The hard timeout runs
// the same ladder, waited on or not.
//
// # Caveats
//
// The socket is the interpreter's own fd 3: code in a cell can write
// frames on it. An end counts only with the cell's random token, so
// writing end frames blindly ends nothing; code that digs the token out
// of the driver's own frames can lie about its own cell's end, never
// about another's. Output cannot. The driver's frames are parsed as
// untrusted (FuzzStatusFrame).
package python
