package files

import "context"

// MaxFileBytes is the largest file the editor reads or writes. Larger
// files are answered with their size and type: a model cannot use
// megabytes of text in one observation, and the sandbox's init, which
// reads them, should not hold more.
const MaxFileBytes = 4 << 20

// MaxListEntries bounds a directory view.
const MaxListEntries = 1000

// The primitive operations a sandbox performs (Request.Op).
const (
	OpRead   = "read"   // a regular file's bytes, at most Max; a directory's entries; else the type
	OpWrite  = "write"  // replace or create a regular file atomically
	OpRemove = "remove" // unlink a regular file
)

// Request is one primitive operation, sent by the daemon to a sandbox.
// Paths are absolute as the sandbox sees them; the daemon has already
// joined a relative path to the shell's directory.
type Request struct {
	Op   string
	Path string
	// Read: at most this many bytes of a file (MaxFileBytes if 0); a
	// directory is listed Depth levels deep (hidden entries left out).
	Max   int64 `json:",omitempty"`
	Depth int   `json:",omitempty"`
	// Write: the new content. Create allows a missing file (and makes
	// its missing parents); Excl refuses an existing one. Mode is a new
	// file's permission bits (0644 if 0); an existing file keeps its own.
	Data   []byte `json:"-"` // framed apart from the rest, raw
	Create bool   `json:",omitempty"`
	Excl   bool   `json:",omitempty"`
	Mode   uint32 `json:",omitempty"`
	// Write and remove: if set, the file must still hold content with
	// this SHA-256 (hex), else the answer is CodeChanged. "absent": the
	// file must not exist.
	IfSum string `json:",omitempty"`
}

// The file types Response.Type names.
const (
	TypeFile    = "file"
	TypeDir     = "directory"
	TypeFIFO    = "fifo"
	TypeDevice  = "device"
	TypeSocket  = "socket"
	TypeSymlink = "symlink"
	TypeOther   = "other"
)

// Codes say why a primitive failed (Response.Code); Response.Err says it
// in words.
const (
	CodeNotFound   = "not_found"
	CodeExists     = "exists"
	CodeNotRegular = "not_regular" // a FIFO, device, socket: never opened for reading or writing
	CodeIsDir      = "is_dir"
	CodeTooLarge   = "too_large"
	CodeProtected  = "protected" // a read-only path (a protected bind, a read-only mount)
	CodePermission = "permission"
	CodeChanged    = "changed" // IfSum did not match
	CodeBadRequest = "bad_request"
	CodeIO         = "io"
)

// Response answers a Request.
type Response struct {
	Code string `json:",omitempty"` // "" on success
	Err  string `json:",omitempty"`
	// Path is the request's path with symlinks resolved, in the
	// sandbox's namespace.
	Path string `json:",omitempty"`
	Type string `json:",omitempty"`
	Mode uint32 `json:",omitempty"`
	Size int64  `json:",omitempty"`
	// Data is a regular file's content (read), absent when Size is over
	// the request's Max. Framed apart from the rest, raw.
	Data []byte `json:"-"`
	// Entries are a directory's, relative to Path, sorted; a directory
	// ends in "/". Truncated says MaxListEntries cut the list.
	Entries   []string `json:",omitempty"`
	Truncated bool     `json:",omitempty"`
	// Existed says whether a write or remove found the file there.
	Existed bool `json:",omitempty"`
}

// Filer performs primitives in one place: a sandbox, or the host.
type Filer interface {
	File(ctx context.Context, req *Request) (*Response, error)
}

// Unsandboxed is implemented by a Filer that works on the host as the
// daemon's user (the driver "none"); Result.Unsandboxed says so.
type Unsandboxed interface {
	Unsandboxed() bool
}
