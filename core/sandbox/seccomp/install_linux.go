package seccomp

import (
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Install sets no_new_privs on the calling thread and loads the filter
// into every thread of the process (TSYNC). Children inherit it.
func Install() error {
	p, err := Program()
	if err != nil {
		return err
	}
	return load(p, unix.SECCOMP_FILTER_FLAG_TSYNC)
}

// InstallAgent loads AgentProgram into the calling thread only (no
// TSYNC), after Install: what it starts from then on has both.
func InstallAgent() error {
	p, err := AgentProgram()
	if err != nil {
		return err
	}
	return load(p, 0)
}

func load(p []unix.SockFilter, flags uintptr) error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return os.NewSyscallError("prctl(PR_SET_NO_NEW_PRIVS)", err)
	}
	prog := unix.SockFprog{Len: uint16(len(p)), Filter: &p[0]}
	r, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, flags, uintptr(unsafe.Pointer(&prog)))
	if errno != 0 {
		return os.NewSyscallError("seccomp(SET_MODE_FILTER)", errno)
	}
	if r != 0 {
		// TSYNC names the thread that could not be synchronised.
		return fmt.Errorf("seccomp: thread %d could not take the filter", r)
	}
	return nil
}
