package terminal

import (
	"bytes"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/charmbracelet/x/vt"

	"github.com/harnessd/harnessd/core/terminal/clean"
)

// Screen is a rendered terminal screen: what a person would see while a
// full-screen program (vi, less, top, htop, watch) runs.
type Screen struct {
	Cols, Rows int
	// Lines has one string per row, trailing spaces removed.
	Lines []string
	// CursorRow and CursorCol are 0-based.
	CursorRow, CursorCol int
	// Alt reports whether the program is on the alternate screen; false
	// means it draws with cursor addressing on the main screen.
	Alt bool
}

// Text is the screen as text: its rows up to the last non-empty one.
func (s *Screen) Text() string {
	n := len(s.Lines)
	for n > 0 && s.Lines[n-1] == "" {
		n--
	}
	if n == 0 {
		return ""
	}
	return strings.Join(s.Lines[:n], "\n") + "\n"
}

// dispMode is how a command's output is being shown.
type dispMode int

const (
	lineMode dispMode = iota // cleaned text, as it arrives
	altMode                  // the alternate screen: only the screen model sees bytes
	drawMode                 // cursor addressing on the main screen: text is held until it is clear which view fits
)

// maxHeld bounds the text held in drawMode. A program that writes more
// without scrolling is treated as line output after all.
const maxHeld = 1 << 20

// display routes a command's output bytes (markers already cut) to the line
// cleaner or to a VT screen model. Ordinary output never meets the screen
// model: it starts only at a sequence that switches to the alternate
// screen, moves the cursor to an absolute position or clears the screen.
type display struct {
	lines *clean.Writer
	sink  *swapWriter
	cols  int
	rows  int

	mode dispMode
	det  detector
	emu  *vt.Emulator
	app  *atomic.Bool // DECCKM: arrows send ESC O x

	// reply is called with what the screen model answers a program's
	// queries (cursor position, device attributes); it runs on the
	// display's own goroutine.
	reply func([]byte)
	wg    sync.WaitGroup
}

func (d *display) Write(p []byte) (int, error) {
	for len(p) > 0 {
		ev, start, end := d.det.scan(p)
		if ev == evNone {
			return len(p), d.route(p)
		}
		if err := d.route(p[:start]); err != nil {
			return 0, err
		}
		seq := p[start:end]
		if len(d.det.early) > 0 {
			seq = append(append([]byte(nil), d.det.early...), seq...)
		}
		switch ev {
		case evAltOn:
			if d.mode == drawMode {
				d.releaseHeld()
			}
			d.startEmu()
			d.mode = altMode
			d.emu.Write(seq)
		case evAltOff:
			if d.emu != nil {
				d.emu.Write(seq)
			}
			d.stopEmu()
			d.mode = lineMode
		case evAbs:
			if d.mode == lineMode {
				d.startEmu()
				d.mode = drawMode
				d.sink.hold(true)
			}
			if d.emu != nil && d.mode == drawMode {
				d.emu.ClearScrollback()
			}
			if err := d.route(seq); err != nil {
				return 0, err
			}
		case evAppCursor, evNormCursor:
			d.app.Store(ev == evAppCursor)
			if err := d.route(seq); err != nil {
				return 0, err
			}
		case evCPR, evDSR, evDA1, evDA2:
			// The screen model answers while there is one; in line
			// mode the display does, or a program that asks (with
			// TERM=xterm-256color a terminal answers) waits for
			// nothing until its own timeout, or forever.
			mode := d.mode
			if err := d.route(seq); err != nil {
				return 0, err
			}
			if mode == lineMode && d.reply != nil {
				d.reply(d.det.answer(ev, d.cols, d.rows))
			}
		}
		p = p[end:]
	}
	return 0, nil
}

// route sends bytes where the current mode wants them.
func (d *display) route(p []byte) error {
	if len(p) == 0 {
		return nil
	}
	switch d.mode {
	case altMode:
		d.emu.Write(p)
		return nil
	case drawMode:
		d.emu.Write(p)
		if _, err := d.lines.Write(p); err != nil {
			return err
		}
		// A program that scrolls a whole screen away without moving the
		// cursor back writes lines, not screens: give back what was held
		// and go on as line output.
		if d.emu.ScrollbackLen() >= d.rows || d.sink.held.Len() > maxHeld {
			d.releaseHeld()
		}
		return nil
	}
	_, err := d.lines.Write(p)
	return err
}

