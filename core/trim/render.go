package trim

import (
	"bytes"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// render chooses the middle lines that fit the budget besides the head,
// the tail and the placeholder, and writes the text a model sees:
//
//	head lines
//	[... placeholder ...]
//	line N: a kept middle line
//	…
//	tail lines
//
// In each part, runs of four or more consecutive lines that differ only
// in their numbers show their first and last line around a marker.
func (t *Trimmer) render(outputID string) Result {
	head := t.heads
	tail := t.tailLines()
	reserve := 0
	for range 64 {
		mid := t.choose(t.maxChars - reserve - t.partLen(head, outputID) - t.partLen(tail, outputID))
		r := t.compose(head, mid, tail, outputID, false)
		over := runeCount(r.Text) - t.maxChars
		if over <= 0 {
			return r
		}
		if len(mid) > 0 {
			reserve += over
			continue
		}
		// The head and tail alone do not fit with the placeholder: give
		// up lines, from the tail's start, then the head's end.
		switch {
		case len(tail) > 0:
			tail = tail[1:]
		case len(head) > 0:
			head = head[:len(head)-1]
		default:
			return t.compose(nil, nil, nil, outputID, true)
		}
	}
	return t.compose(nil, nil, nil, outputID, true)
}

// partLen is the length of a part as rendered.
func (t *Trimmer) partLen(ls []line, outputID string) int {
	var b bytes.Buffer
	writeRuns(&b, ls, false, outputID, nil)
	return b.Len()
}

// choose picks middle lines worth at most budget bytes: the blocks by
// score (and, among equals, the earliest first), each block's most
// important lines first across all blocks, then the next, so that every
// failure is named before any is explained at length.
func (t *Trimmer) choose(budget int) []line {
	cands := slices.Clone(t.mid.cands)
	slices.SortStableFunc(cands, func(a, b *block) int {
		if a.score != b.score {
			return b.score - a.score
		}
		return a.lines[a.trig].no - b.lines[b.trig].no
	})
	for _, b := range cands {
		for i := range b.lines {
			b.lines[i].sel = false
		}
	}
	used, n := 0, 0
	for lv := uint8(0); lv <= 3; lv++ {
		for _, b := range cands {
			if lv > 0 && !b.lines[b.trig].sel {
				continue
			}
			for i := range b.lines {
				l := &b.lines[i]
				if l.imp != lv || l.sel || n >= t.maxKeep {
					continue
				}
				c := len("line : ") + len(strconv.Itoa(l.no)) + t.cost(l.size)
				if i == b.trig && b.similar > 0 {
					c += len(similarMarker(b))
				}
				if used+c > budget {
					continue
				}
				l.sel = true
				used += c
				n++
			}
		}
	}
	var out []line
	for _, b := range cands {
		for i := range b.lines {
			if b.lines[i].sel {
				out = append(out, b.lines[i].line)
			}
		}
	}
	slices.SortFunc(out, func(a, b line) int { return a.no - b.no })
	return out
}

// similarMarker is the line after a kept block's trigger that counts the
// blocks alike that were not kept.
func similarMarker(b *block) string {
	if b.simAdjacent && b.lines[b.trig].no+1 == b.simFirst && len(b.lines) == 1 {
		return "… " + commas(int64(b.similar)) + plural(b.similar, " similar line", " similar lines") +
			" (" + span(b.simFirst, b.simLast) + ") omitted\n"
	}
	return "… " + commas(int64(b.similar)) + plural(b.similar, " more like it", " more like it") +
		" omitted, lines " + strconv.Itoa(b.simFirst) + " to " + strconv.Itoa(b.simLast) + "\n"
}

func span(a, b int) string {
	if a == b {
		return strconv.Itoa(a)
	}
	return strconv.Itoa(a) + "-" + strconv.Itoa(b)
}

// compose writes the text and counts the result. bare drops the range list
// from the placeholder, for budgets too small for it.
func (t *Trimmer) compose(head, mid, tail []line, outputID string, bare bool) Result {
	var shown []*line
	var hb, mb, tb bytes.Buffer
	cut := 0
	cut += writeRuns(&hb, head, false, outputID, &shown)
	markers := map[int]string{}
	for _, b := range t.mid.cands {
		if b.similar > 0 && b.lines[b.trig].sel {
			markers[b.lines[b.trig].no] = similarMarker(b)
		}
	}
	cut += writeMiddle(&mb, mid, outputID, markers, &shown)
	cut += writeRuns(&tb, tail, false, outputID, &shown)

	r := Result{LinesTotal: t.lines, BytesTotal: t.total, OutputID: outputID, LinesCut: cut, KeptKeyword: 0}
	shownBytes := int64(0)
	for _, l := range shown {
		shownBytes += l.bytes()
	}
	for _, l := range mid {
		if slices.ContainsFunc(shown, func(s *line) bool { return s.no == l.no }) {
			r.KeptKeyword++
		}
	}
	r.LinesOmitted = t.lines - len(shown)
	r.BytesOmitted = t.total - shownBytes
	r.Trimmed = r.LinesOmitted > 0
	var b strings.Builder
	b.Grow(hb.Len() + mb.Len() + tb.Len() + 512)
	b.Write(hb.Bytes())
	if r.Trimmed {
		b.WriteString(t.placeholder(&r, shown, mid, bare))
		b.WriteByte('\n')
	}
	b.Write(mb.Bytes())
	b.Write(tb.Bytes())
	r.Text = b.String()
	return r
}

// writeMiddle writes the kept middle lines as "line N: text", with the
// similar-blocks markers after their triggers.
func writeMiddle(b *bytes.Buffer, mid []line, outputID string, markers map[int]string, shown *[]*line) int {
	cut := 0
	for i := 0; i < len(mid); {
		// A run of consecutive, alike lines.
		j := i + 1
		for j < len(mid) && mid[j].no == mid[j-1].no+1 && shapeEqual(mid[j].text, mid[i].text) && !mid[j].cut() {
			j++
		}
		if j-i >= 4 {
			cut += writeNumbered(b, &mid[i], outputID, shown)
			b.WriteString("… " + commas(int64(j-i-2)) + " similar lines (" + span(mid[i+1].no, mid[j-2].no) + ") omitted\n")
			cut += writeNumbered(b, &mid[j-1], outputID, shown)
			i = j
			continue
		}
		cut += writeNumbered(b, &mid[i], outputID, shown)
		if m, ok := markers[mid[i].no]; ok {
			b.WriteString(m)
		}
		i++
	}
	return cut
}

func writeNumbered(b *bytes.Buffer, l *line, outputID string, shown *[]*line) int {
	b.WriteString("line ")
	b.WriteString(strconv.Itoa(l.no))
	b.WriteString(": ")
	*shown = append(*shown, l)
	if writeLine(b, l, outputID) {
		return 1
	}
	return 0
}

// writeRuns writes lines as they came, folding runs of four or more
// consecutive lines alike into first line, marker, last line. It returns
// how many lines it cut, and adds the lines it showed to shown.
func writeRuns(b *bytes.Buffer, ls []line, _ bool, outputID string, shown *[]*line) int {
	cut := 0
	show := func(l *line) {
		if shown != nil {
			*shown = append(*shown, l)
		}
		if writeLine(b, l, outputID) {
			cut++
		}
	}
	for i := 0; i < len(ls); {
		j := i + 1
		for j < len(ls) && ls[j].nl && !ls[j].cut() && shapeEqual(ls[j].text, ls[i].text) {
			j++
		}
		if j-i >= 4 {
			show(&ls[i])
			b.WriteString("… " + commas(int64(j-i-2)) + " similar lines (" + span(ls[i+1].no, ls[j-2].no) + ") omitted\n")
			show(&ls[j-1])
			i = j
			continue
		}
		show(&ls[i])
		i++
	}
	return cut
}

// placeholder returns the one line that stands for the omitted lines, e.g.
//
//	[... 99,914 of 100,001 lines (1,487,732 bytes) omitted: lines 41-50000, 50003-99961; 2 middle lines follow as "line N: text". Read them: harnessd output 7f3a… --lines 41-99961 ...]
//
// Counts carry thousands separators for reading; line numbers do not, so
// they can be passed back as they are.
func (t *Trimmer) placeholder(r *Result, shown []*line, mid []line, bare bool) string {
	// The omitted ranges: the gaps between shown lines.
	nos := make([]int, 0, len(shown))
	for _, l := range shown {
		nos = append(nos, l.no)
	}
	slices.Sort(nos)
	var ranges [][2]int
	next := 1
	for _, n := range nos {
		if n > next {
			ranges = append(ranges, [2]int{next, n - 1})
		}
		next = n + 1
	}
	if next <= t.lines {
		ranges = append(ranges, [2]int{next, t.lines})
	}
	var b strings.Builder
	b.WriteString("[... ")
	b.WriteString(commas(int64(r.LinesOmitted)))
	b.WriteString(" of ")
	b.WriteString(commas(int64(r.LinesTotal)))
	b.WriteString(plural(r.LinesTotal, " line", " lines"))
	b.WriteString(" (")
	b.WriteString(commas(r.BytesOmitted))
	b.WriteString(plural(int(r.BytesOmitted), " byte", " bytes"))
	b.WriteString(") omitted")
	if !bare {
		b.WriteString(": ")
		b.WriteString(plural(r.LinesOmitted, "line ", "lines "))
		const show = 6
		for i, rg := range ranges[:min(len(ranges), show)] {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(span(rg[0], rg[1]))
		}
		if len(ranges) > show {
			b.WriteString(" and " + commas(int64(len(ranges)-show)) + " more ranges")
		}
		if k := r.KeptKeyword; k > 0 {
			b.WriteString("; " + commas(int64(k)) + plural(k, " middle line follows", " middle lines follow") + ` as "line N: text"`)
		}
	}
	b.WriteString(". ")
	switch {
	case t.spillErr != nil:
		b.WriteString("The full output was not kept (saving it failed)")
	case r.OutputID == "":
		b.WriteString("The full output was not kept")
	default:
		b.WriteString("Read them: harnessd output ")
		b.WriteString(r.OutputID)
		if len(ranges) > 0 {
			b.WriteString(" --lines " + strconv.Itoa(ranges[0][0]) + "-" + strconv.Itoa(ranges[len(ranges)-1][1]))
		}
	}
	b.WriteString(" ...]")
	return b.String()
}

func runeCount(s string) int { return utf8.RuneCountInString(s) }

// writeLine writes l and its '\n', cutting it with a marker if it is longer
// than what was kept; it reports whether it cut. Invalid UTF-8 becomes
// U+FFFD, so Text is always valid and survives JSON unchanged.
func writeLine(b *bytes.Buffer, l *line, outputID string) bool {
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
			b.WriteString("; full line: harnessd output ")
			b.WriteString(outputID)
			b.WriteString(" --lines ")
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
