package legacy

import (
	"bytes"
	"io"
)

// Defaults used by DefaultConfig. They aim at what a model needs from a
// command's output: how it started (Head), how it ended (Tail), and the
// lines in between that usually explain a failure (keywords), within a
// budget of roughly 100 lines.
const (
	DefaultHead    = 40   // lines kept from the start
	DefaultTail    = 40   // lines kept from the end
	DefaultMaxKeep = 20   // keyword lines kept from the middle
	DefaultLineCap = 2000 // bytes kept of one line; the rest is cut
)

// Limits New applies to a Config, so that a hook asking for absurd values
// cannot make one stream cost more than
// (MaxLines*3 + 1) * MaxLineCap bytes in the worst case.
const (
	MaxLines   = 10000   // upper bound for Head, Tail and MaxKeep each
	MaxLineCap = 1 << 20 // upper bound for LineCap
)

// DefaultKeywords are the substrings that make a middle line worth keeping
// by default. Matching is case-sensitive: "Error" matches "TypeError:" and
// "Error:" but not "error:"; list every spelling you want.
func DefaultKeywords() []string {
	return []string{"Error", "Traceback", "Exception", "panic:", "FAIL", "fatal"}
}

// Config says what a Trimmer keeps.
//
// It is used as given (use DefaultConfig and change fields): a zero Head,
// Tail or MaxKeep means "keep none", because a hook may legitimately ask for
// that. Negative counts are treated as zero and counts above MaxLines as
// MaxLines. LineCap <= 0 means DefaultLineCap (a cap of zero would hide
// every line) and is at most MaxLineCap.
type Config struct {
	Head     int      // first lines kept
	Tail     int      // last lines kept
	MaxKeep  int      // at most this many middle lines containing a keyword are kept, the first ones
	Keywords []string // case-sensitive substrings; "" and strings containing '\n' are ignored
	LineCap  int      // bytes kept of any one line (cut at a rune boundary)
}

// DefaultConfig returns Head 40, Tail 40, MaxKeep 20, the DefaultKeywords
// (Error, Traceback, Exception, panic:, FAIL, fatal) and LineCap 2000 bytes.
func DefaultConfig() Config {
	return Config{
		Head:     DefaultHead,
		Tail:     DefaultTail,
		MaxKeep:  DefaultMaxKeep,
		Keywords: DefaultKeywords(),
		LineCap:  DefaultLineCap,
	}
}

// Result is what a model is shown of one output, with the counts needed to
// describe what was left out.
//
// The line counts always add up:
//
//	LinesTotal = shown head lines + shown tail lines + KeptKeyword + LinesOmitted
//
// and BytesTotal = bytes of the shown lines + BytesOmitted, where a line's
// bytes include its '\n'. A keyword line shown from the middle is not
// omitted. Bytes cut from an overlong shown line are not counted as omitted
// (the line is shown, with a marker saying how long it is).
type Result struct {
	Text         string // what the model sees; always valid UTF-8
	LinesTotal   int    // lines in the output; a final line without '\n' counts
	LinesOmitted int    // lines not shown at all
	KeptKeyword  int    // middle lines shown because they contain a keyword
	BytesTotal   int64  // bytes written to the Trimmer
	BytesOmitted int64  // bytes of the omitted lines, '\n' included
	OutputID     string // where the full output is kept; "" if it is not
	Trimmed      bool   // LinesOmitted > 0: Text holds the placeholder
	LinesCut     int    // shown lines cut at LineCap (they can be cut even if Trimmed is false)
}

// Trimmer is an io.Writer that keeps a bounded view of a stream of text: the
// first Head lines, the last Tail lines and up to MaxKeep keyword lines from
// the middle. Its memory is bounded by the Config whatever the stream's size.
// It is not safe for concurrent use; one stream has one writer.
type Trimmer struct {
	head, tail, maxKeep, lineCap int

	m        matcher
	matching bool // there are keywords and room to keep keyword lines

	spill    io.Writer
	spillErr error

	lines int   // complete lines seen, the line in progress excluded
	total int64 // bytes seen

	heads  []line
	ring   []slot // the last lines, a circular buffer of tail slots
	ringAt int    // oldest slot
	ringN  int    // slots in use
	kept   []line

	midLines, keptLines int   // lines past the head that left the tail ring, of those kept
	midBytes, keptBytes int64 // and their bytes
	matched             int   // middle lines containing a keyword, kept or not
	hits                []int // scratch for matcher.scan

	pending []byte // whole lines past the head not yet sorted (see queue)
	batch   int    // batchSize; tests make it small

	// The line in progress: the bytes since the last '\n'.
	inLine    bool
	part      line   // part.text holds at most lineCap bytes; part.size counts all
	partNeed  bool   // the line will need a keyword test if it ends up in the middle
	partMatch bool   // a keyword was seen in it
	carry     []byte // its last maxLen-1 bytes, to find a keyword split across writes
	scratch   []byte

	done bool
}

