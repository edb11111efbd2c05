//go:build linux

package gitnotify

import "golang.org/x/sys/unix"

const (
	nativeArch = unix.AUDIT_ARCH_X86_64
	x32Bit     = 0x40000000 // __X32_SYSCALL_BIT: the base filter refuses x32 too
	sysOpenat2 = unix.SYS_OPENAT2
)

// opens are the open calls trapped only with O_CREAT: their number and
// the argument that holds the flags.
var opens = []struct {
	nr       uint32
	flagsArg int
}{{unix.SYS_OPEN, 1}, {unix.SYS_OPENAT, 2}}

// trapped are the calls that always make a name.
var trapped = []uint32{
	unix.SYS_CREAT, unix.SYS_MKNOD, unix.SYS_MKNODAT, unix.SYS_MKDIR, unix.SYS_MKDIRAT,
	unix.SYS_SYMLINK, unix.SYS_SYMLINKAT, unix.SYS_LINK, unix.SYS_LINKAT,
	unix.SYS_RENAME, unix.SYS_RENAMEAT, unix.SYS_RENAMEAT2,
}

// The calls arm64 does not have.
const (
	sysOpen     = unix.SYS_OPEN
	sysCreat    = unix.SYS_CREAT
	sysMknod    = unix.SYS_MKNOD
	sysMkdir    = unix.SYS_MKDIR
	sysSymlink  = unix.SYS_SYMLINK
	sysLink     = unix.SYS_LINK
	sysRename   = unix.SYS_RENAME
	sysRenameat = unix.SYS_RENAMEAT
)
