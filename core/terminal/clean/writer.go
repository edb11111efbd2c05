package clean

import (
	"encoding/binary"
	"io"
	"strings"
	"unicode/utf8"
)

// Bounds that keep a Writer's memory constant whatever the input.
const (
	// maxLine is the most of one line held back for a possible \r redraw
	// or backspace. A longer line is written through as it arrives.
	maxLine = 64 << 10
	// maxSeq is the longest escape sequence (CSI parameters, OSC/DCS
	// payload, ESC intermediates) followed before it is given up. Payloads
	// are never stored, so this bounds lost output, not memory.
	maxSeq = 4 << 10
	// maxOut is the size at which cleaned output is handed to dst before
	// the current Write ends.
	maxOut = 64 << 10
	// bigRun is the size from which a run of whole lines is written to dst
	// straight from the caller's buffer instead of being copied first.
	bigRun = 4 << 10
)

// replacement is U+FFFD, written for each maximal invalid UTF-8 subsequence.
var replacement = []byte("\uFFFD")

// state is the escape sequence parser's state.
type state uint8

const (
	stGround   state = iota // text and C0 controls
	stEsc                   // after ESC
	stEscInter              // after ESC and intermediates (ESC ( B)
	stCSI                   // after ESC [
	stString                // OSC, DCS, SOS, PM or APC payload, up to ST or BEL
)

// Byte classes for the ground state; one table lookup per byte keeps the
// common path free of comparisons and calls.
const (
	cCtl  uint8 = iota // other C0 controls and DEL: dropped
	cText              // printable ASCII and tab
	cNL                // \n
	cCR                // \r
	cBS                // backspace
	cESC               // ESC
	cHigh              // 0x80..0xFF: part of a UTF-8 sequence, or invalid
)

var class = func() (t [256]uint8) {
	for b := 0x20; b < 0x7f; b++ {
		t[b] = cText
	}
	t['\t'] = cText
	t['\n'] = cNL
	t['\r'] = cCR
	t['\b'] = cBS
	t[0x1b] = cESC
	for b := 0x80; b < 0x100; b++ {
		t[b] = cHigh
	}
	return t
}()

// strEnd marks the bytes that end an OSC/DCS/SOS/PM/APC payload: BEL, ESC
// (the first half of ST, or the start of the next sequence), CAN and SUB.
var strEnd = func() (t [256]bool) {
	t[0x07], t[0x1b], t[0x18], t[0x1a] = true, true, true, true
	return t
}()

// Writer cleans a stream of raw terminal output and writes the text to an
// underlying io.Writer. It holds back the current line (so a \r redraw can
// replace it), an unfinished escape sequence and an unfinished UTF-8
// sequence across Write calls; Flush writes what is held back.
//
// A Writer is not safe for concurrent use. The zero Writer discards its
// output; NewWriter or Reset gives it a destination.
type Writer struct {
	dst io.Writer
	err error // sticky: the first error from dst

	out  []byte // cleaned output not yet written to dst
	line []byte // the pending line: valid UTF-8, no controls but \t

	// crPending means a \r (or CSI G) put the cursor at column 0: line is
	// kept for a following \n, but the next text replaces it.
	crPending bool
	// flushed means part of the current line was already written because
	// it outgrew maxLine; it can no longer be replaced.
	flushed bool
	// cut means the flushed part was overwritten by a redraw; the next
	// text starts a new output line rather than silently joining it.
	cut bool

	st  state
	seq int // bytes consumed in the current escape sequence

	// First parameter of the current CSI, and whether it is private (?25l)
	// or has intermediates; only plain K and G are acted on.
	arg     int
	argDone bool
	priv    bool
	inter   bool

	u  [utf8.UTFMax]byte // start of a UTF-8 sequence split across Writes
	un int

	// A status line drawn elsewhere on the screen (apt's progress bar):
	// save the cursor (ESC 7, CSI s), move it to an absolute position,
	// write, restore it (ESC 8, CSI u). What is written away from the
	// line is not part of it: at the restore the line is as it was saved.
	saved   []byte // the pending line when the cursor was saved
	savedCR bool
	saveOn  bool // a save is in effect
	away    bool // since the save, the cursor moved to an absolute position

	// Rows a program moves the cursor up into to draw them again (see
	// window.go): the end of what was written, and the rows held back.
	tail []byte
	win  *window
}

// NewWriter returns a Writer that writes cleaned text to dst. A nil dst
// discards the output.
func NewWriter(dst io.Writer) *Writer {
	w := &Writer{}
	w.Reset(dst)
	return w
}

