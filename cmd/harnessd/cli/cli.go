// Package cli is harnessd's command line: `harnessd serve` and the client
// commands that talk to a running daemon over its socket (session, exec,
// events, output, replay). cmd/harnessd only calls Main.
package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/harnessd/harnessd/cmd/harnessd/serve"
	"github.com/harnessd/harnessd/core/agent"
	"github.com/harnessd/harnessd/core/api"
	"github.com/harnessd/harnessd/core/config"
	"github.com/harnessd/harnessd/core/daemon"
	"github.com/harnessd/harnessd/core/event"
	"github.com/harnessd/harnessd/core/live"
	"github.com/harnessd/harnessd/hooks"
	"github.com/harnessd/harnessd/store"
)

// Usage is the top-level help.
const Usage = `usage: harnessd <command> [flags]

daemon:
  serve [--config FILE] [--socket PATH] [--data DIR]   run the daemon
  demo [--config FILE]          start a daemon on a temporary socket, run a scripted task through its API, print every event
  hooks test PATH --command CMD | --action JSON [--output FILE]
                                what the Lua policies at PATH (a file or a directory; "builtin" for the
                                shipped ones) decide about CMD (or any action, as the API takes it: a
                                file edit, say): veto, ask, rewrite or allow, with the hook and reason;
                                with --output, what they make of that output (a file action: that text)
  store compact [--config FILE] [--data DIR]
                                rewrite the store file without the space deleted sessions left (bbolt never
                                shrinks its file); run it while the daemon is stopped

client (flags: --socket PATH, else $HARNESSD_SOCKET, else the default socket; --json for scripts):
  run [--agent NAME] [--session ID | --workspace DIR | --git REPO[@REF] [--profile NAME]] [--max-steps N] [--wall DUR] [--max-cost X] "TASK"
                                           drive an agent through a task, printing each action and observation;
                                           Ctrl-C stops the run; exits 0 only if the agent finished
  session new [--id ID] [--label K=V]... [--workspace DIR | --git REPO[@REF]] [--profile NAME] [--network none|proxy|host]
                                           create a session (in DIR, or a fresh clone of REPO at REF,
                                           bound at /workspace; with a [profiles.NAME]'s sandbox limits; its
                                           network at most the configured one); prints its id
  session profiles                         the profiles a session may be created with, and their limits
  session ls                               list sessions
  session show ID                          one session
  session rm ID [--purge]                  end a session (--purge: and delete its history)
  exec [--timeout DUR] [--input] [--trimmed] SESSION -- COMMAND...
                                           run a command, printing its output as it prints it (--trimmed: what
                                           the model is shown, once it returns); exits with its exit code
  py [--timeout DUR] [--input] [--reset] [--from FILE|-] SESSION -- CODE
                                           run a cell in the session's persistent Python (IPython when the
                                           sandbox has it), printing its output as it prints it; exit 1 if an
                                           exception ended it, 124 while it runs
  file view SESSION PATH [--lines A-B]    view a file with line numbers (or a directory, two levels deep),
                                           inside the session's sandbox; PATH absolute or relative to the
                                           shell's current directory
  file create SESSION PATH [--overwrite] (--content TEXT | --from FILE|-)
  file replace SESSION PATH --old TEXT --new TEXT
  file insert SESSION PATH --line N (--text TEXT | --from FILE|-)
  file undo SESSION PATH                   edit a file (--diff: print the recorded diff); exit 1 if the
                                           edit was refused (0 or 2+ matches, a protected path ...)
  events SESSION [-f] [--after N] [--progress]
                                           print a session's events (-f: follow until it ends, with running
                                           commands' output as it is printed; --json --progress: that too)
  output ID [--lines A-B]                  print a stored full output, or lines A to B of it
  replay SESSION                           print a session's history as a transcript, checking it is whole
  approvals                                list the actions a hook asked a person about
  approve SESSION SEQ | deny SESSION SEQ   decide one (who decided is recorded)

  mcp [--embedded [--config FILE]] [--socket PATH] [--keep] [--workspace DIR]
                                           an MCP server on stdin/stdout for agents (Claude Code, Codex, …):
                                           tools exec, output_read, events, session_*; --embedded starts a
                                           private daemon with a temporary store instead of using a running one

  version                                  print the version
`

