package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/core/sandbox/seccomp"
)

// The init's privileged, per-thread steps (capset, the bounding set) must
// happen on the thread that forks the shell. The main goroutine runs on
// the main thread during package initialisation; locking it here keeps
// InitMain, called from main, on that thread for good.
func init() {
	if len(os.Args) > 1 && os.Args[1] == InitCommand {
		runtime.LockOSThread()
	}
}

// InitMain is the sandbox init, run as `harnessd sandbox-init` by the
// native driver: it builds the sandbox from the configuration on its
// socket, starts the shell as its only child, reaps orphans, passes
// SIGTERM, SIGHUP, SIGINT, SIGQUIT, SIGUSR1 and SIGUSR2 on to the shell
// and exits with the shell's status. It never returns.
func InitMain() {
	os.Exit(runInit())
}

// initFailed is the init's exit status when it fails before the shell runs.
const initFailed = 125

func runInit() int {
	fd, err := strconv.Atoi(os.Getenv(initFDEnv))
	if err != nil {
		fmt.Fprintf(os.Stderr, "harnessd %s: only harnessd runs this (no %s)\n", InitCommand, initFDEnv)
		return initFailed
	}
	unix.CloseOnExec(fd)
	sock := os.NewFile(uintptr(fd), "sandbox-init")

	// Read with recvmsg: the Go message brings the cgroup files. It may
	// come right behind the config (Started), and be read with it: fr
	// keeps the files until Go is decoded.
	fr := initReader(fd)
	enc, dec := json.NewEncoder(sock), json.NewDecoder(fr)
	fail := func(err error) int {
		var ie *InitError
		if !errors.As(err, &ie) {
			ie = initErr("init", "", err)
		}
		_ = enc.Encode(initMsg{Err: ie})
		return initFailed
	}
	var cfg initConfig
	if err := dec.Decode(&cfg); err != nil {
		return fail(initErr("read config", "", err))
	}
	// Nothing the init inherited may reach the shell: the sources lead
	// out of the sandbox, and so may whatever the daemon itself inherited
	// without close-on-exec (its own parent's descriptors).
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		return fail(initErr("close_range", "", err))
	}
	if err := setup(&cfg); err != nil {
		return fail(err)
	}
	if cfg.HeadRule != nil {
		cfg.gitMounts = gitMounts(&cfg)
	}
	if err := enc.Encode(initMsg{Ready: true, Note: cfg.note, Repos: cfg.found}); err != nil {
		return initFailed
	}
	var m initMsg
	if err := dec.Decode(&m); err != nil || !m.Go {
		closeFDs(fr.take())
		return initFailed // the daemon gave up on us
	}
	cgroups := fr.take()
	if err := startHeadRule(&cfg, cgroups, m.Cgroups); err != nil {
		closeFDs(cgroups)
		return fail(err)
	}
	if err := joinCgroups(cgroups, m.Cgroups); err != nil {
		return fail(err)
	}
	// The init's cgroups are final now (v1 joined just now, v2 by the
	// daemon if not at birth), but the cgroup namespace it was born in
	// is rooted where it was born: the v1 paths would show the daemon's
	// groups (named after its pid) and the sandbox's. A namespace of its
	// own, rooted here, for this thread and so for the shell it forks.
	if err := unix.Unshare(unix.CLONE_NEWCGROUP); err != nil {
		return fail(initErr("unshare(CLONE_NEWCGROUP)", "", err))
	}
	if err := lockdown(); err != nil {
		return fail(err)
	}
	// The main thread alone, which forks the shell: the init's other
	// threads serve the rule, and the file service uses openat2.
	if err := seccomp.InstallAgent(); err != nil {
		return fail(initErr("seccomp (agent)", "", err))
	}
	if err := installHeadRule(); err != nil {
		return fail(err)
	}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, unix.SIGTERM, unix.SIGHUP, unix.SIGINT, unix.SIGQUIT, unix.SIGUSR1, unix.SIGUSR2)
	// The kernel lets the sandbox's tasks signal their pid 1 with any
	// signal it has a handler for, and the Go runtime has one for each:
	// these it takes, sent by kill, as a crash (a dump of every stack on
	// the shell's terminal, then the sandbox's end, and the HEAD rule's
	// workers with it). Taken here, they are dropped; a real fault of the
	// init's own still crashes it.
	crash := make(chan os.Signal, 1)
	signal.Notify(crash, unix.SIGILL, unix.SIGTRAP, unix.SIGABRT, unix.SIGBUS, unix.SIGFPE, unix.SIGSEGV, unix.SIGSTKFLT, unix.SIGSYS)
	go func() {
		for range crash {
		}
	}()
	pid, err := startShell(&cfg)
	if err != nil {
		return fail(err)
	}
	if err := enc.Encode(initMsg{Pid: pid}); err != nil {
		_ = unix.Kill(pid, unix.SIGKILL)
		return initFailed
	}
	// The socket stays open: the init serves file actions on it (files_linux.go).
	go serveFiles(sock)
	go func() {
		for sig := range sigs {
			_ = unix.Kill(pid, sig.(syscall.Signal))
		}
	}()
	return reap(pid)
}

