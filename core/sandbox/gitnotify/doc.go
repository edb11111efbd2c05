// Package gitnotify is the git guard's HEAD rule (see package gitlsm)
// enforced by the sandbox's init instead of the kernel (preferred from
// Linux 5.14, BPF LSM or not): a seccomp filter sends every call of a guarded
// sandbox's tasks that makes a directory entry to the init
// (SECCOMP_RET_USER_NOTIF), and the init refuses (EPERM) a new entry
// named HEAD, and a new .git that is not a directory, in a directory
// that the sandbox's dedicated uid does not own, on the workspace's
// filesystems; it performs every other such call itself, as the task
// would have, and returns its result.
//
// # Basics
//
// Start, in the init before its base seccomp filter, starts the workers
// (locked threads with their own umask and no capability but
// CAP_SYS_PTRACE, held unused but to read a task's memory and open its
// descriptors). Install puts the filter on the calling thread only and
// returns its listener, which Server.Serve serves; whatever the thread
// forks inherits it.
//
// The init never lets the kernel run the task's call after looking at
// it (SECCOMP_USER_NOTIF_FLAG_CONTINUE would have the kernel read the
// path again, which another thread of the task may have changed): it
// reads the path once, resolves all but its last component itself from
// the task's directory (its cwd or directory descriptor, through
// /proc), decides on that directory's descriptor and the last name, and
// makes the entry with the *at call on that descriptor, so what was
// checked is what is done. A final symlink that open with O_CREAT would
// follow is resolved the same way, up to 40 links. /proc/self and
// /proc/thread-self mean the task, not the init, and /proc's magic
// links (fd/N, cwd, root) are followed as the task may: never the
// init's own.
//
// # Caveats
//
// Each call made this way costs a round trip to the init (tens of
// microseconds). openat2 fails with ENOSYS (its flags are behind a
// pointer; glibc's open does not use it, and its users fall back to
// openat). Opening an existing FIFO with O_CREAT waits in the init for
// its other end without holding a worker, and the task can then be
// ended only by a fatal signal (SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV).
// A tty opened with O_CREAT never becomes the task's controlling
// terminal (O_NOCTTY). bind(2) of a unix socket is not trapped: a socket
// named HEAD or .git cannot be read, so git never takes it for either,
// and the init never replaces a HEAD that is not a file or a symlink
// (a rename over a socket named HEAD would make one git can read).
// If the init's listener is gone, the calls fail with ENOSYS: closed.
package gitnotify
