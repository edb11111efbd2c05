//go:build linux

package gitnotify

import "golang.org/x/sys/unix"

const (
	nativeArch = unix.AUDIT_ARCH_AARCH64
	x32Bit     = 0
	sysOpenat2 = unix.SYS_OPENAT2
)

// opens are the open calls trapped only with O_CREAT: their number and
// the argument that holds the flags.
var opens = []struct {
	nr       uint32
	flagsArg int
}{{unix.SYS_OPENAT, 2}}

// trapped are the calls that always make a name (arm64 has only the *at
// ones, and renameat2 for renameat).
var trapped = []uint32{
	unix.SYS_MKNODAT, unix.SYS_MKDIRAT, unix.SYS_SYMLINKAT, unix.SYS_LINKAT,
	unix.SYS_RENAMEAT, unix.SYS_RENAMEAT2,
}

// The calls arm64 does not have: numbers no call has.
const (
	sysOpen     = 1<<32 - 1
	sysCreat    = 1<<32 - 2
	sysMknod    = 1<<32 - 3
	sysMkdir    = 1<<32 - 4
	sysSymlink  = 1<<32 - 5
	sysLink     = 1<<32 - 6
	sysRename   = 1<<32 - 7
	sysRenameat = unix.SYS_RENAMEAT
)
