// Package clean turns raw terminal output (the bytes a PTY gives, from
// arbitrary programs) into plain text fit for a language model: no escape
// sequences, no carriage returns, no controls but \n and \t, valid UTF-8.
//
// # Basics
//
// A [Writer] sits between the PTY reader and whatever stores the output.
// Write it chunks of any size; its state survives chunk boundaries, so the
// output is the same however the stream was split. Call [Writer.Flush] at
// the end of each command's output to write what is held back, and
// [Writer.Reset] to reuse the Writer for the next command. [String] cleans
// a whole string at once.
//
// The rules, in the order a byte meets them:
//
//   - Escape sequences are removed: CSI (ESC [ ... final, private
//     parameters included), OSC (ESC ] ... BEL or ESC \), DCS, SOS, PM
//     and APC (ESC P, X, ^, _ ... ST), ESC with intermediates (ESC ( B)
//     and two-byte ESC sequences (ESC 7, ESC =). In an ESC or CSI
//     sequence, a byte that cannot continue it (a control, DEL, a byte >=
//     0x80) ends it and is then treated as ordinary input; string payloads
//     (OSC and the rest) end only at BEL, ST, CAN or SUB.
//   - \r\n, \r\r\n and so on become \n. Text after a lone \r replaces the
//     line: only the last redraw of a line is kept, so a progress bar
//     leaves its final state. The terminal would keep the tail of a longer
//     earlier draw ("abcdef\rXY" shows "XYcdef"); this package keeps "XY",
//     which for progress bars is the same and for everything else is less
//     noise. CSI G (cursor to column 1) counts as \r, and erase in line
//     (CSI K, 1K, 2K) drops the part of the line it erases.
//   - Backspace deletes the previous rune of the pending line, and does
//     nothing at the start of a line or right after \r. So "abc\b\bX"
//     gives "aX" (a terminal would show "aXc"), a spinner "|\b/\b-" gives
//     "-", and man-page overstrike "_\bA" or "A\bA" gives "A".
//   - Other C0 controls (NUL, BEL, ...) and DEL are dropped. Tab is kept.
//   - Input is UTF-8. Each maximal invalid subsequence (Unicode §3.9) is
//     replaced by one U+FFFD: "\xff\xfe" is two, "\xe4\xb8A" (a cut-off
//     three-byte rune) is one plus "A". C1 controls are not interpreted:
//     as raw bytes 0x80..0x9F they are invalid UTF-8 (U+FFFD), and encoded
//     as runes U+0080..U+009F they are dropped. So 0x9B inside a valid
//     rune is never mistaken for CSI.
//
// # Caveats
//
// Memory is constant: at most 64 KiB of the current line is held back. A
// longer line without \r or \n is written through as it arrives, and what
// was written cannot be taken back: if a redraw (\r and text, or an erase)
// later replaces such a line, the written part stays, and the new text
// starts a new output line after it.
//
// An escape sequence is followed for at most 4 KiB. An OSC or DCS that
// never terminates (often a stray ESC ] in binary output) therefore swallows
// up to 4 KiB of the output after it; the rest is treated as text. A
// longer legitimate payload, such as an inline image, leaks into the text
// past that point.
//
// There is no screen model, only a window of rows for redraws: a program
// that moves the cursor up (CSI A or F, ESC M) over lines it wrote, as
// multi-line progress displays do (tqdm with several bars, docker pull,
// pip), draws over those rows; they are held back and written once they
// changed, when they are further above the bottom than the program moves
// up, or at Flush (see window.go). So such a display leaves its first
// frame and its last, and the output after it lags by as many rows as the
// program moved up. Only the last 4 KiB written can be moved back into.
// Other cursor movement (columns, absolute positions) is dropped: text a
// full-screen program positions with the cursor appears in the order it
// was written (the terminal renders those programs from a screen of its
// own instead).
//
// Output for a line reaches dst only when the line ends (or at Flush), so
// a prompt without a trailing newline appears only after Flush.
package clean
