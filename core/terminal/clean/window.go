package clean

import "bytes"

// Multi-line redraws. A program that draws several progress bars (tqdm
// with nested bars, docker pull, pip's parallel downloads, rich) moves
// the cursor up over the lines it drew (CSI n A, CSI n F, ESC M) and draws
// them again, many times a second. Without a model of those rows every
// frame would be new lines. So the Writer keeps the last bytes it wrote
// (the tail), and when the cursor moves up it opens a window: the rows from
// the highest one the cursor reached down to the bottom, taken back from
// the tail (already written) or not yet written. Text then replaces the
// row the cursor is on, as after \r. The window holds rows back: a row
// leaves it (written if it changed or never was) when it is more rows
// above the bottom than the program ever moved up, when the window grows
// past its bounds, or at Flush. So a redrawn block costs its first frame
// and its last, and what follows it is held back only by the height the
// program moves up.

// Bounds of the window and the tail.
const (
	maxTail       = 4 << 10  // bytes of written output kept for a move up
	maxWindowRows = 128      // rows a window holds
	maxWindowSize = 64 << 10 // bytes a window holds
)

// row is one row of the window.
type row struct {
	b       []byte // its text, without \n
	written bool   // this text is in the output already
}

// window is the Writer's open window, if any.
type window struct {
	rows []row
	r    int // the cursor's row
	up   int // the most rows the program moved up at once: what stays held
}

// remember keeps the end of b, just written, as the tail: at least the
// last maxTail bytes, in whole lines (the buffer is compacted once it
// holds twice that, so that keeping it costs a copy of each byte once).
func (w *Writer) remember(b []byte) {
	if len(b) > maxTail {
		w.tail = w.tail[:0]
		b = wholeLines(b[len(b)-maxTail:])
	}
	w.tail = append(w.tail, b...)
	if len(w.tail) > 2*maxTail {
		keep := wholeLines(w.tail[len(w.tail)-maxTail:])
		w.tail = w.tail[:copy(w.tail, keep)]
	}
}

// wholeLines drops what precedes the first line break of b: the rest of a
// line whose start was cut off.
func wholeLines(b []byte) []byte {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		return nil
	}
	return b[i+1:]
}

// takeTailLine removes the last complete line from the tail and returns
// it without its \n, or false if the tail holds none (it must end with \n:
// a line written through half way, or a cut tail, cannot be a row).
func (w *Writer) takeTailLine() ([]byte, bool) {
	t := w.tail
	if len(t) == 0 || t[len(t)-1] != '\n' {
		return nil, false
	}
	start := bytes.LastIndexByte(t[:len(t)-1], '\n') + 1
	line := append([]byte(nil), t[start:len(t)-1]...)
	w.tail = t[:start]
	return line, true
}

// moveUp moves the cursor n rows up (n >= 1), opening the window if need
// be; rows above the top of the window come back from the tail. Where
// there are none the cursor stays, as a terminal's does at its top row.
func (w *Writer) moveUp(n int) {
	if w.flushed || w.saveOn && w.away {
		return // the line is half written, or drawn elsewhere: no rows
	}
	// The tail is what was written; what is queued is written now, so
	// that the rows just put out can be taken back.
	w.flushOut()
	if w.win == nil {
		if _, ok := w.peekTail(); !ok {
			return
		}
		w.win = &window{rows: []row{{}}}
		w.storeRow()
	} else {
		w.storeRow()
	}
	wn := w.win
	wn.up = max(wn.up, min(n, maxWindowRows))
	target := wn.r - n
	for target < 0 && len(wn.rows) < maxWindowRows {
		line, ok := w.takeTailLine()
		if !ok {
			break
		}
		wn.rows = append(wn.rows, row{})
		copy(wn.rows[1:], wn.rows)
		wn.rows[0] = row{b: line, written: true}
		wn.r++
		target++
	}
	w.enterRow(max(target, 0))
}

// peekTail reports whether the tail ends with a line a move up can reach.
func (w *Writer) peekTail() ([]byte, bool) {
	t := w.tail
	if len(t) == 0 || t[len(t)-1] != '\n' {
		return nil, false
	}
	return t, true
}

// moveDown moves the cursor n rows down within the window, to its bottom
// row at most (a terminal does not scroll for a move down).
func (w *Writer) moveDown(n int) {
	if w.win == nil {
		return
	}
	w.storeRow()
	w.enterRow(min(w.win.r+n, len(w.win.rows)-1))
}

// storeRow puts the pending line back into the cursor's row of the window.
func (w *Writer) storeRow() {
	rw := &w.win.rows[w.win.r]
	if rw.written && bytes.Equal(rw.b, w.line) {
		return
	}
	rw.b = append(rw.b[:0], w.line...)
	rw.written = false
}

// enterRow puts the cursor on row r: the pending line is that row, and the
// next text replaces it, as after \r.
func (w *Writer) enterRow(r int) {
	w.win.r = r
	w.line = append(w.line[:0], w.win.rows[r].b...)
	w.crPending = len(w.line) > 0
	w.cut = false
}

// windowNewline is \n inside the window: the cursor's row is done, and the
// cursor goes to the row below, a new one at the bottom.
func (w *Writer) windowNewline() {
	wn := w.win
	w.storeRow()
	if wn.r == len(wn.rows)-1 {
		wn.rows = append(wn.rows, row{})
	}
	w.enterRow(wn.r + 1)
	// Rows further above the bottom than the program moves up are done.
	size := 0
	for _, rw := range wn.rows {
		size += len(rw.b) + 1
	}
	for wn.r > 0 && (len(wn.rows)-1 > wn.up || len(wn.rows) > maxWindowRows || size > maxWindowSize) {
		size -= len(wn.rows[0].b) + 1
		w.commitTop()
	}
	if len(wn.rows) == 1 {
		// Nothing held above the cursor: the window is the pending line.
		w.win = nil
	}
}

// commitTop writes the window's top row if the output lacks it, and drops
// it from the window (it is the tail's last line from now on).
func (w *Writer) commitTop() {
	wn := w.win
	top := wn.rows[0]
	line := append(top.b, '\n')
	// Written out at once, so that the tail keeps the rows' order.
	w.flushOut()
	if top.written {
		w.remember(line)
	} else {
		w.put(line)
		w.flushOut()
	}
	wn.rows = wn.rows[1:]
	wn.r--
}

// eraseBelow is CSI J (0): the rows below the cursor are cleared.
func (w *Writer) eraseBelow() {
	if w.win == nil {
		return
	}
	w.win.rows = w.win.rows[:w.win.r+1]
}

// closeWindow writes every row of the window the output lacks and ends
// it. The pending line becomes the bottom row's text (not written yet, as
// a pending line is not), so output goes on after the whole block.
func (w *Writer) closeWindow() {
	wn := w.win
	if wn == nil {
		return
	}
	w.storeRow()
	w.win = nil
	last := len(wn.rows) - 1
	w.flushOut()
	for _, rw := range wn.rows[:last] {
		line := append(rw.b, '\n')
		if rw.written {
			w.remember(line)
		} else {
			w.put(line)
			w.flushOut()
		}
	}
	w.line = append(w.line[:0], wn.rows[last].b...)
	w.crPending = false
}
