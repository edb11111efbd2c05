package config

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"slices"
	"time"
)

// Config is the whole of harness.toml. Its zero value is not useful: start
// from Default, Load or Parse.
type Config struct {
	Terminal Terminal `toml:"terminal"`
	Trim     Trim     `toml:"trim"`
	Store    Store    `toml:"store"`
	Daemon   Daemon   `toml:"daemon"`
	Sandbox  Sandbox  `toml:"sandbox"`
	Hooks    Hooks    `toml:"hooks"`
	Run      Run      `toml:"run"`
	// Agents are the agents runs can use, by name ([agents.NAME]).
	Agents map[string]Agent `toml:"agents"`
	// Profiles are named sets of sandbox settings a session may be
	// created with ([profiles.NAME]).
	Profiles map[string]Profile `toml:"profiles"`
}

// Hooks is the [hooks] table: the Lua policies every action and
// observation passes through.
type Hooks struct {
	// Builtin turns on the policies harnessd ships (hooks/policies):
	// dangerous commands, secret redaction, trimming for test runners.
	Builtin bool `toml:"builtin"`
	// Dirs are directories (or single files) of *.lua policies, loaded in
	// order after the built-in ones.
	Dirs []string `toml:"dirs"`
	// FailOpen lists the dirs whose action hooks, when they error or
	// overrun their budget, allow the action instead of vetoing it.
	FailOpen []string `toml:"fail_open"`
	// Budget is the time one hook call may take.
	Budget Duration `toml:"budget"`
	// AskTimeout is how long an action a hook asked about waits for a
	// person; then it is denied.
	AskTimeout Duration `toml:"ask_timeout"`
}

// Daemon is the [daemon] table: harnessd serve's socket, who may use it,
// and how it stops.
type Daemon struct {
	// Socket is the unix socket the API listens on. "" means
	// $XDG_RUNTIME_DIR/harnessd.sock, or /run/harnessd/harnessd.sock as
	// root or when $XDG_RUNTIME_DIR is unset.
	Socket string `toml:"socket"`

	// DataDir holds the store (when store.path is "") and the sessions'
	// workspaces. "" means $XDG_DATA_HOME/harnessd (~/.local/share/harnessd),
	// or /var/lib/harnessd as root.
	DataDir string `toml:"data_dir"`

	// AllowUIDs and AllowGIDs are the peers, besides root and the
	// daemon's own user, whose connections are served; the socket's mode
	// (0660) is the first gate, these are the second.
	AllowUIDs []int `toml:"allow_uids"`
	AllowGIDs []int `toml:"allow_gids"`

	// MaxBody is the largest request body accepted, in bytes.
	MaxBody int `toml:"max_body"`

	// BodyTimeout bounds how long a request body may take to arrive.
	BodyTimeout Duration `toml:"body_timeout"`

	// MaxConnsPerPeer caps the API connections one uid holds open at once.
	MaxConnsPerPeer int `toml:"max_conns_per_peer"`

	// MaxSessions caps the sessions live at once.
	MaxSessions int `toml:"max_sessions"`

	// ShutdownGrace is how long running commands may go on after SIGTERM
	// before they are interrupted.
	ShutdownGrace Duration `toml:"shutdown_grace"`

	// HeapFloorMB is the size in MiB the daemon's Go heap may reach
	// before the garbage collector runs, however little of it is live
	// (core/heapfloor); 0 leaves GOGC's own pacing.
	HeapFloorMB int `toml:"heap_floor_mb"`
}

// Sandbox is the [sandbox] table: where each session's shell runs.
type Sandbox struct {
	// Driver is "native" (Linux namespaces) or "none" (on the host, no
	// isolation: only for trusted use, and logged loudly).
	Driver string `toml:"driver"`

	// Network is "none" (loopback only), "proxy" (HTTP/HTTPS through the
	// daemon's filtering proxy) or "host".
	Network string `toml:"network"`

	// Image is a directory to use as the sandbox's root filesystem; ""
	// means read-only binds of the host's system directories.
	Image string `toml:"image"`

	// Protected are paths inside the workspace bound read-only.
	Protected []string `toml:"protected"`

	MemoryMB  int `toml:"memory_mb"`  // memory limit per session, MiB; 0 = none
	Pids      int `toml:"pids"`       // process limit per session; 0 = none
	CPUWeight int `toml:"cpu_weight"` // CPU share, 1..10000 (100 = an even share)
	TmpMB     int `toml:"tmp_mb"`     // size of the private /tmp, MiB

	// DiskMB is the size of each workspace the daemon makes, MiB: a
	// filesystem of its own (as root), so writes past it fail inside
	// the sandbox and the host's disk is untouched; 0 = none.
	DiskMB int `toml:"disk_mb"`

	// CloneTimeout bounds the clone of a session made from a host
	// repository (harnessd run --git, a session's "git" source): past it
	// the clone is stopped, its files removed, and the session refused.
	CloneTimeout Duration `toml:"clone_timeout"`

	// PoolSize is how many ready sandboxes are kept waiting for new
	// sessions; 0 turns the pool off.
	PoolSize int `toml:"pool_size"`

	Proxy Proxy `toml:"proxy"`
}

