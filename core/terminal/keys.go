package terminal

import "strings"

// namedKeys are the non-letter keys a model may send by name.
var namedKeys = map[string]byte{
	"C-[":    0x1b,
	"C-\\":   0x1c,
	"C-]":    0x1d,
	"C-@":    0x00,
	"ESC":    0x1b,
	"ESCAPE": 0x1b,
	"ENTER":  '\r',
	"TAB":    '\t',
}

// keyBytes maps a key name such as "C-c", "ctrl+d" or "^Z" to the byte the
// terminal sends for it. ok is false for ordinary text.
func keyBytes(s string) ([]byte, bool) {
	k := strings.ToUpper(strings.TrimSpace(s))
	if b, ok := namedKeys[k]; ok {
		return []byte{b}, true
	}
	for _, p := range []string{"C-", "CTRL-", "CTRL+", "^"} {
		rest, found := strings.CutPrefix(k, p)
		if !found || len(rest) != 1 {
			continue
		}
		if c := rest[0]; c >= 'A' && c <= 'Z' {
			return []byte{c - 'A' + 1}, true
		}
		if b, ok := namedKeys["C-"+rest]; ok {
			return []byte{b}, true
		}
	}
	return nil, false
}