// Reset discards all state, including held-back output and any error, and
// makes w write to dst. It keeps the buffers, so one Writer can serve one
// command after another without allocating.
func (w *Writer) Reset(dst io.Writer) {
	*w = Writer{dst: dst, out: w.out[:0], line: w.line[:0], tail: w.tail[:0]}
}

// Write cleans p and writes the result to dst. Output for the current line
// is held back until its \n, so what dst receives lags behind p; Flush
// writes the rest. Write returns len(p) unless dst fails; after a failure
// every call returns that error until Reset.
func (w *Writer) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	i := 0
	for i < len(p) {
		switch w.st {
		case stGround:
			i = w.ground(p, i)
		case stEsc:
			i = w.esc(p, i)
		case stEscInter:
			i = w.escInter(p, i)
		case stCSI:
			i = w.csi(p, i)
		case stString:
			i = w.str(p, i)
		}
		if w.err != nil {
			return i, w.err
		}
	}
	if err := w.flushOut(); err != nil {
		return len(p), err
	}
	return len(p), nil
}

// Flush ends the current command's output: it writes the pending line
// (without adding a \n), writes an unfinished UTF-8 sequence as U+FFFD and
// drops an unfinished escape sequence. w is then ready for more input.
func (w *Writer) Flush() error {
	if w.err != nil {
		return w.err
	}
	if w.un > 0 {
		w.un = 0
		w.text(replacement)
	}
	w.st = stGround
	w.closeWindow()
	w.put(w.line)
	w.line = w.line[:0]
	w.crPending, w.flushed, w.cut = false, false, false
	return w.flushOut()
}

// String returns s cleaned as if written to a Writer and flushed.
func String(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	w := NewWriter(&b)
	w.Write([]byte(s)) // a strings.Builder never fails
	w.Flush()
	return b.String()
}

// ground handles text and C0 controls at p[i:], returning where it stopped.
func (w *Writer) ground(p []byte, i int) int {
	if w.un > 0 {
		return w.resume(p, i)
	}
	// Fast path: with nothing held back, whole lines of plain text leave
	// as they came. (flushed false implies cut false.)
	fast := len(w.line) == 0 && !w.crPending && !w.flushed && w.win == nil
	j, end := scanText(p, i, fast)
	if end > i {
		w.emit(p[i:end])
		i = end
	}
	if j > i {
		w.text(p[i:j])
		return j
	}
	if i == len(p) { // the fast path took it all
		return i
	}
	switch class[p[i]] {
	case cNL:
		w.newline()
	case cCR:
		w.crPending = true
	case cBS:
		w.backspace()
	case cESC:
		w.st = stEsc
	case cHigh:
		return w.high(p, i)
	}
	return i + 1
}

// scanText returns the end j of the run of text (printable ASCII, tab and
// valid printable runes, and \n too if lines is set) that starts at p[i],
// and the end of its last \n (i if none).
func scanText(p []byte, i int, lines bool) (j, end int) {
	j, end = i, i
	word := i // where to try 8 bytes at once again
	for j < len(p) {
		if j >= word && j+8 <= len(p) {
			if plain8(p[j:]) {
				j += 8
				continue
			}
			// Something in these 8 bytes needs a closer look; going
			// byte by byte past them is cheaper than retrying on each.
			word = j + 8
		}
		switch class[p[j]] {
		case cText:
			j++
			continue
		case cNL:
			if lines {
				j++
				end = j
				continue
			}
		case cHigh:
			if n := textRune(p[j:]); n > 0 {
				j += n
				continue
			}
		}
		break
	}
	return j, end
}

// plain8 reports whether the first 8 bytes of p are all printable ASCII
// (0x20..0x7E), testing them as one word: most output is plain text, and
// this is the loop it spends its time in.
func plain8(p []byte) bool {
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
	)
	x := binary.LittleEndian.Uint64(p)
	// x flags bytes >= 0x80; x+1 flags 0x7F (and can carry only out of
	// 0xFF, already flagged); (x-0x20)&^x flags bytes < 0x20 exactly when
	// no byte is >= 0x80.
	return (x|(x+ones)|(x-0x20*ones)&^x)&highs == 0
}

// high handles a byte >= 0x80 that does not start a complete printable
// rune: an invalid sequence, a C1 control, or a sequence cut off by the end
// of p.
func (w *Writer) high(p []byte, i int) int {
	n, st := scanRune(p[i:])
	switch st {
	case runeShort:
		w.un = copy(w.u[:], p[i:])
		return len(p)
	case runeBad:
		w.text(replacement)
	case runeOK:
		if !isC1(p[i : i+n]) {
			w.text(p[i : i+n])
		}
	}
	return i + n
}

