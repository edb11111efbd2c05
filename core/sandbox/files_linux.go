package sandbox

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/core/files"
)

// This file is the sandbox's side of the file actions (package files):
// the four primitives, performed by the init on its own filesystem as the
// sandbox's user, the init's loop that serves them, the daemon's client
// of that loop, and the same primitives in the daemon's process for the
// driver "none".

var (
	_ files.Filer = (*nativeSandbox)(nil)
	_ files.Filer = (*noneSandbox)(nil)
)

// fileTimeout bounds one request to the init: the primitives never wait
// on a FIFO or device, so only a sandbox stuck as a whole takes longer.
const fileTimeout = 30 * time.Second

// serveFiles answers file requests on the init's socket until the daemon
// closes it or the init exits; the init's main goroutine, which owns it,
// never waits for it (the process's exit ends it).
//
// The init's other threads kept their capabilities in the sandbox's user
// namespace (lockdown drops them on the thread that forks the shell), so
// this goroutine locks itself to a thread and drops every capability of
// that thread first: what it does, it does as the shell could.
func serveFiles(sock *os.File) {
	runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
	defer sock.Close()
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return // without the drop, serve nothing: the daemon sees EOF
	}
	// The files it makes for the agent go through the git guard's HEAD
	// rule as the agent's own do, where the init enforces it.
	if err := installHeadRule(); err != nil {
		return
	}
	// Read with recvmsg: a spawn request (spawn_linux.go) brings
	// descriptors with its frame.
	fr := initReader(int(sock.Fd()))
	r := bufio.NewReader(fr)
	for {
		var creq ctlRequest
		data, err := readFrame(r, &creq)
		fds := fr.take()
		if err != nil {
			closeFDs(fds)
			return
		}
		if creq.Spawn != nil {
			resp, pidfd := spawnOp(creq.Spawn, fds)
			var out []int
			if pidfd >= 0 {
				out = []int{pidfd}
			}
			err := sendFrameFDs(int(sock.Fd()), resp, out)
			if pidfd >= 0 {
				unix.Close(pidfd)
			}
			if err != nil {
				return
			}
			continue
		}
		closeFDs(fds) // a file primitive takes none
		req := creq.Request
		req.Data = data
		resp := fileOpSafe(&req)
		if err := writeFrame(sock, resp, resp.Data); errors.Is(err, errFrameTooBig) {
			// A workspace built to make the answer too big (names of
			// escapes) must not end the service: say so instead.
			err = writeFrame(sock, &files.Response{Path: resp.Path, Code: files.CodeTooLarge, Err: "the answer is too large to send"}, nil)
			if err != nil {
				return
			}
		} else if err != nil {
			return
		}
	}
}

// fileOpSafe is fileOp that turns a panic into an answer: the init is the
// sandbox's pid 1, and its death would end the sandbox.
func fileOpSafe(req *files.Request) (resp *files.Response) {
	defer func() {
		if v := recover(); v != nil {
			resp = &files.Response{Code: files.CodeIO, Err: fmt.Sprintf("internal error: %v", v)}
		}
	}()
	return fileOp(req)
}

// fileOp performs one primitive. Every open is O_NONBLOCK and
// O_NOCTTY, after a stat has refused what is not a regular file or
// directory, and is checked with fstat after: a FIFO or device swapped in
// between is neither waited on nor read. Symlinks are followed where the
// path resolves (inside a sandbox, its own root), and the answer names
// the resolved path.
func fileOp(req *files.Request) *files.Response {
	if !filepath.IsAbs(req.Path) || strings.IndexByte(req.Path, 0) >= 0 {
		return &files.Response{Code: files.CodeBadRequest, Err: fmt.Sprintf("path %q is not absolute", req.Path)}
	}
	switch req.Op {
	case files.OpRead, files.OpWrite, files.OpRemove:
		// The file service's own /proc (the init's, or with the driver
		// none the daemon's: its environment, its descriptors) is not
		// the agent's to read: refused however the path reaches it.
		if r, err := filepath.EvalSymlinks(req.Path); err == nil && ownProc(r) {
			return &files.Response{Path: r, Code: files.CodePermission, Err: "the file service's own /proc entries are not served"}
		}
	}
	switch req.Op {
	case files.OpRead:
		return fileRead(req)
	case files.OpWrite:
		return fileWrite(req)
	case files.OpRemove:
		return fileRemove(req)
	}
	return &files.Response{Code: files.CodeBadRequest, Err: fmt.Sprintf("unknown op %q", req.Op)}
}

