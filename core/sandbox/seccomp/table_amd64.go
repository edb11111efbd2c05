//go:build linux

package seccomp

import "golang.org/x/sys/unix"

const (
	nativeArch     = unix.AUDIT_ARCH_X86_64
	x32Bit         = 0x40000000 // __X32_SYSCALL_BIT: x32 calls are refused whole
	sysClone       = unix.SYS_CLONE
	sysClone3      = unix.SYS_CLONE3
	sysSocket      = unix.SYS_SOCKET
	sysSocketpair  = unix.SYS_SOCKETPAIR
	sysIoctl       = unix.SYS_IOCTL
	sysPersonality = unix.SYS_PERSONALITY
)

var denied = append(commonDenied,
	call{"iopl", unix.SYS_IOPL},
	call{"ioperm", unix.SYS_IOPERM},
	call{"uselib", unix.SYS_USELIB},
	call{"create_module", unix.SYS_CREATE_MODULE},
	call{"get_kernel_syms", unix.SYS_GET_KERNEL_SYMS},
	call{"query_module", unix.SYS_QUERY_MODULE},
	call{"nfsservctl", unix.SYS_NFSSERVCTL},
	call{"sysfs", unix.SYS_SYSFS},
	call{"_sysctl", unix.SYS__SYSCTL},
	call{"ustat", unix.SYS_USTAT},
)

// modeCalls adds x86-64's older path calls: chmod(path, mode),
// mknod(path, mode, dev), creat(path, mode), open(path, flags, mode).
var modeCalls = append(commonModeCalls,
	modeCall{"chmod", unix.SYS_CHMOD, -1, 1},
	modeCall{"mknod", unix.SYS_MKNOD, -1, 1},
	modeCall{"creat", unix.SYS_CREAT, -1, 1},
	modeCall{"open", unix.SYS_OPEN, 1, 2},
)