// resume continues a UTF-8 sequence whose start ended the previous Write.
// The held bytes are always a valid prefix, so they are decoded together
// with the first bytes of p exactly as if they had arrived in one piece.
func (w *Writer) resume(p []byte, i int) int {
	var tmp [utf8.UTFMax]byte
	h := copy(tmp[:], w.u[:w.un])
	k := copy(tmp[h:], p[i:])
	n, st := scanRune(tmp[:h+k])
	switch st {
	case runeShort: // p ran out too
		w.un += copy(w.u[h:], p[i:i+k])
		return i + k
	case runeBad:
		w.un = 0
		w.text(replacement)
	case runeOK:
		w.un = 0
		if !isC1(tmp[:n]) {
			w.text(tmp[:n])
		}
	}
	return i + max(n-h, 0)
}

// text appends s, a run of valid UTF-8 text, to the pending line.
func (w *Writer) text(s []byte) {
	if w.crPending {
		w.crPending = false
		w.discard()
	}
	if w.cut {
		w.put([]byte{'\n'})
		w.cut, w.flushed = false, false
	}
	if w.win != nil && len(w.line)+len(s) > maxLine {
		w.closeWindow() // a row that long cannot be held back
	}
	for len(w.line)+len(s) > maxLine {
		// Write the line through, keeping whole runes together so the
		// output stays valid UTF-8 whatever happens to the rest.
		k := maxLine - len(w.line)
		for k > 0 && !utf8.RuneStart(s[k]) {
			k--
		}
		w.line = append(w.line, s[:k]...)
		w.put(w.line)
		w.line = w.line[:0]
		w.flushed = true
		s = s[k:]
	}
	w.line = append(w.line, s...)
}

// discard drops the pending line because it is being redrawn or erased.
func (w *Writer) discard() {
	w.line = w.line[:0]
	if w.flushed {
		w.cut = true
	}
}

// newline ends the pending line.
func (w *Writer) newline() {
	if w.win != nil {
		w.windowNewline()
		return
	}
	w.line = append(w.line, '\n')
	w.put(w.line)
	w.line = w.line[:0]
	w.crPending, w.flushed, w.cut = false, false, false
}

// backspace deletes the last rune of the pending line. After a \r the
// cursor is at column 0, where a backspace does nothing.
func (w *Writer) backspace() {
	if w.crPending || len(w.line) == 0 {
		return
	}
	_, n := utf8.DecodeLastRune(w.line)
	w.line = w.line[:len(w.line)-n]
}

// esc handles the byte after ESC.
func (w *Writer) esc(p []byte, i int) int {
	switch b := p[i]; {
	case b == '[':
		w.st, w.seq = stCSI, 0
		w.arg, w.argDone, w.priv, w.inter = 0, false, false, false
	case b == ']' || b == 'P' || b == 'X' || b == '^' || b == '_':
		w.st, w.seq = stString, 0
	case b >= 0x20 && b <= 0x2f:
		w.st, w.seq = stEscInter, 0
	case b >= 0x30 && b <= 0x7e:
		w.st = stGround // a two-byte sequence: ESC 7, ESC =, ESC \ ...
		switch b {
		case '7':
			w.saveCursor()
		case '8':
			w.restoreCursor()
		case 'M':
			w.moveUp(1) // reverse index
		}
	case b == 0x1b:
		// ESC ESC: the first is abandoned, the second starts over.
	default:
		// A control or non-ASCII byte cannot continue the sequence: drop
		// the ESC and let the ground state have the byte.
		w.st = stGround
		return i
	}
	return i + 1
}

// escInter handles the bytes after ESC and an intermediate, as in the
// charset designation ESC ( B.
func (w *Writer) escInter(p []byte, i int) int {
	switch b := p[i]; {
	case b >= 0x20 && b <= 0x2f:
		w.seq++
		if w.seq >= maxSeq {
			w.st = stGround
		}
	case b >= 0x30 && b <= 0x7e:
		w.st = stGround
	case b == 0x1b:
		w.st = stEsc
	default:
		w.st = stGround
		return i
	}
	return i + 1
}

