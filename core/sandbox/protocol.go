package sandbox

// InitCommand is the subcommand that runs the sandbox init:
// `harnessd sandbox-init`. cmd/harnessd calls InitMain when os.Args[1] is
// InitCommand, before anything else.
const InitCommand = "sandbox-init"

// initFDEnv names the init's end of its socket to the daemon.
const initFDEnv = "_HARNESSD_SANDBOX_INIT_FD"

// initConfig is everything the init needs, sent as one JSON value over its
// socket before it starts.
//
// The init is the sandbox's user from its first instruction. Where that
// is not the daemon's user (a root daemon), it cannot walk the daemon's
// directories, and descriptors the daemon opens lead to mounts of the
// daemon's namespace, which cannot be bound from. So the daemon clones
// each host directory the sandbox gets (open_tree(OPEN_TREE_CLONE)) and
// the init attaches the clones (move_mount): Source.Tree. A rootless
// daemon may not clone mounts, and need not: its init is its own user and
// binds by path.
type initConfig struct {
	ID           string
	Root         string // the directory the new root tmpfs is mounted on, in the init's mount namespace
	Image        Source // Path "" and Tree 0 for the host's system directories
	ReadOnly     []string
	ReadOnlyFrom []Source     // the source of each ReadOnly path
	Hidden       []hiddenPath // under etc: not world-readable, so covered
	Workspace    Source
	Workdir      string
	Protected    []string
	ControlDir   string // where the control directory appears inside (ControlPath)
	ControlFrom  Source
	TmpBytes     int64
	Hostname     string
	NewNet       bool
	ProxySocket  string // the proxy's socket as /proc/self/fd/N; "" unless NetworkProxy
	PidMax       int    // write the pid namespace's pid_max (0: leave it)
	Rlimits      []Rlimit
	// Sources is how many descriptors (mount clones, the proxy socket)
	// the init inherits from initSourceFD on; it closes them once the
	// root is built, all but ProxySocket's.
	Sources int
	Shell   shellSpec

	// Repos are the repositories the sandbox's first init found, which
	// every later one pins even if it does not find them.
	Repos []Repo
	// GitScan bounds the init's walk for repositories; 0 means
	// maxGitScan (tests set less).
	GitScan int
	// PinStray has the init pin the stray HEADs it finds (Repo.Stray):
	// set where the git guard's HEAD rule is (the kernel's or the
	// init's), in a directory the user named.
	PinStray bool `json:",omitempty"`
	// HostGit are the paths git configs outside the workspace name that
	// could lie in it (hostGitRefs): relative ones in every repository's
	// worktree, absolute ones where they are. The init pins them.
	HostGit []configRef `json:",omitempty"`
	// Home is the real path of the home directory of the workspace's
	// user on the host, for what a repository's config names with ~/.
	Home string `json:",omitempty"`
	// HeadRule has the init enforce the git guard's HEAD rule
	// (headrule_linux.go): set where the guard has no kernel rule.
	HeadRule *headRuleConfig `json:",omitempty"`
	// Lent are the git directories (device, inode) the git guard has
	// lent to the dedicated uid while sessions run over them
	// (gitlend_linux.go): the user's own repositories, though the init
	// sees another owner.
	Lent [][2]uint64 `json:",omitempty"`

	note  string // the init's, for the daemon's log (initMsg.Note)
	found []Repo // the repositories this init found (initMsg.Repos)
	// gitMounts are the HEAD rule's Rule.GitMounts, found before the
	// init reports (gitMounts): after, the guard may have lent the git
	// directories it pinned, which then look like another's.
	gitMounts []uint64
}

// Source is a host directory or file the init mounts: a detached clone
// of its mount it inherited as descriptor Tree, or else Path, which it
// binds from.
type Source struct {
	Path string
	Tree int
}

// initSourceFD is the first of the init's inherited sources; its socket is
// 3.
const initSourceFD = 4

// hiddenPath is a path under etc that the sandbox must not read.
type hiddenPath struct {
	Path string // relative to etc
	Dir  bool
}

// shellSpec is the terminal's bash command as it was before Prepare.
type shellSpec struct {
	Path string
	Args []string
	Env  []string
	Dir  string
}

// initMsg is one message on the init's socket, either way: the init says
// Ready (set up, waiting), the daemon says Go (the init is in the cgroup
// v2 directory, if it was not born there) with the cgroup v1 files to
// join, the init answers with the shell's Pid (in the sandbox's pid
// namespace); Err ends the conversation.
type initMsg struct {
	Ready bool   `json:",omitempty"`
	Note  string `json:",omitempty"` // with Ready: what the daemon should log
	Repos []Repo `json:",omitempty"` // with Ready: the repositories the init found

	Go bool `json:",omitempty"`
	// With Go: the names of the cgroup v1 tasks files that come with the
	// message (SCM_RIGHTS), in order; the init's forking thread writes
	// "0" to each before it drops its privileges and starts the shell.
	Cgroups []string `json:",omitempty"`

	Pid int        `json:",omitempty"`
	Err *InitError `json:",omitempty"`
}

// headRuleConfig is the init's part of initConfig for the HEAD rule.
type headRuleConfig struct {
	// Devs are the device numbers of the workspace's filesystems (the
	// daemon's workspaceDevs); the init adds the mounts of the workspace
	// and below it, by id (a btrfs subvolume's stat differs from its
	// filesystem's).
	Devs []uint64
}