// Env is what Main runs with.
type Env struct {
	Stdout, Stderr io.Writer
	Getenv         func(string) string // nil: os.Getenv
	Version        string
	// Demo runs `harnessd demo`; cmd/harnessd supplies it, so that this
	// package does not depend on the demo's.
	Demo func(ctx context.Context, args []string) int
}

// Main runs one command line and returns the process's exit status.
func Main(ctx context.Context, args []string, env Env) int {
	if env.Getenv == nil {
		env.Getenv = os.Getenv
	}
	if len(args) == 0 {
		fmt.Fprint(env.Stderr, Usage)
		return 2
	}
	c := &cmd{env: env, ctx: ctx}
	switch args[0] {
	case "serve":
		return c.serve(args[1:])
	case "demo":
		if env.Demo == nil {
			fmt.Fprintln(env.Stderr, "harnessd demo: not available in this build")
			return 2
		}
		return env.Demo(ctx, args[1:])
	case "store":
		return c.store(args[1:])
	case "hooks":
		return c.hooks(args[1:])
	case "session":
		return c.session(args[1:])
	case "exec":
		return c.exec(args[1:])
	case "file":
		return c.file(args[1:])
	case "py":
		return c.py(args[1:])
	case "events":
		return c.events(args[1:])
	case "output":
		return c.output(args[1:])
	case "replay":
		return c.replay(args[1:])
	case "approvals":
		return c.approvals(args[1:])
	case "approve", "deny":
		return c.decide(args[0], args[1:])
	case "run":
		return c.run(args[1:])
	case "mcp":
		return c.mcp(args[1:])
	case "version", "--version":
		fmt.Fprintln(env.Stdout, "harnessd", env.Version)
		return 0
	case "help", "-h", "--help":
		fmt.Fprint(env.Stdout, Usage)
		return 0
	}
	fmt.Fprintf(env.Stderr, "harnessd: unknown command %q\n\n%s", args[0], Usage)
	return 2
}

type cmd struct {
	env  Env
	ctx  context.Context
	name string // "session ls", for messages
	json bool
}

// flags returns a flag set with the client flags every command takes.
func (c *cmd) flags(name string) (*flag.FlagSet, *string) {
	c.name = name
	fs := flag.NewFlagSet("harnessd "+name, flag.ContinueOnError)
	fs.SetOutput(c.env.Stderr)
	socket := fs.String("socket", "", "daemon socket (default $HARNESSD_SOCKET, else "+config.DefaultSocket(c.env.Getenv)+")")
	fs.BoolVar(&c.json, "json", false, "print JSON")
	return fs, socket
}

// parse parses flags wherever they appear among the positional arguments
// (`session show ID --json` works), stopping at "--".
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

func (c *cmd) client(socket string) *api.Client {
	if socket == "" {
		socket = c.env.Getenv(config.EnvSocket)
	}
	if socket == "" {
		socket = config.DefaultSocket(c.env.Getenv)
		// A user's own daemon first, then the system service's socket,
		// which members of the harnessd group may use.
		if _, err := os.Stat(socket); err != nil {
			if _, err := os.Stat(config.SystemSocket); err == nil {
				socket = config.SystemSocket
			}
		}
	}
	return api.NewClient(socket)
}

// fail prints err and returns the exit status for it.
func (c *cmd) fail(err error) int {
	fmt.Fprintf(c.env.Stderr, "harnessd %s: %v\n", c.name, err)
	if errors.Is(err, api.ErrNotRunning) {
		return 3
	}
	return 1
}

func (c *cmd) usage(format string, args ...any) int {
	fmt.Fprintf(c.env.Stderr, "harnessd %s: %s\n(see harnessd help)\n", c.name, fmt.Sprintf(format, args...))
	return 2
}

func (c *cmd) printJSON(v any) {
	enc := json.NewEncoder(c.env.Stdout)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}

