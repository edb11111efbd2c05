package sandbox

// InitCommand is the subcommand that runs the sandbox init:
// `harnessd sandbox-init`. cmd/harnessd calls InitMain when os.Args[1] is
// InitCommand, before anything else.
const InitCommand = "sandbox-init"

// initFDEnv names the init's end of its socket to the daemon.
const initFDEnv = "_HARNESSD_SANDBOX_INIT_FD"

// initConfig is everything the init needs, sent as one JSON value over its
// socket before it starts.
type initConfig struct {
	ID          string
	Root        string // host directory the new root tmpfs is mounted on, in the init's mount namespace
	Image       string // "" for the host's system directories
	ReadOnly    []string
	Hidden      []hiddenPath // under etc: not world-readable, so covered
	Workspace   string       // host path
	Workdir     string
	Protected   []string
	ControlDir  string
	TmpBytes    int64
	Hostname    string
	NewNet      bool
	ProxySocket string // "" unless NetworkProxy
	PidMax      int    // write the pid namespace's pid_max (0: leave it)
	Rlimits     []Rlimit
	// CgroupJoin names the cgroup files the init inherits from fd
	// initJoinFD on, in order; its forking thread writes "0" to each.
	CgroupJoin []string
	Shell      shellSpec
}

// initJoinFD is the first of the init's CgroupJoin files; its socket is 3.
const initJoinFD = 4

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
// v2 directory, if it was not born there), the init
// answers with the shell's Pid (in the sandbox's pid namespace); Err ends
// the conversation.
type initMsg struct {
	Ready bool       `json:",omitempty"`
	Go    bool       `json:",omitempty"`
	Pid   int        `json:",omitempty"`
	Err   *InitError `json:",omitempty"`
}