// line is one line as kept: at most lineCap bytes of it, and its true size.
type line struct {
	text []byte // without '\n', cut to lineCap bytes
	no   int    // 1-based line number
	size int64  // bytes of the line without '\n'; > len(text) if it was cut
	nl   bool   // the line ended with '\n' (only the last line may not)
}

func (l *line) bytes() int64 {
	if l.nl {
		return l.size + 1
	}
	return l.size
}

// slot is a line in the tail ring. Its keyword test is put off until it
// leaves the ring, so that lines which stay in the tail are never tested;
// a cut line is tested when it arrives, while all its bytes are at hand.
type slot struct {
	line
	match int8 // matchUnknown, or the result of the test
}

const (
	matchUnknown int8 = iota
	matchNo
	matchYes
)

// New returns a Trimmer for cfg (see Config for how it is read). Every byte
// written to the Trimmer is written verbatim to spill, unless spill is nil.
// A spill error does not fail Write, since the trimmed view is still good;
// it is remembered, stops the spilling, and makes Result report that the full
// output was not kept (see Err).
func New(cfg Config, spill io.Writer) *Trimmer {
	clamp := func(n int) int { return min(max(n, 0), MaxLines) }
	t := &Trimmer{
		head:    clamp(cfg.Head),
		tail:    clamp(cfg.Tail),
		maxKeep: clamp(cfg.MaxKeep),
		lineCap: cfg.LineCap,
		m:       newMatcher(cfg.Keywords),
		spill:   spill,
		batch:   batchSize,
	}
	if t.lineCap <= 0 {
		t.lineCap = DefaultLineCap
	}
	t.lineCap = min(t.lineCap, MaxLineCap)
	t.matching = len(t.m.kws) > 0 && t.maxKeep > 0
	return t
}

// Err returns the first error the spill writer returned, or nil.
func (t *Trimmer) Err() error { return t.spillErr }

// Write feeds the next chunk of the stream. Chunks may split lines and runes
// anywhere; the Result does not depend on how the stream was cut. Write
// returns len(p), nil, or ErrClosed after Result.
func (t *Trimmer) Write(p []byte) (int, error) {
	if t.done {
		return 0, ErrClosed
	}
	if t.spill != nil && t.spillErr == nil {
		if _, err := t.spill.Write(p); err != nil {
			t.spillErr = err
		}
	}
	n := len(p)
	t.total += int64(n)
	if t.inLine {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			t.extend(p)
			return n, nil
		}
		t.extend(p[:i])
		if t.lines >= t.head && t.part.size <= int64(t.lineCap) {
			// All of it is at hand: gather it with the lines that follow
			// rather than break the batch.
			t.inLine = false
			t.queueLine(t.part.text)
		} else {
			t.flush()
			t.endLine(true)
		}
		p = p[i+1:]
	}
	for len(p) > 0 && t.lines < t.head {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			break
		}
		t.push(p[:i], true, matchUnknown)
		p = p[i+1:]
	}
	if len(p) > 0 && t.lines >= t.head {
		if j := bytes.LastIndexByte(p, '\n'); j >= 0 {
			t.queue(p[:j+1])
			p = p[j+1:]
		}
	}
	if len(p) > 0 {
		t.begin(p)
	}
	return n, nil
}

// batchSize is how many bytes of whole lines past the head are gathered
// before they are sorted into middle and tail. A PTY hands over about 4 KiB
// a read; sorting each read on its own would push some 40 of its ~90 lines
// through the tail ring only to evict them on the next read. Gathering
// 64 KiB first makes that per-line work rare, for one memmove and 64 KiB.
const batchSize = 64 << 10

// queue takes whole lines past the head, gathering small writes.
func (t *Trimmer) queue(region []byte) {
	if len(t.pending)+len(region) > t.batch {
		t.flush()
	}
	if len(region) >= t.batch {
		t.body(region)
		return
	}
	if t.pending == nil {
		t.pending = make([]byte, 0, t.batch)
	}
	t.pending = append(t.pending, region...)
}