// releaseHeld writes the text held in drawMode and returns to line mode.
func (d *display) releaseHeld() {
	d.sink.hold(false)
	d.stopEmu()
	d.mode = lineMode
}

func (d *display) startEmu() {
	if d.emu != nil {
		return
	}
	e := vt.NewEmulator(d.cols, d.rows)
	e.SetScrollbackSize(d.rows + 1)
	// The PTY does not turn "\n" into "\r\n" (ONLCR is off, so line
	// output arrives as written), while programs that draw in cooked mode
	// count on it: newline mode makes the model do it.
	e.Write([]byte("\x1b[20h"))
	d.emu = e
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		b := make([]byte, 256)
		for {
			n, err := e.Read(b)
			if n > 0 && d.reply != nil {
				d.reply(append([]byte(nil), b[:n]...))
			}
			if err != nil {
				return
			}
		}
	}()
}

// stopEmu drops the screen model. Its reply pipe is closed so the reply
// goroutine ends (Emulator.Close would race with that goroutine's Read).
func (d *display) stopEmu() {
	if d.emu == nil {
		return
	}
	if pw, ok := d.emu.InputPipe().(*io.PipeWriter); ok {
		pw.CloseWithError(io.EOF)
	}
	d.emu = nil
}

// screen renders the screen model, or returns nil in line mode.
func (d *display) screen() *Screen {
	if d.emu == nil || d.mode == lineMode {
		return nil
	}
	e := d.emu
	s := &Screen{Cols: e.Width(), Rows: e.Height(), Alt: d.mode == altMode}
	var b strings.Builder
	for y := range s.Rows {
		b.Reset()
		for x := 0; x < s.Cols; x++ {
			c := e.CellAt(x, y)
			switch {
			case c == nil || c.Content == "":
				if c != nil && c.Width == 0 {
					continue // the right half of a wide character
				}
				b.WriteByte(' ')
			default:
				b.WriteString(c.Content)
				if c.Width > 1 {
					x += c.Width - 1
				}
			}
		}
		s.Lines = append(s.Lines, strings.TrimRight(b.String(), " "))
	}
	pos := e.CursorPosition()
	s.CursorRow, s.CursorCol = pos.Y, pos.X
	return s
}

// settled ends a call's view: a finished command's held text is written
// as line output; a running program keeps its screen model (and the held
// text, a stream of redraws, is dropped: the screen replaces it).
func (d *display) settled(running bool) {
	switch {
	case !running:
		d.releaseHeld()
		d.app.Store(false)
	case d.mode == drawMode:
		d.sink.dropHeld()
	}
}

// reset forgets everything, for a new command or a new shell.
func (d *display) reset() {
	d.sink.dropHeld()
	d.sink.hold(false)
	d.stopEmu()
	d.mode = lineMode
	d.det = detector{}
	d.app.Store(false)
}

// close ends the reply goroutine.
func (d *display) close() {
	d.stopEmu()
	d.wg.Wait()
}

// detector finds the escape sequences that change how output is shown, in
// a raw byte stream split anywhere.
type detector struct {
	st     int // 0 ground, 1 after ESC, 2 in CSI
	priv   bool
	params []byte
	n      int    // bytes of the sequence seen so far (for its start offset)
	seq    []byte // the sequence's bytes so far (bounded), for one split across writes
	early  []byte // the part of the last event's sequence that came in earlier writes
	col    int    // the cursor's column as line output moves it (0-based, approximate), for CPR
}

// answer is what a terminal answers a query, for line mode.
func (d *detector) answer(ev dispEvent, cols, rows int) []byte {
	switch ev {
	case evCPR:
		col := d.col
		if cols > 0 && col >= cols {
			col = cols - 1
		}
		return []byte("\x1b[" + strconv.Itoa(max(rows, 1)) + ";" + strconv.Itoa(col+1) + "R")
	case evDSR:
		return []byte("\x1b[0n")
	case evDA1:
		return []byte("\x1b[?62;1;6;22c") // as the screen model answers
	case evDA2:
		return []byte("\x1b[>1;10;0c")
	}
	return nil
}

type dispEvent int