// ownProc reports whether a resolved path is under this process's
// /proc/PID (what /proc/self and /proc/thread-self resolve to).
func ownProc(p string) bool {
	own := "/proc/" + strconv.Itoa(os.Getpid())
	return p == own || strings.HasPrefix(p, own+"/")
}

// errResp maps an errno to the protocol's codes.
func errResp(p string, err error) *files.Response {
	r := &files.Response{Path: p, Err: err.Error(), Code: files.CodeIO}
	switch {
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENOTDIR):
		r.Code = files.CodeNotFound
	case errors.Is(err, unix.EROFS):
		r.Code, r.Err = files.CodeProtected, "read-only file system"
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
		r.Code = files.CodePermission
	case errors.Is(err, unix.EISDIR):
		r.Code = files.CodeIsDir
	case errors.Is(err, unix.EEXIST):
		r.Code = files.CodeExists
	}
	return r
}

func typeOf(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return files.TypeFile
	case unix.S_IFDIR:
		return files.TypeDir
	case unix.S_IFIFO:
		return files.TypeFIFO
	case unix.S_IFCHR, unix.S_IFBLK:
		return files.TypeDevice
	case unix.S_IFSOCK:
		return files.TypeSocket
	case unix.S_IFLNK:
		return files.TypeSymlink
	}
	return files.TypeOther
}

// openRegular opens a regular file for reading without waiting on
// anything, and checks that what it opened is the file st described.
func openRegular(p string, st *unix.Stat_t) (int, error) {
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	var fst unix.Stat_t
	if err := unix.Fstat(fd, &fst); err != nil {
		unix.Close(fd)
		return -1, err
	}
	if fst.Mode&unix.S_IFMT != unix.S_IFREG || fst.Dev != st.Dev || fst.Ino != st.Ino {
		unix.Close(fd)
		return -1, errSwapped
	}
	*st = fst
	return fd, nil
}

var errSwapped = errors.New("the file was replaced while it was opened")

// readAll reads at most max bytes of an open regular file of about
// size bytes (its fstat); more is reported, so a file growing past the
// stat's size is still bounded.
func readAll(fd int, size, max int64) ([]byte, bool, error) {
	f := os.NewFile(uintptr(fd), "")
	defer f.Close()
	b := make([]byte, 0, min(size, max)+1) // one allocation for a file that keeps its size
	for int64(len(b)) <= max {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := f.Read(b[len(b):min(int64(cap(b)), max+1)])
		b = b[:len(b)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, false, err
		}
	}
	if int64(len(b)) > max {
		return nil, true, nil
	}
	return b, false, nil
}

func fileRead(req *files.Request) *files.Response {
	max := req.Max
	if max <= 0 || max > files.MaxFileBytes {
		max = files.MaxFileBytes
	}
	p, err := filepath.EvalSymlinks(req.Path)
	if err != nil {
		return errResp(req.Path, err)
	}
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		return errResp(p, err)
	}
	r := &files.Response{Path: p, Type: typeOf(st.Mode), Mode: st.Mode & 0o7777, Size: st.Size}
	switch r.Type {
	case files.TypeDir:
		r.Entries, r.Truncated, err = listDir(p, max2(req.Depth, 1))
		if err != nil {
			return errResp(p, err)
		}
		return r
	case files.TypeFile:
	default:
		r.Code, r.Err = files.CodeNotRegular, "not a regular file"
		return r
	}
	if st.Size > max {
		r.Code, r.Err = files.CodeTooLarge, fmt.Sprintf("%d bytes", st.Size)
		return r
	}
	fd, err := openRegular(p, &st)
	if err != nil {
		return errResp(p, err)
	}
	b, over, err := readAll(fd, st.Size, max)
	if err != nil {
		return errResp(p, err)
	}
	if over {
		r.Code, r.Err = files.CodeTooLarge, "the file grew while it was read"
		return r
	}
	r.Data, r.Size = b, int64(len(b))
	return r
}

