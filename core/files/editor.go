package files

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/harnessd/harnessd/core/event"
)

// Editor carries out file actions through a Filer. It is cheap: make one
// per action.
type Editor struct {
	Files Filer
	// Cwd is the shell's current directory, to which a relative path is
	// joined; the workspace when the shell has not said.
	Cwd string
	// History keeps this session's edits for Undo; nil keeps none.
	History *History
}

// snippetLines is how many lines around an edit its observation shows,
// as OpenHands does.
const snippetLines = 4

// maxCreateShown is how many lines of a created file its observation
// shows.
const maxCreateShown = 40

// Do carries out one file action. The Result is always filled in, since
// the action is recorded and must be answered; the error is set only
// when the sandbox could not be reached (ErrUnavailable, ctx).
func (e *Editor) Do(ctx context.Context, a event.Payload) (Result, error) {
	begin := time.Now()
	var (
		res Result
		err error
	)
	switch a := a.(type) {
	case View:
		res, err = e.view(ctx, a)
	case Create:
		res, err = e.create(ctx, a)
	case StrReplace:
		res, err = e.strReplace(ctx, a)
	case Insert:
		res, err = e.insert(ctx, a)
	case Undo:
		res, err = e.undo(ctx, a)
	default:
		return Result{Op: "unknown", ExitCode: 1, Error: "not a file action", Output: fmt.Sprintf("%T is not a file action", a)}, nil
	}
	if err != nil {
		res = failed(res.Op, e.abs(pathOf(a)), "unavailable",
			"The file action could not reach the sandbox ("+err.Error()+"). Nothing was changed by it. If the shell had exited, "+
				"run any command (that starts a new one), then try again; or use bash.")
	}
	if u, ok := e.Files.(Unsandboxed); ok && u.Unsandboxed() {
		res.Unsandboxed = true
	}
	res.DurationMS = time.Since(begin).Milliseconds()
	return res, err
}

func pathOf(a event.Payload) string {
	switch a := a.(type) {
	case View:
		return a.Path
	case Create:
		return a.Path
	case StrReplace:
		return a.Path
	case Insert:
		return a.Path
	case Undo:
		return a.Path
	}
	return ""
}

// abs joins a relative path to the shell's directory. It is not cleaned:
// ".." after a symlink must mean what the kernel says, so the sandbox
// resolves it.
func (e *Editor) abs(p string) string {
	if path.IsAbs(p) {
		return p
	}
	cwd := e.Cwd
	if cwd == "" {
		cwd = "/"
	}
	return strings.TrimSuffix(cwd, "/") + "/" + p
}

func failed(op, p, why, msg string) Result {
	return Result{Op: op, Path: p, ExitCode: 1, Error: why, Output: msg}
}

// failure turns a primitive's failure into the model's error message.
func failure(op, p string, r *Response) Result {
	if r.Path != "" {
		p = r.Path
	}
	var msg string
	switch r.Code {
	case CodeNotFound:
		msg = fmt.Sprintf("The path %s does not exist. Give an absolute path, or one relative to the shell's current directory.", p)
	case CodeNotRegular:
		msg = fmt.Sprintf("%s is a %s, not a regular file: the editor does not open FIFOs, devices or sockets.", p, r.Type)
	case CodeIsDir:
		msg = fmt.Sprintf("%s is a directory; this action works on files.", p)
	case CodeProtected:
		msg = fmt.Sprintf("%s is a protected path: it is read-only in this sandbox and cannot be changed.", p)
	case CodePermission:
		msg = fmt.Sprintf("Permission denied on %s (%s).", p, r.Err)
	case CodeExists:
		msg = fmt.Sprintf("%s already exists. To replace it, create it with overwrite set; to change part of it, use str_replace or insert.", p)
	case CodeChanged:
		msg = fmt.Sprintf("%s changed while it was being edited (by a running command?). View it again, then repeat the edit.", p)
	case CodeTooLarge:
		msg = fmt.Sprintf("%s is a file of %d bytes, more than the %d bytes the editor reads. Look at parts of it with bash (sed -n '100,200p', grep -n, head).", p, r.Size, MaxFileBytes)
	default:
		msg = fmt.Sprintf("The file action on %s failed: %s", p, r.Err)
	}
	return failed(op, p, r.Code, msg)
}

