package event

import (
	"bytes"
	"fmt"
	"strconv"
	"time"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// Decode parses one event in its flat JSON form. It is strict: the input
// must be exactly one JSON object (surrounding whitespace aside) with a known
// kind, only the envelope's and that kind's fields, each at most once and
// spelled exactly, of the right JSON types. A field that is null counts as
// absent. Errors wrap ErrMalformed, ErrUnknownKind, ErrUnknownField or
// ErrUnsupportedVersion; when the event carries a version newer than this
// build's, that is the error reported, whatever else is wrong with it.
//
// Times are returned in UTC. Decode never panics, whatever the input.
func Decode(data []byte) (Event, error) {
	d := decoder{data: data}
	var e Event
	if err := d.event(&e); err != nil {
		if v, ok := findVersion(data); ok && v > Version {
			return Event{}, fmt.Errorf("%w: v%d (this build reads up to v%d; upgrade harnessd)", ErrUnsupportedVersion, v, Version)
		}
		return Event{}, err
	}
	return e, nil
}

// UnmarshalJSON decodes e from its flat JSON form, as Decode does. It
// implements json.Unmarshaler.
func (e *Event) UnmarshalJSON(data []byte) error {
	ev, err := Decode(data)
	if err != nil {
		return err
	}
	*e = ev
	return nil
}

// fieldDecoder is implemented by a pointer to each payload type.
type fieldDecoder interface {
	// decodeField decodes the value at d for key and returns the field's
	// index, below 32; -1 (and d not moved) for a key the payload does not
	// have.
	decodeField(key []byte, d *decoder) (field int, err error)
	payload() Payload
}

// newFieldDecoder returns a decoder for kind k's payload, or nil for a
// kind this build does not know.
func newFieldDecoder(k []byte) fieldDecoder {
	switch Kind(k) {
	case KindCmdRun:
		return new(CmdRun)
	case KindMessage:
		return new(Message)
	case KindFinish:
		return new(Finish)
	case KindDelegate:
		return new(Delegate)
	case KindCmdOutput:
		return new(CmdOutput)
	case KindInvalidAction:
		return new(InvalidAction)
	case KindHookVeto:
		return new(HookVeto)
	case KindNetConnect:
		return new(NetConnect)
	case KindAgentCrashed:
		return new(AgentCrashed)
	case KindSandboxStarted:
		return new(SandboxStarted)
	case KindSandboxStopped:
		return new(SandboxStopped)
	}
	return nil
}

// maxDepth bounds nesting in values that are skipped over, so hostile input
// cannot recurse deeply.
const maxDepth = 64

// decoder reads JSON from data, starting at pos.
type decoder struct {
	data []byte
	pos  int
}

func (d *decoder) errorf(format string, args ...any) error {
	return fmt.Errorf("%w: offset %d: %s", ErrMalformed, d.pos, fmt.Sprintf(format, args...))
}

func (d *decoder) ws() {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

// consume skips whitespace and then c, reporting whether c was there.
func (d *decoder) consume(c byte) bool {
	d.ws()
	if d.pos < len(d.data) && d.data[d.pos] == c {
		d.pos++
		return true
	}
	return false
}

func (d *decoder) peek() byte {
	if d.pos < len(d.data) {
		return d.data[d.pos]
	}
	return 0
}

// deferredField is a payload field met before "kind": its value is decoded
// once the kind is known.
type deferredField struct {
	key        []byte
	start, end int
}

// event decodes the top-level object into e.
func (d *decoder) event(e *Event) error {
	if !d.consume('{') {
		return d.errorf("expected an event object")
	}
	var (
		fd       fieldDecoder
		deferred []deferredField
		f        fields
	)
	for {
		key, ok, err := f.next(d)
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		if err := d.eventField(e, &f, &fd, &deferred, key); err != nil {
			return err
		}
	}
	d.ws()
	if d.pos != len(d.data) {
		return d.errorf("data after the event object")
	}
	if fd == nil {
		return fmt.Errorf("%w: event has no kind", ErrMalformed)
	}
	for _, df := range deferred {
		sub := decoder{data: d.data[:df.end], pos: df.start}
		if err := sub.payloadField(&f, fd, df.key); err != nil {
			return err
		}
	}
	e.Payload = fd.payload()
	return nil
}

// Field indexes of the envelope, for duplicate detection; a payload's
// fields follow them.
const (
	fieldV = iota
	fieldSession
	fieldSeq
	fieldTime
	fieldSource
	fieldCause
	fieldKind
	envelopeFields
)

// eventField decodes the value of one top-level field.
func (d *decoder) eventField(e *Event, f *fields, fd *fieldDecoder, deferred *[]deferredField, key []byte) error {
	at := d.pos
	field := -1
	var err error
	switch string(key) {
	case "v":
		field = fieldV
		var v int64
		if v, err = d.int(32); err != nil {
			return err
		}
		if v < 0 {
			return d.errorf("negative schema version %d", v)
		}
		if v > Version {
			return fmt.Errorf("%w: v%d (this build reads up to v%d; upgrade harnessd)", ErrUnsupportedVersion, v, Version)
		}
		e.V = int(v)
	case "session":
		field = fieldSession
		e.Session, err = d.str()
	case "seq":
		field = fieldSeq
		e.Seq, err = d.uint()
	case "time":
		field = fieldTime
		e.Time, err = d.time()
	case "source":
		field = fieldSource
		var s []byte
		if s, err = d.strBytes(); err != nil {
			return err
		}
		switch Source(s) { // the constants, so decoding allocates nothing
		case SourceAgent:
			e.Source = SourceAgent
		case SourceUser:
			e.Source = SourceUser
		case SourceHook:
			e.Source = SourceHook
		case SourceRuntime:
			e.Source = SourceRuntime
		case "":
			e.Source = ""
		default:
			d.pos = at
			return d.errorf("unknown source %q (want agent, user, hook or runtime)", s)
		}
	case "cause":
		field = fieldCause
		e.Cause, err = d.uint()
	case "kind":
		field = fieldKind
		var k []byte
		if k, err = d.strBytes(); err != nil {
			return err
		}
		if k == nil {
			d.pos = at
			return d.errorf("kind is null")
		}
		if *fd = newFieldDecoder(k); *fd == nil {
			d.pos = at
			return fmt.Errorf("%w %q", ErrUnknownKind, k)
		}
	default:
		if *fd == nil { // before "kind": decoded once the kind is known
			if err = d.skip(0); err == nil {
				*deferred = append(*deferred, deferredField{key, at, d.pos})
			}
			return err
		}
		return d.payloadField(f, *fd, key)
	}
	if err != nil {
		return err
	}
	return f.mark(d, at, key, field)
}

// payloadField decodes one of the payload's fields.
func (d *decoder) payloadField(f *fields, fd fieldDecoder, key []byte) error {
	at := d.pos
	i, err := fd.decodeField(key, d)
	if err != nil {
		return err
	}
	if i < 0 {
		return fmt.Errorf("%w: %s has no field %q", ErrUnknownField, fd.payload().Kind(), key)
	}
	return f.mark(d, at, key, envelopeFields+i)
}

// fields walks the members of an object whose '{' was consumed.
type fields struct {
	n    int
	seen uint64 // bit i: field i has been decoded
}

// next reads the next member's key and its ':', leaving d at the value,
// which the caller must consume before calling next again. ok is false once
// the object's '}' is consumed.
func (f *fields) next(d *decoder) (key []byte, ok bool, err error) {
	if f.n == 0 {
		if d.consume('}') {
			return nil, false, nil
		}
	} else if !d.consume(',') {
		if d.consume('}') {
			return nil, false, nil
		}
		return nil, false, d.errorf("expected ',' or '}'")
	}
	d.ws()
	at := d.pos
	if key, err = d.strBytes(); err != nil {
		return nil, false, err
	}
	if key == nil {
		d.pos = at
		return nil, false, d.errorf("expected a field name")
	}
	f.n++
	if !d.consume(':') {
		return nil, false, d.errorf("expected ':' after field name")
	}
	d.ws()
	return key, true, nil
}

// mark records that field i (whose value was at offset at) was decoded, and
// refuses a field seen twice: with two values, which one counts is a guess.
func (f *fields) mark(d *decoder, at int, key []byte, i int) error {
	if f.seen&(1<<i) != 0 {
		d.pos = at
		return d.errorf("field %q appears twice", key)
	}
	f.seen |= 1 << i
	return nil
}

// null consumes a null literal if one is next.
func (d *decoder) null() bool {
	if bytes.HasPrefix(d.data[d.pos:], []byte("null")) {
		d.pos += 4
		return true
	}
	return false
}

// str decodes a string value; null is "".
func (d *decoder) str() (string, error) {
	b, fresh, err := d.scanString()
	if fresh && len(b) > 0 {
		// Decoded into a buffer nothing else holds: no need to copy it.
		return unsafe.String(unsafe.SliceData(b), len(b)), err
	}
	return string(b), err
}

// strBytes decodes a string (or null, returned as nil). The result may
// alias the input.
func (d *decoder) strBytes() ([]byte, error) {
	b, _, err := d.scanString()
	return b, err
}

// scanString decodes a string (or null, returned as nil). The result
// aliases the input when the string has no escapes and is plain ASCII;
// otherwise it is a fresh buffer (fresh is true).
func (d *decoder) scanString() (b []byte, fresh bool, err error) {
	if d.null() {
		return nil, false, nil
	}
	if d.peek() != '"' {
		return nil, false, d.errorf("expected a string")
	}
	d.pos++
	start := d.pos
	for i := start; i < len(d.data); i++ {
		c := d.data[i]
		switch {
		case c == '"':
			d.pos = i + 1
			return d.data[start:i:i], false, nil
		case c == '\\' || c < 0x20 || c >= utf8.RuneSelf:
			b, err := d.slowString(start)
			return b, err == nil, err
		}
	}
	d.pos = len(d.data)
	return nil, false, d.errorf("unterminated string")
}

// slowString decodes a string with escapes or non-ASCII bytes, from the
// byte after its opening quote. Invalid UTF-8 and lone surrogates become
// U+FFFD, as encoding/json decodes them.
func (d *decoder) slowString(start int) ([]byte, error) {
	// Size the buffer by the raw string, not the rest of the input: a
	// document of many short escaped strings must not cost quadratic memory.
	end := start
	for end < len(d.data) && d.data[end] != '"' {
		if d.data[end] == '\\' {
			end++
		}
		end++
	}
	out := make([]byte, 0, min(end, len(d.data))-start)
	i := start
	for i < len(d.data) {
		// Copy a run of plain ASCII at once.
		j := i
		for j < len(d.data) {
			if c := d.data[j]; c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf {
				break
			}
			j++
		}
		out = append(out, d.data[i:j]...)
		if i = j; i == len(d.data) {
			break
		}
		c := d.data[i]
		switch {
		case c == '"':
			d.pos = i + 1
			return out, nil
		case c < 0x20:
			d.pos = i
			return nil, d.errorf("control character 0x%02x in string", c)
		case c == '\\':
			if i+1 >= len(d.data) {
				d.pos = i
				return nil, d.errorf("unterminated escape")
			}
			esc := d.data[i+1]
			i += 2
			switch esc {
			case '"', '\\', '/':
				out = append(out, esc)
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				r, ok := hex4(d.data[i:])
				if !ok {
					d.pos = i
					return nil, d.errorf(`bad \u escape`)
				}
				i += 4
				if utf16.IsSurrogate(r) {
					r = utf8.RuneError
					if lo, ok := lowSurrogate(d.data[i:]); ok {
						if pair := utf16.DecodeRune(rune(mustHex4(d.data[i-4:])), lo); pair != utf8.RuneError {
							r = pair
							i += 6
						}
					}
				}
				out = utf8.AppendRune(out, r)
			default:
				d.pos = i - 1
				return nil, d.errorf("bad escape \\%c", esc)
			}
		case c < utf8.RuneSelf:
			out = append(out, c)
			i++
		default:
			r, size := utf8.DecodeRune(d.data[i:])
			if r == utf8.RuneError && size == 1 {
				out = utf8.AppendRune(out, r) // invalid bytes become U+FFFD
			} else {
				out = append(out, d.data[i:i+size]...)
			}
			i += size
		}
	}
	d.pos = len(d.data)
	return nil, d.errorf("unterminated string")
}

// hex4 decodes four hex digits.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

func mustHex4(b []byte) rune { r, _ := hex4(b); return r }

// lowSurrogate decodes a \uDC00-\uDFFF escape at the start of b.
func lowSurrogate(b []byte) (rune, bool) {
	if len(b) < 6 || b[0] != '\\' || b[1] != 'u' {
		return 0, false
	}
	r, ok := hex4(b[2:])
	return r, ok && 0xdc00 <= r && r <= 0xdfff
}

// number scans a JSON number and returns its text and whether it is written
// as an integer (no fraction, no exponent).
func (d *decoder) number() (text []byte, integer bool, err error) {
	start, i := d.pos, d.pos
	data := d.data
	digits := func() int {
		n := 0
		for i < len(data) && '0' <= data[i] && data[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if i < len(data) && data[i] == '-' {
		i++
	}
	if i < len(data) && data[i] == '0' {
		i++
	} else if digits() == 0 {
		return nil, false, d.errorf("expected a number")
	}
	integer = true
	if i < len(data) && data[i] == '.' {
		i++
		integer = false
		if digits() == 0 {
			d.pos = i
			return nil, false, d.errorf("expected digits after '.'")
		}
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		integer = false
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		if digits() == 0 {
			d.pos = i
			return nil, false, d.errorf("expected digits in exponent")
		}
	}
	d.pos = i
	return data[start:i], integer, nil
}

// int decodes an integer that fits in bits; null is 0.
func (d *decoder) int(bits int) (int64, error) {
	if d.null() {
		return 0, nil
	}
	at := d.pos
	text, integer, err := d.number()
	if err != nil {
		return 0, err
	}
	if !integer {
		d.pos = at
		return 0, d.errorf("expected an integer, got %s", text)
	}
	v, err := strconv.ParseInt(string(text), 10, bits)
	if err != nil {
		d.pos = at
		return 0, d.errorf("integer %s out of range", text)
	}
	return v, nil
}

// uint decodes a non-negative integer; null is 0.
func (d *decoder) uint() (uint64, error) {
	if d.null() {
		return 0, nil
	}
	at := d.pos
	text, integer, err := d.number()
	if err != nil {
		return 0, err
	}
	if !integer || text[0] == '-' {
		d.pos = at
		return 0, d.errorf("expected a non-negative integer, got %s", text)
	}
	v, err := strconv.ParseUint(string(text), 10, 64)
	if err != nil {
		d.pos = at
		return 0, d.errorf("integer %s out of range", text)
	}
	return v, nil
}

// float decodes a number; null is 0.
func (d *decoder) float() (float64, error) {
	if d.null() {
		return 0, nil
	}
	at := d.pos
	text, _, err := d.number()
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseFloat(string(text), 64)
	if err != nil {
		d.pos = at
		return 0, d.errorf("number %s out of range", text)
	}
	return v, nil
}

// boolean decodes true or false; null is false.
func (d *decoder) boolean() (bool, error) {
	rest := d.data[d.pos:]
	switch {
	case bytes.HasPrefix(rest, []byte("true")):
		d.pos += 4
		return true, nil
	case bytes.HasPrefix(rest, []byte("false")):
		d.pos += 5
		return false, nil
	case d.null():
		return false, nil
	}
	return false, d.errorf("expected true or false")
}

// time decodes an RFC 3339 time, returned in UTC; null is the zero time.
func (d *decoder) time() (time.Time, error) {
	at := d.pos
	s, err := d.strBytes()
	if err != nil || s == nil {
		return time.Time{}, err
	}
	t, err := time.Parse(time.RFC3339Nano, string(s))
	if err != nil {
		d.pos = at
		return time.Time{}, d.errorf("time %q is not RFC 3339", s)
	}
	t = t.UTC()
	if y := t.Year(); y < 0 || y > 9999 {
		d.pos = at
		return time.Time{}, d.errorf("time %q outside years 0-9999", s)
	}
	return t, nil
}

// skip consumes one JSON value of any type, checking its syntax.
func (d *decoder) skip(depth int) error {
	if depth > maxDepth {
		return d.errorf("nested deeper than %d", maxDepth)
	}
	switch c := d.peek(); {
	case c == '"':
		_, err := d.strBytes()
		return err
	case c == '-' || ('0' <= c && c <= '9'):
		_, _, err := d.number()
		return err
	case c == 't' || c == 'f':
		_, err := d.boolean()
		return err
	case c == 'n':
		if !d.null() {
			return d.errorf("expected a value")
		}
		return nil
	case c == '[':
		d.pos++
		if d.consume(']') {
			return nil
		}
		for {
			d.ws()
			if err := d.skip(depth + 1); err != nil {
				return err
			}
			if d.consume(',') {
				continue
			}
			if d.consume(']') {
				return nil
			}
			return d.errorf("expected ',' or ']'")
		}
	case c == '{':
		d.pos++
		var f fields
		for {
			_, ok, err := f.next(d)
			if err != nil || !ok {
				return err
			}
			if err := d.skip(depth + 1); err != nil {
				return err
			}
		}
	}
	return d.errorf("expected a value")
}

// findVersion looks, leniently, for a top-level "v" holding an integer, so
// that an event from a newer schema is reported as such even when it also
// has fields or kinds this build does not know.
func findVersion(data []byte) (int64, bool) {
	d := decoder{data: data}
	if !d.consume('{') {
		return 0, false
	}
	var f fields
	for {
		key, ok, err := f.next(&d)
		if err != nil || !ok {
			return 0, false
		}
		if string(key) == "v" {
			v, err := d.int(32)
			return v, err == nil
		}
		if d.skip(0) != nil {
			return 0, false
		}
	}
}

// object decodes a nested object whose fields fn handles (returning the
// field's index, or -1 for an unknown key); null leaves it absent (present
// is false).
func (d *decoder) object(fn func(key []byte) (int, error)) (present bool, err error) {
	if d.null() {
		return false, nil
	}
	if !d.consume('{') {
		return false, d.errorf("expected an object")
	}
	var f fields
	for {
		key, ok, err := f.next(d)
		if err != nil || !ok {
			return true, err
		}
		at := d.pos
		i, err := fn(key)
		if err != nil {
			return true, err
		}
		if i < 0 {
			return true, fmt.Errorf("%w: object has no field %q", ErrUnknownField, key)
		}
		if err := f.mark(d, at, key, i); err != nil {
			return true, err
		}
	}
}

// The payloads' field decoders return the field's index (for duplicate
// detection) or -1 for a key the payload does not have.

func (p *CmdRun) payload() Payload { return *p }

func (p *CmdRun) decodeField(key []byte, d *decoder) (i int, err error) {
	switch string(key) {
	case "command":
		p.Command, err = d.str()
		return 0, err
	case "is_input":
		p.IsInput, err = d.boolean()
		return 1, err
	case "timeout_s":
		p.TimeoutS, err = d.float()
		return 2, err
	case "reset":
		p.Reset, err = d.boolean()
		return 3, err
	}
	return -1, nil
}

func (p *Message) payload() Payload { return *p }

func (p *Message) decodeField(key []byte, d *decoder) (i int, err error) {
	if string(key) == "text" {
		p.Text, err = d.str()
		return 0, err
	}
	return -1, nil
}

func (p *Finish) payload() Payload { return *p }

func (p *Finish) decodeField(key []byte, d *decoder) (i int, err error) {
	if string(key) == "message" {
		p.Message, err = d.str()
		return 0, err
	}
	return -1, nil
}

func (p *Delegate) payload() Payload { return *p }

func (p *Delegate) decodeField(key []byte, d *decoder) (i int, err error) {
	switch string(key) {
	case "agent":
		p.Agent, err = d.str()
		return 0, err
	case "task":
		p.Task, err = d.str()
		return 1, err
	}
	return -1, nil
}

func (p *CmdOutput) payload() Payload { return *p }

func (p *CmdOutput) decodeField(key []byte, d *decoder) (i int, err error) {
	var n int64
	switch string(key) {
	case "exit_code":
		n, err = d.int(strconv.IntSize)
		p.ExitCode = int(n)
		return 0, err
	case "cwd":
		p.Cwd, err = d.str()
		return 1, err
	case "output":
		p.Output, err = d.str()
		return 2, err
	case "trimmed":
		var t Trimmed
		present, err := d.object(func(key []byte) (int, error) { return t.decodeField(key, d) })
		if present && err == nil {
			p.Trimmed = &t
		}
		return 3, err
	case "duration_ms":
		p.DurationMS, err = d.int(64)
		return 4, err
	case "timed_out":
		p.TimedOut, err = d.boolean()
		return 5, err
	case "pid":
		n, err = d.int(strconv.IntSize)
		p.PID = int(n)
		return 6, err
	case "note":
		p.Note, err = d.str()
		return 7, err
	case "shell_rebuilt":
		p.ShellRebuilt, err = d.boolean()
		return 8, err
	}
	return -1, nil
}

func (t *Trimmed) decodeField(key []byte, d *decoder) (i int, err error) {
	var n int64
	switch string(key) {
	case "lines_total":
		n, err = d.int(strconv.IntSize)
		t.LinesTotal = int(n)
		return 0, err
	case "lines_omitted":
		n, err = d.int(strconv.IntSize)
		t.LinesOmitted = int(n)
		return 1, err
	case "bytes_omitted":
		t.BytesOmitted, err = d.int(64)
		return 2, err
	case "output_id":
		t.OutputID, err = d.str()
		return 3, err
	}
	return -1, nil
}

func (p *InvalidAction) payload() Payload { return *p }

func (p *InvalidAction) decodeField(key []byte, d *decoder) (i int, err error) {
	switch string(key) {
	case "reason":
		p.Reason, err = d.str()
		return 0, err
	case "guidance":
		p.Guidance, err = d.str()
		return 1, err
	}
	return -1, nil
}

func (p *HookVeto) payload() Payload { return *p }

func (p *HookVeto) decodeField(key []byte, d *decoder) (i int, err error) {
	switch string(key) {
	case "hook":
		p.Hook, err = d.str()
		return 0, err
	case "reason":
		p.Reason, err = d.str()
		return 1, err
	}
	return -1, nil
}

func (p *AgentCrashed) payload() Payload { return *p }

func (p *AgentCrashed) decodeField(key []byte, d *decoder) (i int, err error) {
	if string(key) == "reason" {
		p.Reason, err = d.str()
		return 0, err
	}
	return -1, nil
}

func (p *SandboxStarted) payload() Payload { return *p }

func (p *SandboxStarted) decodeField(key []byte, d *decoder) (i int, err error) {
	switch string(key) {
	case "driver":
		p.Driver, err = d.str()
		return 0, err
	case "sandbox_id":
		p.SandboxID, err = d.str()
		return 1, err
	case "workdir":
		p.Workdir, err = d.str()
		return 2, err
	}
	return -1, nil
}

func (p *SandboxStopped) payload() Payload { return *p }

func (p *SandboxStopped) decodeField(key []byte, d *decoder) (i int, err error) {
	switch string(key) {
	case "sandbox_id":
		p.SandboxID, err = d.str()
		return 0, err
	case "reason":
		p.Reason, err = d.str()
		return 1, err
	}
	return -1, nil
}

func (p *NetConnect) payload() Payload { return *p }

func (p *NetConnect) decodeField(key []byte, d *decoder) (i int, err error) {
	var n int64
	switch string(key) {
	case "method":
		p.Method, err = d.str()
		return 0, err
	case "host":
		p.Host, err = d.str()
		return 1, err
	case "port":
		n, err = d.int(32)
		p.Port = int(n)
		return 2, err
	case "allowed":
		p.Allowed, err = d.boolean()
		return 3, err
	case "reason":
		p.Reason, err = d.str()
		return 4, err
	case "status":
		n, err = d.int(32)
		p.Status = int(n)
		return 5, err
	case "closed":
		p.Closed, err = d.boolean()
		return 6, err
	case "bytes_up":
		p.BytesUp, err = d.int(64)
		return 7, err
	case "bytes_down":
		p.BytesDown, err = d.int(64)
		return 8, err
	}
	return -1, nil
}
