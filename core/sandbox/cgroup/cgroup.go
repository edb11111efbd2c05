package cgroup

import (
	"fmt"
	"log/slog"
	"time"
)

// Limits are a session's resource limits. A zero field means unlimited.
type Limits struct {
	// MemoryBytes caps RAM plus swap of the whole group; past it the
	// kernel OOM-kills a process of the group (the largest), not the
	// group.
	MemoryBytes int64
	// Pids caps the number of tasks (processes and threads) in the group.
	Pids int64
	// CPUWeight is the group's CPU share among its sibling sessions, 1 to
	// 10000 with 100 as the default (cgroup v2's cpu.weight). On v1 it is
	// written as cpu.shares = CPUWeight*1024/100 (at least 2), so the
	// defaults of both versions meet.
	CPUWeight int
}

func (l Limits) validate() error {
	if l.MemoryBytes < 0 || l.Pids < 0 || l.CPUWeight < 0 || l.CPUWeight > 10000 {
		return fmt.Errorf("%w: %+v: want memory and pids >= 0, cpu weight 0..10000", ErrInvalidLimits, l)
	}
	return nil
}

// cpuShares maps a v2 weight to v1 shares: 100 -> 1024, the two defaults.
func cpuShares(weight int) int64 { return max(2, int64(weight)*1024/100) }

// Stats are a group's counters. A field is -1 when this host does not
// measure it (e.g. memory is limited by rlimit, not a cgroup).
type Stats struct {
	MemoryCurrent int64 // bytes charged now
	MemoryPeak    int64 // highest MemoryCurrent seen (-1 before kernel 5.19 on v2)
	OOMKills      int64 // processes the OOM killer killed for the memory limit
	Pids          int64 // tasks in the group now
	CPU           time.Duration
}

// Rlimit is a limit the cgroups of this host cannot enforce, for the
// sandbox to set in the child with setrlimit (soft = hard = Value) before
// exec.
type Rlimit struct {
	Resource int // unix.RLIMIT_AS or unix.RLIMIT_NPROC
	Name     string
	Value    uint64
}

// Options configure Detect. The zero value is ready to use.
type Options struct {
	// Parent names the daemon's parent group, created in the daemon's own
	// cgroup of every hierarchy as "<Parent>-<pid>"; groups go inside it.
	// Default "harnessd". At Detect, parents "<Parent>-<N>" of a process N
	// that no longer exists are killed and removed.
	Parent string
	// Logger gets the Report at Info when Detect ends, and notes on stale
	// groups. Default slog.Default().
	Logger *slog.Logger
}

// validName reports whether name is one safe path component.
func validName(name string) bool {
	if len(name) == 0 || len(name) > 128 || name[0] == '.' {
		return false
	}
	for _, c := range []byte(name) {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
		if !ok {
			return false
		}
	}
	return true
}