// joinCgroups moves this thread, the main one that later forks the shell,
// into the sandbox's cgroup v1 groups by writing "0" to each tasks file
// the daemon sent with Go (fds, named by names), then closes them. A
// thread moving itself needs no RCU grace period, as a move by pid does.
// The main thread is the thread-group leader, whose group is the one the
// v1 memory controller charges the whole process's memory to; the init's
// other threads stay outside, which only spares the sandbox's pids limit
// the runtime's few threads.
//
// It runs once the root is built, so that the daemon can make the group
// meanwhile (Cgroups): what the init did until then (its mounts, its
// root's first pages) is charged to the daemon's groups, and is the
// init's own, bounded work. Nothing of the agent's has run: the shell is
// forked by this thread, after this and after lockdown.
func joinCgroups(fds []int, names []string) error {
	defer closeFDs(fds)
	if len(fds) != len(names) {
		return initErr("join cgroup", "", fmt.Errorf("%d files for %d names", len(fds), len(names)))
	}
	for i, name := range names {
		if _, err := unix.Write(fds[i], []byte("0")); err != nil {
			return initErr("join cgroup", name, err)
		}
	}
	return nil
}

// setup builds the sandbox: the root filesystem, hostname, loopback and
// the proxy's listener. It runs with the init's full capabilities inside
// its own user namespace.
func setup(cfg *initConfig) error {
	// Not dumpable: the shell, though it has the same uid, cannot open
	// /proc/1/fd, /proc/1/mem or /proc/1/environ.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return initErr("prctl(PR_SET_DUMPABLE)", "", err)
	}
	if err := buildRoot(cfg); err != nil {
		return err
	}
	// The host paths are bound; only the proxy's socket is still needed.
	for fd := initSourceFD; fd < initSourceFD+cfg.Sources; fd++ {
		if cfg.ProxySocket != fdPath(fd) {
			_ = unix.Close(fd)
		}
	}
	if err := unix.Sethostname([]byte(cfg.Hostname)); err != nil {
		return initErr("sethostname", cfg.Hostname, err)
	}
	if cfg.NewNet {
		if err := loopbackUp(); err != nil {
			return err
		}
	}
	if cfg.ProxySocket != "" {
		if err := startProxy(cfg.ProxySocket); err != nil {
			return err
		}
	}
	return nil
}

// loopbackUp brings lo up in the new network namespace.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return initErr("socket", "", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return initErr("ifreq", "lo", err)
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return initErr("SIOCGIFFLAGS", "lo", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return initErr("SIOCSIFFLAGS", "lo", err)
	}
	return nil
}

