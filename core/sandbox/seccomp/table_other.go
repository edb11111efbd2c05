//go:build linux && !amd64 && !arm64

package seccomp

const (
	nativeArch = 0
	x32Bit     = 0
	sysClone   = 0
	sysClone3  = 0
)

var denied []call
