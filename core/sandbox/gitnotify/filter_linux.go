package gitnotify

import (
	"errors"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ErrUnsupportedArch means the filter has no syscall table for this
// architecture.
var ErrUnsupportedArch = errors.New("gitnotify: architecture not supported")

// Actions of the filter.
const (
	retAllow  = unix.SECCOMP_RET_ALLOW
	retNotify = unix.SECCOMP_RET_USER_NOTIF
	retEPERM  = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	retNoSys  = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
)

// struct seccomp_data offsets; an argument's low 32 bits on a
// little-endian machine, where the kernel reads an int.
const (
	offNr   = 0
	offArch = 4
)

func offArg(i int) uint32 { return uint32(16 + 8*i) }

const (
	ld   = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
	jeq  = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
	jge  = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
	jset = unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K
	ret  = unix.BPF_RET | unix.BPF_K
)

// ins is an instruction whose jumps name their targets (labels), which
// assemble resolves.
type ins struct {
	f      unix.SockFilter
	jt, jf string
}

// Program assembles the filter for the running architecture:
//
//	arch != native                    -> EPERM
//	nr (x32 bit set)                  -> EPERM   (amd64 only)
//	open, openat: O_PATH in flags     -> ALLOW
//	open, openat: O_CREAT in flags    -> USER_NOTIF
//	openat2                           -> ENOSYS
//	creat, mknod(at), mkdir(at),
//	  symlink(at), link(at),
//	  rename(at, at2)                 -> USER_NOTIF
//	otherwise                         -> ALLOW
//
// O_TMPFILE makes no name (its linkat is trapped), nor does O_PATH,
// with which open(2) drops O_CREAT (the flags are the call's registers,
// which the task cannot change once it has made it; and the init could
// not pass an O_PATH descriptor back: ADDFD refuses them); the base filter
// (package seccomp) refuses the other ways of making names (io_uring,
// mount).
func Program() ([]unix.SockFilter, error) {
	if nativeArch == 0 {
		return nil, ErrUnsupportedArch
	}
	p := []ins{
		{f: unix.SockFilter{Code: ld, K: offArch}},
		{f: unix.SockFilter{Code: jeq, K: nativeArch}, jf: "eperm"},
		{f: unix.SockFilter{Code: ld, K: offNr}},
	}
	if x32Bit != 0 {
		p = append(p, ins{f: unix.SockFilter{Code: jge, K: x32Bit}, jt: "eperm"})
	}
	for _, o := range opens {
		// jeq nr, else skip the three that follow; ld flags; jset
		// O_PATH; jset O_CREAT
		p = append(p,
			ins{f: unix.SockFilter{Code: jeq, K: o.nr, Jf: 3}},
			ins{f: unix.SockFilter{Code: ld, K: offArg(o.flagsArg)}},
			ins{f: unix.SockFilter{Code: jset, K: unix.O_PATH}, jt: "allow"},
			ins{f: unix.SockFilter{Code: jset, K: unix.O_CREAT}, jt: "notify", jf: "allow"},
		)
	}
	p = append(p, ins{f: unix.SockFilter{Code: jeq, K: sysOpenat2}, jt: "enosys"})
	for _, nr := range trapped {
		p = append(p, ins{f: unix.SockFilter{Code: jeq, K: nr}, jt: "notify"})
	}
	p = append(p,
		ins{f: unix.SockFilter{Code: ret, K: retAllow}, jt: "=allow"},
		ins{f: unix.SockFilter{Code: ret, K: retNotify}, jt: "=notify"},
		ins{f: unix.SockFilter{Code: ret, K: retNoSys}, jt: "=enosys"},
		ins{f: unix.SockFilter{Code: ret, K: retEPERM}, jt: "=eperm"},
	)
	return assemble(p)
}

// assemble resolves the labels of p: an instruction whose jt is
// "=name" is the label name (a return, which has no jumps).
func assemble(p []ins) ([]unix.SockFilter, error) {
	at := map[string]int{}
	for i, in := range p {
		if len(in.jt) > 1 && in.jt[0] == '=' {
			at[in.jt[1:]] = i
		}
	}
	out := make([]unix.SockFilter, len(p))
	for i, in := range p {
		f := in.f
		if in.f.Code != ret {
			for _, j := range []struct {
				label string
				off   *uint8
			}{{in.jt, &f.Jt}, {in.jf, &f.Jf}} {
				if j.label == "" {
					continue
				}
				d := at[j.label] - i - 1
				if d < 0 || d > 255 {
					return nil, errors.New("gitnotify: a jump does not reach " + j.label)
				}
				*j.off = uint8(d)
			}
		}
		out[i] = f
	}
	return out, nil
}

// Install loads the filter on the calling thread only (no TSYNC: the
// init's other threads serve it), with a new listener, which it
// returns (close-on-exec). The thread must have no_new_privs (the base
// filter's Install sets it on every thread). Where the kernel has it
// (5.19), a task whose call the init has taken waits for the answer
// killable only: a signal then would restart a call whose effect the
// init may already have made.
func Install() (int, error) {
	p, err := Program()
	if err != nil {
		return -1, err
	}
	prog := unix.SockFprog{Len: uint16(len(p)), Filter: &p[0]}
	flags := uintptr(unix.SECCOMP_FILTER_FLAG_NEW_LISTENER | unix.SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV)
	for {
		fd, _, errno := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, flags, uintptr(unsafe.Pointer(&prog)))
		if errno == unix.EINVAL && flags&unix.SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV != 0 {
			flags &^= unix.SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV // before 5.19
			continue
		}
		if errno != 0 {
			return -1, os.NewSyscallError("seccomp(SET_MODE_FILTER, NEW_LISTENER)", errno)
		}
		return int(fd), nil
	}
}