const (
	evNone       dispEvent = iota
	evAltOn                // CSI ? 1049/1047/47 h
	evAltOff               // CSI ? 1049/1047/47 l
	evAbs                  // CUP, HVP, VPA, or erase of the whole screen
	evAppCursor            // CSI ? 1 h
	evNormCursor           // CSI ? 1 l
	evCPR                  // CSI 6 n: where is the cursor?
	evDSR                  // CSI 5 n: status?
	evDA1                  // CSI c, CSI 0 c: primary device attributes
	evDA2                  // CSI > c, CSI > 0 c: secondary device attributes
)

// maxParams bounds the parameters followed in one CSI.
const maxParams = 64

// scan looks through p for the next event. It returns evNone when p has
// none; otherwise the event and the sequence's bounds in p (start is 0
// when the sequence began in an earlier write).
func (d *detector) scan(p []byte) (dispEvent, int, int) {
	d.early = d.early[:0]
	for i := 0; i < len(p); i++ {
		if d.st == 0 {
			// Text: jump to the next ESC (all but a few bytes of any
			// output are text, and this runs on every byte a command
			// prints).
			j := bytes.IndexByte(p[i:], 0x1b)
			if j < 0 {
				d.text(p[i:])
				return evNone, 0, 0
			}
			d.text(p[i : i+j])
			i += j
			d.st, d.n = 1, 1
			d.seq = append(d.seq[:0], 0x1b)
			continue
		}
		c := p[i]
		if len(d.seq) < maxParams+8 {
			d.seq = append(d.seq, c)
		}
		switch d.st {
		case 1:
			d.n++
			switch {
			case c == '[':
				d.st, d.priv, d.params = 2, false, d.params[:0]
			case c == 0x1b:
				d.n = 1
				d.seq = append(d.seq[:0], c)
			default:
				d.st = 0
			}
		case 2:
			d.n++
			switch {
			case c == '?' && len(d.params) == 0 && !d.priv:
				d.priv = true
			case c >= 0x30 && c <= 0x3f:
				if len(d.params) < maxParams {
					d.params = append(d.params, c)
				}
			case c >= 0x20 && c <= 0x2f:
				// intermediates: keep going
			case c >= 0x40 && c <= 0x7e:
				d.st = 0
				if ev := d.final(c); ev != evNone {
					start := i + 1 - d.n
					if start < 0 {
						// The sequence began in an earlier write.
						if k := len(d.seq) - (i + 1); k > 0 {
							d.early = append(d.early, d.seq[:k]...)
						}
						start = 0
					}
					return ev, start, i + 1
				}
			case c == 0x1b:
				d.st, d.n = 1, 1
				d.seq = append(d.seq[:0], c)
			default:
				d.st = 0
			}
		}
	}
	return evNone, 0, 0
}

// text moves the column over text (no ESC in it). Only what follows the
// last line end matters, so the rest is skipped.
func (d *detector) text(b []byte) {
	if k := bytes.LastIndexByte(b, '\n'); k >= 0 {
		d.col, b = 0, b[k+1:]
	}
	if k := bytes.LastIndexByte(b, '\r'); k >= 0 {
		d.col, b = 0, b[k+1:]
	}
	for _, c := range b {
		switch {
		case c == '\b':
			d.col = max(d.col-1, 0)
		case c == '\t':
			d.col = (d.col/8 + 1) * 8
		case c >= 0x20 && c != 0x7f && (c < 0x80 || c >= 0xc0):
			d.col++ // a character (a UTF-8 sequence counts once)
		}
	}
}

func (d *detector) final(c byte) dispEvent {
	params := strings.Split(string(d.params), ";")
	has := func(vs ...string) bool {
		for _, p := range params {
			for _, v := range vs {
				if p == v {
					return true
				}
			}
		}
		return false
	}
	if d.priv {
		switch {
		case (c == 'h' || c == 'l') && has("1049", "1047", "47"):
			if c == 'h' {
				return evAltOn
			}
			return evAltOff
		case c == 'h' && has("1"):
			return evAppCursor
		case c == 'l' && has("1"):
			return evNormCursor
		}
		return evNone
	}
	switch p := string(d.params); {
	case c == 'n' && p == "6":
		return evCPR
	case c == 'n' && p == "5":
		return evDSR
	case c == 'c' && (p == "" || p == "0"):
		return evDA1
	case c == 'c' && (p == ">" || p == ">0"):
		return evDA2
	}
	switch c {
	case 'H', 'f', 'd':
		return evAbs
	case 'J':
		if n, _ := strconv.Atoi(params[0]); n == 2 || n == 3 {
			return evAbs
		}
	}
	return evNone
}