// lockdown drops every capability of the calling thread (the one that will
// fork the shell) for good (dropThread), then installs the seccomp filter
// on every thread.
func lockdown() error {
	if err := dropThread(); err != nil {
		return err
	}
	if err := seccomp.Install(); err != nil {
		return initErr("seccomp", "", err)
	}
	return nil
}

// dropThread drops every capability of the calling thread for good. The
// securebits make sure an exec as uid 0 (the shell is uid 0 of its user
// namespace) never regains capabilities, and the empty bounding set makes
// sure no file capability or setuid bit can grant one. The shell's
// thread (lockdown) and the thread that starts a session's other
// processes (spawnLocked) both go through it. Without CAP_SETPCAP it
// fails, and nothing is started.
func dropThread() error {
	// linux/securebits.h; x/sys/unix does not carry them.
	const (
		noRoot                = 1 << 0
		noRootLocked          = 1 << 1
		noSetuidFixup         = 1 << 2
		noSetuidFixupLocked   = 1 << 3
		keepCapsLocked        = 1 << 5
		noCapAmbientRaise     = 1 << 6
		noCapAmbientRaiseLock = 1 << 7
		bits                  = noRoot | noRootLocked | noSetuidFixup | noSetuidFixupLocked | keepCapsLocked | noCapAmbientRaise | noCapAmbientRaiseLock
	)
	if err := unix.Prctl(unix.PR_SET_SECUREBITS, bits, 0, 0, 0); err != nil {
		return initErr("prctl(PR_SET_SECUREBITS)", "", err)
	}
	last, err := lastCap()
	if err != nil {
		return err
	}
	for c := 0; c <= last; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && err != unix.EINVAL {
			return initErr("prctl(PR_CAPBSET_DROP)", strconv.Itoa(c), err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return initErr("prctl(PR_CAP_AMBIENT_CLEAR_ALL)", "", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return initErr("capset", "", err)
	}
	return nil
}

func lastCap() (int, error) {
	b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err != nil {
		return 0, initErr("read", "/proc/sys/kernel/cap_last_cap", err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, initErr("parse", "/proc/sys/kernel/cap_last_cap", err)
	}
	return n, nil
}

// startShell forks and execs the shell from this (locked, capability-less)
// thread, then applies the rlimits to it. They are not set on the init
// itself, whose Go runtime may need more address space than the shell is
// allowed; the shell has run nothing of the agent's yet (the terminal
// types nothing before its first prompt).
func startShell(cfg *initConfig) (int, error) {
	sh := cfg.Shell
	path := sh.Path
	if _, err := os.Stat(path); err != nil && len(sh.Args) > 0 {
		path = lookPath(filepath.Base(sh.Args[0]), sh.Env)
	}
	pid, err := syscall.ForkExec(path, sh.Args, &syscall.ProcAttr{
		Dir:   sh.Dir,
		Env:   sh.Env,
		Files: []uintptr{0, 1, 2},
	})
	if err != nil {
		return 0, initErr("exec", path, err)
	}
	for _, r := range cfg.Rlimits {
		lim := unix.Rlimit{Cur: r.Value, Max: r.Value}
		if err := unix.Prlimit(pid, r.Resource, &lim, nil); err != nil {
			_ = unix.Kill(pid, unix.SIGKILL)
			return 0, initErr("prlimit "+r.Name, strconv.FormatUint(r.Value, 10), err)
		}
	}
	return pid, nil
}

func lookPath(name string, env []string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			for _, dir := range filepath.SplitList(v) {
				p := filepath.Join(dir, name)
				if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
					return p
				}
			}
		}
	}
	return name
}

// reap waits for every child (the shell, and orphans of the sandbox that
// were re-parented to this pid 1) and returns the shell's status when it
// exits; the init's exit then ends the pid namespace.
func reap(shell int) int {
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, 0, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return initFailed
		}
		if pid != shell {
			continue
		}
		switch {
		case ws.Exited():
			return ws.ExitStatus()
		case ws.Signaled():
			return 128 + int(ws.Signal())
		}
	}
}
