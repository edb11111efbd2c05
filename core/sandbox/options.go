package sandbox

import (
	"log/slog"
	"time"
)

// NativeOptions configures the native driver. The zero value of every field
// means its default.
type NativeOptions struct {
	// Exe is the binary the init runs from, started as `Exe
	// sandbox-init` (InitCommand). Default: the init program harnessd
	// carries for this architecture (package initbin), run from a sealed
	// memfd, which starts in a fraction of the time and page faults of the
	// daemon's whole binary; where none is carried, /proc/self/exe, the
	// running binary even if the file on disk was replaced, whose main
	// must dispatch InitCommand to InitMain first.
	Exe string
	// StateDir holds each sandbox's directories (control files, the
	// root's mount point). Default /run/harnessd/sandboxes as root, else
	// $XDG_RUNTIME_DIR/harnessd/sandboxes, else $TMPDIR/harnessd-UID/sandboxes.
	StateDir string
	// DiskDir holds the disk image of each sandbox whose workspace has
	// one (Limits.DiskBytes): a sparse file that grows to at most that
	// size, removed with the sandbox. It must not be on a tmpfs (the
	// image would be memory) and should be private to the daemon (0700).
	// Cleanup releases what a daemon that died left there. Default: a
	// .harnessd-disks directory beside each workspace.
	DiskDir string
	// Cgroups, if set, makes each sandbox's control group, which then
	// enforces memory, pids and CPU weight. Without it the driver falls
	// back to rlimits (see Enforced).
	Cgroups GroupFactory
	// UID and GID are the host ids a sandbox's root is mapped to when the
	// daemon runs as root and Spec.Owner names no user but root. Zero
	// means DefaultUID and DefaultGID; never 0, which would make the
	// agent's files host root's.
	UID, GID int
	// StartTimeout bounds how long the init may take to set up. Default 10s.
	StartTimeout time.Duration
	Logger       *slog.Logger
}

// DefaultUID and DefaultGID are the host ids of a sandbox's root when the
// daemon runs as root and no other owner is known: one unprivileged id,
// above the ranges useradd hands out to login users and as subordinate ids
// (SUB_UID_MAX, 600100000 by default) and below 2^31, which some tools
// still treat as signed. No account has it; `ls -l` shows the number.
const (
	DefaultUID = 0x7ff00000
	DefaultGID = 0x7ff00000
)
