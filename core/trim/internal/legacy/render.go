package legacy

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// view is what is left of a stream once it has ended: the lines to show and
// the counts of the rest. Keeping it apart from the Trimmer lets tests build
// the same view naively and compare.
type view struct {
	head, kept, tail []line
	total            int   // lines in the output
	omitted          int   // lines not shown
	bytesOmit        int64 // their bytes
	matched          int   // middle lines containing a keyword, kept or not
	matching         bool  // keyword lines were looked for
}

// render returns the text a model sees and how many shown lines were cut.
//
// With nothing omitted the lines are shown as they came. Otherwise one
// placeholder line goes after the head, the kept keyword lines follow it,
// each prefixed "line N: " so the model can place it, then the tail. The
// placeholder says how much is missing, which line numbers it spans and
// where the full output is, so the model can ask for exactly those lines.
func (v *view) render(outputID string, spillFailed bool) (string, int) {
	size := 0
	for _, ls := range [][]line{v.head, v.kept, v.tail} {
		for i := range ls {
			size += len(ls[i].text) + 1
		}
	}
	var b strings.Builder
	b.Grow(size + 512)
	cut := 0
	write := func(l *line, prefix bool) {
		if prefix {
			b.WriteString("line ")
			b.WriteString(strconv.Itoa(l.no))
			b.WriteString(": ")
		}
		if writeLine(&b, l, outputID) {
			cut++
		}
	}
	for i := range v.head {
		write(&v.head[i], false)
	}
	trimmed := v.omitted > 0
	if trimmed {
		b.WriteString(v.placeholder(outputID, spillFailed))
		b.WriteByte('\n')
	}
	for i := range v.kept {
		write(&v.kept[i], trimmed)
	}
	for i := range v.tail {
		write(&v.tail[i], false)
	}
	return b.String(), cut
}

// placeholder returns the one line that stands for the omitted lines, e.g.
//
//	[... 99,920 of 100,001 lines (1,487,823 bytes) omitted: lines 41-99961 except 1 keyword line, kept below as "line N: text"; the last 40 lines follow it. Full output: output 0123456789abcdef0123456789abcdef ...]
//
// Counts carry thousands separators for reading; line numbers do not, so they
// can be passed back as they are.
func (v *view) placeholder(outputID string, spillFailed bool) string {
	first := len(v.head) + 1
	last := v.total - len(v.tail)
	var b strings.Builder
	b.WriteString("[... ")
	b.WriteString(commas(int64(v.omitted)))
	b.WriteString(" of ")
	b.WriteString(commas(int64(v.total)))
	b.WriteString(plural(v.total, " line", " lines"))
	b.WriteString(" (")
	b.WriteString(commas(v.bytesOmit))
	b.WriteString(plural(int(v.bytesOmit), " byte", " bytes"))
	b.WriteString(") omitted: ")
	if first == last {
		b.WriteString("line " + strconv.Itoa(first))
	} else {
		b.WriteString("lines " + strconv.Itoa(first) + "-" + strconv.Itoa(last))
	}
	switch k := len(v.kept); {
	case k > 0:
		b.WriteString(" except ")
		b.WriteString(commas(int64(k)))
		b.WriteString(plural(k, " keyword line", " keyword lines"))
		if v.matched > k {
			b.WriteString(" (the first " + commas(int64(k)) + " of " + commas(int64(v.matched)) + " matching)")
		}
		b.WriteString(`, kept below as "line N: text"`)
		if n := len(v.tail); n > 0 {
			b.WriteString("; the last ")
			b.WriteString(commas(int64(n)))
			b.WriteString(plural(n, " line follows", " lines follow"))
			b.WriteString(plural(k, " it", " them"))
		}
	case v.matching:
		b.WriteString(", none matching a keyword")
	}
	b.WriteString(". ")
	switch {
	case spillFailed:
		b.WriteString("The full output was not kept (saving it failed)")
	case outputID == "":
		b.WriteString("The full output was not kept")
	default:
		b.WriteString("Full output: output ")
		b.WriteString(outputID)
	}
	b.WriteString(" ...]")
	return b.String()
}

// writeLine writes l and its '\n', cutting it with a marker if it is longer
// than what was kept; it reports whether it cut. Invalid UTF-8 becomes
// U+FFFD, so Text is always valid and survives JSON unchanged.
func writeLine(b *strings.Builder, l *line, outputID string) bool {
	text := l.text
	cut := int64(len(text)) < l.size
	if cut {
		text = dropPartialRune(text)
	}
	if utf8.Valid(text) {
		b.Write(text)
	} else {
		b.WriteString(strings.ToValidUTF8(string(text), "\uFFFD"))
	}
	if cut {
		b.WriteString("… [line cut: ")
		b.WriteString(commas(int64(len(text))))
		b.WriteString(" of ")
		b.WriteString(commas(l.size))
		b.WriteString(" bytes shown")
		if outputID != "" {
			b.WriteString("; full line: output ")
			b.WriteString(outputID)
			b.WriteString(" line ")
			b.WriteString(strconv.Itoa(l.no))
		}
		b.WriteByte(']')
	}
	if l.nl {
		b.WriteByte('\n')
	}
	return cut
}

// dropPartialRune removes a rune that the cut at LineCap split, so a cut
// never turns a valid character into replacement characters.
func dropPartialRune(b []byte) []byte {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return b[:i]
			}
			return b
		}
	}
	return b
}

// commas formats n with thousands separators: 1088895 -> "1,088,895".
// Counts are never negative.
func commas(n int64) string {
	s := strconv.FormatInt(n, 10)
	if len(s) <= 3 || n < 0 {
		return s
	}
	b := make([]byte, 0, len(s)+len(s)/3)
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			b = append(b, ',')
		}
		b = append(b, s[i])
	}
	return string(b)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
