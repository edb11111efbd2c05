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
// its control group; with Limits.DiskBytes, the workspace's filesystem). Prepare rewrites the terminal's bash command into
// the sandbox's init (InitMain): by default the small static program
// harnessd carries (package initbin, built from cmd/sandbox-init), run from
// a sealed memfd, so that a sandbox's start does not pay for initialising
// the daemon's packages; where none is carried for the architecture,
// `harnessd sandbox-init` (cmd/harnessd dispatches it before anything
// else, as runc does `runc init`); started in new user, mount, pid,
// network, uts, ipc and cgroup namespaces, with bash's command in a JSON
// configuration on a socket passed in ExtraFiles. The init is born in the
// group's cgroup v2 directory where there is one (Cgroups makes the group
// in the background; Prepare waits for it then). The init, pid 1 of its
// namespace, builds the root: a tmpfs with read-only binds of the host's
// (or Spec.Image's) usr, bin, sbin, lib* and etc, where every file that is
// not world-readable but the sandbox's user could read (a key of a group
// the daemon's user is in) is covered by an empty one;
// the workspace read-write (nosuid, nodev) at Workdir with its protected
// paths and git's control files read-only (see Git); the
// terminal's control directory at ControlPath, read-only (the terminal
// writes it from the host: as root, a tmpfs of its own attached nowhere
// on the host, see controlMount); a private /tmp of Limits.TmpBytes; a fresh
// /proc whose host-wide knobs (/proc/sys, sysrq-trigger, ...) are read-only
// and whose kernel-revealing files are masked; a minimal /dev. Then it
// pivots into it and drops the host's root, sets the hostname, brings up
// loopback (and, for NetworkProxy, forwards 127.0.0.1:3128 to the daemon's
// proxy socket), says it is ready and waits. Started, called by the
// terminal right after the start, waits for the group to be made, adds
// the init to the v2 directory if it could not be born there and lets it
// go on, sending with that message the group's v1 tasks files
// (cgroup.Group.JoinFiles): first the init's main thread joins the v1
// hierarchies by itself through them, so that bash, forked later from
// that thread, starts inside every one; then, on that thread, the init
// locks its securebits, empties the capability bounding, ambient,
// effective, permitted and inheritable sets, sets no_new_privs, loads the
// seccomp filter (package seccomp) on every thread, and forks bash as its
// only child, applying the rlimits to it. It reaps orphans, passes SIGTERM, SIGHUP, SIGINT, SIGQUIT
// and SIGUSR1/2 on to bash, drops the signals the Go runtime would take,
// sent by kill, as a crash (SIGSEGV, SIGABRT, ...: the kernel lets the
// sandbox send its pid 1 any signal it has a handler for), and exits
// with bash's status; its death ends the
// pid namespace and every process in it. A setup failure comes back from
// Started (so from terminal.New) as an *InitError naming the step and the
// path, never as a hang.
//
// Each shell the terminal starts gets a fresh init from the same Spec: a
// terminal rebuilt after a hard timeout or an exit has a new sandbox over
// the same workspace; /tmp, processes and shell state are gone. Destroy
// kills every init (by pidfd, so a recycled pid is never hit), waits for
// them, copies the workspace out of its filesystem and removes the
// sandbox's directories.
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
// there reads .git/config (core.fsmonitor, core.hooksPath, filters,
// aliases, ...), hooks, and whatever .git/commondir, config.worktree,
// worktrees/ and modules/ point to. Two things keep what the agent writes
// from running there.
//
// Ownership, for every repository the sandbox makes: at the top or below,
// by git init, git clone or by hand, bare, behind a .git file or symlink,
// at any time in the session. It is not the host user's, and a host git
// (2.35.2 and later) refuses a repository another user owns ("dubious
// ownership"), root's git included. Where the sandbox's user is the
// dedicated uid (the daemon's own workspaces, and the pool), its files
// are that uid's from the start. In a user's own directory (Spec.Owner,
// as root), where the agent's files are that user's, the git guard
// (gitguard_linux.go) watches the workspace's filesystem with fanotify
// and hands each repository that appears, but those the first shell
// found, to the dedicated uid (its .git directory, .git file or link, or
// bare directory changes owner; the user keeps their access through an
// ACL entry, and git inside trusts it through a system config in the
// control directory); every shell start, Destroy, and Cleanup after a
// daemon that died sweep what the watch missed. Pinning could not help
// here: by the time a repository the agent made could be pinned, its
// control files already say what the agent wrote. A rule closes the
// watch's window (from Linux 5.14 the init's, below; before it, where the
// kernel has BPF LSM, a kernel rule, package gitlsm): the
// sandbox's tasks get EPERM for a new entry named HEAD (or a .git that
// is not a directory) in a directory the dedicated uid does not own, on
// the workspace's filesystems, so no
// directory of the user's ever becomes a repository; the agent's get
// their HEAD once the guard has handed their .git over. The init's
// (headrule_linux.go, package gitnotify: a seccomp filter sends the
// calls that make names to the init, which makes them itself, checked,
// on the directory it resolved) also makes no symlink in the user's git
// directories. Each init pins,
// read-only, the files named HEAD outside any repository (Repo.Stray),
// so that none is rewritten to complete a repository of the user's.
//
// Pins, for every repository already in the workspace when a shell
// starts, which is what protects a user's own repositories in their own
// directory (there the sandbox is that user, and git trusts what it
// writes): each init finds them (.git directories and files at any depth,
// bare repositories, within the first maxGitScan entries of the
// workspace, and always those the sandbox's first init found, before the
// agent ran anything) and binds GitControl read-only in each (missing ones
// as empty, commondir as "."); the .git directory or file itself and every
// directory above it are pinned as mount points, so none can be removed
// or renamed and the repository cannot be moved away and replaced;
// everything else in .git stays writable, so commits, branches, status,
// fetch into the repository and clones elsewhere work. Where there
// is no .git, nothing is made: git init and git clone work inside. Inside,
// the pinned config makes git config, git remote add and upstream
// tracking fail in that repository; use the global config ($HOME is the
// workspace) or -c.
//
// A lend, for those same repositories in a user's own directory, while a
// session runs: what the agent writes in their git directories beyond
// the pins (an operation in progress, an index, a legacy remote, a
// symlink) is checked only at the session's end (gitstate_linux.go), so
// until then the guard lends each of their git directories to the
// dedicated uid as it hands over the agent's (gitlend_linux.go), and the
// user's git refuses them; it gives them back, as they were, after the
// end's checks.
//
// What neither covers: in a user's own directory without the kernel
// rule, a repository the agent makes is that user's from its mkdir or
// rename until the guard's chown (a read of the event, a handle opened,
// a chown: well under a millisecond on an idle host, unbounded under
// load the agent or the host makes), or, where fanotify cannot watch,
// until the next shell start or
// Destroy; rootless, the sandbox is the daemon's user in every workspace
// and nothing is handed over; and a host git told to trust every
// repository (safe.directory = *) trusts one the agent made anywhere. A
// walk that stops at maxGitScan entries leaves unpinned, in a later
// session over the same directory, a repository an earlier session's
// agent pushed past that many entries.
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
// Limits.DiskBytes makes the workspace a filesystem of its own when the
// daemon runs as root and made the workspace (an empty directory of its
// own; see disk_linux.go): a sparse ext4 image of that size in
// NativeOptions.DiskDir, with one inode per 8 KiB, on a loop device,
// mounted nosuid and nodev over the workspace directory in the daemon's
// namespace, so the host sees the files where they always were. Writes
// and new files past it fail inside with ENOSPC, and the host's disk
// holds at most the image. Destroy copies the files to the directory
// beneath (holes kept, hard links as links, no setuid bits or extended
// attributes, nothing deeper than maxCopyDepth) and removes the image; Cleanup, at a daemon's start, does
// it for what one that died left mounted. The image's blocks are freed
// at once, but its loop device (and the filesystem, unreachable) can wait
// for every sandbox init started while it was mounted to exit: each copied
// the daemon's mounts, and a dynamically linked harnessd maps its loader
// and libc from that copy (see punchImage). This adds a few ms to a
// sandbox's creation (a copy of the metadata of an empty filesystem
// mkfs.ext4 made once, a loop device, a mount). Rootless, or
// over a directory that already has files (a user's own, which a
// filesystem on top would hide), there is no such filesystem, the sandbox
// says why in Stats.Enforced and the log, and only RLIMIT_FSIZE holds:
// one file, not their sum nor their count.
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
// for what a repository made inside is on the host. A workspace without a
// disk of its own (see Limits) can fill the filesystem it is on.
//
// What the sandbox sees of its mounts (/proc/self/mountinfo) and cgroups:
// its cgroup paths are all "/" (the init takes a cgroup namespace of its
// own once its cgroups are final); /etc covers only what the sandbox's
// user could read, so the names of files the kernel refuses it anyway
// (/etc/shadow) are not listed. Still shown: a workspace without a disk
// of its own is a bind whose root field is its host path (the data
// directory, or the user's directory); where the control directory is a
// host directory (rootless, or Linux before 6.15), the root field of its
// ControlPath mount is its host path (the state directory and the
// sandbox's id); a system directory's submounts, if the host has any;
// the host's block device names and filesystem options. A Spec.ReadOnly
// path below /tmp has its mount point, and the directories on its way,
// in the sandbox's /tmp. RLIMIT_AS bounds virtual
// memory, which some runtimes (the JVM) reserve generously. Pdeathsig
// kills the init if the daemon thread that started it exits; Go only ends
// threads whose goroutine locked them and returned.
package sandbox
