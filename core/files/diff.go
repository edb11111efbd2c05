package files

import (
	"bytes"
	"fmt"
	"strings"
)

// diffContext is how many unchanged lines frame a hunk.
const diffContext = 3

// maxDiffBytes bounds the diff an event records; a longer one is cut
// with a note (the edit itself is not).
const maxDiffBytes = 64 << 10

// unifiedDiff is the diff of a to b as one hunk, between their common
// first and last lines. A file edit changes one region, for which this is
// exact; for an overwrite or an undo it may show more than the least. An
// absent side (aOK, bOK false) is /dev/null, as git writes it. It works
// on bytes and splits only the hunk into lines: an edit of a big file
// costs a scan, not a line array.
func unifiedDiff(p string, a, b []byte, aOK, bOK bool) string {
	// The common prefix, back to a line start.
	n := 0
	for n+256 <= len(a) && n+256 <= len(b) && bytes.Equal(a[n:n+256], b[n:n+256]) {
		n += 256
	}
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	pre := bytes.LastIndexByte(a[:n], '\n') + 1
	if n == len(a) && n == len(b) {
		if aOK == bOK {
			return ""
		}
		pre = 0
	}
	// The common suffix after it, forward to a line start in both.
	m := 0
	for m+256 <= len(a)-pre && m+256 <= len(b)-pre && bytes.Equal(a[len(a)-m-256:len(a)-m], b[len(b)-m-256:len(b)-m]) {
		m += 256
	}
	for m < len(a)-pre && m < len(b)-pre && a[len(a)-1-m] == b[len(b)-1-m] {
		m++
	}
	sa, sb := len(a)-m, len(b)-m
	for !(lineStart(a, sa) && lineStart(b, sb)) {
		sa++
		sb++
	}
	// Context: up to diffContext lines either side.
	cs := pre
	for i := 0; i < diffContext && cs > 0; i++ {
		cs = bytes.LastIndexByte(a[:cs-1], '\n') + 1
	}
	ce := sa
	for i := 0; i < diffContext && ce < len(a); i++ {
		if j := bytes.IndexByte(a[ce:], '\n'); j >= 0 {
			ce += j + 1
		} else {
			ce = len(a)
		}
	}
	before, removed, added, after := diffLines(string(a[cs:pre])), diffLines(string(a[pre:sa])), diffLines(string(b[pre:sb])), diffLines(string(a[sa:ce]))
	first := bytes.Count(a[:cs], []byte{'\n'})
	from, to := "a"+p, "b"+p
	if !aOK {
		from = "/dev/null"
	}
	if !bOK {
		to = "/dev/null"
	}
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n@@ -%s +%s @@\n", from, to,
		hunkRange(first, len(before)+len(removed)+len(after)), hunkRange(first, len(before)+len(added)+len(after)))
	for _, l := range before {
		line(&out, ' ', l)
	}
	for _, l := range removed {
		line(&out, '-', l)
	}
	for _, l := range added {
		line(&out, '+', l)
	}
	for _, l := range after {
		line(&out, ' ', l)
	}
	if out.Len() > maxDiffBytes {
		s := out.String()[:maxDiffBytes]
		return s[:strings.LastIndexByte(s, '\n')+1] + fmt.Sprintf("[diff cut at %d bytes]\n", maxDiffBytes)
	}
	return out.String()
}

// lineStart reports whether offset i of s starts a line.
func lineStart(s []byte, i int) bool { return i == 0 || i >= len(s) || s[i-1] == '\n' }

// diffLines splits text into lines keeping their newlines, so that a
// last line without one differs from the same line with one.
func diffLines(s string) []string {
	var out []string
	for s != "" {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}

func line(b *strings.Builder, mark byte, l string) {
	b.WriteByte(mark)
	b.WriteString(l)
	if !strings.HasSuffix(l, "\n") {
		b.WriteString("\n\\ No newline at end of file\n")
	}
}

// hunkRange is "start,count" as diff -u writes it (1-based; an empty
// range names the line before it).
func hunkRange(start, n int) string {
	if n == 0 {
		return fmt.Sprintf("%d,0", start)
	}
	if n == 1 {
		return fmt.Sprint(start + 1)
	}
	return fmt.Sprintf("%d,%d", start+1, n)
}