func max2(a, b int) int {
	if a > b {
		return a
	}
	return b
}

// listDir lists a directory depth levels deep, hidden entries left out,
// symlinks not followed, at most files.MaxListEntries.
func listDir(dir string, depth int) ([]string, bool, error) {
	var out []string
	cut, size := false, 0
	var walk func(abs, rel string, depth int) error
	walk = func(abs, rel string, depth int) error {
		fd, err := unix.Open(abs, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NONBLOCK|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		f := os.NewFile(uintptr(fd), abs)
		// A directory of millions of entries is read only so far: the
		// first maxDirRead, sorted, and the view says it was cut.
		ents, err := f.ReadDir(maxDirRead)
		more := len(ents) == maxDirRead
		f.Close()
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		if more {
			cut = true
		}
		sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), ".") {
				continue
			}
			name := rel + e.Name()
			if len(out) >= files.MaxListEntries || size+len(name) > maxListBytes {
				return errFull
			}
			size += len(name) + 1
			if e.IsDir() {
				out = append(out, name+"/")
				if depth > 1 {
					// An unreadable subdirectory is listed, not entered.
					if err := walk(abs+"/"+e.Name(), name+"/", depth-1); errors.Is(err, errFull) {
						return err
					}
				}
				continue
			}
			out = append(out, name)
		}
		return nil
	}
	err := walk(strings.TrimSuffix(dir, "/"), "", depth)
	if errors.Is(err, errFull) {
		return out, true, nil
	}
	return out, cut, err
}

// maxListBytes bounds the names of a listing, so that its answer fits a
// frame even if every byte is escaped in JSON.
const maxListBytes = 128 << 10

// maxDirRead bounds the names read from one directory.
const maxDirRead = 4 * files.MaxListEntries

var errFull = errors.New("listing full")

// resolveTarget resolves a path to write or remove: symlinks in its
// directory are followed; a final symlink that resolves is followed too
// (the edit goes to the file it names, and the link stays a link).
func resolveTarget(p string, mkdirs bool) (string, error) {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r, nil
	}
	dir, base := filepath.Split(p)
	if base == "" || base == "." || base == ".." {
		return "", unix.EISDIR
	}
	if mkdirs {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", err
		}
	}
	rd, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", err
	}
	return filepath.Join(rd, base), nil
}

// readOnly reports whether the mount holding p is read-only: a protected
// path is a read-only bind, over a file or a directory.
func readOnly(p string) bool {
	var st unix.Statfs_t
	return unix.Statfs(p, &st) == nil && st.Flags&unix.ST_RDONLY != 0
}

func protected(p string) *files.Response {
	return &files.Response{Path: p, Code: files.CodeProtected, Err: "read-only in this sandbox"}
}

// checkSum compares the current content of the regular file at p (st)
// with want.
func checkSum(p string, st *unix.Stat_t, want string) *files.Response {
	fd, err := openRegular(p, st)
	if err != nil {
		return errResp(p, err)
	}
	b, over, err := readAll(fd, st.Size, files.MaxFileBytes)
	if err != nil {
		return errResp(p, err)
	}
	if over || files.Sum(b) != want {
		return &files.Response{Path: p, Code: files.CodeChanged, Err: "the file's content changed"}
	}
	return nil
}

