// Package trim turns a command's output stream into the view a model is
// shown: within a character budget, the first lines, the last lines and
// the failures of the middle with their context, with one placeholder
// saying exactly what was left out and how to read it. It declares
// OutputStore, where full outputs are kept and paged back by line number
// (the bbolt store in the daemon), and PageReader, which cuts those pages.
//
// # Basics
//
// A Trimmer is an io.Writer. Write the cleaned output to it in whatever
// chunks arrive, then call Result. Give it the store's writer as spill so
// the full output is kept at the same time:
//
//	w, err := store.Create(ctx, session)
//	tr := trim.New(trim.DefaultConfig(), w)
//	res, err := term.Run(ctx, req, tr)   // streams into tr
//	obs := tr.Result(w.ID())
//	err = w.Close()
//
// An output that fits the budget (DefaultConfig: 8,000 characters) is
// shown whole. A longer one is shown as
//
//	the first lines (at most Head, within 30% of the budget)
//	[... 99,995 of 100,001 lines (1,488,826 bytes) omitted: lines 2-39, 41-50000, 50003-99961, 99963-100000; 2 middle lines follow as "line N: text". Read them: harnessd output 7f3a… --lines 2-100000 ...]
//	line 50001: Traceback (most recent call last):
//	line 50002:   File "app.py", line 3, in <module>
//	the last lines (at most Tail, within 30% of the budget)
//
// The middle is searched for keywords (DefaultKeywords: error, fail,
// panic, traceback, not ok, …; ASCII case ignored). A line with one opens
// a block whose shape its tool decides: a Python traceback to its
// exception line (its last frames if it is long), a Go panic with its
// first goroutine, go test's "--- FAIL" with its indented explanation
// (and the log lines just above it, where go test -v prints them), a
// compiler error with its source excerpt and caret (gcc, clang, rustc), a
// TAP "not ok" with its YAML block, a Java exception with its frames and
// causes, pytest's "E" lines, a Rust thread panic. The budget left after
// head, tail and placeholder goes first to the trigger line of every
// block, the known tools' failures before plain keyword lines and earlier
// before later, then to their most telling context lines, then to the
// rest. Blocks alike (the same first and last line up to numbers) are
// kept once, with a count; in every part, runs of four or more lines that
// differ only in their numbers show as first line, "… N similar lines
// (A-B) omitted", last line.
//
// The placeholder's counts are exact: LinesTotal = lines shown +
// LinesOmitted, BytesTotal = bytes of the lines shown + BytesOmitted, and
// the ranges it lists are every line not shown. Line numbers have no
// separators, so they can be handed straight to `harnessd output ID
// --lines A-B` or ReadLines.
//
// ReadLines(ctx, id, from, to) returns lines from..to (1-based, inclusive;
// to <= 0 is the end) exactly as written, at most MaxReadLines lines and
// MaxReadBytes bytes a call; Lines.To says where it stopped, so a client
// pages with from = To+1 until To == Total.
//
// # Caveats
//
//   - The budget is measured in bytes while lines are chosen and in
//     characters at the end: a non-ASCII output gets fewer characters than
//     the budget, never more.
//   - Keywords ignore ASCII case only: "error" finds "ERROR" and
//     "TypeError"; a non-ASCII keyword matches as written.
//   - Lines longer than LineCap bytes (and than a fifth of MaxChars) are
//     cut at a rune boundary with a marker such as "… [line cut: 1,600 of
//     1,234,567 bytes shown; full line: harnessd output ID --lines 7]".
//     That does not make Trimmed true; Result.LinesCut counts such lines.
//   - Text is always valid UTF-8: invalid bytes are shown as U+FFFD. The
//     store keeps the bytes as they came.
//   - Memory is bounded by the Config whatever the stream: the head and
//     tail within the budget, at most 256 candidate blocks holding at most
//     1 MiB of text, one open block, and 64 KiB of batching.
//   - The Result does not depend on how the stream was cut into writes.
//   - A Trimmer is for one goroutine. A failing spill does not fail Write:
//     the trimmed view is still right, and Result then says the full output
//     was not kept (and returns an empty OutputID).
package trim
