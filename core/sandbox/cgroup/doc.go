// Package cgroup puts each session's processes in cgroups of their own, so
// that memory, the number of processes and CPU share are limited per
// session, and every process of a session can be found, counted and killed.
//
// # Basics
//
// Call Detect once at daemon start. It reads /proc/self/cgroup and
// /proc/self/mountinfo and chooses, per limit, the best mechanism the host
// allows: cgroup v2 where the daemon has a delegated subtree, else the v1
// memory, pids and cpu hierarchies, else an rlimit (memory, pids) or
// nothing (CPU). It logs a Report saying, per limit, which mechanism and
// directory are used or why none is; on this project's CI host:
//
//	memory: cgroup v1 memory.limit_in_bytes+memsw.limit_in_bytes in /sys/fs/cgroup/memory/<own>/harnessd-<pid> [v2: ... has no memory controller]
//	kill: cgroup v2 cgroup.kill in /sys/fs/cgroup/unified/harnessd-<pid>
//
// Groups always go beneath the daemon's own cgroup in each hierarchy, in a
// parent of this daemon process, never at a hierarchy's root:
//
//	<mount>/<own cgroup>/<Parent>-<daemon pid>/<session name>
//
// so the daemon and its sessions stay inside whatever limits the host gave
// the daemon. Parents of daemons that no longer run are killed and removed
// by the next Detect (Report.Stale).
//
// A cgroup2 hierarchy is used even without controllers (as on a hybrid
// host where all controllers are on v1): it tracks the group, kills it
// atomically with cgroup.kill and lets a process start inside it with
// CLONE_INTO_CGROUP. To start a session's first process:
//
//	g, err := m.New(id, cgroup.Limits{MemoryBytes: 2 << 30, Pids: 512, CPUWeight: 100})
//	cmd.SysProcAttr = &syscall.SysProcAttr{...}
//	g.Prepare(cmd.SysProcAttr) // v2: born inside the group
//	// start it paused (blocked on a pipe), because v1 has no clone-into:
//	err = cmd.Start()
//	err = g.Add(cmd.Process.Pid) // v1 hierarchies (and v2 again, harmlessly)
//	// release it; the child sets g.Rlimits() before exec
//	...
//	err = g.Destroy() // SIGKILL all, wait until empty, rmdir
//
// Add pays an RCU grace period per call on v1 (5 to 12 ms here). A child
// that is ours (the sandbox init) joins faster by itself: give it the
// files of g.JoinFiles, have the thread that forks the session's processes
// write "0" to each first, and Add only where Prepare could not place it
// (g.AddV2).
//
// Manager.Close at shutdown destroys what is left and removes the parents.
//
// # Caveats
//
//   - v2 limits need controllers delegated to the daemon's cgroup (systemd
//     Delegate=yes). To enable them for its children a non-root cgroup may
//     hold no processes, so Detect moves the daemon into a leaf
//     "<own>/<Parent>-daemon" first; it never moves other processes, and
//     when there are some it falls back to v1 and says why.
//   - The pid in the parent's name is what marks it stale. Two daemons in
//     different pid namespaces sharing one cgroup must use different
//     Options.Parent, and a parent whose pid was reused waits for that pid
//     to end before it is cleaned up. Use one Manager per process and Parent.
//   - MemoryBytes caps RAM plus swap (v2 memory.swap.max=0, v1 memsw). The
//     kernel OOM-kills the largest process of the group, not the whole
//     group: the session's shell usually survives its command.
//   - The rlimit fallbacks are weak: RLIMIT_AS caps address space (a
//     program mapping much but using little fails early), RLIMIT_NPROC
//     counts every process of the uid host-wide and does not bind root. CPU
//     share has no fallback.
//   - On v1 a process runs outside its group between Start and Add, so it
//     must be paused until Add returns. Without a freezer or cgroup2, Kill
//     races a fork loop and relies on the pids limit to end it.
//   - Kill waits at most 5 s for a group to empty: a process stuck in the
//     kernel (D state) cannot be killed sooner, and then Kill says so with
//     ErrNotEmpty and Destroy can be called again.
//   - Linux only.
package cgroup
