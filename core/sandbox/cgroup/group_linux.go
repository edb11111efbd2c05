package cgroup

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// How long Kill waits for a group to empty, and rmdir retries EBUSY. A
// SIGKILLed process leaves its cgroup within milliseconds unless it is stuck
// in the kernel (D state), which no signal can cut short.
var (
	killTimeout  = 5 * time.Second
	rmdirTimeout = 2 * time.Second
)

// Group is one session's cgroups: a directory "<Parent>-<pid>/<name>" in
// each hierarchy the Manager uses. It is safe for concurrent use.
type Group struct {
	m       *Manager
	name    string
	d       groupDirs
	rlimits []Rlimit

	mu   sync.Mutex
	fd   int // O_PATH fd of the v2 directory for CLONE_INTO_CGROUP, or -1
	gone bool
}

// New creates the group name with limits l in every hierarchy the Manager
// uses, and works out which limits the sandbox must set as rlimits
// instead (Group.Rlimits). A name is one path component: 1 to 128 of
// [A-Za-z0-9._-], not starting with '.'.
func (m *Manager) New(name string, l Limits) (*Group, error) {
	if !validName(name) {
		return nil, fmt.Errorf("%w: %q", ErrInvalidName, name)
	}
	if err := l.validate(); err != nil {
		return nil, err
	}
	g := &Group{m: m, name: name, fd: -1}
	// Held until the group is made: Close may find it in m.groups first.
	g.mu.Lock()
	defer g.mu.Unlock()
	m.mu.Lock()
	switch _, dup := m.groups[name]; {
	case m.closed:
		m.mu.Unlock()
		return nil, ErrClosed
	case dup:
		m.mu.Unlock()
		return nil, fmt.Errorf("%w: %s", ErrExist, name)
	}
	m.groups[name] = g // reserves the name while the directories are made
	m.mu.Unlock()
	if err := g.create(l); err != nil {
		_ = g.d.destroy()
		g.gone = true
		m.forget(g)
		return nil, fmt.Errorf("create cgroup %s: %w", name, err)
	}
	return g, nil
}

func (g *Group) create(l Limits) error {
	p := &g.m.plan
	for _, h := range g.m.joined {
		dir := filepath.Join(h.parent, g.name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			return err
		}
		g.d.add(p, h, dir)
	}
	for _, w := range g.limitWrites(l) {
		if w.ifExists && !exists(w.path) {
			continue // no swap accounting on this kernel
		}
		if err := writeFile(w.path, w.value); err != nil {
			return err
		}
	}
	g.rlimits = g.m.Rlimits(l)
	if g.d.track != "" {
		fd, err := unix.Open(g.d.track, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return &os.PathError{Op: "open", Path: g.d.track, Err: err}
		}
		g.fd = fd
	}
	return nil
}

// Rlimits lists the limits of l that no cgroup of m's enforces on this
// host, as the Group New makes with l would (Group.Rlimits), without
// making one: a caller that makes the group in the background knows them
// at once.
func (m *Manager) Rlimits(l Limits) []Rlimit {
	var out []Rlimit
	if m.plan.by[roleMemory] == nil && l.MemoryBytes > 0 {
		out = append(out, Rlimit{Resource: unix.RLIMIT_AS, Name: "RLIMIT_AS", Value: uint64(l.MemoryBytes)})
	}
	if m.plan.by[rolePids] == nil && l.Pids > 0 {
		out = append(out, Rlimit{Resource: unix.RLIMIT_NPROC, Name: "RLIMIT_NPROC", Value: uint64(l.Pids)})
	}
	return out
}

// ClonesInto reports whether m's groups have a cgroup v2 directory, which
// Group.Prepare starts a process inside; false where they join v1
// hierarchies alone.
func (m *Manager) ClonesInto() bool { return m.plan.by[roleTrack] != nil }

// ctlWrite is a value for a control file.
type ctlWrite struct {
	path, value string
	ifExists    bool
}

