package terminal

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

const fuzzNonce = "0123456789abcdef01234567"

// scanAll runs the scanner over chunks the way the terminal does and
// returns the output and a description of every event.
func scanAll(t *testing.T, chunks [][]byte) (string, []string) {
	var out bytes.Buffer
	s := scanner{m: newMarkers(fuzzNonce), out: &out}
	var evs []string
	for _, c := range chunks {
		for b := c; ; {
			ev, meta, rest, err := s.feed(b)
			if err != nil {
				t.Fatal(err)
			}
			if ev == scanNone {
				break
			}
			evs = append(evs, fmt.Sprintf("%d@%d:%+v", ev, out.Len(), meta))
			b = rest
		}
	}
	return out.String(), evs
}

// FuzzScanner feeds arbitrary terminal bytes, with and without real
// markers, split at a fuzzed point and every 7 bytes after: the scanner must
// never panic, never let the nonce-carrying prefix through, and find the
// same output and prompts however the reads split the stream.
func FuzzScanner(f *testing.F) {
	m := newMarkers(fuzzNonce)
	prompt := string(m.prefix) + "p;1;0;braceexpand:monitor;97;'/tmp'\a"
	f.Add([]byte("hello\n"+prompt), 3)
	f.Add([]byte("a"+string(m.prefix)+"Z__b\a"+prompt+"after"), 20)
	f.Add([]byte(string(m.prefix)+"p;x;y\a"+"x"), 5)
	f.Add([]byte("out"+string(m.prefix)+"c\a"+"more"), 9)
	f.Add([]byte(string(m.prefix)+strings.Repeat("{", maxMeta+10)+"\a"+prompt), 1000)
	f.Add([]byte(string(m.prefix[:10])), 4)
	f.Add([]byte(string(m.prefix)+"p;3;1;;97;$'/a\\001b'\a"), 2)
	f.Fuzz(func(t *testing.T, data []byte, cut int) {
		whole, wholeEvs := scanAll(t, [][]byte{data})
		if cut < 0 {
			cut = -cut
		}
		if len(data) > 0 {
			cut %= len(data) + 1
		} else {
			cut = 0
		}
		chunks := [][]byte{data[:cut]}
		for rest := data[cut:]; len(rest) > 0; {
			n := min(7, len(rest))
			chunks = append(chunks, rest[:n])
			rest = rest[n:]
		}
		split, splitEvs := scanAll(t, chunks)
		if strings.Contains(whole, string(m.prefix)) || strings.Contains(split, string(m.prefix)) {
			t.Fatalf("marker prefix leaked into output")
		}
		if whole != split || fmt.Sprint(wholeEvs) != fmt.Sprint(splitEvs) {
			t.Fatalf("split at %d changed the result:\nwhole %q %v\nsplit %q %v", cut, whole, wholeEvs, split, splitEvs)
		}
		// Whatever came before (a forged prefix left open, a body cut
		// off), a real prompt after it is found: nothing a command
		// prints can hide the prompt that ends it.
		_, evs := scanAll(t, [][]byte{data, []byte(prompt)})
		want := fmt.Sprintf("%d@", scanPrompt)
		if len(evs) == 0 || !strings.HasPrefix(evs[len(evs)-1], want) || !strings.HasSuffix(evs[len(evs)-1], fmt.Sprintf(":%+v", promptMeta{N: 1, Opts: "braceexpand:monitor", PS1Len: 97, Cwd: "/tmp"})) {
			t.Fatalf("the real prompt after %q was not found: %v", data, evs)
		}
	})
}
