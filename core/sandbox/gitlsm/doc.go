// Package gitlsm is the kernel's part of the sandbox's git guard: a BPF
// LSM program, attached to the hooks that make a directory entry, that
// refuses (EPERM) a guarded sandbox's task a new entry named HEAD, or a
// new .git that is not a directory, in a directory that the sandbox's
// dedicated uid does not own, on the workspace's filesystems.
//
// Why: a directory is a git repository only with a HEAD, and git on the
// host trusts a repository its user owns. In a workspace its user named,
// the sandbox is that user, so a repository the agent made would be
// theirs; the daemon's fanotify watch hands each one to the dedicated
// uid, but only after it exists. With this rule no directory of the
// user's gets a HEAD by the agent's hand at all; a .git the watch has
// handed over (the dedicated uid's) can, so git inside still works. A
// .git file or symlink would name a gitdir anywhere, one of the user's
// own directories that has a HEAD already (the reflog .git/logs/HEAD
// of a repository of theirs is a valid one), which the agent could
// complete with objects, refs and a config: so those are refused too.
//
// # Basics
//
// Load attaches the programs (one per hook) and returns a Rule; Rule.Add
// says which tasks are guarded (those whose credentials are in a user
// namespace, by its inode number) on which filesystems (superblock
// device numbers) and who the dedicated owner is; Rule.Remove forgets
// them. The programs are assembled here, with the offsets of the kernel
// structures they read taken from the running kernel's BTF, so the
// project builds with `go build` alone (github.com/cilium/ebpf, the
// standard Go eBPF library, loads them).
//
// # Caveats
//
// It needs a kernel with BPF LSM active (CONFIG_BPF_LSM and "bpf" in the
// lsm= list) and BTF, and a daemon with CAP_BPF and CAP_SYS_ADMIN (root):
// Load says why not. The caller uses it only where the same rule cannot
// be enforced by each sandbox's init (package gitnotify, from Linux
// 5.14), and else falls back to the watch alone. The
// programs, and the rule, last as long as the Rule (the daemon's
// process): nothing is pinned. Only the exact name HEAD counts: a
// case-insensitive filesystem (casefold ext4) would take "head" as it.
// The package is linked into the daemon only, never the sandbox's init.
package gitlsm