func (g *Group) limitWrites(l Limits) []ctlWrite {
	p := &g.m.plan
	var ws []ctlWrite
	set := func(r role, file, value string, ifExists bool) {
		ws = append(ws, ctlWrite{filepath.Join(p.by[r].parent, g.name, file), value, ifExists})
	}
	if h := p.by[roleMemory]; h != nil && l.MemoryBytes > 0 {
		v := strconv.FormatInt(l.MemoryBytes, 10)
		if h.v2 {
			set(roleMemory, "memory.max", v, false)
			set(roleMemory, "memory.swap.max", "0", true) // or it swaps past memory.max
		} else {
			// memsw (RAM+swap) may never be below the RAM limit, so it
			// goes second.
			set(roleMemory, "memory.limit_in_bytes", v, false)
			set(roleMemory, "memory.memsw.limit_in_bytes", v, true)
		}
	}
	if h := p.by[rolePids]; h != nil && l.Pids > 0 {
		set(rolePids, "pids.max", strconv.FormatInt(l.Pids, 10), false)
	}
	if h := p.by[roleCPU]; h != nil && l.CPUWeight > 0 {
		if h.v2 {
			set(roleCPU, "cpu.weight", strconv.Itoa(l.CPUWeight), false)
		} else {
			set(roleCPU, "cpu.shares", strconv.FormatInt(cpuShares(l.CPUWeight), 10), false)
		}
	}
	return ws
}

func (m *Manager) forget(g *Group) {
	m.mu.Lock()
	if m.groups[g.name] == g {
		delete(m.groups, g.name)
	}
	m.mu.Unlock()
}

// Name is the name the group was created with.
func (g *Group) Name() string { return g.name }

// Rlimits lists the limits no cgroup enforces on this host, for the
// sandbox to set in the child before exec. Empty when cgroups cover all.
func (g *Group) Rlimits() []Rlimit { return slices.Clone(g.rlimits) }

// Prepare makes a process started with attr begin life inside the group's
// v2 cgroup (CLONE_INTO_CGROUP), so not one instruction of it runs outside.
// It reports whether it did; false when the host offers no v2 group. The
// fd it sets stays open until Destroy, so start the process before that.
// Go then needs clone3: where a seccomp filter refuses it, Start fails and
// the caller may retry without Prepare. v1 hierarchies still need Add.
func (g *Group) Prepare(attr *syscall.SysProcAttr) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if attr == nil || g.gone || g.fd < 0 {
		return false
	}
	attr.UseCgroupFD = true
	attr.CgroupFD = g.fd
	return true
}

// Add moves process pid (all its threads) into the group in every
// hierarchy. v1 has no clone-into, so start the process paused (e.g.
// blocked reading a pipe), Add it, then let it run; its children inherit
// the group. Adding a process Prepare already placed is harmless. Each v1
// move waits out an RCU grace period; JoinFiles is the fast way in.
func (g *Group) Add(pid int) error { return g.add(pid, false) }

// add writes pid to cgroup.procs in every directory of the group, or in
// its v2 one alone.
func (g *Group) add(pid int, v2Only bool) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.gone {
		return ErrDestroyed
	}
	dirs := g.d.all
	if v2Only {
		dirs = nil
		if g.d.track != "" { // the plan tracks by v2 wherever it joins one
			dirs = []string{g.d.track}
		}
	}
	for _, dir := range dirs {
		if err := writeFile(filepath.Join(dir, "cgroup.procs"), strconv.Itoa(pid)); err != nil {
			return fmt.Errorf("add pid %d to cgroup %s: %w", pid, g.name, err)
		}
	}
	return nil
}

// JoinFiles opens the group's tasks file in every cgroup v1 hierarchy,
// for a process to join by itself: a thread that writes "0" to each moves
// only itself, and everything it forks from then on starts inside. The
// kernel moves a thread that way under cgroup_mutex alone, whereas a move
// by pid (Add) takes the global cgroup_threadgroup_rwsem for writing and
// so waits out an RCU grace period: 5 to 12 ms on a 2-core VM, most of a
// sandbox's cold start. The caller closes the files. There are none where
// the group has no v1 hierarchy.
func (g *Group) JoinFiles() ([]*os.File, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.gone {
		return nil, ErrDestroyed
	}
	var fs []*os.File
	for _, dir := range g.d.v1 {
		f, err := os.OpenFile(filepath.Join(dir, "tasks"), os.O_WRONLY, 0)
		if err != nil {
			for _, f := range fs {
				f.Close()
			}
			return nil, fmt.Errorf("cgroup %s: %w", g.name, err)
		}
		fs = append(fs, f)
	}
	return fs, nil
}

