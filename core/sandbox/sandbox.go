package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path"
	"strings"
	"syscall"
	"time"
)

// Driver makes sandboxes. Native (Linux namespaces) and None (the host)
// are the drivers this package has; a container engine's driver would be
// another.
type Driver interface {
	// Name is the driver's name as harness.toml spells it.
	Name() string
	// Create makes a sandbox for one session. Nothing runs in it until a
	// terminal starts its shell through Prepare and Started.
	Create(ctx context.Context, spec Spec) (Sandbox, error)
}

// Sandbox is one session's isolated place to run a shell. It is consumed
// by package terminal:
//
//	terminal.Options{Prepare: sb.Prepare, Started: sb.Started,
//		ControlDir: sb.ControlDir(), ControlDirInside: sb.ControlDirInside(),
//		Dir: sb.Workdir(), InitWrapped: sb.InitWrapped()}
//
// Every shell the terminal starts (the first, and each rebuild) gets a
// fresh sandbox over the same workspace.
type Sandbox interface {
	// ID names the sandbox (Spec.ID, or a random one).
	ID() string
	// Workdir is the workspace's path as the shell sees it.
	Workdir() string
	// ControlDir is where the terminal writes its control files: a host
	// directory, or /proc/self/fd/N of one the sandbox holds open (a
	// filesystem of its own, attached nowhere on the host), valid until
	// Destroy: open it before, as terminal.New does.
	ControlDir() string
	// ControlDirInside is where the shell finds that directory, read-only
	// (ControlPath in the native driver's sandboxes).
	ControlDirInside() string
	// InitWrapped reports whether the process Prepare makes is an init
	// whose one child is the shell (terminal.Options.InitWrapped).
	InitWrapped() bool
	// Prepare rewrites the terminal's bash command so that it runs inside
	// the sandbox. Each Prepare must be followed by Start and Started.
	Prepare(cmd *exec.Cmd) error
	// Started is called right after cmd.Start with the started pid: it
	// joins the process to the sandbox's cgroup, lets the shell start and
	// returns the sandbox's setup error, if any.
	Started(pid int) error
	// Stats reports what the sandbox uses and how its limits are enforced.
	Stats(ctx context.Context) (Stats, error)
	// Destroy kills every process in the sandbox and removes its
	// directories (the workspace stays). Safe to call more than once.
	Destroy(ctx context.Context) error
}

// Network is how a sandbox reaches the network.
type Network string

// The network modes.
const (
	// NetworkNone gives the sandbox its own network namespace with only
	// loopback up: nothing outside is reachable.
	NetworkNone Network = "none"
	// NetworkProxy is NetworkNone plus one way out: 127.0.0.1:3128 inside
	// is forwarded to Spec.ProxySocket (the daemon's HTTP CONNECT proxy),
	// and the shell has HTTP_PROXY and HTTPS_PROXY set to it.
	NetworkProxy Network = "proxy"
	// NetworkHost shares the host's network namespace: no isolation of
	// the network at all. Only by explicit setting.
	NetworkHost Network = "host"
)

// ProxyAddr is where a NetworkProxy sandbox finds its proxy, inside.
const ProxyAddr = "127.0.0.1:3128"

// DefaultWorkdir is where the workspace appears inside a sandbox.
const DefaultWorkdir = "/workspace"

// ControlPath is where the native driver's sandboxes see the terminal's
// control directory: a fixed path, so that nothing inside names where the
// daemon keeps it. No image has it (the root above the system
// directories is the init's own tmpfs), and Spec.Workdir and
// Spec.ReadOnly may not lie on it, above it or below it.
const ControlPath = "/run/harness"

// DefaultHostname is a sandbox's hostname unless Spec.Hostname says
// otherwise.
const DefaultHostname = "sandbox"

// DefaultProtected are the workspace paths bound read-only unless
// Spec.Protected says otherwise: places where a file planted by the agent
// would later run on the host. Git's control files are protected whatever
// Spec.Protected says (see GitControl); these are harnessd's own
// per-workspace settings, and git's hooks and config named again for
// configurations that list them.
var DefaultProtected = []string{".git/hooks/", ".git/config", ".harness/"}

// knownDirs are protected paths created as directories when missing even
// though they are written without a trailing slash.
var knownDirs = map[string]bool{".git/hooks": true, ".git/info": true, ".git/worktrees": true, ".git/modules": true, ".harness": true}