// Proxy is the [sandbox.proxy] table: what network = "proxy" lets out.
type Proxy struct {
	Allow []string `toml:"allow"` // domains reachable ("example.com", "*.example.com")
	Deny  []string `toml:"deny"`  // domains refused even if allowed
	Ports []int    `toml:"ports"` // destination ports allowed
}

// Values of Sandbox.Driver and Sandbox.Network.
const (
	DriverNative = "native"
	DriverNone   = "none"

	NetworkNone  = "none"
	NetworkProxy = "proxy"
	NetworkHost  = "host"
)

// Terminal is the [terminal] table: the persistent shell of each session.
type Terminal struct {
	// Shell is the bash binary, a name looked up in PATH or a path.
	// harnessd drives it with bash features (PROMPT_COMMAND, eval), so it
	// must be bash.
	Shell string `toml:"shell"`

	// SoftTimeout: with no new output for this long, control returns to
	// the agent with exit code -1 while the command goes on running.
	SoftTimeout Duration `toml:"soft_timeout"`

	// HardTimeout: a command running this long is interrupted (SIGINT,
	// then SIGKILL, then the shell is rebuilt). At least SoftTimeout.
	HardTimeout Duration `toml:"hard_timeout"`

	// KillGrace is the wait between SIGINT, SIGKILL and rebuilding.
	KillGrace Duration `toml:"kill_grace"`

	// MaxWait bounds one call, whatever the program prints: a command
	// that keeps printing (top, tail -f) returns with what it printed so
	// far and exit code -1 ("still running") after this long.
	MaxWait Duration `toml:"max_wait"`

	// Cols and Rows are the PTY's window size, each 10..1000.
	Cols int `toml:"cols"`
	Rows int `toml:"rows"`

	// Env holds extra environment variables for the shell, applied over
	// the environment harnessd builds for it. Never nil in a Config from
	// Default, Load or Parse.
	Env map[string]string `toml:"env"`
}

// Trim is the [trim] table: what an agent is shown of a command's output.
// The full output is always kept.
type Trim struct {
	MaxChars int `toml:"max_chars"` // characters of one observation, the placeholder included
	Head     int `toml:"head"`      // first lines shown, at most (within 30% of max_chars)
	Tail     int `toml:"tail"`      // last lines shown, at most (within 30% of max_chars)
	MaxKeep  int `toml:"max_keep"`  // lines shown from the omitted middle, at most

	// Keywords are substrings, ASCII case ignored, that make a line of the
	// omitted middle a candidate for the budget (with the lines of its
	// block: a traceback's frames, a test failure's explanation).
	Keywords []string `toml:"keywords"`

	LineCap int `toml:"line_cap"` // bytes shown of one line; the rest is cut with a marker
}

// Store is the [store] table: the bbolt file of sessions, events and full
// outputs.
type Store struct {
	// Path is the bbolt file. "" means $XDG_DATA_HOME/harnessd/harnessd.db,
	// or /var/lib/harnessd/harnessd.db as root.
	Path string `toml:"path"`

	// Durability is DurabilityStrict or DurabilityBatch.
	Durability string `toml:"durability"`

	// MaxOutputMB is how much of one command's full output is kept, in
	// MiB; MaxSessionOutputMB is how much of all of a session's
	// commands'. 0 keeps all. The rest is not stored, and the
	// observation says so; the model's trimmed view is unaffected.
	MaxOutputMB        int `toml:"max_output_mb"`
	MaxSessionOutputMB int `toml:"max_session_output_mb"`
}

