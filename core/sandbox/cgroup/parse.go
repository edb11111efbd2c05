package cgroup

import (
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
)

// procCgroup is one line of /proc/self/cgroup:
// hierarchy-ID:controller-list:cgroup-path.
type procCgroup struct {
	id          int
	controllers []string // empty on the v2 line ("0::/..."); may hold "name=systemd"
	path        string
}

// parseProcCgroup reads /proc/self/cgroup. A path may itself contain ':',
// so a line is cut at its first two colons only.
func parseProcCgroup(data []byte) ([]procCgroup, error) {
	var out []procCgroup
	for n, line := range strings.Split(string(data), "\n") {
		if line == "" {
			continue
		}
		idText, rest, ok1 := strings.Cut(line, ":")
		ctrlText, p, ok2 := strings.Cut(rest, ":")
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("%w: /proc/self/cgroup line %d: %q: want id:controllers:path", ErrParse, n+1, line)
		}
		id, err := strconv.Atoi(idText)
		if err != nil || id < 0 {
			return nil, fmt.Errorf("%w: /proc/self/cgroup line %d: %q: bad hierarchy id", ErrParse, n+1, line)
		}
		if !strings.HasPrefix(p, "/") {
			return nil, fmt.Errorf("%w: /proc/self/cgroup line %d: %q: path is not absolute", ErrParse, n+1, line)
		}
		var ctrls []string
		if ctrlText != "" {
			ctrls = strings.Split(ctrlText, ",")
		}
		out = append(out, procCgroup{id: id, controllers: ctrls, path: p})
	}
	return out, nil
}

// mountEntry is a cgroup or cgroup2 line of /proc/self/mountinfo.
type mountEntry struct {
	root      string // the cgroup the mount shows at its mount point
	point     string
	v2        bool
	superOpts []string
}

// parseMountInfo returns the cgroup and cgroup2 mounts of
// /proc/self/mountinfo in file order. Lines of other file systems are only
// checked for the shape every line has.
func parseMountInfo(data []byte) ([]mountEntry, error) {
	var out []mountEntry
	for n, line := range strings.Split(string(data), "\n") {
		if line == "" {
			continue
		}
		// id parent major:minor root mount-point options [optional...] - fstype source super-options
		f := strings.Split(line, " ")
		sep := slices.Index(f, "-")
		if sep < 6 || len(f) < sep+4 {
			return nil, fmt.Errorf("%w: mountinfo line %d: %q: want at least 6 fields, '-', fstype, source, options", ErrParse, n+1, line)
		}
		fstype := f[sep+1]
		if fstype != "cgroup" && fstype != "cgroup2" {
			continue
		}
		root, err := unescapeMount(f[3])
		if err != nil {
			return nil, fmt.Errorf("%w: mountinfo line %d: root: %v", ErrParse, n+1, err)
		}
		point, err := unescapeMount(f[4])
		if err != nil {
			return nil, fmt.Errorf("%w: mountinfo line %d: mount point: %v", ErrParse, n+1, err)
		}
		if !strings.HasPrefix(root, "/") || !strings.HasPrefix(point, "/") {
			return nil, fmt.Errorf("%w: mountinfo line %d: %q: root and mount point must be absolute", ErrParse, n+1, line)
		}
		out = append(out, mountEntry{
			root:      root,
			point:     point,
			v2:        fstype == "cgroup2",
			superOpts: strings.Split(strings.Join(f[sep+3:], " "), ","),
		})
	}
	return out, nil
}

// unescapeMount undoes the kernel's octal escapes (\040 for a space, \134
// for a backslash) in mountinfo paths.
func unescapeMount(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			b.WriteByte(s[i])
			continue
		}
		if i+4 > len(s) {
			return "", fmt.Errorf("truncated escape in %q", s)
		}
		v, err := strconv.ParseUint(s[i+1:i+4], 8, 8)
		if err != nil {
			return "", fmt.Errorf("bad escape in %q", s)
		}
		b.WriteByte(byte(v))
		i += 3
	}
	return b.String(), nil
}

// hierarchy is one mounted cgroup hierarchy and where this process sits in
// it.
type hierarchy struct {
	v2          bool
	controllers []string // v1: the hierarchy's controllers, without name=
	mount       string
	own         string // our cgroup, as /proc/self/cgroup names it
	// dir is our cgroup's directory. It is empty when no mount shows our
	// cgroup, and unreachable says why.
	dir         string
	unreachable string

	// parent is the directory our groups go in, <dir>/<Parent>-<pid>; set
	// once it exists.
	parent string
}

func (h *hierarchy) has(ctrl string) bool { return slices.Contains(h.controllers, ctrl) }

// name is how reports and errors refer to the hierarchy.
func (h *hierarchy) name() string {
	if h.v2 {
		return "cgroup2 " + h.mount
	}
	return "cgroup v1 " + strings.Join(h.controllers, ",") + " " + h.mount
}

// findHierarchies matches each line of /proc/self/cgroup with a mount of its
// hierarchy. Named v1 hierarchies without controllers (name=systemd) are of
// no use for limits and are left out, as are lines no mount shows at all.
func findHierarchies(cgs []procCgroup, mounts []mountEntry) []hierarchy {
	var out []hierarchy
	for _, cg := range cgs {
		v2 := cg.id == 0 && len(cg.controllers) == 0
		var ctrls []string
		for _, c := range cg.controllers {
			if c != "" && !strings.HasPrefix(c, "name=") {
				ctrls = append(ctrls, c)
			}
		}
		if !v2 && len(ctrls) == 0 {
			continue
		}
		h := hierarchy{v2: v2, controllers: ctrls, own: cg.path}
		found := false
		for _, m := range mounts {
			if m.v2 != v2 || (!v2 && !hasAll(m.superOpts, ctrls)) {
				continue
			}
			if !found {
				found = true
				h.mount = m.point
			}
			if rel, ok := within(cg.path, m.root); ok {
				h.mount = m.point
				h.dir = path.Join(m.point, rel)
				h.unreachable = ""
				break
			}
			h.unreachable = fmt.Sprintf("our cgroup %s is not under the root %s of the mount at %s", cg.path, m.root, m.point)
			if slices.Contains(strings.Split(cg.path, "/"), "..") {
				h.unreachable = fmt.Sprintf("our cgroup %s is outside our cgroup namespace", cg.path)
			}
		}
		if found {
			out = append(out, h)
		}
	}
	return out
}

// within returns p relative to root when p is root or beneath it. A path
// with ".." components is outside our cgroup namespace and never within.
func within(p, root string) (string, bool) {
	if slices.Contains(strings.Split(p, "/"), "..") {
		return "", false
	}
	switch {
	case root == "/":
		return p, true
	case p == root:
		return "/", true
	case strings.HasPrefix(p, root+"/"):
		return p[len(root):], true
	}
	return "", false
}

func hasAll(set, want []string) bool {
	for _, w := range want {
		if !slices.Contains(set, w) {
			return false
		}
	}
	return true
}
