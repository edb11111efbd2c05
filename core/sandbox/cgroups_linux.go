package sandbox

import (
	"time"

	"github.com/harnessd/harnessd/core/sandbox/cgroup"
)

// Cgroups makes each sandbox's control group with m, for
// NativeOptions.Cgroups.
func Cgroups(m *cgroup.Manager) GroupFactory {
	return func(id string, l Limits) (Group, error) {
		g, err := m.New(id, cgroup.Limits{MemoryBytes: l.MemoryBytes, Pids: int64(l.Pids), CPUWeight: l.CPUWeight})
		if err != nil {
			return nil, err
		}
		cpu := m.Report().CPU.Mechanism
		return cgroupGroup{g, cpu == cgroup.CgroupV1 || cpu == cgroup.CgroupV2}, nil
	}
}

// cgroupGroup is a *cgroup.Group as a Group.
type cgroupGroup struct {
	*cgroup.Group
	cpu bool // the host's cgroups enforce CPU weight
}

// EnforcesCPU reports whether the group's CPU weight is enforced: a group
// can exist (for memory, say) on a host whose cpu controller is not ours.
func (g cgroupGroup) EnforcesCPU() bool { return g.cpu }

func (g cgroupGroup) Usage() (int64, time.Duration, error) {
	st, err := g.Stats()
	return st.MemoryCurrent, st.CPU, err
}

func (g cgroupGroup) Rlimits() []Rlimit {
	var out []Rlimit
	for _, r := range g.Group.Rlimits() {
		out = append(out, Rlimit(r))
	}
	return out
}