// AddV2 moves process pid into the group's cgroup v2 directory only: for
// a process that joined the v1 hierarchies itself (JoinFiles) but could
// not start inside (Prepare). It does nothing where the group has no v2
// directory.
func (g *Group) AddV2(pid int) error { return g.add(pid, true) }

// Stats reads the group's counters; fields the host does not measure are
// -1.
func (g *Group) Stats() (Stats, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.gone {
		return Stats{}, ErrDestroyed
	}
	s := Stats{MemoryCurrent: -1, MemoryPeak: -1, OOMKills: -1, Pids: -1, CPU: -1}
	var r statReader
	p := &g.m.plan
	dir := func(ro role) string { return filepath.Join(p.by[ro].parent, g.name) }
	if h := p.by[roleMemory]; h != nil {
		d := dir(roleMemory)
		if h.v2 {
			s.MemoryCurrent = r.value(filepath.Join(d, "memory.current"), "", false)
			s.MemoryPeak = r.value(filepath.Join(d, "memory.peak"), "", true)
			s.OOMKills = r.value(filepath.Join(d, "memory.events"), "oom_kill", false)
		} else {
			s.MemoryCurrent = r.value(filepath.Join(d, "memory.usage_in_bytes"), "", false)
			s.MemoryPeak = r.value(filepath.Join(d, "memory.max_usage_in_bytes"), "", false)
			s.OOMKills = r.value(filepath.Join(d, "memory.oom_control"), "oom_kill", false)
		}
	}
	if p.by[rolePids] != nil {
		s.Pids = r.value(filepath.Join(dir(rolePids), "pids.current"), "", false)
	}
	if h := p.by[roleCPUStat]; h != nil {
		if h.v2 {
			if us := r.value(filepath.Join(dir(roleCPUStat), "cpu.stat"), "usage_usec", false); us >= 0 {
				s.CPU = time.Duration(us) * time.Microsecond
			}
		} else {
			s.CPU = time.Duration(r.value(filepath.Join(dir(roleCPUStat), "cpuacct.usage"), "", false))
		}
	}
	if r.err != nil {
		return Stats{}, fmt.Errorf("stats of cgroup %s: %w", g.name, r.err)
	}
	return s, nil
}

// Kill SIGKILLs every process in the group, descendants that daemonised
// included, and returns once none is left (zombies do not count: they
// have left their cgroups). It fails with ErrNotTracked for a group in no
// cgroup, and with ErrNotEmpty when processes outlive the kill timeout.
func (g *Group) Kill() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.gone {
		return nil
	}
	if len(g.d.all) == 0 {
		return ErrNotTracked
	}
	if err := g.d.kill(); err != nil {
		return fmt.Errorf("kill cgroup %s: %w", g.name, err)
	}
	return nil
}

// Destroy kills the group's processes, waits for them to go and removes
// its directories. Calling it again is a no-op. A group in no cgroup has
// nothing to remove, and its processes are the caller's to kill.
func (g *Group) Destroy() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.gone {
		return nil
	}
	if err := g.d.destroy(); err != nil {
		return fmt.Errorf("destroy cgroup %s: %w", g.name, err)
	}
	if g.fd >= 0 {
		_ = unix.Close(g.fd)
		g.fd = -1
	}
	g.gone = true
	g.m.forget(g)
	return nil
}

// groupDirs are one group's directories and which of them kill through.
type groupDirs struct {
	all     []string
	v1      []string // those in v1 hierarchies
	track   string   // the v2 one, if any: cgroup.kill
	freezer string   // v1 freezer
}

func (d *groupDirs) add(p *plan, h *hierarchy, dir string) {
	d.all = append(d.all, dir)
	if !h.v2 {
		d.v1 = append(d.v1, dir)
	}
	if p.by[roleTrack] == h {
		d.track = dir
	}
	if p.by[roleFreezer] == h {
		d.freezer = dir
	}
}

// kill signals until no directory (nor any child cgroup one) lists a
// process. cgroup.kill and the freezer close the fork race; the loop is
// the fallback and also catches a process added to a v1 hierarchy only.
func (d *groupDirs) kill() error {
	var errs []error
	if d.track != "" {
		err := writeFile(filepath.Join(d.track, "cgroup.kill"), "1")
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if d.freezer != "" {
		if err := d.freezeKill(); err != nil {
			errs = append(errs, err)
		}
	}
	deadline := time.Now().Add(killTimeout)
	for delay := time.Millisecond; ; delay = min(2*delay, 50*time.Millisecond) {
		pids, where, err := d.procs()
		if err != nil {
			return errors.Join(append(errs, err)...)
		}
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return errors.Join(append(errs, fmt.Errorf("%w: after %v pids %v remain in %s", ErrNotEmpty, killTimeout, pids, strings.Join(where, ", ")))...)
		}
		for _, pid := range pids {
			_ = unix.Kill(pid, unix.SIGKILL) // ESRCH: it went by itself
		}
		time.Sleep(delay)
	}
}

