package event

import (
	"fmt"
	"math"
	"strconv"
	"time"
	"unicode/utf8"
)

// The codec is written by hand rather than with encoding/json for three
// reasons: the JSON form is flat (payload fields beside the envelope's),
// decoding must be strict in ways encoding/json is not (it matches keys
// case-insensitively and lets a duplicate key win silently), and replaying a
// long session decodes every event, so the codec is on the hot path.

// MarshalJSON encodes e in its flat JSON form. It implements json.Marshaler.
func (e Event) MarshalJSON() ([]byte, error) { return e.AppendJSON(nil) }

// AppendJSON appends e's flat JSON form to b, without a trailing newline.
// Envelope fields that are zero are left out, except kind. It fails with
// ErrInvalid for an event that cannot be written.
func (e Event) AppendJSON(b []byte) ([]byte, error) {
	if e.Payload == nil {
		return b, fmt.Errorf("%w: event has no payload", ErrInvalid)
	}
	if e.V < 0 || e.V > Version {
		return b, fmt.Errorf("%w: schema version %d (this build writes %d)", ErrInvalid, e.V, Version)
	}
	if e.Source != "" && !e.Source.Valid() {
		return b, fmt.Errorf("%w: source %q", ErrInvalid, e.Source)
	}
	o := object{b: append(b, '{')}
	if e.V != 0 {
		o.key("v")
		o.b = strconv.AppendInt(o.b, int64(e.V), 10)
	}
	if e.Session != "" {
		o.key("session")
		o.b = appendString(o.b, e.Session)
	}
	if e.Seq != 0 {
		o.key("seq")
		o.b = strconv.AppendUint(o.b, e.Seq, 10)
	}
	if !e.Time.IsZero() {
		var err error
		o.key("time")
		if o.b, err = appendTime(o.b, e.Time); err != nil {
			return b, err
		}
	}
	if e.Source != "" {
		o.key("source")
		o.b = appendString(o.b, string(e.Source))
	}
	if e.Cause != 0 {
		o.key("cause")
		o.b = strconv.AppendUint(o.b, e.Cause, 10)
	}
	o.key("kind")
	o.b = appendString(o.b, string(e.Payload.Kind()))
	out, err := e.Payload.appendFields(o.b)
	if err != nil {
		return b, err
	}
	return append(out, '}'), nil
}

// object writes the envelope's fields, a comma before all but the first.
type object struct {
	b []byte
	n int
}

func (o *object) key(k string) {
	if o.n > 0 {
		o.b = append(o.b, ',')
	}
	o.n++
	o.b = append(o.b, '"')
	o.b = append(o.b, k...)
	o.b = append(o.b, '"', ':')
}

// Payload fields always follow "kind", so each starts with a comma.

func fieldString(b []byte, k, v string) []byte {
	b = append(b, ',', '"')
	b = append(b, k...)
	b = append(b, '"', ':')
	return appendString(b, v)
}

func fieldInt(b []byte, k string, v int64) []byte {
	b = append(b, ',', '"')
	b = append(b, k...)
	b = append(b, '"', ':')
	return strconv.AppendInt(b, v, 10)
}

func fieldBool(b []byte, k string, v bool) []byte {
	b = append(b, ',', '"')
	b = append(b, k...)
	b = append(b, '"', ':')
	return strconv.AppendBool(b, v)
}

func appendTime(b []byte, t time.Time) ([]byte, error) {
	t = t.UTC()
	if y := t.Year(); y < 0 || y > 9999 {
		return b, fmt.Errorf("%w: time %v outside years 0-9999", ErrInvalid, t)
	}
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"'), nil
}

// appendFloat writes f as encoding/json does: plain notation for the
// ordinary range, exponent notation outside it, shortest exact form.
func appendFloat(b []byte, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return b, fmt.Errorf("%w: number %v", ErrInvalid, f)
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// 1e-07 -> 1e-7, as encoding/json writes it.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, nil
}

const hexDigits = "0123456789abcdef"

// appendString writes s as a JSON string. Invalid UTF-8 becomes U+FFFD, as
// encoding/json does, so everything written is valid UTF-8 and decodes to
// what a second encoding writes again. Unlike encoding/json it does not
// escape <, > and &: events are not embedded in HTML.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		// U+2028 and U+2029 end lines in JavaScript; escape them so a
		// stream of events is safe to hand to a browser, as encoding/json
		// does.
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

