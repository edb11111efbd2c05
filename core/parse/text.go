package parse

import (
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/harnessd/harnessd/core/event"
)

// Text parses a model's text reply, CodeAct style: a fenced shell block is a
// command, a <finish> tag ends the task, anything else is a Message. It never
// panics and never returns nil. See the package documentation for the rules.
func Text(reply string) (a event.Payload) {
	defer recoverAction(&a)
	s := strings.ReplaceAll(reply, "\r\n", "\n")
	if strings.TrimSpace(s) == "" {
		return event.InvalidAction{
			Reason: "empty reply",
			Guidance: "Your reply was empty. To run a command, reply with one block:\n" +
				"```bash\nls -la\n```\n" +
				"When the task is done, reply with <finish>a short summary</finish>.",
		}
	}

	sc := scanReply(s)
	for _, b := range sc.blocks {
		if !b.closed {
			return unclosed(b)
		}
	}

	fin, hasFin := findFinish(s, sc.code)
	var cmds []block
	for _, b := range sc.blocks {
		if hasFin && b.start >= fin.start && b.start < fin.end {
			continue // a command shown in the closing summary, for the user
		}
		switch {
		case b.label.kind == labelShell:
		case b.label.kind == labelNone && strings.TrimSpace(b.content) == "":
			// "```ls -la" then "```": a command typed on the fence line.
		default:
			continue // code the model is showing, not running
		}
		cmds = append(cmds, b)
	}
	cmds = dropShownOutput(cmds)

	switch {
	case len(cmds) > 1:
		return tooMany(cmds)
	case len(cmds) == 1 && hasFin:
		return event.InvalidAction{
			Reason: "command and finish in one reply",
			Guidance: "One action per turn: run a command or finish, not both. " +
				"Send the command now; after you have seen its output, reply with <finish>a short summary</finish>.",
		}
	case len(cmds) == 1:
		return command(cmds[0])
	case hasFin:
		return event.Finish{Message: fin.message}
	}
	return event.Message{Text: strings.TrimSpace(s)}
}

// command turns the one shell block of a reply into CmdRun, or explains
// why it cannot.
func command(b block) event.Payload {
	cmd := blockCommand(b)
	label := "bash"
	if b.label.kind == labelShell && b.label.name != "" {
		label = b.label.name
	}
	open := b.fence.String() + label
	switch {
	case cmd == "" && (b.extra != "" || b.label.kind == labelNone):
		onLine := b.extra
		if b.label.kind == labelNone {
			onLine, open = b.info, b.fence.String()+"bash"
		}
		return event.InvalidAction{
			Reason: "command on the opening fence line",
			Guidance: "The text after " + b.fence.String() + " is read as the language label, not as a command. " +
				"Put the command on its own line between the fences:\n" + fenced(open, b.fence, onLine, "ls -la"),
		}
	case cmd == "":
		return event.InvalidAction{
			Reason: "empty code block",
			Guidance: "Your " + open + " block has nothing between the fences. Put the command on the lines between them:\n" +
				fenced(open, b.fence, "", "ls -la"),
		}
	case b.extra != "":
		return event.InvalidAction{
			Reason: "text after the fence label",
			Guidance: fmt.Sprintf("The opening fence line must hold only the label, but it also has %q, which was not run. "+
				"Move it inside the block if it is part of the command, or drop it, and resend:\n%s",
				shorten(b.extra, 80), fenced(open, b.fence, cmd, "ls -la")),
		}
	}
	return event.CmdRun{Command: cmd}
}

