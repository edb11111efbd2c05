package sandbox

import (
	"os"
	"syscall"
	"time"

	"github.com/harnessd/harnessd/core/sandbox/cgroup"
)

// Cgroups makes each sandbox's control group with m, for
// NativeOptions.Cgroups. The factory returns at once: the group's
// directories are made in the background (cgroup v1 ones cost a few
// hundred µs, most of a Create), while the terminal opens its PTY and the
// init starts and builds its root, none of which needs them. The init
// joins them only once its root is built (Started sends it the files),
// before it drops its privileges and starts the shell; where the group
// has a v2 directory to start the init in, Prepare waits for it instead.
// A group that could not be made fails the shell's start (Started), as
// it failed Create before.
func Cgroups(m *cgroup.Manager) GroupFactory {
	return func(id string, l Limits) (Group, error) {
		cl := cgroup.Limits{MemoryBytes: l.MemoryBytes, Pids: int64(l.Pids), CPUWeight: l.CPUWeight}
		cpu := m.Report().CPU.Mechanism
		var rl []Rlimit
		for _, r := range m.Rlimits(cl) {
			rl = append(rl, Rlimit(r))
		}
		g := &cgroupGroup{
			rlimits: rl,
			cpu:     cpu == cgroup.CgroupV1 || cpu == cgroup.CgroupV2,
			into:    m.ClonesInto(),
			made:    make(chan struct{}),
		}
		// Owned by g: every method but Rlimits and EnforcesCPU waits
		// for it, Destroy among them.
		go func() {
			defer close(g.made)
			g.g, g.err = m.New(id, cl)
		}()
		return g, nil
	}
}

// cgroupGroup is a *cgroup.Group as a Group, made in the background.
type cgroupGroup struct {
	rlimits []Rlimit
	cpu     bool // the host's cgroups enforce CPU weight
	into    bool // the group has a v2 directory (Prepare)

	made chan struct{} // closed once g and err are set
	g    *cgroup.Group
	err  error
}

// group waits until the group is made and returns it, or why it is not.
func (g *cgroupGroup) group() (*cgroup.Group, error) {
	<-g.made
	return g.g, g.err
}

// EnforcesCPU reports whether the group's CPU weight is enforced: a group
// can exist (for memory, say) on a host whose cpu controller is not ours.
func (g *cgroupGroup) EnforcesCPU() bool { return g.cpu }

// Rlimits are known before the group is made: they depend on the host's
// hierarchies alone.
func (g *cgroupGroup) Rlimits() []Rlimit { return g.rlimits }

// Prepare waits for the group only where there is a v2 directory to
// start in: a v1-only group is joined later, through JoinFiles.
func (g *cgroupGroup) Prepare(attr *syscall.SysProcAttr) bool {
	if !g.into {
		return false
	}
	cg, err := g.group()
	if err != nil {
		return false // JoinFiles says why, and Started fails
	}
	return cg.Prepare(attr)
}

func (g *cgroupGroup) JoinFiles() ([]*os.File, error) {
	cg, err := g.group()
	if err != nil {
		return nil, err
	}
	return cg.JoinFiles()
}

func (g *cgroupGroup) AddV2(pid int) error {
	cg, err := g.group()
	if err != nil {
		return err
	}
	return cg.AddV2(pid)
}

func (g *cgroupGroup) Kill() error {
	cg, err := g.group()
	if err != nil {
		return nil // nothing was made, so nothing is in it
	}
	return cg.Kill()
}

// Destroy waits for the group's making, so that no directory is left
// behind by a making that ends after it.
func (g *cgroupGroup) Destroy() error {
	cg, err := g.group()
	if err != nil {
		return nil // New removed what it had made
	}
	return cg.Destroy()
}

func (g *cgroupGroup) Usage() (int64, time.Duration, error) {
	cg, err := g.group()
	if err != nil {
		return 0, 0, err
	}
	st, err := cg.Stats()
	return st.MemoryCurrent, st.CPU, err
}
