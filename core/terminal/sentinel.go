package terminal

import (
	"bytes"
	"encoding/json"
	"io"
)

// promptMeta is what the shell's prompt reports after every command.
type promptMeta struct {
	N        uint64 `json:"n"`
	ExitCode int    `json:"exit_code"`
	PID      int    `json:"pid"`
	Cwd      string `json:"cwd"`
}

// markers are the byte strings that frame the prompt. All share one prefix
// so the scanner looks for a single needle.
type markers struct {
	prefix []byte // "__HARNESS_<nonce>_"
	begin  []byte // prefix + "B__"
	end    []byte // prefix + "E__"
	ps2    []byte // prefix + "P__"
}

func newMarkers(nonce string) markers {
	p := "__HARNESS_" + nonce + "_"
	return markers{
		prefix: []byte(p),
		begin:  []byte(p + "B__"),
		end:    []byte(p + "E__"),
		ps2:    []byte(p + "P__"),
	}
}

// maxMeta bounds the bytes held between a begin and an end marker. A real
// prompt is a few hundred bytes; anything longer is not ours.
const maxMeta = 16 << 10

// scanEvent is what the scanner found in the stream.
type scanEvent int

const (
	scanNone   scanEvent = iota
	scanPrompt           // a complete PS1 with metadata
	scanPS2              // the continuation prompt
)

// scanner cuts prompt markers out of the raw PTY byte stream. Bytes that are
// not part of a marker go to out unchanged; a partial marker at the end of a
// chunk is held back until the next chunk decides it.
type scanner struct {
	m       markers
	out     io.Writer
	pending []byte // held back: a possible marker start, or a begin..end in progress
	inMeta  bool   // pending starts with a begin marker
}

// feed scans p. It stops at the first prompt or PS2 and returns the event,
// its metadata, and the unconsumed rest of p (bytes after the marker).
func (s *scanner) feed(p []byte) (scanEvent, promptMeta, []byte, error) {
	buf := p
	if len(s.pending) > 0 {
		s.pending = append(s.pending, p...)
		buf = s.pending
	}
	ev, meta, consumed, err := s.scan(buf)
	rest := buf[consumed:]
	if ev != scanNone {
		// Copy rest out: it may alias pending, which is reset below.
		rest = append([]byte(nil), rest...)
		s.pending = s.pending[:0]
		return ev, meta, rest, err
	}
	// Everything not consumed is held back.
	if len(s.pending) > 0 {
		n := copy(s.pending, rest)
		s.pending = s.pending[:n]
	} else {
		s.pending = append(s.pending, rest...)
	}
	return scanNone, promptMeta{}, nil, err
}

// scan consumes as much of buf as it can decide and reports how much.
func (s *scanner) scan(buf []byte) (scanEvent, promptMeta, int, error) {
	pos := 0
	for {
		if s.inMeta {
			body := buf[pos+len(s.m.begin):]
			i := bytes.Index(body, s.m.end)
			// A body longer than maxMeta is not a prompt of ours: let the
			// bytes through, minus the marker itself so the nonce never
			// leaks. The same verdict whether the end marker has arrived
			// or not, so it does not depend on how reads split the stream.
			if i > maxMeta || i < 0 && len(body) > maxMeta+len(s.m.end) {
				s.inMeta = false
				pos += len(s.m.begin)
				continue
			}
			if i < 0 {
				return scanNone, promptMeta{}, pos, nil
			}
			s.inMeta = false
			var meta promptMeta
			if json.Unmarshal(body[:i], &meta) != nil {
				// A corrupted marker is dropped, never trusted.
				pos += len(s.m.begin) + i + len(s.m.end)
				continue
			}
			return scanPrompt, meta, pos + len(s.m.begin) + i + len(s.m.end), nil
		}
		rest := buf[pos:]
		i := bytes.Index(rest, s.m.prefix)
		if i < 0 {
			keep := partialSuffix(rest, s.m.prefix)
			if _, err := s.out.Write(rest[:len(rest)-keep]); err != nil {
				return scanNone, promptMeta{}, len(buf) - keep, err
			}
			return scanNone, promptMeta{}, len(buf) - keep, nil
		}
		if i > 0 {
			if _, err := s.out.Write(rest[:i]); err != nil {
				return scanNone, promptMeta{}, pos + i, err
			}
		}
		pos += i
		tail := buf[pos:]
		switch {
		case bytes.HasPrefix(tail, s.m.begin):
			s.inMeta = true
		case bytes.HasPrefix(tail, s.m.ps2):
			return scanPS2, promptMeta{}, pos + len(s.m.ps2), nil
		case len(tail) < len(s.m.begin):
			return scanNone, promptMeta{}, pos, nil // undecided: wait for more
		default:
			// The prefix with an unknown tag: drop the prefix (it holds the
			// nonce) and go on.
			pos += len(s.m.prefix)
		}
	}
}

// partialSuffix reports the length of the longest suffix of b that is a
// proper prefix of needle, so a marker split across reads is not emitted.
func partialSuffix(b, needle []byte) int {
	n := len(needle) - 1
	if n > len(b) {
		n = len(b)
	}
	for ; n > 0; n-- {
		if bytes.HasPrefix(needle, b[len(b)-n:]) {
			return n
		}
	}
	return 0
}

// flush writes out what is held back when the caller gives up waiting for a
// prompt (a soft timeout), except a marker in progress, which stays.
func (s *scanner) flushPartial() error {
	if s.inMeta || len(s.pending) == 0 {
		return nil
	}
	if bytes.HasPrefix(s.m.prefix, s.pending) {
		return nil // may still become a marker
	}
	_, err := s.out.Write(s.pending)
	s.pending = s.pending[:0]
	return err
}

// reset forgets any partial state, for a new shell.
func (s *scanner) reset() {
	s.pending = s.pending[:0]
	s.inMeta = false
}
