package cgroup

import (
	"fmt"
	"slices"
	"strings"
)

// A role is a job a hierarchy can do for a group.
type role int

const (
	roleMemory  role = iota // memory limit and memory stats
	rolePids                // pids limit and count
	roleCPU                 // CPU share
	roleCPUStat             // CPU usage
	roleTrack               // v2 group: cgroup.kill, CLONE_INTO_CGROUP, cgroup.events
	roleFreezer             // v1 freezer: stops forks while Kill signals
	numRoles
)

// limitController is the controller behind each limit role.
var limitController = [...]string{roleMemory: "memory", rolePids: "pids", roleCPU: "cpu"}

// plan says which hierarchy does each role; nil means none does, and why
// says why not (and, for a v1 choice, why not v2).
type plan struct {
	by  [numRoles]*hierarchy
	why [numRoles]string
}

// joined lists each hierarchy the plan uses once, in the order of hs.
func (p *plan) joined(hs []hierarchy) []*hierarchy {
	var out []*hierarchy
	for i := range hs {
		if slices.Contains(p.by[:], &hs[i]) {
			out = append(out, &hs[i])
		}
	}
	return out
}

// v2Controllers lists the limit controllers the plan takes from v2.
func (p *plan) v2Controllers() []string {
	var out []string
	for r := roleMemory; r <= roleCPU; r++ {
		if h := p.by[r]; h != nil && h.v2 {
			out = append(out, limitController[r])
		}
	}
	return out
}

// probe is what choosing a plan needs to know of the file system. Tests
// give fixtures; Detect gives the host.
type probe interface {
	// controllers reads a v2 cgroup's cgroup.controllers: what its
	// parent lets it hand to children.
	controllers(dir string) ([]string, error)
	// writable reports whether we may create cgroups in dir.
	writable(dir string) error
}

// failKey names what failed when a plan was carried out: a hierarchy (ctrl
// "") or one controller of a v2 hierarchy.
type failKey struct{ dir, ctrl string }

// choose picks, for every role, the best hierarchy the probe and earlier
// failures allow: v2 first, as a delegated subtree is what the host meant
// us to use, then v1.
func choose(hs []hierarchy, pr probe, failed map[failKey]error) plan {
	var p plan
	usable := func(h *hierarchy) error {
		if h.dir == "" {
			return fmt.Errorf("%s: %s", h.name(), h.unreachable)
		}
		if err := failed[failKey{h.dir, ""}]; err != nil {
			return err
		}
		return pr.writable(h.dir)
	}

	var v2 *hierarchy
	for i := range hs {
		if hs[i].v2 {
			v2 = &hs[i]
			break
		}
	}
	v2why := "no cgroup2 mount"
	var v2ctrls []string
	if v2 != nil {
		if err := usable(v2); err != nil {
			v2why = err.Error()
			v2 = nil
		} else if cs, err := pr.controllers(v2.dir); err != nil {
			v2why = err.Error()
		} else {
			v2ctrls = cs
		}
	}

	for r := roleMemory; r <= roleCPU; r++ {
		ctrl := limitController[r]
		var whyNot2 string
		switch {
		case v2 == nil || v2ctrls == nil:
			whyNot2 = "v2: " + v2why
		case !slices.Contains(v2ctrls, ctrl):
			whyNot2 = fmt.Sprintf("v2: %s has no %s controller", v2.dir, ctrl)
		case failed[failKey{v2.dir, ctrl}] != nil:
			whyNot2 = fmt.Sprintf("v2: %v", failed[failKey{v2.dir, ctrl}])
		default:
			p.by[r] = v2
			continue
		}
		whyNot1 := fmt.Sprintf("v1: no %s hierarchy is mounted", ctrl)
		for i := range hs {
			h := &hs[i]
			if h.v2 || !h.has(ctrl) {
				continue
			}
			if err := usable(h); err != nil {
				whyNot1 = "v1: " + err.Error()
				continue
			}
			p.by[r] = h
			break
		}
		if p.by[r] != nil {
			p.why[r] = whyNot2
		} else {
			p.why[r] = whyNot2 + "; " + whyNot1
		}
	}

	if v2 != nil {
		p.by[roleTrack] = v2
		// Every non-root v2 cgroup has cpu.stat, controller or not.
		p.by[roleCPUStat] = v2
	} else {
		p.why[roleTrack] = "v2: " + v2why
		for i := range hs {
			h := &hs[i]
			if !h.v2 && h.has("freezer") && usable(h) == nil {
				p.by[roleFreezer] = h
				break
			}
		}
		if p.by[roleFreezer] == nil {
			p.why[roleFreezer] = "no writable v1 freezer hierarchy"
		}
		if c := p.by[roleCPU]; c != nil && c.has("cpuacct") {
			p.by[roleCPUStat] = c
		} else {
			for i := range hs {
				h := &hs[i]
				if !h.v2 && h.has("cpuacct") && usable(h) == nil {
					p.by[roleCPUStat] = h
					break
				}
			}
		}
		if p.by[roleCPUStat] == nil {
			p.why[roleCPUStat] = "no cgroup2 and no writable v1 cpuacct hierarchy"
		}
	}
	return p
}

// String is a compact form for tests: "memory=v1:/sys/fs/cgroup/memory ..."
func (p *plan) String() string {
	names := [...]string{"memory", "pids", "cpu", "cpustat", "track", "freezer"}
	var parts []string
	for r := range numRoles {
		h := p.by[r]
		switch {
		case h == nil:
			parts = append(parts, names[r]+"=-")
		case h.v2:
			parts = append(parts, names[r]+"=v2:"+h.dir)
		default:
			parts = append(parts, names[r]+"=v1:"+h.dir)
		}
	}
	return strings.Join(parts, " ")
}
