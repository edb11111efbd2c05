package files

import (
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
// absent side (aOK, bOK false) is /dev/null, as git writes it.
func unifiedDiff(p string, a, b []byte, aOK, bOK bool) string {
	al, bl := diffLines(string(a)), diffLines(string(b))
	pre := 0
	for pre < len(al) && pre < len(bl) && al[pre] == bl[pre] {
		pre++
	}
	suf := 0
	for suf < len(al)-pre && suf < len(bl)-pre && al[len(al)-1-suf] == bl[len(bl)-1-suf] {
		suf++
	}
	if pre == len(al) && pre == len(bl) && aOK == bOK {
		return ""
	}
	from, to := "a"+p, "b"+p
	if !aOK {
		from = "/dev/null"
	}
	if !bOK {
		to = "/dev/null"
	}
	start := max(0, pre-diffContext)
	aEnd := min(len(al), len(al)-suf+diffContext)
	bEnd := min(len(bl), len(bl)-suf+diffContext)
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n@@ -%s +%s @@\n", from, to, hunkRange(start, aEnd-start), hunkRange(start, bEnd-start))
	for _, l := range al[start:pre] {
		line(&out, ' ', l)
	}
	for _, l := range al[pre : len(al)-suf] {
		line(&out, '-', l)
	}
	for _, l := range bl[pre : len(bl)-suf] {
		line(&out, '+', l)
	}
	for _, l := range al[len(al)-suf : aEnd] {
		line(&out, ' ', l)
	}
	if out.Len() > maxDiffBytes {
		s := out.String()[:maxDiffBytes]
		return s[:strings.LastIndexByte(s, '\n')+1] + fmt.Sprintf("[diff cut at %d bytes]\n", maxDiffBytes)
	}
	return out.String()
}

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