// freezeKill freezes the group so that nothing forks while it is
// signalled, SIGKILLs everything, and thaws it, which lets the signals
// land.
func (d *groupDirs) freezeKill() error {
	state := filepath.Join(d.freezer, "freezer.state")
	if err := writeFile(state, "FROZEN"); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	for i := 0; i < 200; i++ { // FREEZING can take a moment; 1s at most
		if b, err := os.ReadFile(state); err != nil || strings.TrimSpace(string(b)) == "FROZEN" {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	pids, _, err := d.procs()
	for _, pid := range pids {
		_ = unix.Kill(pid, unix.SIGKILL)
	}
	return errors.Join(err, writeFile(state, "THAWED"))
}

// procs lists the pids in the directories and every cgroup beneath them,
// and the directories that hold any.
func (d *groupDirs) procs() (pids []int, where []string, err error) {
	for _, top := range d.all {
		for _, dir := range tree(top) {
			ps, err := readProcs(dir)
			if errors.Is(err, fs.ErrNotExist) {
				continue // removed, or a stale group that never had it
			}
			if err != nil {
				return nil, nil, err
			}
			if len(ps) > 0 {
				where = append(where, dir)
			}
			for _, p := range ps {
				if !slices.Contains(pids, p) {
					pids = append(pids, p)
				}
			}
		}
	}
	return pids, where, nil
}

// destroy kills and removes the directories, children first.
func (d *groupDirs) destroy() error {
	if len(d.all) > 0 {
		if err := d.kill(); err != nil {
			return err
		}
	}
	var errs []error
	for _, dir := range slices.Backward(d.all) {
		errs = append(errs, rmdirRetry(dir))
	}
	return errors.Join(errs...)
}

// tree lists dir and the cgroups beneath it, parents before children. A
// sandbox that can see cgroupfs may have made some.
func tree(dir string) []string {
	out := []string{dir}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.IsDir() {
			out = append(out, tree(filepath.Join(dir, e.Name()))...)
		}
	}
	return out
}

// rmdirRetry removes a cgroup and those beneath it. A cgroup stays busy for
// a moment after its last process left, hence the retries on EBUSY.
func rmdirRetry(dir string) error {
	deadline := time.Now().Add(rmdirTimeout)
	for _, d := range slices.Backward(tree(dir)) {
		for {
			err := unix.Rmdir(d)
			if err == nil || err == unix.ENOENT {
				break
			}
			if err != unix.EBUSY || time.Now().After(deadline) {
				return &os.PathError{Op: "rmdir", Path: d, Err: err}
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return nil
}

func readProcs(dir string) ([]int, error) {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil, err
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("%w: %s/cgroup.procs: %q", ErrParse, dir, f)
		}
		out = append(out, pid)
	}
	return out, nil
}

// statReader reads numbers from control files, keeping the first error.
type statReader struct{ err error }

// value reads a file holding one number, or the number after key in a
// file of "key value" lines. A missing optional file or missing key
// reads as -1.
func (r *statReader) value(path, key string, optional bool) int64 {
	if r.err != nil {
		return -1
	}
	b, err := os.ReadFile(path)
	if err != nil {
		if !(optional && errors.Is(err, fs.ErrNotExist)) {
			r.err = err
		}
		return -1
	}
	text := strings.TrimSpace(string(b))
	if key != "" {
		text = ""
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), key+" "); ok {
				text = strings.TrimSpace(v)
				break
			}
		}
		if text == "" {
			return -1
		}
	}
	v, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		r.err = fmt.Errorf("%w: %s: %q is not a number", ErrParse, path, text)
		return -1
	}
	return v
}

// writeFile writes s to a control file in one write(2), so the kernel's
// answer to it is the error; os wraps it with the path.
func writeFile(path, s string) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(s)
	return errors.Join(err, f.Close())
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
