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
// the workspace read-write (nosuid, nodev) at Workdir with its protected
// paths and git's control files read-only (see Git); the
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
// uid and gid 0 inside are one unprivileged uid and gid outside, and no
// other id is mapped. Run as an ordinary user (where unprivileged user
// namespaces are allowed), the sandbox is that user, as with bubblewrap,
// and setgroups is denied. Run as root, the daemon never maps host root:
// the sandbox is Spec.Owner (the user whose client asked for the session,
// as podman's --userns=keep-id), or, when that is unknown or root,
// NativeOptions.UID and GID (DefaultUID, 2146435072, which no account
// has); the init drops the daemon's supplementary groups. So whatever the
// agent makes on the host, in the workspace, is that user's, and a setuid
// bit it sets there grants that user at most. Create gives the workspace
// directory to that user, mode 0700, when the daemon made it (what is
// already in it keeps its owner: the sandbox may read and write only what
// that user may), and the control directory and its files, so the shell
// can read the terminal's files. Such an init cannot walk the daemon's
// directories, and mounts seen through the daemon's descriptors cannot be
// bound from another mount namespace: Prepare clones the workspace, the
// control directory, the image and the read-only paths with
// open_tree(OPEN_TREE_CLONE), and the init attaches the clones
// (move_mount) in a root it mounts on its own view of /tmp. The shell
// gets none of these descriptors.
//
// # Git
//
// A repository in the workspace is code the host runs: a git the user runs
// there reads .git/config (core.fsmonitor, core.hooksPath, filters, ...),
// hooks, and whatever .git/commondir, config.worktree, worktrees/ and
// modules/ point to. Each init pins GitControl read-only in the
// workspace's .git directory (missing ones as empty, commondir as "."),
// pins .git itself (it cannot be removed or renamed), and pins a .git file
// (a gitdir pointer); everything else in .git stays writable, so commits,
// branches, status, fetch into the repository and clones elsewhere work.
// Where there is no .git, nothing is made: git init and git clone work
// inside, and the repository they make is pinned from the next shell on
// (each rebuild, each new session over the workspace). Until then, and for
// any repository below the top (a clone into a subdirectory, a
// submodule's gitdir a gitlink in the index points to), what protects the
// host is git's own ownership check (safe.directory, git 2.35.2 and
// later): a host git refuses a repository owned by another user, which a
// repository the sandbox made is, under the dedicated uid, to every host
// user. Under Spec.Owner it is the owner's, and git trusts it: a host git
// the owner runs in such a repository may run what the agent wrote, as in
// any repository someone else wrote. Inside, the pinned config makes git
// config, git remote add and upstream tracking fail in that repository;
// use the global config ($HOME is the workspace) or -c.
//
// # Limits
//
// With a cgroup (NativeOptions.Cgroups) memory, pids and CPU weight are the
// cgroup's. Without one they fall back to RLIMIT_AS (per process),
// RLIMIT_NPROC (which does not bind uid 0 of the host) and, on kernels that
// keep pid_max per pid namespace (6.14 and later), the namespace's pid_max
// (the limit plus 300, see pidMaxSlack); CPU weight is then not enforced.
// RLIMIT_NOFILE, RLIMIT_FSIZE (DefaultFileBytes unless set) and
// RLIMIT_CORE (0) always apply, and /tmp is a tmpfs of its size.
// Stats.Enforced says which limit is enforced how.
//
// The seccomp filter also refuses sockets but AF_UNIX, AF_INET, AF_INET6
// and AF_NETLINK (vsock's ports are the host's, in any network
// namespace), the TIOCSTI and TIOCLINUX ioctls (typing into the shell's
// own terminal, outside the terminal's record) and personality() other
// than PER_LINUX or a query.
//
// # Caveats
//
// Protected paths protect only themselves and the directories on their way
// (pinned as mount points, so .git cannot be renamed or removed); see Git
// for what a repository made inside is, on the host, until the next shell.
// There is no workspace quota: RLIMIT_FSIZE bounds one file, not the sum
// of them nor their count, so a sandbox can fill the filesystem its
// workspace is on. The control directory and the
// sandbox's mount points below /tmp appear as empty directories in the
// sandbox's /tmp when the state directory is under /tmp. RLIMIT_AS bounds
// virtual memory, which some runtimes (the JVM) reserve generously.
// Pdeathsig kills the init if the daemon thread that started it exits; Go
// only ends threads whose goroutine locked them and returned.
package sandbox