// queueLine gathers one line given without its '\n'.
func (t *Trimmer) queueLine(text []byte) {
	if len(t.pending)+len(text)+1 > t.batch {
		t.flush()
	}
	if t.pending == nil {
		t.pending = make([]byte, 0, t.batch)
	}
	t.pending = append(append(t.pending, text...), '\n')
}

// flush sorts the gathered lines; it must run before any later line is
// pushed.
func (t *Trimmer) flush() {
	if len(t.pending) > 0 {
		t.body(t.pending)
		t.pending = t.pending[:0]
	}
}

// body takes whole lines past the head. When they are more than the ring
// holds, everything in the ring and all but the last Tail of them are middle
// lines: those are counted and searched in bulk, never copied, which is what
// makes the trimmer fast.
func (t *Trimmer) body(region []byte) {
	cnt := bytes.Count(region, []byte{'\n'})
	if cnt > t.tail {
		for t.ringN > 0 {
			t.evict()
		}
		end := len(region) - 1
		for range t.tail {
			end = bytes.LastIndexByte(region[:end], '\n')
		}
		t.middleSpan(region[:end+1], cnt-t.tail)
		region = region[end+1:]
	}
	// These lines go to the ring. Scanning them together now is much
	// cheaper than testing each one as it leaves the ring; those that stay
	// in the tail are tested for nothing, but they are at most Tail a write.
	t.hits = t.hits[:0]
	if t.matching {
		t.hits, _ = t.m.scan(region, t.hits, len(region))
	}
	h := 0
	for off := 0; off < len(region); {
		i := bytes.IndexByte(region[off:], '\n')
		match := matchNo
		if h < len(t.hits) && t.hits[h] == off {
			match = matchYes
			h++
		}
		t.push(region[off:off+i], true, match)
		off += i + 1
	}
}

// push adds one complete line, all of which is in text.
func (t *Trimmer) push(text []byte, nl bool, match int8) {
	t.pushSized(text, int64(len(text)), nl, match)
}

// pushSized adds one complete line of size bytes. text holds all of them, or,
// for a line that came in pieces, its first lineCap bytes; its keyword test
// must then be in match already, since the rest of the line is gone.
func (t *Trimmer) pushSized(text []byte, size int64, nl bool, match int8) {
	t.lines++
	no := t.lines
	capped := text[:min(len(text), t.lineCap)]
	if no <= t.head {
		t.heads = append(t.heads, line{text: bytes.Clone(capped), no: no, size: size, nl: nl})
		return
	}
	if match == matchUnknown && len(capped) < len(text) && t.matching {
		match = t.test(text)
	}
	if t.tail == 0 {
		t.middle(&line{text: capped, no: no, size: size, nl: nl}, match)
		return
	}
	if t.ring == nil {
		t.ring = make([]slot, t.tail) // slot buffers grow as lines need
	}
	if t.ringN == t.tail {
		t.evict()
	}
	s := &t.ring[(t.ringAt+t.ringN)%t.tail]
	t.ringN++
	s.text = append(s.text[:0], capped...)
	s.no, s.size, s.nl, s.match = no, size, nl, match
}

// evict moves the oldest ring line to the middle and frees its slot.
func (t *Trimmer) evict() {
	s := &t.ring[t.ringAt]
	t.middle(&s.line, s.match)
	t.ringAt = (t.ringAt + 1) % t.tail
	t.ringN--
}

func (t *Trimmer) test(b []byte) int8 {
	if t.m.any(b) {
		return matchYes
	}
	return matchNo
}

// middle accounts for one line past the head that will not be in the tail.
// l.text may be reused by the caller, so a kept line is copied.
func (t *Trimmer) middle(l *line, match int8) {
	t.midLines++
	t.midBytes += l.bytes()
	if !t.matching {
		return
	}
	if match == matchUnknown {
		match = t.test(l.text) // l.text is the whole line: cut lines were tested on arrival
	}
	if match == matchYes {
		t.matched++
		if t.keptLines < t.maxKeep {
			t.keep(l.text, l.no, l.size, l.nl)
		}
	}
}

func (t *Trimmer) keep(text []byte, no int, size int64, nl bool) {
	k := line{text: bytes.Clone(text[:min(len(text), t.lineCap)]), no: no, size: size, nl: nl}
	t.kept = append(t.kept, k)
	t.keptLines++
	t.keptBytes += k.bytes()
}