// Values of Store.Durability.
const (
	// DurabilityStrict commits every action before it runs, so a crash
	// never leaves an effect without its record.
	DurabilityStrict = "strict"

	// DurabilityBatch lets events wait to share a commit with later ones:
	// fewer syncs, but a crash can lose the record of an action that ran.
	DurabilityBatch = "batch"
)

// Limits checked by Validate besides the obvious ones. The trim limits are
// those core/trim clamps to, so that a value is refused here rather than
// silently lowered there.
const (
	MinWindow  = 10      // smallest Cols or Rows
	MaxWindow  = 1000    // largest Cols or Rows
	MaxLines   = 10000   // largest Head, Tail or MaxKeep
	MinLineCap = 80      // smallest LineCap: a cut line should still say something
	MaxLineCap = 1 << 20 // largest LineCap
	MinChars   = 500     // smallest MaxChars: room for the placeholder
	MaxChars   = 1 << 22 // largest MaxChars

	// MaxSocketPath is the longest daemon.socket: sun_path holds 108
	// bytes with the terminating NUL.
	MaxSocketPath = 107
)

// maxFileSize bounds what Load reads, so that a path to something endless
// (a device, a pipe) fails instead of hanging.
const maxFileSize = 1 << 20

// Default returns the configuration harness.toml documents. Each call
// returns a new Config; changing its map or slice changes no other.
func Default() Config {
	return Config{
		Terminal: Terminal{
			Shell:       "bash",
			SoftTimeout: Duration{10 * time.Second},
			HardTimeout: Duration{30 * time.Minute},
			KillGrace:   Duration{2 * time.Second},
			MaxWait:     Duration{30 * time.Second},
			Cols:        200,
			Rows:        50,
			Env:         map[string]string{},
		},
		Hooks: Hooks{
			Builtin:    true,
			Dirs:       []string{},
			FailOpen:   []string{},
			Budget:     Duration{50 * time.Millisecond},
			AskTimeout: Duration{5 * time.Minute},
		},
		Trim: Trim{
			MaxChars: 8000,
			Head:     40,
			Tail:     40,
			MaxKeep:  200,
			Keywords: []string{
				"error", "fatal", "panic", "exception", "traceback", "fail", "not ok", "assert",
				"undefined reference", "segmentation fault", "killed", "permission denied",
				"no such file", "exit status", "caused by", "err!", "make: ***",
				"_test.go:", "✖", "✕",
			},
			LineCap: 2000,
		},
		Store: Store{
			Path:               "",
			Durability:         DurabilityStrict,
			MaxOutputMB:        256,
			MaxSessionOutputMB: 1024,
		},
		Daemon: Daemon{
			Socket:          "",
			DataDir:         "",
			AllowUIDs:       []int{},
			AllowGIDs:       []int{},
			MaxBody:         1 << 20,
			BodyTimeout:     Duration{30 * time.Second},
			MaxConnsPerPeer: 512,
			MaxSessions:     1000,
			ShutdownGrace:   Duration{10 * time.Second},
			HeapFloorMB:     32,
		},
		Sandbox: Sandbox{
			Driver:       DriverNative,
			Network:      NetworkNone,
			Image:        "",
			Protected:    []string{".git/hooks", ".git/config", ".harness"},
			MemoryMB:     2048,
			Pids:         512,
			CPUWeight:    100,
			TmpMB:        512,
			DiskMB:       1024,
			CloneTimeout: Duration{10 * time.Minute},
			PoolSize:     2,
			Proxy: Proxy{
				Allow: []string{},
				Deny:  []string{},
				Ports: []int{80, 443},
			},
		},
		Run:      defaultRun(),
		Agents:   defaultAgents(),
		Profiles: defaultProfiles(),
	}
}

// Load reads the TOML file at path and returns it over Default, validated,
// as Parse does. A missing file is an error (matching fs.ErrNotExist) that
// names path.
func Load(path string) (Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return Config{}, fmt.Errorf("load config: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return Config{}, fmt.Errorf("load config: %w", err)
	}
	if len(data) > maxFileSize {
		return Config{}, fmt.Errorf("load config %s: larger than %d bytes, not a config file", path, maxFileSize)
	}
	return Parse(data, path)
}

