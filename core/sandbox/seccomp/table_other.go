//go:build linux && !amd64 && !arm64

package seccomp

const (
	nativeArch     = 0
	x32Bit         = 0
	sysClone       = 0
	sysClone3      = 0
	sysSocket      = 0
	sysSocketpair  = 0
	sysIoctl       = 0
	sysPersonality = 0
)

var denied []call

var modeCalls []modeCall
