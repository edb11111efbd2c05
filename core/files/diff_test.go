package files

import (
	"fmt"
	"strings"
	"testing"
)

// apply applies a diff made by unifiedDiff to a, as patch would.
func apply(a, diff string) (string, error) {
	if diff == "" {
		return a, nil
	}
	lines := strings.SplitAfter(diff, "\n")
	var start, count int
	if _, err := fmt.Sscanf(lines[2], "@@ -%d,%d", &start, &count); err != nil {
		count = 1
		if _, err := fmt.Sscanf(lines[2], "@@ -%d", &start); err != nil {
			return "", fmt.Errorf("hunk header %q: %w", lines[2], err)
		}
	}
	n := start - 1 // lines before the hunk
	if count == 0 {
		n = start
	}
	al := diffLines(a)
	out := append([]string(nil), al[:n]...)
	i, prev := n, byte(0)
	for _, l := range lines[3:] {
		switch {
		case l == "":
		case strings.HasPrefix(l, "\\ No newline"):
			if prev == ' ' || prev == '+' {
				out[len(out)-1] = strings.TrimSuffix(out[len(out)-1], "\n")
			}
		default:
			prev = l[0]
			if prev == ' ' || prev == '-' {
				if i >= len(al) || strings.TrimSuffix(al[i], "\n") != strings.TrimSuffix(l[1:], "\n") {
					return "", fmt.Errorf("line %d: %q does not match", i+1, l)
				}
				i++
			}
			if prev == ' ' || prev == '+' {
				out = append(out, l[1:])
			}
		}
	}
	return strings.Join(append(out, al[i:]...), ""), nil
}

func FuzzUnifiedDiff(f *testing.F) {
	for _, c := range [][2]string{
		{"a\nb\nc\n", "a\nB\nc\n"}, {"", "x\n"}, {"x", ""}, {"a\nb", "a\nb\n"}, {"a\n", "a\na\n"},
		{"1\n2\n3\n4\n5\n6\n7\n8\n9\n", "1\n2\n3\n4\nx\n6\n7\n8\n9\n"}, {"a\nb\n", "b\n"},
	} {
		f.Add(c[0], c[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		d := unifiedDiff("/p", []byte(a), []byte(b), true, true)
		if len(d) >= maxDiffBytes {
			return
		}
		got, err := apply(a, d)
		if err != nil || got != b {
			t.Fatalf("a %q b %q\ndiff:\n%s\napplied: %q %v", a, b, d, got, err)
		}
	})
}
