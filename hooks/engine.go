package hooks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"

	"github.com/harnessd/harnessd/core/event"
)

// Dir is a source of hook files: a directory, whose *.lua files are loaded
// in name order (subdirectories are not read), or a single .lua file.
type Dir struct {
	// Path is the directory or file. With FS set it is a path inside FS
	// ("." for its root).
	Path string
	// FS is the file system Path is in; nil means the operating system's.
	FS fs.FS
	// Name is how the files are named in decisions and errors, in place of
	// Path: Builtin's files are "builtin/dangerous.lua".
	Name string
	// FailOpen makes an action hook of this source that errors or overruns
	// its budget count as "allow" (it is logged) instead of a veto, and an
	// observation or session hook's failure be logged instead of returned.
	FailOpen bool
}

// Options configures an Engine. Zero fields take the defaults.
type Options struct {
	// Dirs are the hook sources, in order; the order of handlers is the
	// order of the files. Include Builtin to get the shipped policies.
	Dirs []Dir
	// Budget is how long one call of one hook function may run before it
	// is stopped (and fails). Default 50ms. A file's top-level code, run
	// when it loads, gets 20 times as long.
	Budget time.Duration
	// Logger receives harness.log and print output and fail-open
	// failures. Default slog.Default().
	Logger *slog.Logger
	// MaxStack is the most Lua call frames a hook may nest. Default 200.
	MaxStack int
	// RegistrySize is the most Lua stack slots a hook may use. Default
	// 65536 (1 MiB).
	RegistrySize int
	// MaxConcurrent is how many engine calls run hooks at once; more wait
	// (until their context ends) without their wait counting against the
	// budget, so that a budget measures running time, not time spent
	// waiting for a core. Default runtime.GOMAXPROCS(0).
	MaxConcurrent int
}

// Defaults for Options and the limits that are not options.
const (
	DefaultBudget       = 50 * time.Millisecond
	DefaultMaxStack     = 200
	DefaultRegistrySize = 64 << 10

	// MaxFileSize is the largest hook file loaded.
	MaxFileSize = 256 << 10
	// maxRounds bounds how often the action hooks are run again on a
	// rewritten action before the rewrites are deemed not to settle.
	maxRounds = 4
)

// Session is what hooks are told about the session an event belongs to
// (harness.session in Lua).
type Session struct {
	ID        string
	Workspace string // the workspace root inside the sandbox
	Profile   string
}

// Engine runs Lua hooks. It is safe for concurrent use: each call takes a
// Lua state of its own from a pool, so calls on different goroutines never
// share one, and never wait for each other while there are no more calls
// than Options.MaxConcurrent.
type Engine struct {
	opts  Options
	log   *slog.Logger
	cur   atomic.Pointer[set]
	mu    sync.Mutex   // serialises Reload
	free  chan *worker // the pool: MaxConcurrent slots, each a Lua state or nil (not made yet)
	regex regexCache
}