func (c *cmd) serve(args []string) int {
	c.name = "serve"
	fs := flag.NewFlagSet("harnessd serve", flag.ContinueOnError)
	fs.SetOutput(c.env.Stderr)
	path := fs.String("config", "", "harness.toml to load (default: built-in defaults, as harness.toml documents them)")
	socket := fs.String("socket", "", "socket to listen on (overrides daemon.socket and $HARNESSD_SOCKET)")
	data := fs.String("data", "", "data directory (overrides daemon.data_dir and $HARNESSD_DATA)")
	debug := fs.Bool("debug", false, "log at debug level")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		return c.usage("unexpected argument %q", fs.Arg(0))
	}
	// The file, then the environment, then the flags; again on SIGHUP.
	load := func() (config.Config, error) {
		cfg, err := LoadConfig(*path, c.env.Getenv)
		if err != nil {
			return cfg, err
		}
		if *socket != "" {
			cfg.Daemon.Socket = *socket
		}
		if *data != "" {
			cfg.Daemon.DataDir = *data
		}
		return cfg, cfg.Validate()
	}
	cfg, err := load()
	if err != nil {
		return c.usage("%v", err)
	}
	level := slog.LevelInfo
	if *debug {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(c.env.Stderr, &slog.HandlerOptions{Level: level}))
	if err := serve.Run(c.ctx, serve.Options{Config: cfg, Logger: log, Reload: load}); err != nil {
		log.Error("harnessd serve failed", "err", err)
		return 1
	}
	return 0
}

// hooks runs `hooks test`: policies tried without a running agent.
func (c *cmd) hooks(args []string) int {
	if len(args) == 0 || args[0] != "test" {
		return c.usage("hooks: want `hooks test PATH --command CMD | --action JSON [--output FILE]`")
	}
	c.name = "hooks test"
	fs := flag.NewFlagSet("harnessd hooks test", flag.ContinueOnError)
	fs.SetOutput(c.env.Stderr)
	command := fs.String("command", "", "the command an agent would run")
	actionJSON := fs.String("action", "", `any action as the API takes it, e.g. {"kind":"file_str_replace","path":"a.py","old":"x","new":"y"}`)
	output := fs.String("output", "", "a file holding an output (or, for a file action, a file's text) to show the observation hooks")
	pos, err := parse(fs, args[1:])
	if err != nil {
		return 2
	}
	if len(pos) != 1 {
		return c.usage("want one PATH: a .lua file, a directory of them, or builtin")
	}
	var out io.Reader
	if *output != "" {
		f, err := os.Open(*output)
		if err != nil {
			return c.fail(err)
		}
		defer f.Close()
		out = f
	}
	action := event.Payload(event.CmdRun{Command: *command})
	if *actionJSON != "" {
		if *command != "" {
			return c.usage("give --command or --action, not both")
		}
		ev, err := event.Decode([]byte(*actionJSON))
		if err != nil {
			return c.usage("--action: %v", err)
		}
		if !ev.IsAction() {
			return c.usage("--action: %s is an observation, not an action", ev.Kind())
		}
		if v, ok := ev.Payload.(interface{ Validate() error }); ok {
			if err := v.Validate(); err != nil {
				return c.usage("--action: %s: %v (the pipeline would refuse it before any hook)", ev.Kind(), err)
			}
		}
		action = ev.Payload
	}
	dir := hooks.Dir{Path: pos[0]}
	if pos[0] == "builtin" {
		dir = hooks.Builtin
	}
	if err := hooks.TestAction(c.ctx, dir, action, out, c.env.Stdout); err != nil {
		return c.fail(err)
	}
	return 0
}

