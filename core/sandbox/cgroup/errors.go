package cgroup

import "errors"

// Errors of the package. Failures of a file system call come as
// *os.PathError (Op and Path say what failed on what), wrapped with context;
// the sentinels below classify the rest for errors.Is.
var (
	// ErrParse is returned by Detect when /proc/self/cgroup or
	// /proc/self/mountinfo is not in the form the kernel writes.
	ErrParse = errors.New("cgroup: malformed proc file")

	// ErrInvalidName is returned by New for a name that is not one safe
	// path component: 1 to 128 of [A-Za-z0-9._-], not starting with '.'.
	ErrInvalidName = errors.New("cgroup: invalid group name")

	// ErrInvalidLimits is returned by New for a negative limit or a
	// CPUWeight above 10000.
	ErrInvalidLimits = errors.New("cgroup: invalid limits")

	// ErrExist is returned by New for a name the Manager already has a
	// live group for.
	ErrExist = errors.New("cgroup: group already exists")

	// ErrClosed is returned by New after Manager.Close.
	ErrClosed = errors.New("cgroup: manager closed")

	// ErrDestroyed is returned by Add and Stats after Group.Destroy.
	ErrDestroyed = errors.New("cgroup: group destroyed")

	// ErrNotTracked is returned by Kill for a group in no cgroup at all
	// (Report.Kill.Mechanism is NotEnforced): its processes cannot be found, so
	// the caller must kill them another way, e.g. by killing the sandbox's
	// pid-namespace init.
	ErrNotTracked = errors.New("cgroup: group is not tracked by any cgroup")

	// ErrNotEmpty is returned by Kill, Destroy and Close when processes
	// were still in a group after the kill timeout; the message lists
	// where and which.
	ErrNotEmpty = errors.New("cgroup: processes survived the kill")
)
