// Package sandbox runs each session's shell where whatever the agent does
// leaves the host and the daemon untouched. A Driver makes one Sandbox per
// session; the terminal starts its bash through the sandbox's Prepare and
// Started hooks. Native isolates with Linux namespaces and no container
// engine, in the manner of runc's libcontainer and bubblewrap; None runs on
// the host and exists only for an explicit setting.
//
// # Basics
//
// Create makes the sandbox's directories (and, with NativeOptions.Cgroups,
// its control group). Prepare rewrites the terminal's bash command into
// `harnessd sandbox-init` (InitMain; cmd/harnessd dispatches it before
// anything else, as runc does `runc init`) started in new user, mount, pid,
// network, uts, ipc and cgroup namespaces, with bash's command in a JSON
// configuration on a socket passed in ExtraFiles. The init is born in the
// group's cgroup v2 directory; first of all its main thread joins the v1
// hierarchies by itself, through tasks files the daemon opened for it
// (cgroup.Group.JoinFiles), so that bash, forked later from that thread,
// starts inside every one. The init, pid 1 of its namespace, then builds
// the root: a tmpfs with read-only binds of the host's
// (or Spec.Image's) usr, bin, sbin, lib* and etc, where every file that is
// not world-readable (/etc/shadow, private keys) is covered by an empty one;
// the workspace read-write at Workdir with its protected paths read-only; the
// terminal's control directory at its host path, read-only (the terminal
// writes it from the host); a private /tmp of Limits.TmpBytes; a fresh
// /proc whose host-wide knobs (/proc/sys, sysrq-trigger, ...) are read-only
// and whose kernel-revealing files are masked; a minimal /dev. Then it
// pivots into it and drops the host's root, sets the hostname, brings up
// loopback (and, for NetworkProxy, forwards 127.0.0.1:3128 to the daemon's
// proxy socket), says it is ready and waits. Started, called by the
// terminal right after the start, adds the init to the v2 directory if it
// could not be born there and lets it go on: on the thread that will fork,
// the init locks its securebits, empties the capability bounding, ambient,
// effective, permitted and inheritable sets, sets no_new_privs, loads the
// seccomp filter (package seccomp) on every thread, and forks bash as its
// only child, applying the rlimits to it. It reaps orphans, passes SIGTERM, SIGHUP, SIGINT, SIGQUIT
// and SIGUSR1/2 on to bash, and exits with bash's status; its death ends the
// pid namespace and every process in it. A setup failure comes back from
// Started (so from terminal.New) as an *InitError naming the step and the
// path, never as a hang.
//
// Each shell the terminal starts gets a fresh init from the same Spec: a
// terminal rebuilt after a hard timeout or an exit has a new sandbox over
// the same workspace; /tmp, processes and shell state are gone. Destroy
// kills every init (by pidfd, so a recycled pid is never hit), waits for
// them and removes the sandbox's directories.
//
// # Users
//
// uid and gid 0 inside are the daemon's own uid and gid outside, and no
// other id is mapped; setgroups is denied. Run as an ordinary user (where
// unprivileged user namespaces are allowed), the sandbox is that user, as
// with bubblewrap; run as root, the sandbox's files are root's, and the
// shell is uid 0 without any capability: what it could still do as the
// owner of root's files is what the read-only mounts, the covered files,
// the read-only /proc knobs and the seccomp filter take away. Mapping root
// to one unprivileged host uid instead would need the workspace and the
// terminal's control files to belong to that uid (or idmapped mounts);
// that is a possible hardening, not done.
//
// # Limits
//
// With a cgroup (NativeOptions.Cgroups) memory, pids and CPU weight are the
// cgroup's. Without one they fall back to RLIMIT_AS (per process),
// RLIMIT_NPROC (which does not bind uid 0 of the host) and, on kernels that
// keep pid_max per pid namespace (6.14 and later), the namespace's pid_max
// (the limit plus 300, see pidMaxSlack); CPU weight is then not enforced.
// RLIMIT_NOFILE, RLIMIT_FSIZE and RLIMIT_CORE (0) always apply, and /tmp is
// a tmpfs of its size. Stats.Enforced says which limit is enforced how.
//
// # Caveats
//
// Protected paths protect only themselves and the directories on their way
// (pinned as mount points, so .git cannot be renamed or removed); a git
// repository in the workspace is still untrusted input for the host (for
// instance .git/commondir, .gitattributes, or objects), and a protected
// .git/config makes `git init` inside fail. The control directory and the
// sandbox's mount points below /tmp appear as empty directories in the
// sandbox's /tmp when the state directory is under /tmp. RLIMIT_AS bounds
// virtual memory, which some runtimes (the JVM) reserve generously.
// Pdeathsig kills the init if the daemon thread that started it exits; Go
// only ends threads whose goroutine locked them and returned.
package sandbox