func (e *Editor) do(ctx context.Context, req *Request) (*Response, error) {
	if e.Files == nil {
		return nil, ErrUnavailable
	}
	r, err := e.Files.File(ctx, req)
	if err != nil {
		return nil, err
	}
	if r == nil {
		return nil, fmt.Errorf("%w: empty answer", ErrUnavailable)
	}
	return r, nil
}

// readText reads a file to edit: it must be a regular text file.
func (e *Editor) readText(ctx context.Context, op, p string) (*Response, *Result, error) {
	r, err := e.do(ctx, &Request{Op: OpRead, Path: p, Max: MaxFileBytes})
	if err != nil {
		return nil, nil, err
	}
	if r.Code != "" {
		res := failure(op, p, r)
		return nil, &res, nil
	}
	if r.Type == TypeDir {
		res := failure(op, p, &Response{Code: CodeIsDir, Path: r.Path})
		return nil, &res, nil
	}
	if kind := binaryKind(r.Data); kind != "" {
		res := failed(op, r.Path, "binary", fmt.Sprintf("%s is a binary file (%s, %d bytes): the editor only edits text.", r.Path, kind, r.Size))
		return nil, &res, nil
	}
	return r, nil, nil
}

func (e *Editor) view(ctx context.Context, v View) (Result, error) {
	p := e.abs(v.Path)
	r, err := e.do(ctx, &Request{Op: OpRead, Path: p, Max: MaxFileBytes, Depth: 2})
	if err != nil {
		return Result{Op: "view"}, err
	}
	if r.Code != "" {
		return failure("view", p, r), nil
	}
	if r.Type == TypeDir {
		if v.FromLine != 0 || v.ToLine != 0 {
			return failed("view", r.Path, "bad_range", fmt.Sprintf("%s is a directory: a line range applies to files only.", r.Path)), nil
		}
		var b strings.Builder
		fmt.Fprintf(&b, "Here are the files and directories up to 2 levels deep in %s, excluding hidden items:\n", r.Path)
		for _, ent := range r.Entries {
			b.WriteString(shownName(strings.TrimSuffix(r.Path, "/")+"/"+ent) + "\n")
		}
		if r.Truncated {
			fmt.Fprintf(&b, "(only the first %d entries are shown; view a subdirectory, or use find)\n", MaxListEntries)
		}
		return Result{Op: "view", Path: r.Path, OK: true, Output: b.String()}, nil
	}
	if kind := binaryKind(r.Data); kind != "" {
		return Result{Op: "view", Path: r.Path, OK: true,
			Output: fmt.Sprintf("%s is a binary file (%s, %d bytes); its bytes are not shown. Inspect it with bash (file, xxd | head).", r.Path, kind, r.Size)}, nil
	}
	lines := splitLines(string(r.Data))
	from, to := 1, len(lines)
	if v.FromLine != 0 || v.ToLine != 0 {
		from = max(v.FromLine, 1)
		if v.ToLine > 0 {
			to = v.ToLine
		}
		if len(lines) == 0 || from > len(lines) {
			return failed("view", r.Path, "bad_range", fmt.Sprintf("Invalid range: %s has %d lines; from_line %d is past the end.", r.Path, len(lines), v.FromLine)), nil
		}
		if to > len(lines) {
			return failed("view", r.Path, "bad_range", fmt.Sprintf("Invalid range: %s has %d lines; to_line %d is past the end (use -1 for the end).", r.Path, len(lines), v.ToLine)), nil
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Here's the result of running `cat -n` on %s:\n", r.Path)
	if len(lines) == 0 {
		b.WriteString("(the file is empty)\n")
	}
	numbered(&b, lines, from, to)
	return Result{Op: "view", Path: r.Path, OK: true, Output: b.String()}, nil
}

func (e *Editor) create(ctx context.Context, c Create) (Result, error) {
	p := e.abs(c.Path)
	old, err := e.do(ctx, &Request{Op: OpRead, Path: p, Max: MaxFileBytes})
	if err != nil {
		return Result{Op: "create"}, err
	}
	prev := entry{}
	switch {
	case old.Code == CodeNotFound:
	case old.Code == CodeTooLarge && c.Overwrite:
		return failed("create", old.Path, CodeTooLarge, fmt.Sprintf("%s is a file of %d bytes; the editor does not replace files over %d bytes (its undo could not hold it). Remove it with bash first.", old.Path, old.Size, MaxFileBytes)), nil
	case old.Code != "":
		return failure("create", p, old), nil
	case old.Type == TypeDir:
		return failure("create", p, &Response{Code: CodeIsDir, Path: old.Path}), nil
	case !c.Overwrite:
		return failure("create", p, &Response{Code: CodeExists, Path: old.Path}), nil
	default:
		prev = entry{data: old.Data, existed: true}
	}
	req := &Request{Op: OpWrite, Path: p, Data: []byte(c.Content), Create: true, Excl: !prev.existed, IfSum: "absent"}
	if prev.existed {
		req.IfSum = sum(prev.data)
	}
	w, err := e.do(ctx, req)
	if err != nil {
		return Result{Op: "create"}, err
	}
	if w.Code != "" {
		return failure("create", p, w), nil
	}
	prev.after = sum([]byte(c.Content))
	e.remember(w.Path, prev)
	lines := splitLines(c.Content)
	var b strings.Builder
	verb := "created"
	if prev.existed {
		verb = "overwritten"
	}
	fmt.Fprintf(&b, "File %s successfully at: %s (%d lines). Here's the result of running `cat -n` on it:\n", verb, w.Path, len(lines))
	numbered(&b, lines, 1, min(len(lines), maxCreateShown))
	if len(lines) > maxCreateShown {
		fmt.Fprintf(&b, "(%d more lines not shown)\n", len(lines)-maxCreateShown)
	}
	return Result{Op: "create", Path: w.Path, OK: true, Output: b.String(), Diff: unifiedDiff(w.Path, prev.data, []byte(c.Content), prev.existed, true)}, nil
}

func (e *Editor) strReplace(ctx context.Context, s StrReplace) (Result, error) {
	p := e.abs(s.Path)
	r, fail, err := e.readText(ctx, "str_replace", p)
	if err != nil || fail != nil {
		return derefOr(fail, "str_replace"), err
	}
	content := string(r.Data)
	idx := allIndexes(content, s.Old, maxMatchesShown)
	switch len(idx) {
	case 0:
		msg := fmt.Sprintf("No replacement was performed: old did not appear verbatim in %s (0 matches). Check whitespace and indentation, view the file, and copy the text exactly.", r.Path)
		if hint := nearMiss(content, s.Old); hint != "" {
			msg += " " + hint
		}
		return failed("str_replace", r.Path, "no_match", msg), nil
	case 1:
	default:
		lines := make([]string, len(idx))
		for i, at := range idx {
			lines[i] = fmt.Sprint(lineOf(content, at))
		}
		n, where := len(idx), strings.Join(lines, ", ")
		if n == maxMatchesShown {
			n = strings.Count(content, s.Old)
			where += fmt.Sprintf(" and %d more", n-maxMatchesShown)
		}
		return failed("str_replace", r.Path, "multiple_matches", fmt.Sprintf("No replacement was performed: old matched %d times in %s, starting on lines %s. Include more of the surrounding lines in old so that it matches exactly once.",
			n, r.Path, where)), nil
	}
	at := idx[0]
	next := content[:at] + s.New + content[at+len(s.Old):]
	if len(next) > MaxFileBytes {
		return failed("str_replace", r.Path, CodeTooLarge, fmt.Sprintf("The edit would make %s %d bytes, more than the %d the editor writes.", r.Path, len(next), MaxFileBytes)), nil
	}
	start := lineOf(content, at)
	end := start + strings.Count(s.New, "\n")
	return e.commit(ctx, "str_replace", p, r, next, start, end)
}

func (e *Editor) insert(ctx context.Context, in Insert) (Result, error) {
	p := e.abs(in.Path)
	r, fail, err := e.readText(ctx, "insert", p)
	if err != nil || fail != nil {
		return derefOr(fail, "insert"), err
	}
	content := string(r.Data)
	lines := splitLines(content)
	if in.Line > len(lines) {
		return failed("insert", r.Path, "bad_line", fmt.Sprintf("Invalid line %d: %s has %d lines; give a line from 0 (the top) to %d (the end).", in.Line, r.Path, len(lines), len(lines))), nil
	}
	off := 0
	for _, l := range lines[:in.Line] {
		off += len(l) + 1
	}
	off = min(off, len(content))
	text := in.Text
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	if off == len(content) && len(content) > 0 && content[len(content)-1] != '\n' {
		// After a last line without a newline: end that line, and leave
		// the file without one, as it was.
		text = "\n" + strings.TrimSuffix(text, "\n")
	}
	next := content[:off] + text + content[off:]
	if len(next) > MaxFileBytes {
		return failed("insert", r.Path, CodeTooLarge, fmt.Sprintf("The edit would make %s %d bytes, more than the %d the editor writes.", r.Path, len(next), MaxFileBytes)), nil
	}
	start := in.Line + 1
	end := in.Line + max(1, strings.Count(strings.TrimSuffix(in.Text, "\n"), "\n")+1)
	return e.commit(ctx, "insert", p, r, next, start, end)
}

func derefOr(r *Result, op string) Result {
	if r != nil {
		return *r
	}
	return Result{Op: op}
}

// commit writes an edit's new content to p over what r read, provided
// the file still holds that, and answers with the edited lines
// start..end. It writes to the path asked for, which the sandbox resolves
// again, not to r.Path: a resolved path that is not UTF-8 does not
// survive JSON.
func (e *Editor) commit(ctx context.Context, op, p string, r *Response, next string, start, end int) (Result, error) {
	w, err := e.do(ctx, &Request{Op: OpWrite, Path: p, Data: []byte(next), IfSum: sum(r.Data)})
	if err != nil {
		return Result{Op: op}, err
	}
	if w.Code != "" {
		return failure(op, r.Path, w), nil
	}
	e.remember(w.Path, entry{data: r.Data, existed: true, after: sum([]byte(next))})
	var b strings.Builder
	fmt.Fprintf(&b, "The file %s has been edited. Here's the result of running `cat -n` on a snippet of %s:\n", w.Path, w.Path)
	from := max(1, start-snippetLines)
	numberedFrom(&b, window(next, from, end+snippetLines), from, from, end+snippetLines)
	b.WriteString("Review the changes and make sure they are as expected. Edit the file again if necessary.\n")
	return Result{Op: op, Path: w.Path, OK: true, Output: b.String(), Diff: unifiedDiff(w.Path, r.Data, []byte(next), true, true)}, nil
}

func (e *Editor) remember(p string, prev entry) {
	if e.History != nil {
		e.History.push(p, prev)
	}
}

func (e *Editor) undo(ctx context.Context, u Undo) (Result, error) {
	p := e.abs(u.Path)
	cur, err := e.do(ctx, &Request{Op: OpRead, Path: p, Max: MaxFileBytes})
	if err != nil {
		return Result{Op: "undo"}, err
	}
	key := p
	if cur.Path != "" {
		key = cur.Path
	}
	if cur.Code != "" && cur.Code != CodeNotFound {
		return failure("undo", p, cur), nil
	}
	if cur.Type == TypeDir {
		return failure("undo", p, &Response{Code: CodeIsDir, Path: cur.Path}), nil
	}
	if e.History == nil {
		return failed("undo", key, "no_history", fmt.Sprintf("No edit history is kept for %s.", key)), nil
	}
	prev, ok := e.History.pop(key)
	if !ok {
		return failed("undo", key, "no_history", fmt.Sprintf("No edit of %s in this session is left to undo.", key)), nil
	}
	var w *Response
	if prev.existed {
		w, err = e.do(ctx, &Request{Op: OpWrite, Path: key, Data: prev.data, Create: true})
	} else {
		w, err = e.do(ctx, &Request{Op: OpRemove, Path: key})
	}
	if err == nil && w.Code != "" && !(w.Code == CodeNotFound && !prev.existed) {
		err0 := failure("undo", key, w)
		e.History.push(key, prev) // still to be undone
		return err0, nil
	}
	if err != nil {
		e.History.push(key, prev)
		return Result{Op: "undo"}, err
	}
	var b strings.Builder
	diff := unifiedDiff(key, cur.Data, prev.data, cur.Code == "", prev.existed)
	if now := sum(cur.Data); cur.Code != "" || now != prev.after {
		b.WriteString("Note: the file had changed since that edit (a command changed it?); those later changes are undone too (the recorded diff shows them).\n")
	}
	if !prev.existed {
		fmt.Fprintf(&b, "Last edit to %s undone successfully: the file did not exist before it, and is removed.\n", key)
	} else {
		fmt.Fprintf(&b, "Last edit to %s undone successfully. Here's the result of running `cat -n` on %s:\n", key, key)
		lines := splitLines(string(prev.data))
		numbered(&b, lines, 1, min(len(lines), maxCreateShown))
		if len(lines) > maxCreateShown {
			fmt.Fprintf(&b, "(%d more lines not shown)\n", len(lines)-maxCreateShown)
		}
	}
	return Result{Op: "undo", Path: key, OK: true, Output: b.String(), Diff: diff}, nil
}

// shownName quotes a name with control characters or bytes that are not
// UTF-8, so a file named "x\nfake line" cannot pass for two entries.
func shownName(n string) string {
	if !utf8.ValidString(n) || strings.ContainsFunc(n, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return strconv.Quote(n)
	}
	return n
}

// splitLines splits text into lines without their newlines; a final
// newline ends the last line rather than starting an empty one.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// numbered writes lines from..to (1-based, inclusive) of lines, whose
// first is line first, as cat -n does.
func numbered(b *strings.Builder, lines []string, from, to int) {
	numberedFrom(b, lines, 1, from, to)
}

func numberedFrom(b *strings.Builder, lines []string, first, from, to int) {
	for i := from; i <= to && i-first < len(lines); i++ {
		if i >= first {
			fmt.Fprintf(b, "%6d\t%s\n", i, lines[i-first])
		}
	}
}

// window returns lines from..to of s (1-based, inclusive, as many as
// there are): it scans s once and splits only what it keeps, so a snippet
// of a big file does not split all of it.
func window(s string, from, to int) []string {
	var out []string
	for n := 1; n <= to && s != ""; n++ {
		i := strings.IndexByte(s, '\n')
		l := s
		if i >= 0 {
			l, s = s[:i], s[i+1:]
		} else {
			s = ""
		}
		if n >= from {
			out = append(out, l)
		}
	}
	return out
}

// maxMatchesShown bounds the lines a str_replace with many matches names.
const maxMatchesShown = 20

// allIndexes returns where sub starts in s, non-overlapping, as Python's
// str.count counts (OpenHands' rule), at most limit of them.
func allIndexes(s, sub string, limit int) []int {
	var out []int
	for off := 0; len(out) < limit; {
		i := strings.Index(s[off:], sub)
		if i < 0 {
			return out
		}
		out = append(out, off+i)
		off += i + len(sub)
	}
	return out
}

// lineOf is the 1-based line of byte offset at.
func lineOf(s string, at int) int { return strings.Count(s[:at], "\n") + 1 }

// nearMiss says where old would have matched had its lines' leading and
// trailing whitespace been right: the model's most common mistake.
func nearMiss(content, old string) string {
	trim := func(s string) []string {
		ls := strings.Split(s, "\n")
		for i := range ls {
			ls[i] = strings.TrimSpace(ls[i])
		}
		return ls
	}
	want := trim(strings.Trim(old, "\n"))
	have := trim(content)
	if len(want) == 0 || (len(want) == 1 && want[0] == "") {
		return ""
	}
	var at []string
	for i := 0; i+len(want) <= len(have); i++ {
		ok := true
		for j := range want {
			if have[i+j] != want[j] {
				ok = false
				break
			}
		}
		if ok {
			at = append(at, fmt.Sprint(i+1))
		}
	}
	if len(at) == 0 {
		return ""
	}
	return fmt.Sprintf("Text matching it except for leading or trailing whitespace starts on line(s) %s.", strings.Join(at, ", "))
}

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// Sum is the SHA-256 in hex that Request.IfSum compares with.
func Sum(b []byte) string { return sum(b) }

// binaryKind says what a file that is not text seems to be; "" for text
// (valid UTF-8 without NUL bytes).
func binaryKind(b []byte) string {
	head := b[:min(len(b), 8192)]
	if bytes.IndexByte(head, 0) < 0 && utf8.Valid(trimPartialRune(b)) {
		return ""
	}
	magic := []struct{ prefix, name string }{
		{"\x7fELF", "ELF executable or library"}, {"\x89PNG", "PNG image"}, {"\xff\xd8\xff", "JPEG image"},
		{"GIF8", "GIF image"}, {"%PDF", "PDF document"}, {"\x1f\x8b", "gzip archive"}, {"PK\x03\x04", "zip archive"},
		{"\xfd7zXZ", "xz archive"}, {"BZh", "bzip2 archive"}, {"SQLite format 3", "SQLite database"},
		{"\x00asm", "WebAssembly module"}, {"\xca\xfe\xba\xbe", "Java class or Mach-O"},
	}
	for _, m := range magic {
		if bytes.HasPrefix(b, []byte(m.prefix)) {
			return m.name
		}
	}
	return "data, not UTF-8 text"
}

// trimPartialRune drops a rune cut in half at the end of a read.
func trimPartialRune(b []byte) []byte {
	for i := 1; i <= 3 && i <= len(b); i++ {
		if utf8.RuneStart(b[len(b)-i]) {
			if !utf8.FullRune(b[len(b)-i:]) {
				return b[:len(b)-i]
			}
			break
		}
	}
	return b
}

// History is one session's undo history: per file, the content before
// each edit, newest last, bounded in depth per file and in bytes in
// all. It is safe for concurrent use.
type History struct {
	mu    sync.Mutex
	files map[string][]entry
	bytes int64
	seq   uint64
}

// The bounds of a History: the oldest entries go first.
const (
	HistoryDepth = 10
	HistoryBytes = 8 << 20
)

type entry struct {
	data    []byte
	existed bool
	after   string // the SHA-256 of what the edit wrote
	seq     uint64
}

func (h *History) push(p string, e entry) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.files == nil {
		h.files = map[string][]entry{}
	}
	h.seq++
	e.seq = h.seq
	es := append(h.files[p], e)
	h.bytes += int64(len(e.data))
	if len(es) > HistoryDepth {
		h.bytes -= int64(len(es[0].data))
		es = es[1:]
	}
	h.files[p] = es
	for h.bytes > HistoryBytes {
		h.dropOldest()
	}
}

// dropOldest forgets the oldest entry of any file.
func (h *History) dropOldest() {
	oldest, at := "", uint64(0)
	for p, es := range h.files {
		if len(es) > 0 && (at == 0 || es[0].seq < at) {
			oldest, at = p, es[0].seq
		}
	}
	if at == 0 {
		h.bytes = 0
		return
	}
	es := h.files[oldest]
	h.bytes -= int64(len(es[0].data))
	if len(es) == 1 {
		delete(h.files, oldest)
	} else {
		h.files[oldest] = es[1:]
	}
}

func (h *History) pop(p string) (entry, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	es := h.files[p]
	if len(es) == 0 {
		return entry{}, false
	}
	e := es[len(es)-1]
	if len(es) == 1 {
		delete(h.files, p)
	} else {
		h.files[p] = es[:len(es)-1]
	}
	h.bytes -= int64(len(e.data))
	return e, true
}

// Paths lists the files with edits to undo, sorted.
func (h *History) Paths() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]string, 0, len(h.files))
	for p := range h.files {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}
