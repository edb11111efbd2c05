package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/core/sandbox/gitnotify"
)

// The git guard's HEAD rule where the kernel cannot enforce it (no BPF
// LSM: kernelRule): the sandbox's init enforces it (package gitnotify).
// Its shell, and everything the init starts for the agent (spawnLocked)
// or does for it (serveFiles), makes every directory entry through the
// init, which refuses a new HEAD, and a new .git that is not a
// directory, in a directory of the workspace's filesystems that the
// dedicated uid does not own.
//
// "Owned by the dedicated uid", seen from inside: an unmapped uid stats
// as the overflow uid, as host root's files and every other user's do,
// so the daemon maps the dedicated uid into the sandbox's user
// namespace, at headRuleOwner, beside 0 (the user). Nothing inside can
// act as it: the shell and what it starts have no capability (an empty
// bounding set, locked securebits, no_new_privs: no setuid or file
// capability counts), so none can setuid to it, chown to it, or use a
// capability over its files; the init's own threads that keep
// capabilities run only the init's code. What the mapping changes for
// the agent: the repositories handed over show headRuleOwner as their
// owner instead of nobody. The other choice, asking the daemon about
// each refused name's directory, costs a round trip where this costs a
// statx.

// headRuleOwner is the id the dedicated uid has inside a sandbox the
// init's HEAD rule guards: below the overflow uid (65534), and no
// image's user in practice.
const headRuleOwner = 65533

// headRule is the init's server of the HEAD rule, or nil: set before
// lockdown, read by the threads that install the filter after.
var headRule *gitnotify.Server

// startHeadRule starts the init's HEAD rule's workers, before lockdown
// (they unshare their fs_struct, which the base filter refuses after),
// each in the sandbox's cgroup v1 groups (the tasks files cgroups,
// named by names), as the main thread joins them (joinCgroups): the
// dentries and inodes a worker makes for the agent are charged to the
// thread that makes them.
func startHeadRule(cfg *initConfig, cgroups []int, names []string) error {
	if cfg.HeadRule == nil {
		return nil
	}
	mounts, err := mountsBelow(cfg.Workdir)
	if err != nil {
		return initErr("git guard: workspace mounts", cfg.Workdir, err)
	}
	if len(cgroups) != len(names) {
		return initErr("git guard: join cgroups", "", fmt.Errorf("%d files for %d names", len(cgroups), len(names)))
	}
	join := func() error {
		for i, fd := range cgroups {
			if _, err := unix.Write(fd, []byte("0")); err != nil {
				return initErr("git guard: join cgroup", names[i], err)
			}
		}
		return nil
	}
	s, err := gitnotify.Start(gitnotify.Rule{Owner: headRuleOwner, Devs: cfg.HeadRule.Devs, Mounts: mounts, GitMounts: cfg.gitMounts}, join)
	if err != nil {
		return initErr("git guard: start the HEAD rule", "", err)
	}
	headRule = s
	return nil
}

// installHeadRule puts the HEAD rule's filter on the calling thread,
// served by the init, if the sandbox has the rule. An error means the
// thread must start nothing.
func installHeadRule() error {
	if headRule == nil {
		return nil
	}
	l, err := gitnotify.Install()
	if err != nil {
		return initErr("git guard: install the HEAD rule", "", err)
	}
	headRule.Serve(l)
	return nil
}

// mountsBelow are the ids of the mounts at dirs and of those below them,
// in this process's mount table, read once.
func mountsBelow(dirs ...string) ([]uint64, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	var ids []uint64
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		if mp := unescapeMount(f[4]); !slices.ContainsFunc(dirs, func(d string) bool { return within(mp, d) }) {
			continue
		}
		if id, err := strconv.ParseUint(f[0], 10, 64); err == nil {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("no mount at %s", strings.Join(dirs, ", "))
	}
	return ids, nil
}

// headRuleAvailable says why the init cannot enforce the HEAD rule on
// this host, or nil: it needs SECCOMP_ADDFD_FLAG_SEND (Linux 5.14) and
// a filter for the architecture.
func headRuleAvailable() error {
	if _, err := gitnotify.Program(); err != nil {
		return err
	}
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return os.NewSyscallError("uname", err)
	}
	rel := unix.ByteSliceToString(u.Release[:])
	var major, minor int
	if _, err := fmt.Sscanf(rel, "%d.%d", &major, &minor); err != nil {
		return fmt.Errorf("kernel release %q: %w", rel, err)
	}
	if major < 5 || major == 5 && minor < 14 {
		return fmt.Errorf("kernel %s: seccomp user notification's ADDFD_FLAG_SEND needs Linux 5.14", rel)
	}
	return nil
}

// gitMounts are the mounts at and below the git directories of the
// repositories the init pinned (Rule.GitMounts): those it found, and
// those an earlier init found, that are the user's (uid 0 inside, or
// lent: initConfig.Lent; those the guard handed over are no repository
// the user's git trusts).
func gitMounts(cfg *initConfig) []uint64 {
	var dirs []string
	for _, r := range append(append([]Repo(nil), cfg.Repos...), cfg.found...) {
		if r.File || r.Stray || r.Half {
			continue
		}
		dir := filepath.Join(cfg.Workdir, r.Path)
		var st unix.Stat_t
		if err := unix.Lstat(dir, &st); err != nil || !usersOwn(&st, cfg.Lent) || slices.Contains(dirs, dir) {
			continue
		}
		dirs = append(dirs, dir)
	}
	if len(dirs) == 0 {
		return nil
	}
	ids, _ := mountsBelow(dirs...) // none: nothing pinned to keep links out of
	return ids
}