// Spec describes one sandbox. The zero value of every field but Workspace
// means its default.
type Spec struct {
	// ID names the sandbox: letters, digits, '.', '_', '-', at most 64.
	// Default: random.
	ID string
	// Workspace is the host directory the shell works in, bound
	// read-write at Workdir. Required by the native driver.
	Workspace string
	// WorkspaceResolved says the caller resolved Workspace's symlinks
	// and checked the directory it names (a client's directory): the
	// native driver then refuses a Workspace that has a symlink on its
	// way by the time it binds it, which a user who may write one of its
	// parents could have swapped in after the check to have another
	// directory (one they cannot reach) bound into their sandbox.
	WorkspaceResolved bool
	// Workdir is the workspace's path inside. Default DefaultWorkdir.
	Workdir string
	// Image is a directory holding a root filesystem (an unpacked image)
	// whose usr, bin, sbin, lib*, and etc are used instead of the host's.
	Image string
	// ReadOnly are more host paths bound read-only at the same path
	// inside (a toolchain under /opt, say).
	ReadOnly []string
	// Protected are paths relative to the workspace bound read-only
	// besides git's control files (GitControl, always). A missing one
	// whose parent directory exists is created first (a directory if it
	// ends in "/" or is .git/hooks or .harness, else an empty file) so it
	// cannot be created later; one whose parent is missing is skipped
	// (so .git/config protects nothing, and blocks nothing, where there
	// is no repository yet). Nil means DefaultProtected; an empty slice
	// means none.
	Protected []string
	// Network is NetworkNone (the default), NetworkProxy or NetworkHost.
	Network Network
	// ProxySocket is the host unix socket of the daemon's proxy, required
	// for NetworkProxy.
	ProxySocket string
	// Hostname inside. Default DefaultHostname.
	Hostname string
	// Env are extra KEY=VALUE pairs for the shell, applied last.
	Env []string
	// Limits bound what the sandbox may use.
	Limits Limits
	// Owner is the host user whose files the sandbox makes, when the
	// daemon runs as root: its root is mapped to Owner's uid and gid (as
	// podman's --userns=keep-id does), so what the agent writes in that
	// user's project is theirs. The daemon fills it from the peer
	// credentials of the client that asked for the session. Nil, or uid
	// 0, means NativeOptions.UID and GID: a sandbox is never host root.
	// Ignored when the daemon is not root: the sandbox is then the
	// daemon's own user, the only one it can map.
	Owner *User
}

// User is a host user and group.
type User struct {
	UID, GID int
}

// Limits bound a sandbox's resources. Zero means "no limit" for memory,
// processes and CPU weight, and the default for TmpBytes, NoFile and
// FileBytes. Which are enforced, and how, depends on the host: see Enforced.
type Limits struct {
	MemoryBytes int64 // memory; cgroup memory.max, else RLIMIT_AS per process
	Pids        int   // processes and threads; cgroup pids.max, else pid namespace pid_max and RLIMIT_NPROC
	CPUWeight   int   // CPU share, 1 to 10000 (100 is even); cgroup only
	TmpBytes    int64 // size of the private /tmp; default 512 MiB
	NoFile      int   // open files per process (RLIMIT_NOFILE); default 16384, at most the daemon's own hard limit
	FileBytes   int64 // largest file a process may write (RLIMIT_FSIZE); default 1 GiB
	// DiskBytes is the size of the workspace: a filesystem of its own
	// (native, as root, on a workspace the daemon made; see the package
	// doc's Limits), at least MinDiskBytes. 0 means none.
	DiskBytes int64
}

// DefaultFileBytes is RLIMIT_FSIZE unless Limits.FileBytes says otherwise:
// one file cannot grow past it (writes fail with EFBIG). It bounds one
// file, not the workspace: see the package doc's Caveats.
const DefaultFileBytes = 1 << 30

// MinDiskBytes is the smallest Limits.DiskBytes but 0: the filesystem
// needs room for its own metadata.
const MinDiskBytes = 16 << 20

// DefaultTmpBytes is the size of a sandbox's /tmp unless Limits.TmpBytes
// says otherwise.
const DefaultTmpBytes = 512 << 20

// DefaultNoFile is RLIMIT_NOFILE unless Limits.NoFile says otherwise.
const DefaultNoFile = 16384

// Enforced says how one limit is enforced.
type Enforced struct {
	Limit string // "memory", "pids", "cpu_weight", "tmp", "nofile", "fsize", "core", "disk"
	Value int64  // the limit; 0 for none
	By    string // "cgroup", "rlimit RLIMIT_AS (per process)", "tmpfs size", "not enforced: ...", ...
}

func (e Enforced) String() string { return fmt.Sprintf("%s=%d by %s", e.Limit, e.Value, e.By) }

// Stats is what a sandbox uses now.
type Stats struct {
	Processes   int           // processes in the sandbox
	MemoryBytes int64         // memory in use, when a cgroup can tell; else 0
	CPU         time.Duration // CPU time used, when a cgroup can tell; else 0
	Enforced    []Enforced    // how each limit is enforced
}

