package trim

import (
	"bytes"
	"io"
)

// Defaults used by DefaultConfig. The budget is in characters, what a
// model pays for: the head and the tail get shares of it (headShare,
// tailShare) and at most Head and Tail lines, and the rest goes to the
// failure blocks found in the middle.
const (
	DefaultMaxChars = 8000 // characters of the whole observation, placeholder included
	DefaultHead     = 40   // lines kept from the start, at most
	DefaultTail     = 40   // lines kept from the end, at most
	DefaultMaxKeep  = 200  // lines kept from the middle, at most
	DefaultLineCap  = 2000 // bytes kept of one line; the rest is cut
)

// Shares of MaxChars, in percent, that the head and the tail may take.
const (
	headShare = 30
	tailShare = 30
)

// Limits New applies to a Config, so that a hook asking for absurd values
// cannot make one stream cost more than a few times MaxMaxChars.
const (
	MaxLines    = 10000   // upper bound for Head, Tail and MaxKeep each
	MaxLineCap  = 1 << 20 // upper bound for LineCap
	MinMaxChars = 500     // lower bound for MaxChars: room for the placeholder
	MaxMaxChars = 1 << 22 // upper bound for MaxChars
)

// cutReserve is what a cut line's marker may add, counted when lines are
// chosen; the final text is measured exactly.
const cutReserve = 120

// Config says what a Trimmer keeps.
//
// A zero Head, Tail or MaxKeep means "keep none", because a hook may
// legitimately ask for that; negative counts are treated as zero and
// counts above MaxLines as MaxLines. MaxChars <= 0 means DefaultMaxChars
// and is kept within MinMaxChars..MaxMaxChars. LineCap <= 0 means
// DefaultLineCap; a line is also never shown longer than a fifth of
// MaxChars.
type Config struct {
	MaxChars int      // characters of Text at most, the placeholder included
	Head     int      // first lines kept, at most (and within 30% of MaxChars)
	Tail     int      // last lines kept, at most (and within 30% of MaxChars)
	MaxKeep  int      // middle lines kept, at most
	Keywords []string // substrings, ASCII case ignored, that make a middle line a candidate; "" and strings containing '\n' are ignored
	LineCap  int      // bytes kept of any one line (cut at a rune boundary)
}