func (p CmdRun) appendFields(b []byte) ([]byte, error) {
	b = fieldString(b, "command", p.Command)
	if p.IsInput {
		b = fieldBool(b, "is_input", true)
	}
	if p.TimeoutS != 0 {
		b = append(b, `,"timeout_s":`...)
		var err error
		if b, err = appendFloat(b, p.TimeoutS); err != nil {
			return b, fmt.Errorf("cmd_run timeout_s: %w", err)
		}
	}
	if p.Reset {
		b = fieldBool(b, "reset", true)
	}
	return b, nil
}

func (p Message) appendFields(b []byte) ([]byte, error) {
	return fieldString(b, "text", p.Text), nil
}

func (p Finish) appendFields(b []byte) ([]byte, error) {
	if p.Message != "" {
		b = fieldString(b, "message", p.Message)
	}
	return b, nil
}

func (p Delegate) appendFields(b []byte) ([]byte, error) {
	b = fieldString(b, "agent", p.Agent)
	return fieldString(b, "task", p.Task), nil
}

func (p CmdOutput) appendFields(b []byte) ([]byte, error) {
	b = fieldInt(b, "exit_code", int64(p.ExitCode))
	b = fieldString(b, "cwd", p.Cwd)
	b = fieldString(b, "output", p.Output)
	if t := p.Trimmed; t != nil {
		b = append(b, `,"trimmed":{"lines_total":`...)
		b = strconv.AppendInt(b, int64(t.LinesTotal), 10)
		b = fieldInt(b, "lines_omitted", int64(t.LinesOmitted))
		b = fieldInt(b, "bytes_omitted", t.BytesOmitted)
		b = fieldString(b, "output_id", t.OutputID)
		b = append(b, '}')
	}
	b = fieldInt(b, "duration_ms", p.DurationMS)
	if p.TimedOut {
		b = fieldBool(b, "timed_out", true)
	}
	if p.PID != 0 {
		b = fieldInt(b, "pid", int64(p.PID))
	}
	if p.Note != "" {
		b = fieldString(b, "note", p.Note)
	}
	if p.ShellRebuilt {
		b = fieldBool(b, "shell_rebuilt", true)
	}
	return b, nil
}

func (p InvalidAction) appendFields(b []byte) ([]byte, error) {
	b = fieldString(b, "reason", p.Reason)
	if p.Guidance != "" {
		b = fieldString(b, "guidance", p.Guidance)
	}
	return b, nil
}

func (p HookVeto) appendFields(b []byte) ([]byte, error) {
	b = fieldString(b, "hook", p.Hook)
	return fieldString(b, "reason", p.Reason), nil
}

func (p AgentCrashed) appendFields(b []byte) ([]byte, error) {
	return fieldString(b, "reason", p.Reason), nil
}

func (p SandboxStarted) appendFields(b []byte) ([]byte, error) {
	b = fieldString(b, "driver", p.Driver)
	if p.SandboxID != "" {
		b = fieldString(b, "sandbox_id", p.SandboxID)
	}
	if p.Workdir != "" {
		b = fieldString(b, "workdir", p.Workdir)
	}
	return b, nil
}

func (p SandboxStopped) appendFields(b []byte) ([]byte, error) {
	if p.SandboxID != "" {
		b = fieldString(b, "sandbox_id", p.SandboxID)
	}
	if p.Reason != "" {
		b = fieldString(b, "reason", p.Reason)
	}
	return b, nil
}

func (p NetConnect) appendFields(b []byte) ([]byte, error) {
	if p.Method != "" {
		b = fieldString(b, "method", p.Method)
	}
	b = fieldString(b, "host", p.Host)
	if p.Port != 0 {
		b = fieldInt(b, "port", int64(p.Port))
	}
	b = fieldBool(b, "allowed", p.Allowed)
	if p.Reason != "" {
		b = fieldString(b, "reason", p.Reason)
	}
	if p.Status != 0 {
		b = fieldInt(b, "status", int64(p.Status))
	}
	if p.Closed {
		b = fieldBool(b, "closed", true)
	}
	if p.BytesUp != 0 {
		b = fieldInt(b, "bytes_up", p.BytesUp)
	}
	if p.BytesDown != 0 {
		b = fieldInt(b, "bytes_down", p.BytesDown)
	}
	return b, nil
}