// Parse reads a TOML document over Default and validates the result. Keys
// the document leaves out keep their defaults; a table given in the
// document (terminal.env) or an array (trim.keywords) replaces the default
// one whole. name is used in error messages, as "name:line: ".
//
// Parse checks in three stages and reports every problem of the first
// stage that has any: TOML syntax (a *SyntaxError); then unknown keys and
// values of the wrong type (each a *KeyError); then values that Validate
// refuses (each a *KeyError). Every *KeyError carries the line of its key.
// The result of a successful Parse always passes Validate.
func Parse(data []byte, name string) (Config, error) {
	c, lines, err := decode(data, name)
	if err != nil {
		return Config{}, err
	}
	c.fillAgentDefaults()
	inFile := func(key string) bool { _, ok := lines[key]; return ok }
	errs := c.check(inFile)
	if len(errs) == 0 {
		return c, nil
	}
	for _, e := range errs {
		e.File = name
		e.Line = lines[e.Key]
	}
	slices.SortStableFunc(errs, func(a, b *KeyError) int { return cmp.Compare(a.Line, b.Line) })
	return Config{}, join(errs)
}

// Validate reports every value of c that harnessd cannot use, each as a
// *KeyError matching ErrInvalid (joined with errors.Join when there are
// several). The errors name keys but not lines: c may have changed since
// it was read. Parse and ApplyEnv validate what they read themselves,
// with the line or the variable.
func (c Config) Validate() error { return join(c.check(nil)) }

// Environment variables ApplyEnv reads.
const (
	EnvSoftTimeout = "HARNESSD_SOFT_TIMEOUT" // terminal.soft_timeout
	EnvHardTimeout = "HARNESSD_HARD_TIMEOUT" // terminal.hard_timeout
	EnvStore       = "HARNESSD_STORE"        // store.path
	EnvDurability  = "HARNESSD_DURABILITY"   // store.durability
	EnvSocket      = "HARNESSD_SOCKET"       // daemon.socket
	EnvData        = "HARNESSD_DATA"         // daemon.data_dir
)

// envVars maps each variable ApplyEnv reads to its key and how to set it.
var envVars = []struct {
	name, key string
	set       func(c *Config, v string) error
}{
	{EnvSoftTimeout, "terminal.soft_timeout", func(c *Config, v string) error {
		return c.Terminal.SoftTimeout.UnmarshalText([]byte(v))
	}},
	{EnvHardTimeout, "terminal.hard_timeout", func(c *Config, v string) error {
		return c.Terminal.HardTimeout.UnmarshalText([]byte(v))
	}},
	{EnvStore, "store.path", func(c *Config, v string) error { c.Store.Path = v; return nil }},
	{EnvDurability, "store.durability", func(c *Config, v string) error { c.Store.Durability = v; return nil }},
	{EnvSocket, "daemon.socket", func(c *Config, v string) error { c.Daemon.Socket = v; return nil }},
	{EnvData, "daemon.data_dir", func(c *Config, v string) error { c.Daemon.DataDir = v; return nil }},
}

// ApplyEnv overrides settings from the environment: HARNESSD_SOFT_TIMEOUT,
// HARNESSD_HARD_TIMEOUT (durations such as "10s"), HARNESSD_STORE (the
// store path), HARNESSD_DURABILITY ("strict" or "batch"), HARNESSD_SOCKET
// (daemon.socket) and HARNESSD_DATA (daemon.data_dir). A variable
// that is unset or empty changes nothing. getenv is usually os.Getenv;
// nil means os.Getenv.
//
// The settings it changes are validated against the rest of c; a problem
// is a *KeyError that names the variable. On error c is left unchanged.
func (c *Config) ApplyEnv(getenv func(string) string) error {
	if getenv == nil {
		getenv = os.Getenv
	}
	n := *c
	from := map[string]string{} // key -> the variable that set it
	var errs []*KeyError
	for _, v := range envVars {
		val := getenv(v.name)
		if val == "" {
			continue
		}
		if err := v.set(&n, val); err != nil {
			errs = append(errs, &KeyError{Env: v.name, Key: v.key, Msg: err.Error(), Err: ErrInvalid})
			continue
		}
		from[v.key] = v.name
	}
	fromEnv := func(key string) bool { _, ok := from[key]; return ok }
	for _, e := range n.check(fromEnv) {
		if name, ok := from[e.Key]; ok {
			e.Env = name
			errs = append(errs, e)
		}
	}
	if len(errs) > 0 {
		return join(errs)
	}
	*c = n
	return nil
}
