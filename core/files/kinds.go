package files

import (
	"errors"
	"fmt"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/harnessd/harnessd/core/event"
)

// The file action kinds and the observation that answers each of them.
const (
	KindView       event.Kind = "file_view"
	KindCreate     event.Kind = "file_create"
	KindStrReplace event.Kind = "file_str_replace"
	KindInsert     event.Kind = "file_insert"
	KindUndo       event.Kind = "file_undo"
	KindResult     event.Kind = "file_result"
)

// View shows a file with line numbers (cat -n), lines FromLine to ToLine
// of it (1-based, inclusive; ToLine -1 or 0 means to the end), or, for a
// directory, its entries two levels deep without hidden ones.
type View struct {
	Path     string `json:"path"`
	FromLine int    `json:"from_line,omitempty"`
	ToLine   int    `json:"to_line,omitempty"`
}

// Create writes a new file with Content; an existing one is refused
// unless Overwrite. Missing parent directories are made.
type Create struct {
	Path      string `json:"path"`
	Content   string `json:"content"`
	Overwrite bool   `json:"overwrite,omitempty"`
}

// StrReplace replaces the one occurrence of Old in the file with New.
// None, or more than one, is an error naming how many matched and on
// which lines.
type StrReplace struct {
	Path string `json:"path"`
	Old  string `json:"old"`
	New  string `json:"new"`
}

// Insert puts Text after line Line of the file (0: at the top).
type Insert struct {
	Path string `json:"path"`
	Line int    `json:"line"`
	Text string `json:"text"`
}

// Undo reverts this session's last edit of the file.
type Undo struct {
	Path string `json:"path"`
}

// Result answers a file action: what the model sees (Output), whether
// the action did what it asked (OK, and ExitCode 0 or 1 as a command's
// would be), the path as the sandbox resolved it, and for an edit the
// unified diff of what changed.
type Result struct {
	Op       string `json:"op"`   // view, create, str_replace, insert, undo
	Path     string `json:"path"` // absolute, symlinks resolved, as the sandbox sees it
	OK       bool   `json:"ok"`
	ExitCode int    `json:"exit_code"`
	Output   string `json:"output"`
	Error    string `json:"error,omitempty"` // what went wrong, in a few words; Output explains
	Diff     string `json:"diff,omitempty"`  // unified diff of an edit
	// Trimmed says what of a long view's Output was cut; the full view
	// is kept under its output id.
	Trimmed     *event.Trimmed `json:"trimmed,omitempty"`
	DurationMS  int64          `json:"duration_ms"`
	Unsandboxed bool           `json:"unsandboxed,omitempty"` // driver "none": done by the daemon on the host
}

// Kind implements event.Payload.
func (View) Kind() event.Kind { return KindView }

// Kind implements event.Payload.
func (Create) Kind() event.Kind { return KindCreate }

// Kind implements event.Payload.
func (StrReplace) Kind() event.Kind { return KindStrReplace }

// Kind implements event.Payload.
func (Insert) Kind() event.Kind { return KindInsert }

// Kind implements event.Payload.
func (Undo) Kind() event.Kind { return KindUndo }

// Kind implements event.Payload.
func (Result) Kind() event.Kind { return KindResult }

func init() {
	event.Register[View](KindView, event.Action)
	event.Register[Create](KindCreate, event.Action)
	event.Register[StrReplace](KindStrReplace, event.Action)
	event.Register[Insert](KindInsert, event.Action)
	event.Register[Undo](KindUndo, event.Action)
	event.Register[Result](KindResult, event.Observation)
}

// MaxPathBytes bounds a path, as PATH_MAX does.
const MaxPathBytes = 4096

// validPath checks what every file action's path must be: a path a
// system call can take. Whether it exists is the sandbox's to say.
func validPath(p string) error {
	switch {
	case p == "":
		return errors.New("path is empty: give an absolute path, or one relative to the shell's current directory")
	case len(p) > MaxPathBytes:
		return fmt.Errorf("path is %d bytes; at most %d", len(p), MaxPathBytes)
	case strings.IndexByte(p, 0) >= 0:
		return errors.New("path contains a NUL byte")
	case !utf8.ValidString(p):
		return errors.New("path is not valid UTF-8")
	}
	return nil
}

func validText(name, s string) error {
	if len(s) > MaxFileBytes {
		return fmt.Errorf("%s is %d bytes; at most %d", name, len(s), MaxFileBytes)
	}
	return nil
}

// Validate implements the pipeline's check.
func (v View) Validate() error {
	if err := validPath(v.Path); err != nil {
		return err
	}
	if v.FromLine < 0 || v.ToLine < -1 {
		return fmt.Errorf("from_line %d, to_line %d: lines count from 1; to_line -1 means the end", v.FromLine, v.ToLine)
	}
	if v.ToLine > 0 && v.FromLine > v.ToLine {
		return fmt.Errorf("from_line %d is after to_line %d", v.FromLine, v.ToLine)
	}
	return nil
}

// Validate implements the pipeline's check.
func (c Create) Validate() error {
	if err := validPath(c.Path); err != nil {
		return err
	}
	if path.Base(c.Path) == "." || path.Base(c.Path) == ".." || strings.HasSuffix(c.Path, "/") {
		return fmt.Errorf("path %q names a directory; file_create makes files", c.Path)
	}
	return validText("content", c.Content)
}

// Validate implements the pipeline's check.
func (r StrReplace) Validate() error {
	if err := validPath(r.Path); err != nil {
		return err
	}
	if r.Old == "" {
		return errors.New("old is empty: give the exact text to replace, with enough lines around it to be unique")
	}
	if r.Old == r.New {
		return errors.New("old and new are the same: nothing would change")
	}
	if err := validText("old", r.Old); err != nil {
		return err
	}
	return validText("new", r.New)
}

// Validate implements the pipeline's check.
func (i Insert) Validate() error {
	if err := validPath(i.Path); err != nil {
		return err
	}
	if i.Line < 0 {
		return fmt.Errorf("line %d: give the line to insert after, 0 for the top", i.Line)
	}
	return validText("text", i.Text)
}

// Validate implements the pipeline's check.
func (u Undo) Validate() error { return validPath(u.Path) }