// Group is a sandbox's control group, as package cgroup provides one
// (Cgroups adapts a cgroup.Manager): the native driver uses it when
// NativeOptions.Cgroups makes one.
type Group interface {
	// Prepare adjusts the init's SysProcAttr so it starts inside the
	// group (cgroup v2's CLONE_INTO_CGROUP) and reports whether it did.
	Prepare(attr *syscall.SysProcAttr) bool
	// JoinFiles opens the files through which the init's forking thread
	// joins the rest of the group by itself (cgroup v1 tasks, each
	// written "0"), which is far faster than a move by pid; the caller
	// closes them.
	JoinFiles() ([]*os.File, error)
	// AddV2 moves a started process into the group's cgroup v2
	// directory, for an init Prepare could not place there; it does
	// nothing where the group has none.
	AddV2(pid int) error
	// Kill kills every process in the group.
	Kill() error
	// Destroy removes the group; its processes must be gone.
	Destroy() error
	// Usage reports the group's memory in use and CPU time used; memory
	// is negative when the group does not measure it.
	Usage() (memoryBytes int64, cpu time.Duration, err error)
	// Rlimits are the limits the group cannot enforce on this host, for
	// the sandbox to set as rlimits instead.
	Rlimits() []Rlimit
}

// Rlimit is one resource limit set on the shell (soft = hard = Value).
type Rlimit struct {
	Resource int // unix.RLIMIT_*
	Name     string
	Value    uint64
}

// GroupFactory makes the control group of one sandbox.
type GroupFactory func(id string, l Limits) (Group, error)

// withDefaults returns spec with its defaults filled in, or an error
// wrapping ErrInvalidSpec.
func (spec Spec) withDefaults() (Spec, error) {
	bad := func(format string, args ...any) (Spec, error) {
		return Spec{}, fmt.Errorf("%w: %s", ErrInvalidSpec, fmt.Sprintf(format, args...))
	}
	if spec.ID == "" {
		var b [6]byte
		if _, err := rand.Read(b[:]); err != nil {
			return Spec{}, fmt.Errorf("sandbox id: %w", err)
		}
		spec.ID = "sb-" + hex.EncodeToString(b[:])
	}
	if len(spec.ID) > 64 || strings.Trim(spec.ID, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != "" || spec.ID[0] == '.' {
		return bad("id %q: want letters, digits, '.', '_', '-', at most 64, not starting with '.'", spec.ID)
	}
	if spec.Workdir == "" {
		spec.Workdir = DefaultWorkdir
	}
	if !path.IsAbs(spec.Workdir) || path.Clean(spec.Workdir) != spec.Workdir || spec.Workdir == "/" {
		return bad("workdir %q must be a clean absolute path other than /", spec.Workdir)
	}
	if onControlPath(spec.Workdir) {
		return bad("workdir %q: %s is the terminal's control directory", spec.Workdir, ControlPath)
	}
	if spec.Protected == nil {
		spec.Protected = DefaultProtected
	}
	for _, p := range spec.Protected {
		c := path.Clean(p)
		if p == "" || path.IsAbs(p) || c == "." || c == ".." || strings.HasPrefix(c, "../") || strings.ContainsRune(p, 0) {
			return bad("protected path %q must be relative to the workspace, without ..", p)
		}
	}
	for _, p := range spec.ReadOnly {
		if !path.IsAbs(p) || strings.ContainsRune(p, 0) {
			return bad("read-only path %q must be absolute", p)
		}
		if onControlPath(p) {
			return bad("read-only path %q: %s is the terminal's control directory", p, ControlPath)
		}
	}
	switch spec.Network {
	case "":
		spec.Network = NetworkNone
	case NetworkNone, NetworkHost:
	case NetworkProxy:
		if !path.IsAbs(spec.ProxySocket) {
			return bad("network proxy needs an absolute proxy socket path, got %q", spec.ProxySocket)
		}
	default:
		return bad("network %q: want %q, %q or %q", spec.Network, NetworkNone, NetworkProxy, NetworkHost)
	}
	if spec.Hostname == "" {
		spec.Hostname = DefaultHostname
	}
	if len(spec.Hostname) > 64 {
		return bad("hostname %q is longer than 64 bytes", spec.Hostname)
	}
	l := &spec.Limits
	if l.MemoryBytes < 0 || l.Pids < 0 || l.CPUWeight < 0 || l.CPUWeight > 10000 || l.TmpBytes < 0 || l.NoFile < 0 || l.FileBytes < 0 || l.DiskBytes < 0 {
		return bad("limits %+v: negative, or cpu weight above 10000", *l)
	}
	if l.DiskBytes > 0 && l.DiskBytes < MinDiskBytes {
		return bad("disk of %d bytes: at least %d", l.DiskBytes, MinDiskBytes)
	}
	if l.TmpBytes == 0 {
		l.TmpBytes = DefaultTmpBytes
	}
	if l.NoFile == 0 {
		l.NoFile = DefaultNoFile
	}
	if l.FileBytes == 0 {
		l.FileBytes = DefaultFileBytes
	}
	for _, kv := range spec.Env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return bad("env %q is not KEY=VALUE", kv)
		}
	}
	return spec, nil
}

// onControlPath reports whether a bind at p would cover ControlPath or lie
// in it.
func onControlPath(p string) bool {
	p = path.Clean(p)
	return p == ControlPath || strings.HasPrefix(ControlPath, p+"/") || strings.HasPrefix(p, ControlPath+"/")
}
