package cgroup

import (
	"fmt"
	"log/slog"
	"strings"
)

// Mechanism is how a limit is enforced or a group's processes are found.
type Mechanism string

// The mechanisms, best first.
const (
	CgroupV2    Mechanism = "cgroup v2"
	CgroupV1    Mechanism = "cgroup v1"
	ByRlimit    Mechanism = "rlimit" // the sandbox sets Group.Rlimits in the child
	NotEnforced Mechanism = "not enforced"
)

// Enforcement says how one limit (or Kill) works on this host.
type Enforcement struct {
	Mechanism Mechanism
	// Detail names the files or rlimit used, e.g. "pids.max" or
	// "RLIMIT_NPROC".
	Detail string
	// Path is the directory session groups are created in, for a cgroup
	// mechanism.
	Path string
	// Reason says why no better mechanism is used: why not v2 for a v1
	// choice, why no cgroup at all for ByRlimit or NotEnforced. Empty for v2.
	Reason string
}

func (e Enforcement) String() string {
	var b strings.Builder
	b.WriteString(string(e.Mechanism))
	if e.Detail != "" {
		sep := " "
		if e.Mechanism == NotEnforced {
			sep = ": "
		}
		b.WriteString(sep + e.Detail)
	}
	if e.Path != "" {
		b.WriteString(" in " + e.Path)
	}
	if e.Reason != "" {
		b.WriteString(" [" + e.Reason + "]")
	}
	return b.String()
}

// Report says, per limit, how this host enforces it, so the daemon can say
// so at startup instead of silently enforcing nothing.
type Report struct {
	Memory Enforcement
	Pids   Enforcement
	CPU    Enforcement
	// Kill says how Group.Kill finds every process of a group.
	Kill Enforcement
	// CloneInto is true when Group.Prepare can start a process inside
	// the group with CLONE_INTO_CGROUP.
	CloneInto bool
	// Stale counts groups left by an earlier daemon that Detect removed.
	Stale int
}

// RlimitsOnly reports whether no limit is enforced by a cgroup.
func (r Report) RlimitsOnly() bool {
	for _, e := range []Enforcement{r.Memory, r.Pids, r.CPU} {
		if e.Mechanism == CgroupV1 || e.Mechanism == CgroupV2 {
			return false
		}
	}
	return true
}

// String is the startup log line: one clause per limit.
func (r Report) String() string {
	var b strings.Builder
	if r.RlimitsOnly() {
		b.WriteString("no cgroup limits, rlimits only: ")
	}
	fmt.Fprintf(&b, "memory: %s; pids: %s; cpu: %s; kill: %s", r.Memory, r.Pids, r.CPU, r.Kill)
	if r.CloneInto {
		b.WriteString("; processes start inside their group (CLONE_INTO_CGROUP)")
	}
	if r.Stale > 0 {
		fmt.Fprintf(&b, "; removed %d stale group(s) of an earlier run", r.Stale)
	}
	return b.String()
}

// LogValue makes a Report a group of attributes in structured logs.
func (r Report) LogValue() slog.Value {
	return slog.GroupValue(
		slog.Bool("rlimits_only", r.RlimitsOnly()),
		slog.String("memory", r.Memory.String()),
		slog.String("pids", r.Pids.String()),
		slog.String("cpu", r.CPU.String()),
		slog.String("kill", r.Kill.String()),
		slog.Bool("clone_into_cgroup", r.CloneInto),
		slog.Int("stale_removed", r.Stale),
	)
}

var _ slog.LogValuer = Report{}