// take waits for a slot and returns its Lua state, made for the active set
// of hooks if the slot had none or one of an older set.
func (e *Engine) take(ctx context.Context) (*worker, error) {
	var w *worker
	select {
	case w = <-e.free:
	default:
		select {
		case w = <-e.free:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	st := e.cur.Load()
	if w != nil && w.set != st {
		w.L.Close()
		w = nil
	}
	if w == nil {
		var err error
		if w, err = st.newWorker(false); err != nil {
			e.free <- nil
			return nil, err
		}
	}
	return w, nil
}

// give returns a Lua state to its slot; one that saw an error is closed
// instead, since its state is not known.
func (e *Engine) give(w *worker) {
	if w.broken {
		w.L.Close()
		w = nil
	}
	e.free <- w
}

// Report describes a loaded set of hook files.
type Report struct {
	Files    []FileReport
	Handlers int // handlers registered, all files together
}

// FileReport describes one loaded hook file.
type FileReport struct {
	Name     string // as named in decisions
	Handlers int    // harness.on calls
	Examples int    // examples checked
}

// set is one loaded generation of hook files.
type set struct {
	eng    *Engine
	files  []*file
	report Report
	// which classes of event have handlers at all, so a call with none
	// needs no Lua state
	has [numClasses]bool
}

// file is one compiled hook file.
type file struct {
	name     string
	failOpen bool
	proto    *lua.FunctionProto
}

// Load reads and checks the hook files of opts.Dirs and returns an engine
// running them. Every file is compiled, its top-level code run, and its
// examples checked; the error lists every file that failed, each as
// file:line.
func Load(opts Options) (*Engine, error) {
	if opts.Budget <= 0 {
		opts.Budget = DefaultBudget
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.MaxStack <= 0 {
		opts.MaxStack = DefaultMaxStack
	}
	if opts.RegistrySize <= 0 {
		opts.RegistrySize = DefaultRegistrySize
	}
	if opts.MaxConcurrent <= 0 {
		opts.MaxConcurrent = runtime.GOMAXPROCS(0)
	}
	opts.Dirs = append([]Dir(nil), opts.Dirs...)
	e := &Engine{opts: opts, log: opts.Logger, free: make(chan *worker, opts.MaxConcurrent)}
	s, w, err := e.build()
	if err != nil {
		return nil, err
	}
	e.cur.Store(s)
	e.free <- w
	for i := 1; i < opts.MaxConcurrent; i++ {
		e.free <- nil
	}
	return e, nil
}

// Reload reads the hook files again. If any file fails, the error names
// each failure as file:line and the hooks loaded before stay active;
// otherwise the new set replaces them for every call that starts after
// Reload returns (calls under way finish with the old set).
func (e *Engine) Reload() (Report, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s, w, err := e.build()
	if err != nil {
		return Report{}, err
	}
	w.L.Close()
	e.cur.Store(s)
	return s.report, nil
}

// Report describes the hook files now active.
func (e *Engine) Report() Report { return e.cur.Load().report }

// build loads every file into a new set, checking it fully, and returns
// it with the (healthy) Lua state that checked it.
func (e *Engine) build() (*set, *worker, error) {
	s := &set{eng: e}
	var errs []error
	for _, d := range e.opts.Dirs {
		srcs, err := readDir(d)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, src := range srcs {
			proto, err := compile(src.name, src.data)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			s.files = append(s.files, &file{name: src.name, failOpen: d.FailOpen, proto: proto})
		}
	}
	if len(errs) > 0 {
		return nil, nil, errors.Join(errs...)
	}
	w, err := s.newWorker(true)
	if err != nil {
		return nil, nil, err
	}
	// Examples, each against its own file's handlers only.
	for i := range s.files {
		for _, ex := range w.examples[i] {
			if err := w.checkExample(i, ex); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if len(errs) > 0 {
		w.L.Close()
		return nil, nil, errors.Join(errs...)
	}
	for i, f := range s.files {
		fr := FileReport{Name: f.name, Examples: len(w.examples[i])}
		for _, h := range w.handlers {
			if h.file == i {
				fr.Handlers++
				s.has[h.class] = true
			}
		}
		s.report.Files = append(s.report.Files, fr)
		s.report.Handlers += fr.Handlers
	}
	w.examples = nil
	if w.broken {
		// An example made a fail-open hook fail: start afresh.
		w.L.Close()
		if w, err = s.newWorker(false); err != nil {
			return nil, nil, err
		}
	}
	return s, w, nil
}

type source struct {
	name string
	data []byte
}

// readDir returns the hook files of d, in name order.
func readDir(d Dir) ([]source, error) {
	display := d.Name
	if display == "" {
		display = d.Path
	}
	p := d.Path
	if p == "" {
		p = "."
	}
	var (
		stat    func(string) (fs.FileInfo, error)
		readdir func(string) ([]fs.DirEntry, error)
		read    func(string) ([]byte, error)
		join    func(...string) string
	)
	if d.FS != nil {
		stat = func(n string) (fs.FileInfo, error) { return fs.Stat(d.FS, n) }
		readdir = func(n string) ([]fs.DirEntry, error) { return fs.ReadDir(d.FS, n) }
		read = func(n string) ([]byte, error) { return fs.ReadFile(d.FS, n) }
		join = path.Join
	} else {
		stat, readdir, read, join = os.Stat, os.ReadDir, os.ReadFile, filepath.Join
	}
	fail := func(err error) error {
		return &FileError{File: display, Msg: err.Error(), Err: ErrLoad}
	}
	fi, err := stat(p)
	if err != nil {
		return nil, fail(err)
	}
	readOne := func(name, shown string, size int64) (source, error) {
		if size > MaxFileSize {
			return source{}, &FileError{File: shown, Msg: fmt.Sprintf("file is %d bytes, more than the %d allowed", size, MaxFileSize), Err: ErrLoad}
		}
		data, err := read(name)
		if err != nil {
			return source{}, &FileError{File: shown, Msg: err.Error(), Err: ErrLoad}
		}
		if len(data) > MaxFileSize {
			return source{}, &FileError{File: shown, Msg: fmt.Sprintf("file is %d bytes, more than the %d allowed", len(data), MaxFileSize), Err: ErrLoad}
		}
		return source{name: shown, data: data}, nil
	}
	if !fi.IsDir() {
		s, err := readOne(p, display, fi.Size())
		if err != nil {
			return nil, err
		}
		return []source{s}, nil
	}
	ents, err := readdir(p)
	if err != nil {
		return nil, fail(err)
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
	var out []source
	var errs []error
	for _, ent := range ents {
		if !strings.HasSuffix(ent.Name(), ".lua") || strings.HasPrefix(ent.Name(), ".") {
			continue
		}
		info, err := ent.Info()
		if err != nil {
			errs = append(errs, fail(err))
			continue
		}
		if !info.Mode().IsRegular() {
			if info.Mode()&fs.ModeSymlink == 0 {
				continue
			}
			if info, err = stat(join(p, ent.Name())); err != nil || !info.Mode().IsRegular() {
				continue
			}
		}
		s, err := readOne(join(p, ent.Name()), join(display, ent.Name()), info.Size())
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, s)
	}
	return out, errors.Join(errs...)
}

// compile parses and compiles one hook file.
func compile(name string, data []byte) (proto *lua.FunctionProto, err error) {
	defer func() {
		if r := recover(); r != nil {
			proto, err = nil, &FileError{File: name, Msg: fmt.Sprintf("cannot compile: %v", r), Err: ErrLoad}
		}
	}()
	if d := nesting(data); d > maxNesting {
		return nil, &FileError{File: name, Msg: fmt.Sprintf("nested more than %d deep", maxNesting), Err: ErrLoad}
	}
	chunk, err := parse.Parse(bytes.NewReader(data), name)
	if err != nil {
		var pe *parse.Error
		if errors.As(err, &pe) {
			line := pe.Pos.Line
			msg := strings.TrimSpace(pe.Message)
			if line == parse.EOF {
				line = 0
				msg += " at end of file"
			} else if pe.Token != "" {
				msg += fmt.Sprintf(" near '%s'", pe.Token)
			}
			return nil, &FileError{File: name, Line: line, Msg: "syntax error: " + msg, Err: ErrLoad}
		}
		return nil, &FileError{File: name, Msg: "syntax error: " + strings.TrimSpace(err.Error()), Err: ErrLoad}
	}
	proto, err = lua.Compile(chunk, name)
	if err != nil {
		var ce *lua.CompileError
		if errors.As(err, &ce) {
			return nil, &FileError{File: name, Line: ce.Line, Msg: "compile error: " + ce.Message, Err: ErrLoad}
		}
		return nil, &FileError{File: name, Msg: "compile error: " + err.Error(), Err: ErrLoad}
	}
	return proto, nil
}

// maxNesting bounds how deeply a hook file may nest brackets and blocks:
// the compiler's time grows fast with nesting (thousands of nested
// functions take seconds), and no policy needs more.
const maxNesting = 200

// nesting returns how deeply data nests brackets and blocks (function, do,
// then, repeat … end, until), skipping strings and comments.
func nesting(data []byte) int {
	depth, max := 0, 0
	up := func(n int) {
		depth += n
		if depth < 0 {
			depth = 0
		}
		if depth > max {
			max = depth
		}
	}
	// longBracket returns the level of a long bracket [==[ at i, or -1.
	longBracket := func(i int) int {
		if i >= len(data) || data[i] != '[' {
			return -1
		}
		j := i + 1
		for j < len(data) && data[j] == '=' {
			j++
		}
		if j < len(data) && data[j] == '[' {
			return j - i - 1
		}
		return -1
	}
	// skipLong skips past the close of a long bracket of level lv opened at i.
	skipLong := func(i, lv int) int {
		closer := "]" + strings.Repeat("=", lv) + "]"
		k := bytes.Index(data[i:], []byte(closer))
		if k < 0 {
			return len(data)
		}
		return i + k + len(closer)
	}
	for i := 0; i < len(data); {
		c := data[i]
		switch {
		case c == '-' && i+1 < len(data) && data[i+1] == '-':
			if lv := longBracket(i + 2); lv >= 0 {
				i = skipLong(i+2, lv)
				continue
			}
			for i < len(data) && data[i] != '\n' {
				i++
			}
			continue
		case c == '\'' || c == '"':
			i++
			for i < len(data) && data[i] != c && data[i] != '\n' {
				if data[i] == '\\' {
					i++
				}
				i++
			}
			i++
			continue
		case c == '[':
			if lv := longBracket(i); lv >= 0 {
				i = skipLong(i, lv)
				continue
			}
			up(1)
		case c == '(' || c == '{':
			up(1)
		case c == ')' || c == ']' || c == '}':
			up(-1)
		case c == '_' || (c|0x20 >= 'a' && c|0x20 <= 'z'):
			j := i
			for j < len(data) && (data[j] == '_' || (data[j]|0x20 >= 'a' && data[j]|0x20 <= 'z') || (data[j] >= '0' && data[j] <= '9')) {
				j++
			}
			switch string(data[i:j]) {
			case "function", "do", "then", "repeat":
				up(1)
			case "end", "until", "elseif":
				up(-1)
			}
			i = j
			continue
		}
		i++
	}
	return max
}

// regexCache holds the compiled redaction patterns of observation hooks,
// shared by every Lua state; reads take no lock.
type regexCache struct {
	m sync.Map // string -> regexResult
	n atomic.Int64
}

type regexResult struct {
	re  *regexp.Regexp
	err error
}

const maxCachedRegex = 4096

func (c *regexCache) compile(pattern string) (*regexp.Regexp, error) {
	if v, ok := c.m.Load(pattern); ok {
		r := v.(regexResult)
		return r.re, r.err
	}
	re, err := regexp.Compile(pattern)
	if c.n.Load() < maxCachedRegex {
		if _, loaded := c.m.LoadOrStore(pattern, regexResult{re, err}); !loaded {
			c.n.Add(1)
		}
	}
	return re, err
}

// sessionEvent names a session event for Event.
func sessionClass(name string) (class, error) {
	switch name {
	case "session.start":
		return classStart, nil
	case "session.end":
		return classEnd, nil
	}
	return 0, fmt.Errorf("%w: %q is not session.start or session.end", ErrBadEvent, name)
}

// Action runs the action hooks on a and returns their decision: the
// strictest of all (veto > ask > rewrite > allow). A hook that errors or
// overruns its budget gives a Veto naming its file:line (Decision.Err says
// why), unless its Dir is FailOpen. After a rewrite, every action hook runs
// again on the rewritten action, so a rewrite cannot slip past a veto.
//
// The error is non-nil only when ctx ended (the decision is then a Veto).
func (e *Engine) Action(ctx context.Context, s Session, a event.Payload) (Decision, error) {
	if a == nil {
		err := fmt.Errorf("%w: nil action", ErrBadEvent)
		return Decision{Verdict: Veto, Hook: "hooks", Reason: err.Error(), Err: err}, nil
	}
	st := e.cur.Load()
	if !st.has[classAction] {
		return Decision{Verdict: Allow}, nil
	}
	w, err := e.take(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return Decision{Verdict: Veto, Hook: "hooks", Reason: "cancelled: " + err.Error(), Err: err}, err
		}
		return failDecision(err), nil
	}
	defer e.give(w)
	defer w.recoverBroken()
	return w.action(ctx, s, a, -1)
}

// Observation runs the observation hooks on obs, the output of action,
// and returns the settings they ask for merged (see ObservationSettings).
// obs may be nil when the settings are wanted before the output exists
// (hooks then see an event with only its kind). A hook that fails in a
// source that is not FailOpen makes the error non-nil; the settings are
// then those of the hooks that did not fail, and a caller that must not
// show a secret should withhold the output.
func (e *Engine) Observation(ctx context.Context, s Session, action, obs event.Payload) (ObservationSettings, error) {
	st := e.cur.Load()
	if !st.has[classObservation] {
		return ObservationSettings{}, nil
	}
	w, err := e.take(ctx)
	if err != nil {
		return ObservationSettings{}, err
	}
	defer e.give(w)
	defer w.recoverBroken()
	return w.observation(ctx, s, action, obs)
}

// Event runs the hooks of a session event, "session.start" or
// "session.end". What they return is ignored; the error joins the
// failures of hooks whose source is not FailOpen.
func (e *Engine) Event(ctx context.Context, s Session, name string) error {
	cl, err := sessionClass(name)
	if err != nil {
		return err
	}
	st := e.cur.Load()
	if !st.has[cl] {
		return nil
	}
	w, err := e.take(ctx)
	if err != nil {
		return err
	}
	defer e.give(w)
	defer w.recoverBroken()
	return w.sessionEvent(ctx, s, cl, name)
}