// middleSpan accounts for cnt whole middle lines at once: a count and a
// bulk keyword scan (see matcher), then work only for the lines kept.
func (t *Trimmer) middleSpan(span []byte, cnt int) {
	no := t.lines + 1 // line number of the line starting at span[counted]
	t.lines += cnt
	t.midLines += cnt
	t.midBytes += int64(len(span))
	if !t.matching {
		return
	}
	var n int
	t.hits, n = t.m.scan(span, t.hits[:0], t.maxKeep-t.keptLines)
	t.matched += n
	counted := 0
	for _, start := range t.hits {
		no += bytes.Count(span[counted:start], []byte{'\n'})
		counted = start
		end := start + bytes.IndexByte(span[start:], '\n')
		t.keep(span[start:end], no, int64(end-start), true)
	}
}

// begin starts a line in progress with p, which holds no '\n'.
func (t *Trimmer) begin(p []byte) {
	t.inLine = true
	t.part.text = append(t.part.text[:0], p[:min(len(p), t.lineCap)]...)
	t.part.size = int64(len(p))
	t.partNeed = t.matching && t.lines+1 > t.head
	t.partMatch = t.partNeed && t.m.any(p)
	t.carry = t.carry[:0]
	if t.partNeed && !t.partMatch {
		t.keepCarry(p)
	}
}

// extend adds seg, which holds no '\n', to the line in progress.
func (t *Trimmer) extend(seg []byte) {
	if len(seg) == 0 {
		return
	}
	if room := t.lineCap - len(t.part.text); room > 0 {
		t.part.text = append(t.part.text, seg[:min(room, len(seg))]...)
	}
	t.part.size += int64(len(seg))
	if t.partNeed && !t.partMatch {
		// A keyword may start in the bytes before this write and end in it.
		t.scratch = append(append(t.scratch[:0], t.carry...), seg[:min(len(seg), t.m.maxLen-1)]...)
		t.partMatch = t.m.any(t.scratch) || t.m.any(seg)
		if !t.partMatch {
			t.keepCarry(seg)
		}
	}
}

// keepCarry keeps the last maxLen-1 bytes of the line so far, seg being its
// newest bytes.
func (t *Trimmer) keepCarry(seg []byte) {
	n := t.m.maxLen - 1
	if len(seg) >= n {
		t.carry = append(t.carry[:0], seg[len(seg)-n:]...)
		return
	}
	t.carry = append(t.carry, seg...)
	if extra := len(t.carry) - n; extra > 0 {
		t.carry = append(t.carry[:0], t.carry[extra:]...)
	}
}

// endLine ends the line in progress.
func (t *Trimmer) endLine(nl bool) {
	t.inLine = false
	match := matchUnknown
	if t.partNeed {
		match = matchNo
		if t.partMatch {
			match = matchYes
		}
	}
	t.pushSized(t.part.text, t.part.size, nl, match)
}

// Result ends the stream and returns the trimmed view. outputID names where
// the full output can be read (the ID of the spill's OutputWriter), or is ""
// when it was not kept; it is also "" in the Result when spilling failed.
// Later Writes fail with ErrClosed; Result may be called again.
func (t *Trimmer) Result(outputID string) Result {
	t.flush()
	if t.inLine {
		t.endLine(false)
	}
	t.done = true
	if t.spillErr != nil {
		outputID = ""
	}
	v := view{
		head:      t.heads,
		kept:      t.kept,
		tail:      t.tailLines(),
		total:     t.lines,
		omitted:   t.midLines - t.keptLines,
		bytesOmit: t.midBytes - t.keptBytes,
		matched:   t.matched,
		matching:  t.matching,
	}
	text, cut := v.render(outputID, t.spillErr != nil)
	return Result{
		Text:         text,
		LinesTotal:   t.lines,
		LinesOmitted: v.omitted,
		KeptKeyword:  t.keptLines,
		BytesTotal:   t.total,
		BytesOmitted: v.bytesOmit,
		OutputID:     outputID,
		Trimmed:      v.omitted > 0,
		LinesCut:     cut,
	}
}

// tailLines returns the ring's lines, oldest first.
func (t *Trimmer) tailLines() []line {
	out := make([]line, 0, t.ringN)
	for i := range t.ringN {
		out = append(out, t.ring[(t.ringAt+i)%t.tail].line)
	}
	return out
}
