package sandbox

import (
	"fmt"
	"os"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// carriedProgram returns the init program harnessd carries for this
// architecture (package initbin), or nil; nil itself in the init program,
// which carries none.
var carriedProgram func() ([]byte, error)

// carriedInit is the carried init program in a sealed memfd, opened
// read-only, shared by every driver of the process; nil with no error
// when none is carried.
var carriedInit = sync.OnceValues(func() (*os.File, error) {
	if carriedProgram == nil {
		return nil, nil
	}
	prog, err := carriedProgram()
	if err != nil || prog == nil {
		return nil, err
	}
	return memfdExe("harnessd-sandbox-init", prog)
})

// memfdExe returns an executable memfd holding prog: sealed, so that
// nothing (a sandbox that reached it through /proc/1/exe, say, as in
// runc's CVE-2019-5736) can change what later inits run, and opened
// read-only, since the kernel refuses to exec a file open for writing
// (ETXTBSY).
func memfdExe(name string, prog []byte) (*os.File, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING|unix.MFD_EXEC)
	if err == unix.EINVAL { // before Linux 6.3, which has no MFD_EXEC: executable anyway
		fd, err = unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	}
	if err != nil {
		return nil, os.NewSyscallError("memfd_create", err)
	}
	w := os.NewFile(uintptr(fd), "memfd:"+name)
	defer w.Close()
	if _, err := w.Write(prog); err != nil {
		return nil, fmt.Errorf("write %s: %w", w.Name(), err)
	}
	if err := unix.Fchmod(fd, 0o555); err != nil {
		return nil, &os.PathError{Op: "chmod", Path: w.Name(), Err: err}
	}
	const seals = unix.F_SEAL_SEAL | unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, seals); err != nil {
		return nil, &os.PathError{Op: "seal", Path: w.Name(), Err: err}
	}
	ro, err := os.OpenFile("/proc/self/fd/"+strconv.Itoa(fd), os.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("reopen %s read-only: %w", w.Name(), err)
	}
	return ro, nil
}