// fileWrite replaces or creates a regular file atomically: the content
// goes to a new file in the same directory, which is renamed over the
// target. Why not in place: a hard link planted to a file elsewhere on
// the same filesystem is replaced, never written through; a reader never
// sees half a file; a failed write leaves the old file whole. The cost: a
// hard-linked file loses the link, the directory must be writable. An
// existing file keeps its permission bits (not set-id bits).
func fileWrite(req *files.Request) *files.Response {
	if int64(len(req.Data)) > files.MaxFileBytes {
		return &files.Response{Code: files.CodeTooLarge, Err: fmt.Sprintf("%d bytes", len(req.Data))}
	}
	p, err := resolveTarget(req.Path, req.Create)
	if err != nil {
		if errors.Is(err, unix.EROFS) {
			return protected(req.Path)
		}
		return errResp(req.Path, err)
	}
	var st unix.Stat_t
	existed := true
	if err := unix.Lstat(p, &st); err != nil {
		if !errors.Is(err, unix.ENOENT) {
			return errResp(p, err)
		}
		existed = false
	}
	mode := req.Mode & 0o777
	if mode == 0 {
		mode = 0o644
	}
	switch {
	case existed && typeOf(st.Mode) == files.TypeDir:
		return &files.Response{Path: p, Type: files.TypeDir, Code: files.CodeIsDir, Err: "a directory"}
	case existed && typeOf(st.Mode) != files.TypeFile:
		return &files.Response{Path: p, Type: typeOf(st.Mode), Code: files.CodeNotRegular, Err: "not a regular file"}
	case existed && (req.Excl || req.IfSum == "absent"):
		return &files.Response{Path: p, Code: files.CodeExists, Err: "exists"}
	case !existed && !req.Create:
		return &files.Response{Path: p, Code: files.CodeNotFound, Err: "no such file"}
	case !existed && req.IfSum != "" && req.IfSum != "absent":
		return &files.Response{Path: p, Code: files.CodeChanged, Err: "the file is gone"}
	}
	if existed {
		mode = st.Mode & 0o777
	}
	dir := filepath.Dir(p)
	if readOnly(dir) || (existed && readOnly(p)) {
		return protected(p)
	}
	if existed && req.IfSum != "" {
		if r := checkSum(p, &st, req.IfSum); r != nil {
			return r
		}
	}
	var rnd [6]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return errResp(p, err)
	}
	tmp := filepath.Join(dir, "."+filepath.Base(p)+".harnessd-"+hex.EncodeToString(rnd[:]))
	fd, err := unix.Open(tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		if errors.Is(err, unix.EROFS) {
			return protected(p)
		}
		return errResp(p, err)
	}
	f := os.NewFile(uintptr(fd), tmp)
	_, werr := f.Write(req.Data)
	if werr == nil {
		werr = f.Chmod(os.FileMode(mode))
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = unix.Rename(tmp, p)
		if errors.Is(werr, unix.EBUSY) || errors.Is(werr, unix.EXDEV) {
			// p is a mount point: a file bound over itself, protected.
			unix.Unlink(tmp)
			return protected(p)
		}
	}
	if werr != nil {
		unix.Unlink(tmp)
		return errResp(p, werr)
	}
	return &files.Response{Path: p, Type: files.TypeFile, Mode: mode, Size: int64(len(req.Data)), Existed: existed}
}

// fileRemove unlinks a regular file (undoing a create).
func fileRemove(req *files.Request) *files.Response {
	p, err := resolveTarget(req.Path, false)
	if err != nil {
		return errResp(req.Path, err)
	}
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		return errResp(p, err)
	}
	if typeOf(st.Mode) == files.TypeDir {
		return &files.Response{Path: p, Type: files.TypeDir, Code: files.CodeIsDir, Err: "a directory"}
	}
	if typeOf(st.Mode) != files.TypeFile {
		return &files.Response{Path: p, Type: typeOf(st.Mode), Code: files.CodeNotRegular, Err: "not a regular file"}
	}
	if readOnly(filepath.Dir(p)) || readOnly(p) {
		return protected(p)
	}
	if req.IfSum != "" {
		if r := checkSum(p, &st, req.IfSum); r != nil {
			return r
		}
	}
	if err := unix.Unlink(p); err != nil {
		if errors.Is(err, unix.EBUSY) {
			return protected(p)
		}
		return errResp(p, err)
	}
	return &files.Response{Path: p, Existed: true}
}

