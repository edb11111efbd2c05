// Package trim turns a command's output stream into the view a model is
// shown: the first lines, the last lines, and the lines in between that
// mention an error, with one placeholder saying exactly what was left out
// and where the full output can be read. It declares OutputStore, where
// full outputs are kept and paged back by line number (the bbolt store in
// the daemon), and PageReader, which cuts those pages.
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
// With the DefaultConfig the model sees the first 40 and last 40 lines and
// up to 20 lines from the middle containing Error, Traceback, Exception,
// panic:, FAIL or fatal; no line longer than 2,000 bytes. When lines are
// omitted, one placeholder line follows the head, e.g.
//
//	[... 99,920 of 100,001 lines (1,487,823 bytes) omitted: lines 41-99961 except 1 keyword line, kept below as "line N: text"; the last 40 lines follow it. Full output: output 7f3a0c9d2b1e4f5a6b7c8d9e0f1a2b3c ...]
//	line 50001: Traceback (most recent call last):
//
// and the tail comes after the kept lines. Keyword lines are shown with
// their line numbers and are not counted as omitted, so LinesTotal = head
// shown + tail shown + KeptKeyword + LinesOmitted. Line numbers in the text
// have no separators, so they can be handed straight to ReadLines. When
// nothing is omitted, Text is the output itself and Trimmed is false.
//
// ReadLines(ctx, id, from, to) returns lines from..to (1-based, inclusive;
// to <= 0 is the end) exactly as written, at most MaxReadLines lines and
// MaxReadBytes bytes a call; Lines.To says where it stopped, so a client
// pages with from = To+1 until To == Total.
//
// # Caveats
//
//   - Keyword matching is a case-sensitive substring match: "Error" finds
//     "TypeError" but not "error". List every spelling you need. Only the
//     first MaxKeep matching middle lines are kept (the first error is
//     usually the cause); the placeholder says how many matched in all.
//   - Lines longer than LineCap bytes are cut at a rune boundary with a
//     marker such as "… [line cut: 2,000 of 1,234,567 bytes shown]". That
//     does not make Trimmed true; Result.LinesCut counts such lines.
//   - Text is always valid UTF-8: invalid bytes are shown as U+FFFD. The
//     store keeps the bytes as they came.
//   - Memory is bounded by the Config, about (Head + Tail + MaxKeep + 1) x
//     LineCap plus 64 KiB, however long the stream or its lines are.
//   - A Trimmer is for one goroutine. A failing spill does not fail Write:
//     the trimmed view is still right, and Result then says the full output
//     was not kept (and returns an empty OutputID).
package trim
