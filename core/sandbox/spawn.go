package sandbox

import (
	"context"
	"os"
	"syscall"
)

// SpawnSpec is a process to start in a sandbox beside its shell (a
// session's Python): Path is looked up in the PATH of Env inside, and
// Env gets what the shell's environment gets (PATH, HOME, proxy,
// Spec.Env).
type SpawnSpec struct {
	Path string
	Args []string
	Env  []string
	Dir  string
}

// Spawned is a process a Spawner started.
type Spawned interface {
	// Signal signals the process's group (it leads its own session).
	Signal(sig syscall.Signal) error
	// Close kills the group if the process still runs, and releases it.
	Close() error
	// Exited reports whether the process itself has exited.
	Exited() bool
}

// Spawner is a sandbox that starts more processes than its shell, each
// as the shell is started: by the sandbox's init, in its namespaces and
// cgroup, as its user, without capabilities, under its seccomp filter
// and rlimits. tty (a PTY's slave) becomes the process's stdin, stdout,
// stderr and controlling terminal, ctl its fd 3; the caller keeps and
// closes its own copies.
type Spawner interface {
	Spawn(ctx context.Context, spec SpawnSpec, tty, ctl *os.File) (Spawned, error)
}