// csi consumes a control sequence's parameters, intermediates and final
// byte, acting on the few that change which text is kept.
func (w *Writer) csi(p []byte, i int) int {
	for i < len(p) {
		switch b := p[i]; {
		case b >= '0' && b <= '9':
			if !w.argDone && w.arg < 10000 {
				w.arg = w.arg*10 + int(b-'0')
			}
		case b == ';' || b == ':':
			w.argDone = true
		case b >= 0x3c && b <= 0x3f: // < = > ?
			if w.seq == 0 {
				w.priv = true
			}
		case b >= 0x20 && b <= 0x2f:
			w.inter = true
		case b >= 0x40 && b <= 0x7e:
			w.st = stGround
			w.csiFinal(b)
			return i + 1
		case b == 0x1b:
			w.st = stEsc
			return i + 1
		default:
			// Not part of a sequence (a control, DEL or non-ASCII byte):
			// abandon it so stray "ESC [" cannot eat real output.
			w.st = stGround
			return i
		}
		i++
		w.seq++
		if w.seq >= maxSeq {
			w.st = stGround
			return i
		}
	}
	return i
}

// csiFinal acts on a complete CSI whose final byte is b. Erase in line
// (K) and cursor to column 1 (G, `) are the ones progress bars use with or
// instead of \r; every other sequence is only removed.
func (w *Writer) csiFinal(b byte) {
	if w.priv || w.inter {
		return
	}
	switch b {
	case 'K':
		// The cursor is at the end of the pending line, or at column 0
		// after \r; erase whatever part of the line that covers.
		switch w.arg {
		case 0:
			if w.crPending {
				w.discard()
			}
		case 1:
			if !w.crPending {
				w.discard()
			}
		case 2:
			w.discard()
		}
	case 'G', '`':
		if w.arg <= 1 {
			w.crPending = true
		}
	case 'A', 'F':
		// Up, keeping the column or to column 1: either way what follows
		// is drawn over the row (see window.go).
		w.moveUp(max(w.arg, 1))
	case 'B', 'E':
		w.moveDown(max(w.arg, 1))
	case 'J':
		if w.arg == 0 {
			w.eraseBelow()
			if w.crPending {
				w.discard()
			}
		}
	case 's':
		if w.seq == 0 {
			w.saveCursor()
		}
	case 'u':
		if w.seq == 0 {
			w.restoreCursor()
		}
	case 'H', 'f', 'd':
		if w.saveOn && !w.away && !w.flushed {
			// Away from the line: what follows starts afresh there.
			w.away = true
			w.line = w.line[:0]
			w.crPending = false
		}
	}
}

// saveCursor remembers the pending line, for a restore after writing
// elsewhere.
func (w *Writer) saveCursor() {
	w.saved = append(w.saved[:0], w.line...)
	w.savedCR = w.crPending
	w.saveOn, w.away = true, false
}

// restoreCursor puts back the line as saved if the cursor went away from
// it since, dropping what was written there.
func (w *Writer) restoreCursor() {
	if w.saveOn && w.away && !w.flushed {
		w.line = append(w.line[:0], w.saved...)
		w.crPending = w.savedCR
	}
	w.away = false
}

// str skips an OSC, DCS, SOS, PM or APC payload.
func (w *Writer) str(p []byte, i int) int {
	end := min(len(p), i+maxSeq-w.seq)
	for j := i; j < end; j++ {
		if b := p[j]; strEnd[b] {
			w.st = stGround
			if b == 0x1b {
				w.st = stEsc // ST is ESC \; anything else starts anew
			}
			return j + 1
		}
	}
	w.seq += end - i
	if w.seq >= maxSeq {
		// Never terminated: give up and treat what follows as text, so a
		// stray "ESC ]" costs at most maxSeq bytes of output.
		w.st = stGround
	}
	return end
}

// emit writes a run of complete, clean lines taken straight from the input.
func (w *Writer) emit(b []byte) {
	if len(b) < bigRun {
		w.put(b)
		return
	}
	if w.flushOut() == nil {
		w.remember(b)
		w.write(b)
	}
}

// put queues b for dst, writing when enough has gathered.
func (w *Writer) put(b []byte) {
	w.out = append(w.out, b...)
	if len(w.out) >= maxOut {
		w.flushOut()
	}
}

// flushOut writes the queued output to dst, keeping its end as the tail.
func (w *Writer) flushOut() error {
	if len(w.out) > 0 {
		w.remember(w.out)
		w.write(w.out)
		w.out = w.out[:0]
	}
	return w.err
}

// write writes b to dst, remembering the first failure.
func (w *Writer) write(b []byte) {
	if w.err != nil || w.dst == nil {
		return
	}
	n, err := w.dst.Write(b)
	if err == nil && n < len(b) {
		err = io.ErrShortWrite
	}
	w.err = err
}