// fileConn is the daemon's end of one init's file channel: one request
// at a time. A request that ends early (its context, the timeout) leaves
// the stream mid-frame, so the channel is closed, not reused.
type fileConn struct {
	closed atomic.Bool // set before c is closed, without mu: a request in flight ends at once
	c      net.Conn

	mu     sync.Mutex // one request at a time
	r      *bufio.Reader
	fr     *fdReader // under r: the descriptors an answer brought (spawn_linux.go); nil if c is not a unix socket
	broken error
}

// close ends the channel; a request waiting on it fails now rather than
// be waited for.
func (fc *fileConn) close() {
	fc.closed.Store(true)
	fc.c.Close()
}

func (fc *fileConn) do(ctx context.Context, req *files.Request) (*files.Response, error) {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	var resp files.Response
	err := fc.exchange(ctx, func() error {
		err := writeFrame(fc.c, req, req.Data)
		if err == nil {
			resp.Data, err = readFrame(fc.r, &resp)
		}
		return err
	})
	if fc.fr != nil {
		closeFDs(fc.fr.take()) // an answer to a file primitive brings none
	}
	if err != nil {
		return nil, err
	}
	return &resp, nil
}

// exchange runs one request's writes and reads (f) with fc.mu held,
// bounded by fileTimeout and ctx; a failure breaks the channel for good.
func (fc *fileConn) exchange(ctx context.Context, f func() error) error {
	if fc.closed.Load() {
		return fmt.Errorf("%w: the sandbox's shell was replaced or destroyed", files.ErrUnavailable)
	}
	if fc.broken != nil {
		return fmt.Errorf("%w: %w", files.ErrUnavailable, fc.broken)
	}
	deadline := time.Now().Add(fileTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if err := fc.c.SetDeadline(deadline); err != nil {
		return fmt.Errorf("%w: %w", files.ErrUnavailable, err)
	}
	stop := context.AfterFunc(ctx, func() { fc.c.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if err := f(); err != nil {
		if errors.Is(err, io.EOF) {
			err = errors.New("the sandbox's init has exited")
		}
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%w)", ctx.Err(), err)
		}
		fc.broken = err
		fc.c.Close()
		return fmt.Errorf("%w: %w", files.ErrUnavailable, err)
	}
	return nil
}

// keepFiles makes c, the socket to an init whose shell has started, this
// sandbox's file channel, in place of an earlier init's.
func (s *nativeSandbox) keepFiles(c net.Conn, r *bufio.Reader) {
	fc := newFileConn(c, r)
	s.mu.Lock()
	old := s.files
	s.files = fc
	if s.destroyed {
		s.files = nil
		old = fc
	}
	s.mu.Unlock()
	if old != nil {
		old.close()
	}
}

// closeFiles closes the file channel (Destroy).
func (s *nativeSandbox) closeFiles() {
	s.mu.Lock()
	fc := s.files
	s.files = nil
	s.mu.Unlock()
	if fc != nil {
		fc.close()
	}
}

// File performs one file primitive inside the sandbox, by its init, as
// the sandbox's user in its mount namespace (package files).
func (s *nativeSandbox) File(ctx context.Context, req *files.Request) (*files.Response, error) {
	s.mu.Lock()
	fc := s.files
	s.mu.Unlock()
	if fc == nil {
		return nil, fmt.Errorf("%w: no shell is running in sandbox %s", files.ErrUnavailable, s.spec.ID)
	}
	return fc.do(ctx, req)
}

// LocalFiles performs file primitives in the daemon's own process, as
// the daemon's user, on the host's paths: the driver "none", which has no
// isolation. The guards against FIFOs, devices and huge files still hold;
// nothing confines a path or a symlink.
func LocalFiles() files.Filer { return localFiles{} }

type localFiles struct{}

func (localFiles) File(ctx context.Context, req *files.Request) (*files.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return fileOpSafe(req), nil
}

func (localFiles) Unsandboxed() bool { return true }

// File performs file primitives on the host: see LocalFiles.
func (s *noneSandbox) File(ctx context.Context, req *files.Request) (*files.Response, error) {
	return localFiles{}.File(ctx, req)
}

// Unsandboxed says the driver "none" edits as the daemon's user.
func (s *noneSandbox) Unsandboxed() bool { return true }