// blockCommand returns the command a shell block holds: trimmed, with
// transcript prompts removed.
func blockCommand(b block) string {
	lines := strings.Split(b.content, "\n")
	if b.label.console {
		lines = transcript(lines)
	} else if allPrompted(lines) {
		// "$ ls" in a ```bash block: the prompt is never part of the
		// command ("$" followed by a space is not a valid command).
		for i, l := range lines {
			if t := strings.TrimLeft(l, " \t"); t != "" {
				lines[i] = strings.TrimPrefix(strings.TrimPrefix(t, "$"), " ")
			}
		}
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}

// transcript keeps the commands of a console transcript: lines after a "$ "
// prompt and their "> " continuation lines. The other lines are the output
// the model expects, not commands. A block with no prompt at all is taken
// whole.
func transcript(lines []string) []string {
	var cmds []string
	prompted, cont := false, false
	for _, l := range lines {
		t := strings.TrimLeft(l, " \t")
		switch {
		case t == "$" || strings.HasPrefix(t, "$ "):
			cmds = append(cmds, strings.TrimPrefix(t[1:], " "))
			prompted, cont = true, true
		case cont && (t == ">" || strings.HasPrefix(t, "> ")):
			cmds = append(cmds, strings.TrimPrefix(t[1:], " "))
		default:
			cont = false
		}
	}
	if !prompted {
		return lines
	}
	return cmds
}

// allPrompted reports whether every non-blank line starts with a "$ " prompt.
func allPrompted(lines []string) bool {
	seen := false
	for _, l := range lines {
		t := strings.TrimLeft(l, " \t")
		if t == "" {
			continue
		}
		if !strings.HasPrefix(t, "$ ") {
			return false
		}
		seen = true
	}
	return seen
}

func unclosed(b block) event.InvalidAction {
	f := b.fence.String()
	g := "Your reply opened a code block with " + f + " but never closed it, so nothing was run. " +
		"Close it with " + f + " on its own line and resend"
	if b.label.kind == labelOther {
		g += "; to run a command, use one block like:\n" + fenced("```bash", fence{'`', 3}, "", "ls -la")
	} else {
		// Show the command only up to the first fence line: a model that
		// opened a second block before closing the first should not get
		// both back as one.
		if k := fenceLineIndex(b.content, b.fence); k >= 0 {
			b.content = b.content[:k]
		}
		cmd := blockCommand(b)
		if cmd == "" {
			if b.extra != "" {
				cmd = b.extra
			} else if b.label.kind == labelNone {
				cmd = b.info
			}
		}
		label := "bash"
		if b.label.kind == labelShell && b.label.name != "" {
			label = b.label.name
		}
		g += ":\n" + fenced(f+label, b.fence, cmd, "ls -la")
	}
	return event.InvalidAction{Reason: "code block fence not closed", Guidance: g}
}

func tooMany(cmds []block) event.InvalidAction {
	var parts []string
	oneLine := true
	for _, b := range cmds {
		c := blockCommand(b)
		if c == "" {
			continue
		}
		if strings.Contains(c, "\n") {
			oneLine = false
		}
		parts = append(parts, c)
	}
	joined := strings.Join(parts, "\n")
	if oneLine {
		joined = strings.Join(parts, " && ")
	}
	return event.InvalidAction{
		Reason: fmt.Sprintf("more than one command block (%d)", len(cmds)),
		Guidance: "One action per turn: send exactly one ```bash block, and you will see its output before your next turn. " +
			"Join the commands with && or put them on separate lines of a single block:\n" +
			fenced("```bash", fence{'`', 3}, joined, "cd /repo && make test"),
	}
}

// fenced renders a block for guidance, with a placeholder when the model's
// own command is missing or too long to repeat.
func fenced(open string, f fence, cmd, example string) string {
	cmd = strings.TrimSpace(cmd)
	if cmd == "" {
		cmd = example
	} else if len(cmd) > 400 || strings.Count(cmd, "\n") > 8 {
		cmd = "<your command>"
	}
	return open + "\n" + cmd + "\n" + f.String()
}

// shorten cuts s to at most n bytes for quoting in guidance.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	// Cut on a rune boundary so the guidance stays valid UTF-8.
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}

// finishTag is a <finish> tag found in the prose of a reply.
type finishTag struct {
	start, end int // the tag's range: open tag to close tag, or to the end
	message    string
}

