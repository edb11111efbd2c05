package sandbox

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"

	"golang.org/x/sys/unix"
)

// controlOptions are the control mount's tmpfs options but its owner: the
// terminal's files are a few short scripts and one command's text, so a
// bound on what the mount may hold (and cost) well above any command.
var controlOptions = [][2]string{{"source", "harness"}, {"size", "8m"}, {"nr_inodes", "64"}, {"mode", "0700"}}

// controlMount gives the sandbox's control directory a tmpfs of its own
// that is attached nowhere on the host: the daemon holds it open and
// reaches it through /proc/self/fd (s.ctl), and each init gets a clone
// of it (initConfig), mounted at ControlPath. So mountinfo inside shows
// "/" as its root and ControlPath as its mount point, naming neither the
// state directory nor the sandbox's id; the host's mount table never
// has it, and it goes with the daemon and the sandbox's inits, crash or
// not. It reports false where the control directory stays a host
// directory under the state directory: a rootless daemon (fsopen needs
// CAP_SYS_ADMIN in the host's user namespace), or a kernel before 6.15,
// which cannot clone a mount fsmount made and nothing attached.
func (s *nativeSandbox) controlMount(ctx context.Context) bool {
	if os.Geteuid() != 0 {
		return false
	}
	f, err := newControlMount(s.uid, s.gid)
	if err != nil {
		s.d.ctlOnce.Do(func() {
			s.d.opts.Logger.WarnContext(ctx, "sandbox control directory: a host directory under the state directory, which mountinfo inside names",
				"state_dir", s.d.opts.StateDir, "err", err)
		})
		return false
	}
	s.ctlMount, s.ctl = f, fdPath(int(f.Fd()))
	return true
}

// newControlMount makes a detached tmpfs owned by uid and gid, mode 0700,
// nosuid, nodev and noexec.
func newControlMount(uid, gid int) (*os.File, error) {
	fsfd, err := unix.Fsopen("tmpfs", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("fsopen tmpfs", err)
	}
	defer unix.Close(fsfd)
	owner := [][2]string{{"uid", strconv.Itoa(uid)}, {"gid", strconv.Itoa(gid)}}
	for _, o := range slices.Concat(controlOptions, owner) {
		if err := unix.FsconfigSetString(fsfd, o[0], o[1]); err != nil {
			return nil, fmt.Errorf("fsconfig tmpfs %s=%s: %w", o[0], o[1], err)
		}
	}
	if err := unix.FsconfigCreate(fsfd); err != nil {
		return nil, os.NewSyscallError("fsconfig tmpfs create", err)
	}
	mfd, err := unix.Fsmount(fsfd, unix.FSMOUNT_CLOEXEC, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("fsmount tmpfs", err)
	}
	// What every Prepare will do (source.open): refused here, not at
	// the shell's start.
	c, err := unix.OpenTree(mfd, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH)
	if err != nil {
		unix.Close(mfd)
		return nil, fmt.Errorf("clone a detached tmpfs (Linux 6.15 or later): %w", os.NewSyscallError("open_tree", err))
	}
	unix.Close(c)
	return os.NewFile(uintptr(mfd), "control mount"), nil
}

// closeControl lets go of the control mount, if the sandbox has one: it
// is gone once no init and no terminal holds it either.
func (s *nativeSandbox) closeControl() {
	if s.ctlMount != nil {
		s.ctlMount.Close()
	}
}
