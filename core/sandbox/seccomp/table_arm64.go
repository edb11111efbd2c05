//go:build linux

package seccomp

import "golang.org/x/sys/unix"

const (
	nativeArch     = unix.AUDIT_ARCH_AARCH64
	x32Bit         = 0
	sysClone       = unix.SYS_CLONE
	sysClone3      = unix.SYS_CLONE3
	sysSocket      = unix.SYS_SOCKET
	sysSocketpair  = unix.SYS_SOCKETPAIR
	sysIoctl       = unix.SYS_IOCTL
	sysPersonality = unix.SYS_PERSONALITY
)

var denied = commonDenied

// modeCalls: arm64 has only the *at calls.
var modeCalls = commonModeCalls