// findFinish finds the first <finish>...</finish> (or <finish/>) outside
// code. Case is ignored. Without a closing tag, the message runs to the end
// of the reply, since a cut-off summary is still a summary. An empty tag
// takes the prose around it as the message, so "All tests pass.
// <finish></finish>" keeps its summary.
func findFinish(s string, code []span) (finishTag, bool) {
	// code is in reply order and does not overlap, so a binary search
	// answers "is p inside code" without a quadratic scan.
	inCode := func(p int) bool {
		k := sort.Search(len(code), func(k int) bool { return code[k].end > p })
		return k < len(code) && code[k].start <= p
	}
	for from := 0; ; {
		i := indexFold(s, from, "<finish")
		if i < 0 {
			return finishTag{}, false
		}
		from = i + 1
		if inCode(i) {
			continue
		}
		j := i + len("<finish")
		for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
			j++
		}
		var t finishTag
		t.start = i
		switch {
		case strings.HasPrefix(s[j:], "/>"):
			t.end = j + 2
		case strings.HasPrefix(s[j:], ">"):
			body := j + 1
			t.end = len(s)
			bodyEnd := len(s)
			for k := body; ; {
				c := indexFold(s, k, "</finish")
				if c < 0 {
					break
				}
				k = c + 1
				if inCode(c) {
					continue
				}
				e := c + len("</finish")
				for e < len(s) && (s[e] == ' ' || s[e] == '\t') {
					e++
				}
				if e < len(s) && s[e] == '>' {
					bodyEnd, t.end = c, e+1
					break
				}
			}
			t.message = strings.TrimSpace(s[body:bodyEnd])
		default:
			continue // <finished>, <finish_reason>: not our tag
		}
		if t.message == "" {
			t.message = strings.TrimSpace(strings.TrimSpace(s[:t.start]) + "\n\n" + strings.TrimSpace(s[t.end:]))
		}
		return t, true
	}
}

// indexFold is strings.Index from byte from on, ignoring ASCII case. It
// works on bytes so offsets stay valid whatever the reply holds (ToLower
// can change the length of a string).
func indexFold(s string, from int, sub string) int {
	for i := from; i+len(sub) <= len(s); i++ {
		ok := true
		for k := 0; k < len(sub); k++ {
			a, b := s[i+k], sub[k]
			if 'A' <= a && a <= 'Z' {
				a += 'a' - 'A'
			}
			if a != b {
				ok = false
				break
			}
		}
		if ok {
			return i
		}
	}
	return -1
}

// dropShownOutput drops the unlabelled blocks that follow a reply's one
// labelled shell block: models often show the output they expect under a
// bare fence ("```bash\nls\n```\nOutput:\n```\nfile1\n```"), which is
// not a second command. With more than one labelled block, or a bare
// block before the labelled one, nothing is dropped and the reply stays
// ambiguous (tooMany).
func dropShownOutput(cmds []block) []block {
	if len(cmds) < 2 || cmds[0].label.name == "" {
		return cmds
	}
	for _, b := range cmds[1:] {
		if b.label.name != "" || strings.TrimSpace(b.content) == "" {
			return cmds
		}
	}
	return cmds[:1]
}

// recoverAction turns a panic into a InvalidAction, the last line of defence
// for "the parser never takes the agent down". The fuzz targets fail on this
// reason, so a bug still gets found and fixed.
func recoverAction(a *event.Payload) {
	if r := recover(); r != nil {
		*a = event.InvalidAction{
			Reason:   reasonInternal,
			Guidance: fmt.Sprintf("The harness could not read this reply (%v). Resend it in the simplest form: one ```bash block, plain text, or <finish>summary</finish>.", r),
		}
	}
}

// reasonInternal is the Reason of a InvalidAction made from a recovered panic.
const reasonInternal = "internal parser error"

// fenceLineIndex returns the byte offset in content of the first line that
// starts with a run of f's char at least as long as f, or -1.
func fenceLineIndex(content string, f fence) int {
	off := 0
	for _, l := range strings.SplitAfter(content, "\n") {
		ind := indentOf(l)
		if runLen(l, ind) >= f.n && l[ind] == f.char {
			return off
		}
		off += len(l)
	}
	return -1
}
