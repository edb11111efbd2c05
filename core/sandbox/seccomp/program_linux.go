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

// argOff is the offset of argument i's low 32 bits in seccomp_data.
func argOff(i int) uint32 { return offArg0 + 8*uint32(i) }

// SetIDBits are the mode bits a file may not be given inside: a setuid
// or setgid file the agent makes in a workspace its user named is that
// user's on the host (the sandbox's root is them there), and the host
// mounts the directory without nosuid, so any other local user who can
// reach it would run the file as them. chmod, fchmod, fchmodat(2),
// mknod(at), creat and an open that creates (O_CREAT, O_TMPFILE) fail
// with EPERM when the mode asks for either bit; mkdir drops them itself.
const SetIDBits = unix.S_ISUID | unix.S_ISGID

// createFlags are the open flags with which an open makes a file, and so
// uses its mode argument (O_TMPFILE's own bit, without O_DIRECTORY).
const createFlags = unix.O_CREAT | unix.O_TMPFILE&^unix.O_DIRECTORY

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

// modeCall is a call whose mode argument (mode, the argument's index) the
// filter checks for SetIDBits; for an open (flags >= 0), only when its
// flags argument has createFlags.
type modeCall struct {
	name        string
	nr          uint32
	flags, mode int
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

// modeCheck is the block for one modeCall: EPERM when the mode has
// SetIDBits (and, for an open, the flags create), else ALLOW. nr is in
// the accumulator; another call skips the block.
func modeCheck(c modeCall) []unix.SockFilter {
	if c.flags < 0 {
		// jeq nr; ld mode; jset setid -> EPERM; ret allow
		return []unix.SockFilter{
			jump(jeq, c.nr, 0, 4),
			stmt(ld, argOff(c.mode)),
			jump(jset, SetIDBits, 0, 1),
			stmt(ret, retEPERM),
			stmt(ret, retAllow),
		}
	}
	// jeq nr; ld flags; jset create (else allow); ld mode; jset setid -> EPERM; ret allow
	return []unix.SockFilter{
		jump(jeq, c.nr, 0, 6),
		stmt(ld, argOff(c.flags)),
		jump(jset, createFlags, 0, 3),
		stmt(ld, argOff(c.mode)),
		jump(jset, SetIDBits, 0, 1),
		stmt(ret, retEPERM),
		stmt(ret, retAllow),
	}
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
//	chmod family, mknod(at), creat,
//	  creating opens: mode has
//	  SetIDBits                     -> EPERM
//	otherwise                       -> ALLOW
//
// openat2's mode is behind a pointer the filter cannot read: the agent's
// own processes get AgentProgram too.
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
	for _, c := range modeCalls {
		p = append(p, modeCheck(c)...)
	}
	return append(p, stmt(ret, retAllow)), nil
}

// AgentProgram is the filter the agent's processes get on top of
// Program, installed by the thread that starts them (InstallAgent), not
// by the init's own threads, which use openat2 (RESOLVE_BENEATH) for the
// file service and the HEAD rule:
//
//	arch != native  -> EPERM
//	nr == openat2   -> ENOSYS
//	otherwise       -> ALLOW
//
// openat2's flags and mode are behind a pointer the filter cannot read,
// so SetIDBits could pass through it; ENOSYS is the answer of a kernel
// without it, on which every caller falls back to openat.
func AgentProgram() ([]unix.SockFilter, error) {
	if nativeArch == 0 {
		return nil, ErrUnsupportedArch
	}
	return []unix.SockFilter{
		stmt(ld, offArch),
		jump(jeq, nativeArch, 1, 0),
		stmt(ret, retEPERM),
		stmt(ld, offNr),
		jump(jeq, unix.SYS_OPENAT2, 0, 1),
		stmt(ret, retNoSys),
		stmt(ret, retAllow),
	}, nil
}
