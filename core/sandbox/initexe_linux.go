package sandbox

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// carriedProgram writes the init program harnessd carries for this
// architecture (package initbin) to w and reports whether there is one;
// nil in the init program, which carries none.
var carriedProgram func(w io.Writer) (bool, error)

// carriedInit is the carried init program in a sealed memfd, opened
// read-only, shared by every driver of the process; nil with no error
// when none is carried. The program is unpacked straight into the memfd:
// a copy in the heap would stay resident, and every sandbox's start
// forks this process, page tables and all.
var carriedInit = sync.OnceValues(func() (*os.File, error) {
	if carriedProgram == nil {
		return nil, nil
	}
	return memfdExe("harnessd-sandbox-init", carriedProgram)
})

// memfdExe returns an executable memfd holding what write writes, or nil
// with no error when write reports there is nothing: sealed, so that
// nothing (a sandbox that reached it through /proc/1/exe, say, as in
// runc's CVE-2019-5736) can change what later inits run, and opened
// read-only, since the kernel refuses to exec a file open for writing
// (ETXTBSY).
func memfdExe(name string, write func(io.Writer) (bool, error)) (*os.File, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING|unix.MFD_EXEC)
	if err == unix.EINVAL { // before Linux 6.3, which has no MFD_EXEC: executable anyway
		fd, err = unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	}
	if err != nil {
		return nil, os.NewSyscallError("memfd_create", err)
	}
	w := os.NewFile(uintptr(fd), "memfd:"+name)
	defer w.Close()
	switch ok, err := write(w); {
	case err != nil:
		return nil, fmt.Errorf("write %s: %w", w.Name(), err)
	case !ok:
		return nil, nil
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
