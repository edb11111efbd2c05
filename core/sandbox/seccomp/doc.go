// Package seccomp builds and installs the sandbox's system call filter: a
// hand-assembled classic BPF program that refuses, with EPERM, the calls a
// sandboxed shell never needs and that an escape would (mount, ptrace,
// kernel modules, bpf, keyrings, namespaces, ...), and looks at the
// arguments of a few more: socket and socketpair only for AF_UNIX,
// AF_INET, AF_INET6 and AF_NETLINK (the rest, AF_VSOCK first, fail with
// EAFNOSUPPORT), no TIOCSTI or TIOCLINUX ioctl (typing into the terminal),
// and personality only to query or set PER_LINUX.
//
// # Basics
//
// Program returns the filter for the running architecture; Install loads it
// with SECCOMP_FILTER_FLAG_TSYNC, so every thread of a Go process gets it,
// after setting no_new_privs. The filter checks the architecture first: a
// call made through another ABI (i386 int 0x80 or x32 on amd64) is refused
// whole, since its numbers mean other calls.
//
// # Caveats
//
// clone is allowed unless it asks for a new namespace; clone3 fails with
// ENOSYS, because its flags live in memory a filter cannot read, and libc
// falls back to clone. The filter is a deny list: it narrows what a process
// without capabilities could do anyway, it is not the whole sandbox.
package seccomp