// store runs the store's offline commands.
func (c *cmd) store(args []string) int {
	if len(args) == 0 || args[0] != "compact" {
		return c.usage("store: want `store compact`")
	}
	c.name = "store compact"
	fs := flag.NewFlagSet("harnessd store compact", flag.ContinueOnError)
	fs.SetOutput(c.env.Stderr)
	path := fs.String("config", "", "harness.toml to load (default: built-in defaults)")
	data := fs.String("data", "", "data directory (overrides daemon.data_dir and $HARNESSD_DATA)")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		return c.usage("unexpected argument %q", fs.Arg(0))
	}
	cfg, err := LoadConfig(*path, c.env.Getenv)
	if err != nil {
		return c.usage("%v", err)
	}
	if *data != "" {
		cfg.Daemon.DataDir = *data
	}
	file := cfg.StorePath(c.env.Getenv)
	before, err := os.Stat(file)
	if err != nil {
		fmt.Fprintf(c.env.Stderr, "harnessd store compact: %v\n", err)
		return 1
	}
	if err := store.CompactFile(c.ctx, file, nil); err != nil {
		if errors.Is(err, store.ErrLocked) {
			fmt.Fprintf(c.env.Stderr, "harnessd store compact: %v: stop harnessd first (systemctl stop harnessd)\n", err)
		} else {
			fmt.Fprintf(c.env.Stderr, "harnessd store compact: %v\n", err)
		}
		return 1
	}
	after, err := os.Stat(file)
	if err != nil {
		fmt.Fprintf(c.env.Stderr, "harnessd store compact: %v\n", err)
		return 1
	}
	fmt.Fprintf(c.env.Stdout, "%s: %d -> %d bytes\n", file, before.Size(), after.Size())
	return 0
}

// LoadConfig reads path (or the defaults when path is "") and applies the
// environment's overrides.
func LoadConfig(path string, getenv func(string) string) (config.Config, error) {
	cfg := config.Default()
	if path != "" {
		c, err := config.Load(path)
		if err != nil {
			return cfg, err
		}
		cfg = c
	}
	if err := cfg.ApplyEnv(getenv); err != nil {
		return cfg, err
	}
	return cfg, nil
}

