//go:build linux && !amd64 && !arm64

package gitnotify

const (
	nativeArch = 0
	x32Bit     = 0
	sysOpenat2 = 0
)

var opens []struct {
	nr       uint32
	flagsArg int
}

var trapped []uint32

const (
	sysOpen     = 1<<32 - 1
	sysCreat    = 1<<32 - 2
	sysMknod    = 1<<32 - 3
	sysMkdir    = 1<<32 - 4
	sysSymlink  = 1<<32 - 5
	sysLink     = 1<<32 - 6
	sysRename   = 1<<32 - 7
	sysRenameat = 1<<32 - 8
)
