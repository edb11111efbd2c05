package sandbox

import (
	"log/slog"
	"time"
)

// NativeOptions configures the native driver. The zero value of every field
// means its default.
type NativeOptions struct {
	// Exe is the harnessd binary the init runs from. Default
	// /proc/self/exe, which is the running binary even if the file on disk
	// was replaced.
	Exe string
	// StateDir holds each sandbox's directories (control files, the
	// root's mount point). Default /run/harnessd/sandboxes as root, else
	// $XDG_RUNTIME_DIR/harnessd/sandboxes, else $TMPDIR/harnessd-UID/sandboxes.
	StateDir string
	// Cgroups, if set, makes each sandbox's control group, which then
	// enforces memory, pids and CPU weight. Without it the driver falls
	// back to rlimits (see Enforced).
	Cgroups GroupFactory
	// StartTimeout bounds how long the init may take to set up. Default 10s.
	StartTimeout time.Duration
	Logger       *slog.Logger
}
