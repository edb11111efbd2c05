// Package terminal runs one long-lived bash per session on a real PTY and
// turns each command into a result with its exit code, working directory and
// the shell's pid, whatever the command does to its shell.
//
// # Basics
//
// New starts bash (no rc files, no line editing, echo off, a fixed TERM) on a
// pseudo-terminal. Run hands a command to that same shell, so cd, export,
// functions, aliases and background jobs persist from one command to the
// next. A short single line is typed as it is, as a person would type it;
// anything else (several lines, longer than 1 KiB, control characters) is
// written to a control file and bash is typed one short line that sources
// it (\builtin ., past a function named . or source), since the terminal's
// canonical mode cuts lines at 4095 bytes. That bash opened the file is
// seen by inotify, and output before that open is held back: a command
// bash did not read (. disabled, set -r) is handed over again after a
// repair, or the shell is rebuilt and the result says it did not run.
//
// Output streams to the writer given to Run as it arrives, cleaned for a
// model by package clean (escape sequences removed, carriage-return redraws
// collapsed, UTF-8 repaired): each line when the PTY delivers it, a partial
// line (a prompt, a progress bar) when it ends or when Run returns. A caller
// that shows work in progress wraps that writer (io.MultiWriter).
//
// # When a command is over
//
// The authority is the kernel's view of bash, which no output can forge:
// the PTY's foreground process group is bash's own again (TIOCGPGRP), and
// bash is blocked in its own line reader — read(0) on the buffer and size
// learned at its first prompt from /proc/PID/syscall, which the read builtin
// never uses — after a read count (/proc/PID/io) past the line harnessd
// typed. Then every byte the command wrote is in the PTY; it is all read
// (a non-blocking read that finds the master empty ends it) before the
// result is made.
//
// The prompt carries only metadata. PS1 renders one OSC string with a
// per-terminal nonce, bash's command number (\#), $?, $SHELLOPTS, ${#PS1}
// and ${PWD@Q}; it is built from prompt escapes (the nonce as octal), so no
// variable, function or trace that bash prints contains the marker, and
// harnessd defines no variables or functions at all. The last marker before
// bash went idle belongs to the command; markers are cut from the output,
// and a forged one (even with the right nonce and the next counter) decides
// nothing. A marker that comes while bash sits at its prompt counts only if
// bash read a line since (/proc/PID/io), and one that comes after bash is
// back at a prompt it did not show counts only where stderr is a pipe,
// through which the real prompt may come late. A marker's body is checked
// as it arrives, so a forged prefix never holds back the output after it;
// a cwd longer than 64 KiB is reported unknown.
//
// Where bash is back at its prompt but showed none that harnessd can read
// (exec 2>file, PS1 or promptvars changed, exec bash), the terminal repairs
// the shell keeping $?, says so in Result.Note, and rebuilds the shell only
// if that fails. Before each command it puts back what would garble the
// typed line or hide the next prompt: the terminal settings (stty, reset),
// input left in the terminal (TIOCSTI), the open-files limit (ulimit -n),
// line editing (set -o vi), job control and PS1. A bash that stopped itself
// (kill -STOP $$) is continued with SIGCONT. Commands that bash ran from
// injected input are reported in the note. A bash whose stdin is no longer
// the terminal (exec 0<fifo) reads its commands from there, where nothing
// typed reaches it: it is rebuilt before the next command, with a note.
//
// # Timeouts
//
// A call returns when the command ends; when no new output came for the soft
// timeout; after Options.MaxWait whatever the program prints; and, after
// input to a running program or while a program draws a full screen, once
// its output settles (Options.Settle). Then Result.Running is set and the
// exit code is -1; the command goes on, and a later Run with an empty
// command reads more, or with IsInput types into it.
//
// The hard timeout (cmd_run's timeout_s, else Options.HardTimeout) belongs
// to the command: at the deadline the foreground process group gets SIGINT,
// then SIGKILL after a grace period, and if the shell itself no longer
// answers it is rebuilt — by the waiting call, or by the terminal's own
// watcher while no call waits, in which case the next call reports it.
//
// Interrupt (SIGINT to the foreground group) and SendKeys work at any time,
// also while a Run waits; PID and Running never wait for a command.
//
// # Keys
//
// Input (IsInput, SendKeys) is text with key tokens in angle brackets, in
// vim's notation:
//
//	hello            the text, then Enter
//	:wq<Enter>       the text, then Enter, spelled out
//	ihello<Esc>      i, hello, Escape; no Enter (the input names a key)
//	<Up><Up><Enter>  named keys only
//	<C-c>            Ctrl-C; a whole input that is one Ctrl key or
//	                 Enter/Esc/Tab needs no brackets: C-c, ^C, ctrl+c, ESC
//	a<lt>b           a literal "<"
//
// Key names (any case): Enter (CR, Return), Esc (Escape), Tab, Space, BS
// (Backspace), Del (Delete), Insert, Up, Down, Left, Right, Home, End,
// PageUp (PgUp), PageDown (PgDn), F1 to F12, C-a to C-z and C-@ C-[ C-\
// C-] C-^ C-_, M-x or A-x (Alt), lt. A <...> that is not a key name is
// text. For IsInput, Enter is added only when the input names no key, does
// not end in a newline, and the program is not drawing a full screen: "i"
// to vi is one keystroke, "print(1)" to a Python prompt is a line.
// SendKeys never adds Enter. Arrows follow the program's cursor-key mode
// (DECCKM). C-c, while the terminal turns it into a signal, is sent as
// SIGINT to the foreground job (see Interrupt).
//
// # Screens
//
// When a program switches to the alternate screen, or moves the cursor to
// absolute positions and is still running when a call returns (vi, less,
// top, htop, watch), a VT emulator (github.com/charmbracelet/x/vt) renders
// what it draws: Result.Screen holds the rows, columns and cursor, and the
// output ends with the screen's text instead of the redraws. A program that
// clears the screen and then prints lines, or that ends, is line output as
// before; one that ends still in the alternate screen leaves that screen's
// text as the end of its output. TERM is xterm-256color, so that top, htop, watch and less draw
// their screens (under TERM=dumb they printed frame after frame of
// padding); the colours and cursor motion that line programs add with a
// capable terminal are removed by the cleaner, and NO_COLOR is set for the
// tools that honour it. Options.Env may set TERM=dumb again.
//
// # Sandboxes
//
// Options.Prepare and Options.Started let a sandbox driver (package
// sandbox) wrap the shell. With Options.InitWrapped the started process is
// a sandbox init whose one child is bash: the terminal finds bash's host
// pid among the init's children right after Started and uses it for the
// foreground check, /proc/PID/*, signals and Result.PID, while Close and
// rebuild kill the init, which ends the sandbox's pid namespace. A rebuild
// starts a fresh init, so a fresh sandbox over the same workspace:
// Result.Rebuilt tells the caller to say what else that loses.
//
// # Caveats
//
// A wrapper that Options.InitWrapped does not declare (bwrap) is seen
// through at the first prompt: bash is then the foreground job of the
// wrapper's session. Where bash cannot be watched at all (no job control,
// no /proc), the terminal logs a warning and trusts its prompt marker
// alone, as it did before the kernel checks.
//
// Commands that go through the control file run sourced: BASH_SOURCE names
// that file, a DEBUG trap also sees the one line that sources it, and
// bash's messages about its lines read "bash: line N: …" (the file's name
// is cut). Under set -x that line is hidden. In a restricted shell (set
// -r), where . sources no path with a slash, they run through eval
// instead, with eval's differences (return, "bash: eval: line N"). Where /proc/PID/syscall cannot
// be read, a fresh prompt marker with bash in the foreground is the
// evidence instead. A DEBUG trap under shopt -s extdebug that skips every
// command also skips harnessd's; Reset recovers.
package terminal