func (c *cmd) session(args []string) int {
	if len(args) == 0 {
		c.name = "session"
		return c.usage("want new, ls, show, rm or profiles")
	}
	sub, args := args[0], args[1:]
	fs, socket := c.flags("session " + sub)
	switch sub {
	case "new":
		id := fs.String("id", "", "session id (default: a new random one)")
		workspace := fs.String("workspace", "", "work in this existing directory, bound at /workspace (default: a fresh empty one)")
		gitSrc := fs.String("git", "", "work in a fresh clone of the repository REPO at REF (REPO[@REF]: a branch, tag or commit)")
		network := fs.String("network", "", "the sandbox's network: none, proxy or host, at most as open as the profile's or sandbox.network (default: that)")
		profile := fs.String("profile", "", "make the sandbox with harness.toml's [profiles.NAME] settings instead of [sandbox]'s (see session profiles)")
		labels := map[string]string{}
		fs.Func("label", "a K=V label (repeatable)", func(v string) error {
			k, val, ok := strings.Cut(v, "=")
			if !ok || k == "" {
				return fmt.Errorf("want K=V, got %q", v)
			}
			labels[k] = val
			return nil
		})
		pos, err := parse(fs, args)
		if err != nil {
			return 2
		}
		if len(pos) > 0 {
			return c.usage("unexpected argument %q", pos[0])
		}
		req := daemon.CreateRequest{ID: *id, Labels: labels, Network: *network, Profile: *profile}
		if *workspace != "" {
			abs, err := filepath.Abs(*workspace)
			if err != nil {
				return c.fail(err)
			}
			req.Workspace = abs
		}
		if req.Git, err = gitSource(*gitSrc); err != nil {
			return c.fail(err)
		}
		info, err := c.client(*socket).CreateSession(c.ctx, req)
		if err != nil {
			return c.fail(err)
		}
		if c.json {
			c.printJSON(info)
		} else {
			fmt.Fprintln(c.env.Stdout, info.ID)
		}
		return 0
	case "ls", "list":
		pos, err := parse(fs, args)
		if err != nil {
			return 2
		}
		if len(pos) > 0 {
			return c.usage("unexpected argument %q", pos[0])
		}
		all, err := c.client(*socket).Sessions(c.ctx)
		if err != nil {
			return c.fail(err)
		}
		if c.json {
			c.printJSON(all)
			return 0
		}
		tw := tabwriter.NewWriter(c.env.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tSTATE\tCREATED\tEVENTS\tLABELS")
		for _, s := range all {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", s.ID, s.State, s.Created.Local().Format(time.DateTime), s.LastSeq, labelString(s.Labels))
		}
		tw.Flush()
		return 0
	case "profiles":
		pos, err := parse(fs, args)
		if err != nil {
			return 2
		}
		if len(pos) > 0 {
			return c.usage("unexpected argument %q", pos[0])
		}
		all, err := c.client(*socket).Profiles(c.ctx)
		if err != nil {
			return c.fail(err)
		}
		if c.json {
			c.printJSON(all)
			return 0
		}
		tw := tabwriter.NewWriter(c.env.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tNETWORK\tMEMORY_MB\tPIDS\tCPU_WEIGHT\tTMP_MB\tDISK_MB\tIMAGE")
		for _, p := range all {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s\n", p.Name, p.Network, p.MemoryMB, p.Pids, p.CPUWeight, p.TmpMB, p.DiskMB, cmp.Or(p.Image, "-"))
		}
		tw.Flush()
		return 0
	case "show", "rm":
		purge := false
		if sub == "rm" {
			fs.BoolVar(&purge, "purge", false, "also delete the session's events, outputs and workspace")
		}
		pos, err := parse(fs, args)
		if err != nil {
			return 2
		}
		if len(pos) != 1 {
			return c.usage("want one session id")
		}
		cl := c.client(*socket)
		if sub == "rm" {
			if err := cl.DeleteSession(c.ctx, pos[0], purge); err != nil {
				return c.fail(err)
			}
			if purge {
				return 0
			}
		}
		info, err := cl.Session(c.ctx, pos[0])
		if err != nil {
			return c.fail(err)
		}
		if c.json {
			c.printJSON(info)
			return 0
		}
		tw := tabwriter.NewWriter(c.env.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintf(tw, "id\t%s\nstate\t%s\ncreated\t%s\n", info.ID, info.State, info.Created.Local().Format(time.RFC3339))
		if !info.Ended.IsZero() {
			fmt.Fprintf(tw, "ended\t%s\n", info.Ended.Local().Format(time.RFC3339))
		}
		fmt.Fprintf(tw, "events\t%d\n", info.LastSeq)
		if info.Workspace != "" {
			fmt.Fprintf(tw, "workspace\t%s\n", info.Workspace)
		}
		if info.PID != 0 {
			fmt.Fprintf(tw, "shell pid\t%d\n", info.PID)
		}
		if info.Profile != "" {
			fmt.Fprintf(tw, "profile\t%s\n", info.Profile)
		}
		if len(info.Labels) > 0 {
			fmt.Fprintf(tw, "labels\t%s\n", labelString(info.Labels))
		}
		tw.Flush()
		return 0
	}
	return c.usage("unknown subcommand %q: want new, ls, show, rm or profiles", sub)
}

func labelString(l map[string]string) string {
	parts := make([]string, 0, len(l))
	for k, v := range l {
		parts = append(parts, k+"="+v)
	}
	sortStrings(parts)
	return strings.Join(parts, ",")
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// Exit statuses of exec besides the command's own.
const (
	ExitStillRunning = 124 // the command was still running at the soft timeout
	ExitVetoed       = 125 // a hook refused the command (or no one approved it): nothing ran
)

func (c *cmd) exec(args []string) int {
	fs, socket := c.flags("exec")
	timeout := fs.Duration("timeout", 0, "hard timeout for the command (default: terminal.hard_timeout)")
	input := fs.Bool("input", false, "send COMMAND as keyboard input to the running program (C-c, C-d … or text)")
	trimmed := fs.Bool("trimmed", false, "print what the model is shown (the trimmed output) once the call returns, instead of the output as it is printed")
	pos, err := parse(fs, args)
	if err != nil {
		return 2
	}
	if len(pos) == 0 {
		return c.usage("want SESSION -- COMMAND")
	}
	id := pos[0]
	rest := pos[1:]
	if len(rest) > 0 && rest[0] == "--" {
		rest = rest[1:]
	}
	command := strings.Join(rest, " ")
	run := event.CmdRun{Command: command, IsInput: *input, TimeoutS: timeout.Seconds()}
	obs, w, code, done := c.actWatched(*socket, id, run, !*trimmed)
	if done {
		return code
	}
	out, ok := obs.Payload.(event.CmdOutput)
	if !ok {
		w.stop(0, false)
		return c.fail(fmt.Errorf("unexpected reply: %s", obs.Kind()))
	}
	outputID := ""
	if out.Trimmed != nil {
		outputID = out.Trimmed.OutputID
	}
	switch {
	case c.json:
		b, _ := obs.MarshalJSON()
		fmt.Fprintf(c.env.Stdout, "%s\n", b)
	case w != nil && w.stop(obs.Cause, out.Output == ""):
		// Every byte was printed as it came.
	default:
		if w != nil {
			fmt.Fprintf(c.env.Stderr, "[harnessd] %s; what the model was shown follows\n", w.missed(obs.Cause))
		}
		io.WriteString(c.env.Stdout, out.Output)
		if outputID != "" {
			fmt.Fprintf(c.env.Stderr, "[harnessd] full output: harnessd output %s\n", outputID)
		}
	}
	if !c.json && out.Note != "" {
		fmt.Fprintf(c.env.Stderr, "[harnessd] %s\n", out.Note)
	}
	switch {
	case out.ExitCode == -1:
		fmt.Fprintf(c.env.Stderr, "[harnessd] still running; `harnessd exec %s --` reads more, `harnessd exec --input %s -- C-c` interrupts\n", id, id)
		return ExitStillRunning
	case out.ExitCode < 0 || out.ExitCode > 255:
		return 1
	}
	return out.ExitCode
}

func (c *cmd) events(args []string) int {
	fs, socket := c.flags("events")
	follow := fs.Bool("f", false, "follow: keep printing new events, and running commands' output as it is printed, until the session ends")
	after := fs.Uint64("after", 0, "start after this seq")
	progress := fs.Bool("progress", false, "with -f and --json: also print running commands' output as progress objects")
	pos, err := parse(fs, args)
	if err != nil {
		return 2
	}
	if len(pos) != 1 {
		return c.usage("want one session id")
	}
	print := func(ev event.Event) error {
		if c.json {
			b, err := ev.MarshalJSON()
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(c.env.Stdout, "%s\n", b)
			return err
		}
		_, err := fmt.Fprintln(c.env.Stdout, Summary(ev))
		return err
	}
	cl := c.client(*socket)
	switch {
	case *follow && c.json && *progress:
		err = cl.Watch(c.ctx, pos[0], *after, nil, print, func(ch live.Chunk) error {
			_, err := fmt.Fprintf(c.env.Stdout, "%s\n", ch.AppendJSON(nil))
			return err
		})
	case *follow && !c.json:
		// Work in progress shows as it happens: each line a running
		// command prints, under the command.
		var lines progressLines
		err = cl.Watch(c.ctx, pos[0], *after, nil, func(ev event.Event) error {
			if err := lines.flush(c.env.Stdout); err != nil {
				return err
			}
			return print(ev)
		}, func(ch live.Chunk) error { return lines.add(c.env.Stdout, ch) })
	default:
		err = cl.Events(c.ctx, pos[0], *after, *follow, print)
	}
	if err != nil && !(errors.Is(err, context.Canceled) && c.ctx.Err() != nil) {
		return c.fail(err)
	}
	return 0
}

// Summary is one readable line for an event.
func Summary(ev event.Event) string {
	head := fmt.Sprintf("#%-4d %s %-7s %-15s", ev.Seq, ev.Time.Local().Format("15:04:05.000"), ev.Source, ev.Kind())
	if ev.Cause != 0 {
		head += fmt.Sprintf(" (answers #%d)", ev.Cause)
	}
	var detail string
	switch p := agent.Unwrap(ev).(type) {
	case agent.RunStarted:
		detail = fmt.Sprintf("run %s, agent %s: %s", p.Run, p.Agent, oneLine(p.Task, 100))
	case agent.RunEnded:
		detail = fmt.Sprintf("run %s %s, %d steps, %d tokens, cost %.4f", p.Run, p.Reason, p.Steps, p.Tokens, p.Cost)
	case agent.AgentStep:
		detail = fmt.Sprintf("run %s step %d: %s, %d+%d tokens", p.Run, p.Step, p.Action, p.PromptTokens, p.CompletionTokens)
		if p.Thought != "" {
			detail += ": " + oneLine(p.Thought, 80)
		}
	case agent.GuidanceLoaded:
		detail = strings.Join(p.Files, ", ")
	case agent.ContextMasked:
		detail = fmt.Sprintf("%d observations masked, %d -> %d tokens", len(p.Seqs), p.TokensBefore, p.TokensAfter)
	case agent.DelegateResult:
		detail = fmt.Sprintf("run %s %s: %s", p.Run, p.Reason, oneLine(p.Message+p.Error, 100))
	case event.Delegate:
		detail = p.Agent + ": " + oneLine(p.Task, 100)
	case event.AgentCrashed:
		detail = oneLine(p.Reason, 120)
	case event.CmdRun:
		detail = "$ " + oneLine(p.Command, 120)
		if p.IsInput {
			detail = "keys: " + oneLine(p.Command, 120)
		}
		if p.TimeoutS > 0 {
			detail += fmt.Sprintf("  (timeout %gs)", p.TimeoutS)
		}
	case event.CmdOutput:
		detail = fmt.Sprintf("exit %d, cwd %s, %dms", p.ExitCode, p.Cwd, p.DurationMS)
		if p.TimedOut {
			detail += ", timed out"
		}
		if p.Trimmed != nil {
			detail += fmt.Sprintf(", %d of %d lines omitted (output %s)", p.Trimmed.LinesOmitted, p.Trimmed.LinesTotal, p.Trimmed.OutputID)
		}
		if s := oneLine(p.Output, 80); s != "" {
			detail += ": " + s
		}
	case event.Message:
		detail = oneLine(p.Text, 120)
	case event.Finish:
		detail = oneLine(p.Message, 120)
	case event.InvalidAction:
		detail = oneLine(p.Reason, 120)
	case event.HookVeto:
		detail = p.Hook + ": " + oneLine(p.Reason, 100)
	case event.SandboxStarted:
		detail = fmt.Sprintf("driver %s, id %s, workdir %s", p.Driver, p.SandboxID, p.Workdir)
	case event.SandboxStopped:
		detail = oneLine(p.Reason, 120)
	case event.NetConnect:
		verdict := "refused"
		if p.Allowed {
			verdict = "allowed"
		}
		if p.Closed {
			verdict = fmt.Sprintf("closed (%d bytes up, %d down)", p.BytesUp, p.BytesDown)
		}
		detail = fmt.Sprintf("%s %s:%d %s: %s", p.Method, p.Host, p.Port, verdict, oneLine(p.Reason, 100))
	}
	return head + "  " + detail
}

func oneLine(s string, max int) string {
	s = strings.TrimSpace(s)
	s = strings.ReplaceAll(s, "\n", "⏎")
	if r := []rune(s); len(r) > max {
		s = string(r[:max]) + "…"
	}
	return s
}

func (c *cmd) approvals(args []string) int {
	fs, socket := c.flags("approvals")
	pos, err := parse(fs, args)
	if err != nil {
		return 2
	}
	if len(pos) != 0 {
		return c.usage("takes no arguments")
	}
	list, err := c.client(*socket).Approvals(c.ctx)
	if err != nil {
		return c.fail(err)
	}
	if c.json {
		c.printJSON(list)
		return 0
	}
	if len(list) == 0 {
		fmt.Fprintln(c.env.Stdout, "no action is waiting for approval")
		return 0
	}
	tw := tabwriter.NewWriter(c.env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tSEQ\tWAITING\tHOOK\tREASON\tACTION")
	for _, a := range list {
		what, _ := a.Action.MarshalJSON()
		if c, ok := a.Action.Payload.(event.CmdRun); ok {
			what = []byte(c.Command)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%.80s\n", a.Session, a.Seq, time.Since(a.Asked).Round(time.Second), a.Hook, a.Reason, what)
	}
	tw.Flush()
	return 0
}

func (c *cmd) decide(verb string, args []string) int {
	fs, socket := c.flags(verb)
	pos, err := parse(fs, args)
	if err != nil {
		return 2
	}
	if len(pos) != 2 {
		return c.usage("want SESSION SEQ (from harnessd approvals)")
	}
	seq, err := strconv.ParseUint(pos[1], 10, 64)
	if err != nil {
		return c.usage("SEQ %q: want the waiting action's seq", pos[1])
	}
	if err := c.client(*socket).Decide(c.ctx, pos[0], seq, verb == "approve"); err != nil {
		return c.fail(err)
	}
	done := map[string]string{"approve": "approved", "deny": "denied"}[verb]
	fmt.Fprintf(c.env.Stdout, "%s/%d: %s\n", pos[0], seq, done)
	return 0
}

func (c *cmd) output(args []string) int {
	fs, socket := c.flags("output")
	lines := fs.String("lines", "", "lines A-B (1-based, inclusive; A- means to the end)")
	pos, err := parse(fs, args)
	if err != nil {
		return 2
	}
	if len(pos) != 1 {
		return c.usage("want one output id (from a cmd_output's trimmed.output_id)")
	}
	from, to := 1, 0
	if *lines != "" {
		a, b, _ := strings.Cut(*lines, "-")
		n, err := strconv.Atoi(a)
		if err != nil || n < 1 {
			return c.usage("--lines %q: want A-B, e.g. 100-200", *lines)
		}
		from = n
		if b != "" {
			m, err := strconv.Atoi(b)
			if err != nil || m < from {
				return c.usage("--lines %q: want A-B with B >= A", *lines)
			}
			to = m
		} else if !strings.Contains(*lines, "-") {
			to = from
		}
	}
	cl := c.client(*socket)
	for {
		p, err := cl.Output(c.ctx, pos[0], from, to)
		if err != nil {
			return c.fail(err)
		}
		if c.json {
			c.printJSON(p)
			return 0
		}
		io.WriteString(c.env.Stdout, p.Text)
		// The daemon returns a page at a time; keep going to the end of
		// what was asked.
		if p.To < from || p.To >= p.Total || (to > 0 && p.To >= to) {
			return 0
		}
		from = p.To + 1
	}
}

func (c *cmd) replay(args []string) int {
	fs, socket := c.flags("replay")
	pos, err := parse(fs, args)
	if err != nil {
		return 2
	}
	if len(pos) != 1 {
		return c.usage("want one session id")
	}
	var r Replayer
	err = c.client(*socket).Events(c.ctx, pos[0], 0, false, func(ev event.Event) error {
		if c.json {
			b, _ := ev.MarshalJSON()
			fmt.Fprintf(c.env.Stdout, "%s\n", b)
			return r.Check(ev)
		}
		if err := r.Check(ev); err != nil {
			return err
		}
		io.WriteString(c.env.Stdout, Transcript(ev))
		return nil
	})
	if err != nil {
		return c.fail(err)
	}
	if err := r.Done(); err != nil {
		return c.fail(err)
	}
	if !c.json {
		fmt.Fprintf(c.env.Stderr, "[harnessd] replayed %d events of %s: seqs 1-%d with no gaps, every observation answers an earlier action\n", r.n, pos[0], r.n)
	}
	return 0
}

// actWatched sends action a to session id, printing the session's output
// as it is printed meanwhile (as ssh does) when watch and not --json. A
// failure or a hook's veto is handled here (printed, and the exit code to
// return, with done); else the observation comes back with the watcher,
// which the caller stops once it has printed the rest.
func (c *cmd) actWatched(socket, id string, a event.Payload, watch bool) (obs event.Event, w *watcher, code int, done bool) {
	cl := c.client(socket)
	if !c.json && watch {
		w = c.watch(cl, id)
	}
	obs, err := cl.Act(c.ctx, id, event.SourceUser, a)
	if err != nil {
		w.stop(0, false)
		return obs, w, c.fail(err), true
	}
	if veto, ok := obs.Payload.(event.HookVeto); ok {
		w.stop(0, false)
		if c.json {
			b, _ := obs.MarshalJSON()
			fmt.Fprintf(c.env.Stdout, "%s\n", b)
		} else {
			fmt.Fprintf(c.env.Stderr, "[harnessd] not run: %s (hook %s)\n", veto.Reason, veto.Hook)
		}
		return obs, w, ExitVetoed, true
	}
	return obs, w, 0, false
}
