package terminal

import (
	"fmt"
	"strings"
	"testing"
)

// TestScannerBodies checks how marker bodies are read: a cwd may hold ';'
// and be longer than maxMeta, and a body that is not well-formed lets the
// output after it through at once.
func TestScannerBodies(t *testing.T) {
	m := newMarkers(fuzzNonce)
	pre := string(m.prefix)
	deep := "/" + strings.Repeat("x", maxMeta+100)
	tests := []struct {
		name, in, out string
		evs           []string
	}{
		{"semicolon in cwd", pre + "p;2;0;monitor;97;'/a;b'\a", "",
			[]string{fmt.Sprintf("%d@0:%+v", scanPrompt, promptMeta{N: 2, Opts: "monitor", PS1Len: 97, Cwd: "/a;b"})}},
		{"continuation", "x" + pre + "c\ay", "xy", []string{fmt.Sprintf("%d@1:%+v", scanPS2, promptMeta{})}},
		{"unexpanded PS1", pre + "p;4;" + unexpanded + "\a" + "z", "z", []string{fmt.Sprintf("%d@0:%+v", scanBad, promptMeta{})}},
		{"cwd longer than maxMeta", "a" + pre + "p;3;1;;97;'" + deep + "'\a" + "b", "ab",
			[]string{fmt.Sprintf("%d@1:%+v", scanPrompt, promptMeta{N: 3, ExitCode: 1, PS1Len: 97, CwdCut: true})}},
		{"unterminated forged marker", pre + "p;after\n" + pre + "p;5;5;;97;'/t'\a", "p;after\n",
			[]string{fmt.Sprintf("%d@8:%+v", scanPrompt, promptMeta{N: 5, ExitCode: 5, PS1Len: 97, Cwd: "/t"})}},
		{"forged header, output in the cwd", pre + "p;1;0;;97;'/x\nmore\n", "p;1;0;;97;'/x\nmore\n", nil},
		{"long forged header, not a cwd", pre + "p;1;0;;97;'" + deep + "\nmore", "\nmore", nil},
		{"long, a number out of range", pre + "p;9999999999999999999;0;;97;'" + deep + "'\a", "p;9999999999999999999;0;;97;'" + deep + "'\a", nil},
		{"ESC before a dropped prefix", "\x1b" + pre + "]7777;" + fuzzNonce + ";", "\x1b7777;" + fuzzNonce + ";", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, step := range []int{len(tc.in), 1, 4095} {
				var chunks [][]byte
				for in := []byte(tc.in); len(in) > 0; {
					n := min(step, len(in))
					chunks = append(chunks, in[:n])
					in = in[n:]
				}
				out, evs := scanAll(t, chunks)
				if out != tc.out || fmt.Sprint(evs) != fmt.Sprint(tc.evs) {
					t.Errorf("reads of %d: got %q %v, want %q %v", step, trim(out), evs, trim(tc.out), tc.evs)
				}
			}
		})
	}
}

func trim(s string) string {
	if len(s) > 200 {
		return s[:100] + "…" + s[len(s)-100:]
	}
	return s
}
