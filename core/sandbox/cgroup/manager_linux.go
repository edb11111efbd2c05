package cgroup

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// Manager creates session groups beneath the daemon's own cgroups. It is
// safe for concurrent use.
type Manager struct {
	log    *slog.Logger
	prefix string // Options.Parent
	parent string // <prefix>-<pid>, the parent group's name
	hs     []hierarchy
	plan   plan
	joined []*hierarchy // what every group joins, each hierarchy once
	report Report

	mu     sync.Mutex
	groups map[string]*Group
	closed bool
}

// Detect finds the daemon's own cgroups (/proc/self/cgroup, matched with
// /proc/self/mountinfo), chooses per limit the best usable mechanism,
// creates the parent group "<Parent>-<pid>" in each hierarchy it will use,
// removes stale parents of dead daemons, and logs the Report.
//
// Detect fails only when the proc files cannot be read or parsed. A host
// with no usable cgroup (rootless, read-only cgroupfs) gets a Manager whose
// Report says rlimits only and why, and whose groups hand their limits out
// as Rlimits.
func Detect(opts Options) (*Manager, error) {
	return detect(opts, "/proc/self", hostProbe{})
}

func detect(opts Options, procSelf string, pr probe) (*Manager, error) {
	if opts.Parent == "" {
		opts.Parent = "harnessd"
	}
	if !validName(opts.Parent) {
		return nil, fmt.Errorf("%w: Options.Parent %q", ErrInvalidName, opts.Parent)
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	cgData, err := os.ReadFile(filepath.Join(procSelf, "cgroup"))
	if err != nil {
		return nil, fmt.Errorf("detect cgroups: %w", err)
	}
	mountData, err := os.ReadFile(filepath.Join(procSelf, "mountinfo"))
	if err != nil {
		return nil, fmt.Errorf("detect cgroups: %w", err)
	}
	cgs, err := parseProcCgroup(cgData)
	if err != nil {
		return nil, err
	}
	mounts, err := parseMountInfo(mountData)
	if err != nil {
		return nil, err
	}
	m := &Manager{
		log:    opts.Logger,
		prefix: opts.Parent,
		parent: fmt.Sprintf("%s-%d", opts.Parent, os.Getpid()),
		hs:     findHierarchies(cgs, mounts),
		groups: make(map[string]*Group),
	}
	for i := range m.hs {
		h := &m.hs[i]
		// An earlier Detect of this process moved it into our leaf; the
		// delegated cgroup is the leaf's parent.
		if h.v2 && h.dir != "" && filepath.Base(h.dir) == m.leaf() {
			h.dir, h.own = filepath.Dir(h.dir), filepath.Dir(h.own)
		}
	}

	// Carrying a plan out can fail where probing could not tell (EBUSY
	// enabling a controller, EPERM at a delegation boundary). Each failure
	// rules out one hierarchy or controller, so this ends.
	failed := make(map[failKey]error)
	for {
		p := choose(m.hs, pr, failed)
		keys, err := m.realize(&p)
		if err == nil {
			m.plan = p
			break
		}
		progress := false
		for _, k := range keys {
			if _, seen := failed[k]; !seen {
				progress = true
			}
			failed[k] = err
		}
		if !progress { // the kernel answered the same step differently twice
			return nil, fmt.Errorf("detect cgroups: %w", err)
		}
	}
	m.joined = m.plan.joined(m.hs)
	m.report = m.buildReport()
	m.report.Stale = m.removeStale()
	if m.report.RlimitsOnly() {
		m.log.Warn("no cgroup limits: rlimits only", "report", m.report)
	} else {
		m.log.Info("cgroup limits", "report", m.report)
	}
	return m, nil
}

// leaf is the daemon's own group in a delegated v2 cgroup, where it must
// live so that controllers can be enabled for its siblings ("no internal
// processes").
func (m *Manager) leaf() string { return m.prefix + "-daemon" }

// realize creates the parent group in every hierarchy p uses. On failure it
// removes what it created and says what to rule out.
func (m *Manager) realize(p *plan) ([]failKey, error) {
	var created []string
	undo := func() {
		for _, d := range slices.Backward(created) {
			_ = unix.Rmdir(d)
		}
		for i := range m.hs {
			m.hs[i].parent = ""
		}
	}
	for _, h := range p.joined(m.hs) {
		var ctrls []string
		if h.v2 {
			ctrls = p.v2Controllers()
			if keys, err := m.delegate(h, ctrls); err != nil {
				undo()
				return keys, err
			}
		}
		dir := filepath.Join(h.dir, m.parent)
		if err := os.Mkdir(dir, 0o755); err == nil {
			created = append(created, dir)
		} else if !errors.Is(err, fs.ErrExist) {
			undo()
			return []failKey{{h.dir, ""}}, err
		}
		if keys, err := enable(h.dir, dir, ctrls); err != nil {
			undo()
			return keys, err
		}
		h.parent = dir
	}
	return nil, nil
}

// delegate makes ctrls available to the children of our own v2 cgroup. A
// non-root cgroup that enables controllers for children may hold no
// processes itself, so the daemon first moves into a leaf beside our
// groups, as a systemd service with Delegate=yes must. Other processes in
// our cgroup are not ours to move; then v2 limits are ruled out.
func (m *Manager) delegate(h *hierarchy, ctrls []string) ([]failKey, error) {
	missing, err := missingControllers(h.dir, ctrls)
	if err != nil {
		return keysFor(h.dir, ctrls), err
	}
	if len(missing) == 0 {
		return nil, nil
	}
	if _, err := os.Stat(filepath.Join(h.dir, "cgroup.type")); err == nil { // not the root cgroup
		procs, err := readProcs(h.dir)
		if err != nil {
			return keysFor(h.dir, ctrls), err
		}
		self := os.Getpid()
		if others := slices.DeleteFunc(procs, func(p int) bool { return p == self }); len(others) > 0 {
			return keysFor(h.dir, ctrls), fmt.Errorf("%s holds processes other than the daemon (%v), so no controller can be enabled for its children; run the daemon in a cgroup of its own (systemd Delegate=yes)", h.dir, others)
		}
		leaf := filepath.Join(h.dir, m.leaf())
		if err := os.Mkdir(leaf, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return keysFor(h.dir, ctrls), err
		}
		if err := writeFile(filepath.Join(leaf, "cgroup.procs"), strconv.Itoa(self)); err != nil {
			return keysFor(h.dir, ctrls), err
		}
		m.log.Info("moved the daemon into a leaf cgroup so its cgroup can delegate controllers", "leaf", leaf)
	}
	return enable(h.dir, h.dir, missing)
}

// enable writes +ctrl to dir's cgroup.subtree_control for each missing one.
func enable(own, dir string, ctrls []string) ([]failKey, error) {
	missing, err := missingControllers(dir, ctrls)
	if err != nil {
		return keysFor(own, ctrls), err
	}
	for _, c := range missing {
		if err := writeFile(filepath.Join(dir, "cgroup.subtree_control"), "+"+c); err != nil {
			return []failKey{{own, c}}, err
		}
	}
	return nil, nil
}

func missingControllers(dir string, want []string) ([]string, error) {
	if len(want) == 0 {
		return nil, nil
	}
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
	if err != nil {
		return nil, err
	}
	have := strings.Fields(string(b))
	var out []string
	for _, c := range want {
		if !slices.Contains(have, c) {
			out = append(out, c)
		}
	}
	return out, nil
}

func keysFor(dir string, ctrls []string) []failKey {
	out := make([]failKey, 0, len(ctrls))
	for _, c := range ctrls {
		out = append(out, failKey{dir, c})
	}
	return out
}

func (m *Manager) buildReport() Report {
	p := &m.plan
	var r Report
	limit := func(ro role, v2Detail, v1Detail string, fallback Enforcement) Enforcement {
		h := p.by[ro]
		switch {
		case h == nil:
			fallback.Reason = p.why[ro]
			return fallback
		case h.v2:
			return Enforcement{Mechanism: CgroupV2, Detail: v2Detail, Path: h.parent}
		default:
			return Enforcement{Mechanism: CgroupV1, Detail: v1Detail, Path: h.parent, Reason: p.why[ro]}
		}
	}
	memV1 := "memory.limit_in_bytes, swap not accounted"
	if h := p.by[roleMemory]; h != nil && exists(filepath.Join(h.parent, "memory.memsw.limit_in_bytes")) {
		memV1 = "memory.limit_in_bytes+memsw.limit_in_bytes"
	}
	r.Memory = limit(roleMemory, "memory.max, memory.swap.max=0", memV1,
		Enforcement{Mechanism: ByRlimit, Detail: "RLIMIT_AS, which caps address space, not resident memory"})
	r.Pids = limit(rolePids, "pids.max", "pids.max",
		Enforcement{Mechanism: ByRlimit, Detail: "RLIMIT_NPROC, which counts every process of the sandbox's uid"})
	r.CPU = limit(roleCPU, "cpu.weight", "cpu.shares = weight*1024/100",
		Enforcement{Mechanism: NotEnforced, Detail: "no rlimit can share CPU"})

	switch {
	case p.by[roleTrack] != nil:
		h := p.by[roleTrack]
		r.CloneInto = true
		r.Kill = Enforcement{Mechanism: CgroupV2, Detail: "cgroup.kill", Path: h.parent}
		if !exists(filepath.Join(h.parent, "cgroup.kill")) {
			r.Kill.Detail = "SIGKILL to every pid in cgroup.procs until empty"
			r.Kill.Reason = "no cgroup.kill before Linux 5.14"
		}
	case p.by[roleFreezer] != nil:
		r.Kill = Enforcement{Mechanism: CgroupV1, Detail: "freezer: freeze, SIGKILL every pid, thaw", Path: p.by[roleFreezer].parent, Reason: p.why[roleTrack]}
	case len(m.joined) > 0:
		r.Kill = Enforcement{Mechanism: CgroupV1, Detail: "SIGKILL to every pid in cgroup.procs until empty; a fork can race it", Path: m.joined[0].parent,
			Reason: p.why[roleTrack] + "; " + p.why[roleFreezer]}
	default:
		r.Kill = Enforcement{Mechanism: NotEnforced, Detail: "the caller must kill the sandbox's processes itself", Reason: "no cgroup holds them; " + p.why[roleTrack]}
	}
	return r
}

// removeStale kills and removes the parents "<prefix>-<N>" that daemons no
// longer running left in our hierarchies, and returns how many session
// groups were in them. Failures are logged: a stale group costs little and
// must not stop the daemon.
func (m *Manager) removeStale() int {
	staleParents := make(map[string]bool)
	for _, h := range m.joined {
		ents, err := os.ReadDir(h.dir)
		if err != nil {
			m.log.Warn("list cgroups for stale groups", "err", err)
			continue
		}
		for _, e := range ents {
			if e.IsDir() && m.isStale(e.Name()) {
				staleParents[e.Name()] = true
			}
		}
	}
	n := 0
	for _, parent := range slices.Sorted(maps.Keys(staleParents)) {
		groups := make(map[string]bool)
		for _, h := range m.joined {
			ents, _ := os.ReadDir(filepath.Join(h.dir, parent))
			for _, e := range ents {
				if e.IsDir() {
					groups[e.Name()] = true
				}
			}
		}
		for name := range groups {
			var d groupDirs
			for _, h := range m.joined {
				dir := filepath.Join(h.dir, parent, name)
				d.add(&m.plan, h, dir)
			}
			if err := d.destroy(); err != nil {
				m.log.Warn("remove stale cgroup", "group", name, "parent", parent, "err", err)
				continue
			}
			n++
		}
		for _, h := range m.joined {
			if err := rmdirRetry(filepath.Join(h.dir, parent)); err != nil {
				m.log.Warn("remove stale cgroup parent", "err", err)
			}
		}
		m.log.Info("removed stale cgroups of an earlier daemon", "parent", parent, "groups", len(groups))
	}
	return n
}

// isStale reports whether name is "<prefix>-<N>" for a pid N other than
// ours that is not running. Kill(N, 0) failing with EPERM means it runs.
func (m *Manager) isStale(name string) bool {
	rest, ok := strings.CutPrefix(name, m.prefix+"-")
	if !ok {
		return false
	}
	pid, err := strconv.Atoi(rest)
	if err != nil || pid <= 0 || strconv.Itoa(pid) != rest || pid == os.Getpid() {
		return false
	}
	return errors.Is(unix.Kill(pid, 0), unix.ESRCH)
}

// Report says how this host enforces each limit; see Report.String.
func (m *Manager) Report() Report { return m.report }

// Close destroys every group still open, then removes the parent groups.
// It may be called again, e.g. after an ErrNotEmpty; once everything is
// gone it returns nil. New fails with ErrClosed afterwards.
func (m *Manager) Close() error {
	m.mu.Lock()
	m.closed = true
	groups := make([]*Group, 0, len(m.groups))
	for _, g := range m.groups {
		groups = append(groups, g)
	}
	m.mu.Unlock()
	var errs []error
	for _, g := range groups {
		errs = append(errs, g.Destroy())
	}
	for _, h := range slices.Backward(m.joined) {
		errs = append(errs, rmdirRetry(h.parent))
	}
	return errors.Join(errs...)
}

// hostProbe answers for the real cgroup file systems.
type hostProbe struct{}

func (hostProbe) controllers(dir string) ([]string, error) {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return nil, err
	}
	return append([]string{}, strings.Fields(string(b))...), nil
}

// writable uses access(2), which also sees a read-only mount.
func (hostProbe) writable(dir string) error {
	if err := unix.Access(dir, unix.W_OK); err != nil {
		return &os.PathError{Op: "access W_OK", Path: dir, Err: err}
	}
	return nil
}
