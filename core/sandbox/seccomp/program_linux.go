//go:build linux

package seccomp

import (
	"errors"

	"golang.org/x/sys/unix"
)

// ErrUnsupportedArch means the filter has no syscall table for this
// architecture.
var ErrUnsupportedArch = errors.New("seccomp: architecture not supported")

// Denied are the system calls refused with EPERM, by name, for the reader
// and the tests; the numbers come from denied (per architecture).
func Denied() []string {
	names := make([]string, 0, len(denied))
	for _, d := range denied {
		names = append(names, d.name)
	}
	return names
}

// Seccomp return values and the offsets of struct seccomp_data.
const (
	retAllow = unix.SECCOMP_RET_ALLOW
	retEPERM = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	retNoSys = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)

	offNr   = 0
	offArch = 4
	offArg0 = 16 // low 32 bits on little-endian machines
)

// nsFlags are the clone flags that make a new namespace. CLONE_NEWTIME
// (0x80) shares its bit with the exit signal in clone(2), so it is not
// here; only unshare and clone3 can ask for it, and both are refused.
const nsFlags = unix.CLONE_NEWNS | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC | unix.CLONE_NEWUSER |
	unix.CLONE_NEWPID | unix.CLONE_NEWNET | unix.CLONE_NEWCGROUP

type call struct {
	name string
	nr   uint32
}

func stmt(code uint16, k uint32) unix.SockFilter {
	return unix.SockFilter{Code: code, K: k}
}

func jump(code uint16, k uint32, jt, jf uint8) unix.SockFilter {
	return unix.SockFilter{Code: code, Jt: jt, Jf: jf, K: k}
}

// Program assembles the filter for the running architecture:
//
//	arch != native          -> EPERM
//	nr (x32 bit set)        -> EPERM            (amd64 only)
//	nr in denied            -> EPERM
//	nr == clone3            -> ENOSYS
//	nr == clone && flags&ns -> EPERM
//	otherwise               -> ALLOW
func Program() ([]unix.SockFilter, error) {
	if nativeArch == 0 {
		return nil, ErrUnsupportedArch
	}
	const (
		ld   = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq  = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jge  = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
		jset = unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K
		ret  = unix.BPF_RET | unix.BPF_K
	)
	p := []unix.SockFilter{
		stmt(ld, offArch),
		jump(jeq, nativeArch, 1, 0),
		stmt(ret, retEPERM),
		stmt(ld, offNr),
	}
	if x32Bit != 0 {
		p = append(p, jump(jge, x32Bit, 0, 1), stmt(ret, retEPERM))
	}
	for _, d := range denied {
		p = append(p, jump(jeq, d.nr, 0, 1), stmt(ret, retEPERM))
	}
	p = append(p,
		jump(jeq, sysClone3, 0, 1), stmt(ret, retNoSys),
		jump(jeq, sysClone, 0, 3),
		stmt(ld, offArg0),
		jump(jset, nsFlags, 0, 1),
		stmt(ret, retEPERM),
		stmt(ret, retAllow),
	)
	return p, nil
}
