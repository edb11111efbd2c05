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
	retAllow       = unix.SECCOMP_RET_ALLOW
	retEPERM       = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	retNoSys       = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
	retNoAFSupport = unix.SECCOMP_RET_ERRNO | uint32(unix.EAFNOSUPPORT)

	offNr   = 0
	offArch = 4
	offArg0 = 16 // low 32 bits on little-endian machines
	offArg1 = 24
)

// nsFlags are the clone flags that make a new namespace. CLONE_NEWTIME
// (0x80) shares its bit with the exit signal in clone(2), so it is not
// here; only unshare and clone3 can ask for it, and both are refused.
const nsFlags = unix.CLONE_NEWNS | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC | unix.CLONE_NEWUSER |
	unix.CLONE_NEWPID | unix.CLONE_NEWNET | unix.CLONE_NEWCGROUP

// SocketFamilies are the address families socket(2) and socketpair(2) may
// ask for; any other fails with EAFNOSUPPORT. The network namespace
// isolates these four; others (AF_VSOCK above all, whose port space is the
// host's, but also AF_PACKET, AF_BLUETOOTH, AF_CAN, AF_XDP, ...) are not
// per namespace, or only reach the kernel's less-trodden code.
var SocketFamilies = []uint32{unix.AF_UNIX, unix.AF_INET, unix.AF_INET6, unix.AF_NETLINK}

// DeniedIoctls are the ioctl requests refused with EPERM: TIOCSTI pushes
// bytes into a terminal's input as if typed, TIOCLINUX (subcode 2, paste)
// does the same on a virtual console; with either, a command could type a
// line the shell runs outside the terminal's record.
var DeniedIoctls = []uint32{unix.TIOCSTI, unix.TIOCLINUX}

// Personalities are the personality(2) arguments allowed: PER_LINUX and
// the query 0xffffffff. The rest (READ_IMPLIES_EXEC, ADDR_NO_RANDOMIZE,
// MMAP_PAGE_ZERO, other ABIs) fail with EPERM.
var Personalities = []uint32{0, 0xffffffff}

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

const (
	ld   = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
	jeq  = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
	jge  = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
	jset = unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K
	ret  = unix.BPF_RET | unix.BPF_K
)

// argCheck is the block for one call whose argument decides: it loads
// the argument's low 32 bits (the kernel reads an int or unsigned int
// there) and returns match if it is one of values, else other. nr is
// already in the accumulator; a call other than nr skips the block.
func argCheck(nr uint32, off uint32, values []uint32, match, other uint32) []unix.SockFilter {
	n := len(values)
	// jeq nr; ld arg; n x jeq value -> match; ret other; ret match
	b := []unix.SockFilter{jump(jeq, nr, 0, uint8(n+3)), stmt(ld, off)}
	for i, v := range values {
		b = append(b, jump(jeq, v, uint8(n-i), 0))
	}
	return append(b, stmt(ret, other), stmt(ret, match))
}

// Program assembles the filter for the running architecture:
//
//	arch != native                  -> EPERM
//	nr (x32 bit set)                -> EPERM            (amd64 only)
//	nr in denied                    -> EPERM
//	nr == clone3                    -> ENOSYS
//	nr == clone && flags&ns         -> EPERM
//	socket, socketpair: family not
//	  in SocketFamilies             -> EAFNOSUPPORT
//	ioctl: request in DeniedIoctls  -> EPERM
//	personality: not in
//	  Personalities                 -> EPERM
//	otherwise                       -> ALLOW
func Program() ([]unix.SockFilter, error) {
	if nativeArch == 0 {
		return nil, ErrUnsupportedArch
	}
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
		jump(jeq, sysClone, 0, 4),
		stmt(ld, offArg0),
		jump(jset, nsFlags, 0, 1),
		stmt(ret, retEPERM),
		stmt(ret, retAllow),
	)
	p = append(p, argCheck(sysSocket, offArg0, SocketFamilies, retAllow, retNoAFSupport)...)
	p = append(p, argCheck(sysSocketpair, offArg0, SocketFamilies, retAllow, retNoAFSupport)...)
	p = append(p, argCheck(sysIoctl, offArg1, DeniedIoctls, retEPERM, retAllow)...)
	p = append(p, argCheck(sysPersonality, offArg0, Personalities, retAllow, retEPERM)...)
	return append(p, stmt(ret, retAllow)), nil
}