// DefaultConfig returns MaxChars 8000, Head 40, Tail 40, MaxKeep 200, the
// DefaultKeywords and LineCap 2000 bytes.
func DefaultConfig() Config {
	return Config{
		MaxChars: DefaultMaxChars,
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
// The counts are exact: LinesTotal = lines shown + LinesOmitted, and
// BytesTotal = bytes of the shown lines + BytesOmitted, where a line's
// bytes include its '\n'. Lines folded into a "similar lines" marker are
// omitted. Bytes cut from an overlong shown line are not counted as
// omitted (the line is shown, with a marker saying how long it is).
type Result struct {
	Text         string // what the model sees; always valid UTF-8, at most MaxChars characters when Trimmed
	LinesTotal   int    // lines in the output; a final line without '\n' counts
	LinesOmitted int    // lines not shown at all
	KeptKeyword  int    // middle lines shown (lines of failure blocks), each as "line N: text"
	BytesTotal   int64  // bytes written to the Trimmer
	BytesOmitted int64  // bytes of the omitted lines, '\n' included
	OutputID     string // where the full output is kept; "" if it is not
	Trimmed      bool   // LinesOmitted > 0: Text holds the placeholder
	LinesCut     int    // shown lines cut at LineCap (they can be cut even if Trimmed is false)
}

// Trimmer is an io.Writer that keeps a bounded view of a stream of text:
// the first lines, the last lines and the failure blocks of the middle,
// within a character budget. Its memory is bounded by the Config whatever
// the stream's size. It is not safe for concurrent use.
type Trimmer struct {
	maxChars, head, tail, maxKeep, lineCap int
	headBudget, tailBudget                 int

	m        *matcher
	matching bool

	spill    io.Writer
	spillErr error

	lines int   // complete lines seen, the line in progress excluded
	total int64 // bytes seen

	heads    []line
	headUsed int
	headOpen bool

	// The last lines. Until a line first leaves it for the middle (small
	// is false) the ring holds all that fits the budget besides the head,
	// so an output that fits is shown whole; after, at most Tail lines
	// within tailBudget.
	ring      []slot
	ringAt    int
	ringN     int
	ringChars int
	small     bool

	mid middle

	pending []byte // whole lines past the head not yet sorted (see queue)
	batch   int    // batchSize; tests make it small

	// The line in progress: the bytes since the last '\n'.
	inLine    bool
	part      line
	partNeed  bool // the line will need a keyword test if it ends up in the middle
	partMatch bool
	carry     []byte
	scratch   []byte

	done bool
	res  Result
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

func (l *line) cut() bool { return int64(len(l.text)) < l.size }

// slot is a line in the ring. Its keyword test is put off until it leaves
// the ring; a cut line is tested when it arrives, while all of it is at
// hand.
type slot struct {
	line
	match int8
}

const (
	matchUnknown int8 = iota
	matchNo
	matchYes
)

// New returns a Trimmer for cfg (see Config for how it is read). Every byte
// written to the Trimmer is written verbatim to spill, unless spill is nil.
// A spill error does not fail Write, since the trimmed view is still good;
// it is remembered, stops the spilling, and makes Result report that the
// full output was not kept (see Err).
func New(cfg Config, spill io.Writer) *Trimmer {
	clamp := func(n int) int { return min(max(n, 0), MaxLines) }
	t := &Trimmer{
		maxChars: cfg.MaxChars,
		head:     clamp(cfg.Head),
		tail:     clamp(cfg.Tail),
		maxKeep:  clamp(cfg.MaxKeep),
		lineCap:  cfg.LineCap,
		m:        matcherFor(cfg.Keywords),
		spill:    spill,
		batch:    batchSize,
		headOpen: true,
	}
	if t.maxChars <= 0 {
		t.maxChars = DefaultMaxChars
	}
	t.maxChars = min(max(t.maxChars, MinMaxChars), MaxMaxChars)
	if t.lineCap <= 0 {
		t.lineCap = DefaultLineCap
	}
	t.lineCap = min(t.lineCap, MaxLineCap, t.maxChars/5)
	t.headBudget = t.maxChars * headShare / 100
	t.tailBudget = t.maxChars * tailShare / 100
	t.matching = len(t.m.kws) > 0 && t.maxKeep > 0
	t.mid.t = t
	return t
}

// Err returns the first error the spill writer returned, or nil.
func (t *Trimmer) Err() error { return t.spillErr }

// cost is what a line of size bytes takes of the budget when shown.
func (t *Trimmer) cost(size int64) int {
	if size > int64(t.lineCap) {
		return t.lineCap + 1 + cutReserve
	}
	return int(size) + 1
}

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
		if !t.headOpen && t.part.size <= int64(t.lineCap) {
			// All of it is at hand: gather it with the lines that follow.
			t.inLine = false
			t.queueLine(t.part.text)
		} else {
			t.flush()
			t.endLine(true)
		}
		p = p[i+1:]
	}
	for len(p) > 0 && t.headOpen {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			break
		}
		t.push(p[:i], true, matchUnknown)
		p = p[i+1:]
	}
	if len(p) > 0 && !t.headOpen {
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
// before they are sorted into middle and tail, so that the per-line work
// of the tail is done once per 64 KiB rather than once per PTY read.
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

// body takes whole lines past the head. Once the output is known not to
// fit (small), all but the lines that can still end up in the tail are
// middle lines: they are counted and searched in bulk, never copied.
func (t *Trimmer) body(region []byte) {
	for len(region) > 0 && !t.small {
		i := bytes.IndexByte(region, '\n')
		t.push(region[:i], true, matchUnknown)
		region = region[i+1:]
	}
	if len(region) == 0 {
		return
	}
	// The longest suffix of region that fits the tail: the same lines the
	// ring would hold after pushing them one by one.
	split, n, chars := len(region), 0, 0
	for split > 0 && n < t.tail {
		start := bytes.LastIndexByte(region[:split-1], '\n') + 1
		c := t.cost(int64(split - 1 - start))
		if chars+c > t.tailBudget {
			break
		}
		chars += c
		n++
		split = start
	}
	if split > 0 {
		for t.ringN > 0 {
			t.evict()
		}
		span := region[:split]
		no := t.lines + 1
		t.lines += bytes.Count(span, []byte{'\n'})
		t.mid.span(span, no)
		region = region[split:]
	}
	for len(region) > 0 {
		i := bytes.IndexByte(region, '\n')
		t.push(region[:i], true, matchUnknown)
		region = region[i+1:]
	}
}

// push adds one complete line, all of which is in text.
func (t *Trimmer) push(text []byte, nl bool, match int8) {
	t.pushSized(text, int64(len(text)), nl, match)
}

// pushSized adds one complete line of size bytes. text holds all of them,
// or, for a line that came in pieces, its first lineCap bytes; its keyword
// test must then be in match already.
func (t *Trimmer) pushSized(text []byte, size int64, nl bool, match int8) {
	t.lines++
	no := t.lines
	capped := text[:min(len(text), t.lineCap)]
	c := t.cost(size)
	if t.headOpen {
		if len(t.heads) < t.head && t.headUsed+c <= t.headBudget {
			t.heads = append(t.heads, line{text: bytes.Clone(capped), no: no, size: size, nl: nl})
			t.headUsed += c
			return
		}
		t.headOpen = false
	}
	if match == matchUnknown && len(capped) < len(text) && t.matching {
		match = t.test(text)
	}
	if !t.small {
		for t.ringN > 0 && t.ringChars+c > t.maxChars-t.headUsed {
			t.evict()
			t.small = true
		}
	}
	if t.small {
		for t.ringN > 0 && (t.ringN >= t.tail || t.ringChars+c > t.tailBudget) {
			t.evict()
		}
		if t.tail == 0 || c > t.tailBudget {
			t.mid.line(&line{text: capped, no: no, size: size, nl: nl}, match)
			return
		}
	}
	if t.ringN == len(t.ring) {
		grown := make([]slot, max(16, 2*len(t.ring)))
		for i := range t.ringN {
			grown[i] = t.ring[(t.ringAt+i)%len(t.ring)]
		}
		t.ring, t.ringAt = grown, 0
	}
	s := &t.ring[(t.ringAt+t.ringN)%len(t.ring)]
	t.ringN++
	t.ringChars += c
	s.text = append(s.text[:0], capped...)
	s.no, s.size, s.nl, s.match = no, size, nl, match
}

// evict moves the oldest ring line to the middle.
func (t *Trimmer) evict() {
	s := &t.ring[t.ringAt]
	t.ringChars -= t.cost(s.size)
	t.mid.line(&s.line, s.match)
	t.ringAt = (t.ringAt + 1) % len(t.ring)
	t.ringN--
}

func (t *Trimmer) test(b []byte) int8 {
	if t.m.line(b) {
		return matchYes
	}
	return matchNo
}

// begin starts a line in progress with p, which holds no '\n'.
func (t *Trimmer) begin(p []byte) {
	t.inLine = true
	t.part.text = append(t.part.text[:0], p[:min(len(p), t.lineCap)]...)
	t.part.size = int64(len(p))
	t.partNeed = t.matching
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

// keepCarry keeps the last maxLen-1 bytes of the line so far.
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
// Later Writes fail with ErrClosed; Result may be called again and returns
// the same.
func (t *Trimmer) Result(outputID string) Result {
	if t.done {
		return t.res
	}
	t.flush()
	if t.inLine {
		t.endLine(false)
	}
	t.done = true
	if t.spillErr != nil {
		outputID = ""
	}
	if !t.small {
		// Nothing left for the middle yet: the output fits, unless the
		// markers of cut lines make it too long.
		r := t.whole(outputID)
		if runeCount(r.Text) <= t.maxChars {
			t.res = r
			return r
		}
		t.small = true
	}
	for t.ringN > 0 && (t.ringN > t.tail || t.ringChars > t.tailBudget) {
		t.evict()
	}
	t.mid.close()
	t.res = t.render(outputID)
	return t.res
}

// whole returns the Result of an output shown in full.
func (t *Trimmer) whole(outputID string) Result {
	var b bytes.Buffer
	r := Result{LinesTotal: t.lines, BytesTotal: t.total, OutputID: outputID}
	for _, ls := range [][]line{t.heads, t.tailLines()} {
		for i := range ls {
			if writeLine(&b, &ls[i], outputID) {
				r.LinesCut++
			}
		}
	}
	r.Text = b.String()
	return r
}

// tailLines returns the ring's lines, oldest first.
func (t *Trimmer) tailLines() []line {
	out := make([]line, 0, t.ringN)
	for i := range t.ringN {
		out = append(out, t.ring[(t.ringAt+i)%len(t.ring)].line)
	}
	return out
}
