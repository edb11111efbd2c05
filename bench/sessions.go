package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/harnessd/harnessd/cmd/harnessd/cli"
	"github.com/harnessd/harnessd/core/api"
	"github.com/harnessd/harnessd/core/config"
	"github.com/harnessd/harnessd/core/daemon"
)

// Targets of the sessions section, from the daemon issue.
const (
	rssPerSessionTarget = 200 << 10 // daemon RSS per idle session, bytes
	concurrentClients   = 8
)

// envServe makes this binary `harnessd serve` (the same cli.Main the real
// binary runs) instead of the benchmark: the sessions section re-execs
// itself with it so that the daemon is a process of its own, whose RSS
// is the daemon's alone.
const envServe = "HARNESSD_BENCH_SERVE"

// serveChild runs `harnessd serve` with os.Args[1:] when envServe is set,
// and reports whether it did, with the exit status.
func serveChild() (int, bool) {
	if os.Getenv(envServe) != "1" {
		return 0, false
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return cli.Main(ctx, os.Args[1:], cli.Env{Stdout: os.Stdout, Stderr: os.Stderr, Version: "bench"}), true
}

// sessions is the sessions section: sessions created per second (one
// client, and concurrentClients at once), and the daemon's RSS per idle
// session at a small and a large count, with the daemon as a separate
// process; for each driver -driver names (both when it names none).
func (b *bench) sessions(ctx context.Context, s *Section) error {
	var errs []error
	for _, r := range b.sessionRuns() {
		if err := b.sessionsWith(ctx, s, r); err != nil {
			errs = append(errs, fmt.Errorf("driver %s: %w", r.driver, err))
		}
	}
	return errors.Join(errs...)
}

// sessionRun is one daemon's share of the sessions section.
type sessionRun struct {
	driver string // [sandbox] driver
	sizes  []int  // idle sessions at which RSS is sampled, ascending
	block  int    // sessions created per block (alternating 1 and concurrentClients clients)
	prefix string // before every row's and note's name
}

// sessionRuns are the daemons the sessions section measures: driver none
// at 100 and 1,000 sessions, and the native driver at 100 only (1,000
// sandboxes, 2,000 processes with their inits, is more than a small
// machine does in reasonable time), both unless -driver picks one.
func (b *bench) sessionRuns() []sessionRun {
	none := sessionRun{driver: config.DriverNone, sizes: []int{100, 1000}, block: 100}
	native := sessionRun{driver: config.DriverNative, sizes: []int{100}, block: 50, prefix: "native: "}
	if b.opts.quick {
		none.sizes, none.block = []int{20, 100}, 20
		native.sizes, native.block = []int{10}, 5
	}
	switch b.opts.driver {
	case config.DriverNone:
		return []sessionRun{none}
	case config.DriverNative:
		return []sessionRun{native}
	}
	return []sessionRun{none, native}
}

// sessionsWith measures one daemon, with r's driver.
func (b *bench) sessionsWith(ctx context.Context, s *Section, r sessionRun) error {
	large := r.sizes[len(r.sizes)-1]
	dir, err := os.MkdirTemp(b.tmp, "sessions-"+r.driver+"-")
	if err != nil {
		return err
	}
	d, err := startChild(ctx, dir, childConfig{driver: r.driver, sessions: large, goPacing: true})
	if err != nil {
		return err
	}
	defer d.stop(s, r.prefix)
	note := func(format string, args ...any) { s.Notes = append(s.Notes, r.prefix+fmt.Sprintf(format, args...)) }
	note("daemon: this binary re-exec'd as `harnessd serve` (cli.Main), pid %d, strict durability, [sandbox] driver = %q, pool_size = 0 (every create is cold), [daemon] max_sessions = %d, heap_floor_mb = 0; its log is %s.", d.pid, r.driver, d.maxSessions, d.log)
	note("sessions are created in blocks of %d, the first with one client, then alternately %d clients (each its own api.Client) and one, so both rates are taken over the same range of live sessions; each new session then runs `true` once (untimed), so its shell is warm, and stays idle.", r.block, concurrentClients)
	if r.driver == config.DriverNative {
		note("native sandboxes are measured at %d sessions only, not 1,000 as with driver none: each is a sandbox init (this binary) and its bash, and a thousand of them would take a small machine longer than the report should (-driver native measures the same).", large)
	}
	note("RSS is VmRSS from /proc/PID/status, read 0.5 s after the last `true`; the starting point is after one session was created, used and purged (the first one's one-off costs are not per session). Go's heap keeps garbage until its next GC, which is part of what the daemon costs. The heap floor is off here (heap_floor_mb = 0, Go's own pacing): it is a fixed cost, up to its size in RSS while less than half of it is live, which would hide in or inflate a per-session figure taken at 100 sessions depending on where the heap stood.")
	fdLimit, limErr := openFileLimit(d.pid)

	warm, err := d.cl.CreateSession(ctx, daemon.CreateRequest{})
	if err == nil {
		err = actTrue(ctx, d.cl, warm.ID)
	}
	if err == nil {
		err = d.cl.DeleteSession(ctx, warm.ID, true)
	}
	if err != nil {
		return fmt.Errorf("warm-up session: %w", err)
	}
	time.Sleep(500 * time.Millisecond)
	base, err := d.sample(ctx)
	if err != nil {
		return err
	}

	var seq, conc creations
	var ids []string
	grow := func(to int) error {
		for len(ids) < to {
			n := min(r.block, to-len(ids))
			clients := 1
			if len(ids) > 0 && seq.n > conc.n {
				clients = concurrentClients
			}
			c := &seq
			if clients > 1 {
				c = &conc
			}
			got, err := d.create(ctx, n, clients, c)
			ids = append(ids, got...)
			if err != nil {
				return fmt.Errorf("creating session %d of %d (%d clients): %w", len(ids)+1, to, clients, err)
			}
		}
		return nil
	}
	warmed := 0
	measureAt := func(n int) error {
		if err := grow(n); err != nil {
			return err
		}
		if err := d.runTrue(ctx, ids[warmed:]); err != nil {
			return err
		}
		warmed = len(ids)
		time.Sleep(500 * time.Millisecond)
		at, err := d.sample(ctx)
		if err != nil {
			return err
		}
		s.Rows = append(s.Rows, rssRows(base, at, n, r)...)
		note("%s", at.note(base, n))
		return nil
	}
	for _, n := range r.sizes {
		if err = measureAt(n); err != nil {
			break
		}
	}
	if limErr == nil {
		fds := 0
		if at, serr := d.sample(ctx); serr == nil {
			fds = at.fds
		}
		perSess := float64(fds-base.fds) / float64(max(1, len(ids)))
		fits := "?"
		if perSess > 0 {
			fits = strconv.Itoa(int(float64(fdLimit-base.fds) / perSess))
		}
		note("open files: the daemon's soft limit (/proc/PID/limits; Go raises its soft limit to the hard one at start) is %d; at %d sessions it holds %d fds, %.1f a session: room for about %s sessions.",
			fdLimit, len(ids), fds, perSess, fits)
	} else {
		note("open files: could not read the daemon's limit: %v", limErr)
	}
	live := Row{
		Name: r.prefix + "idle sessions live", Figure: count(len(ids)),
		Target: fmt.Sprintf(">= %d", large), Status: passIf(len(ids) >= large && err == nil),
	}
	s.Rows = append(s.Rows, live)
	if seq.n > 0 {
		s.Rows = append(s.Rows,
			Row{Name: r.prefix + "create p50, 1 client", Figure: dur(summarize(seq.lat).p50)},
			Row{Name: r.prefix + "create p99, 1 client", Figure: dur(summarize(seq.lat).p99)},
			Row{Name: r.prefix + "sessions created/s, 1 client", Figure: perSecond(seq.rate())},
		)
	}
	if conc.n > 0 {
		s.Rows = append(s.Rows, Row{
			Name: fmt.Sprintf("%ssessions created/s, %d clients", r.prefix, concurrentClients), Figure: perSecond(conc.rate()),
			Baseline: labelled("1 client", perSecond(seq.rate())),
			Ratio:    ratio(conc.rate(), seq.rate()), RatioOf: fmt.Sprintf("%d/1", concurrentClients),
		})
	}
	note("created %d sessions with 1 client in %s, %d with %d clients in %s.",
		seq.n, seq.took.Round(time.Millisecond), conc.n, concurrentClients, conc.took.Round(time.Millisecond))
	return err
}

// rssRows are the figures at n idle sessions against the starting sample.
// A native session's processes are its sandbox init and its bash.
func rssRows(base, at sample, n int, r sessionRun) []Row {
	per := float64(at.rss-base.rss) / float64(n)
	kids := "shells'"
	if r.driver == config.DriverNative {
		kids = "init + shell"
	}
	return []Row{
		{
			Name: fmt.Sprintf("%sdaemon RSS / idle session @%d", r.prefix, n), Figure: Measure{Value: per, Unit: unitBytes},
			Target: "< 200 KiB", Status: passIf(per < rssPerSessionTarget),
		},
		{
			Name: fmt.Sprintf("%sdaemon RSS @%d", r.prefix, n), Figure: bytesM(at.rss),
			Baseline: labelled("@0", bytesM(base.rss)),
			Ratio:    ratio(float64(at.rss), float64(base.rss)), RatioOf: fmt.Sprintf("@%d/@0", n),
		},
		{
			Name: fmt.Sprintf("%s%s RSS / session @%d (not the daemon's)", r.prefix, kids, n), Figure: Measure{Value: float64(at.kidsRSS) / float64(max(1, n)), Unit: unitBytes},
		},
		{
			Name: fmt.Sprintf("%s%s PSS / session @%d (not the daemon's)", r.prefix, kids, n), Figure: Measure{Value: float64(at.kidsPSS) / float64(max(1, n)), Unit: unitBytes},
		},
	}
}

// creations accumulates timed session creates of one kind.
type creations struct {
	n    int
	took time.Duration // wall clock over the blocks
	lat  []time.Duration
}

func (c *creations) rate() float64 {
	if c.took <= 0 {
		return 0
	}
	return float64(c.n) / c.took.Seconds()
}

// child is a `harnessd serve` process of its own.
type child struct {
	cmd         *exec.Cmd
	pid         int
	cl          *api.Client
	socket      string
	log         string
	dataDir     string
	maxSessions int
	exited      chan struct{} // closed when the process has been waited for
	waitErr     error
}

// childConfig is what a child daemon's harness.toml says.
type childConfig struct {
	driver   string // [sandbox] driver, passed through as it is
	poolSize int    // [sandbox] pool_size; 0 turns the warm pool off
	batch    bool   // [store] durability = "batch" rather than "strict"
	sessions int    // how many sessions it will hold at most (max_sessions is at least twice that)
	goPacing bool   // [daemon] heap_floor_mb = 0: Go's own GC pacing, no heap floor
}

// startChild writes a harness.toml for a daemon over dir, starts it, and
// waits until it answers /healthz.
func startChild(ctx context.Context, dir string, cc childConfig) (*child, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("daemon: find this binary: %w", err)
	}
	c := &child{socket: filepath.Join(dir, "h.sock"), log: filepath.Join(dir, "harnessd.log"),
		dataDir: filepath.Join(dir, "data"), maxSessions: max(2000, 2*cc.sessions), exited: make(chan struct{})}
	conf := filepath.Join(dir, "harness.toml")
	durability := config.DurabilityStrict
	if cc.batch {
		durability = config.DurabilityBatch
	}
	floor := ""
	if cc.goPacing {
		floor = "heap_floor_mb = 0\n"
	}
	toml := fmt.Sprintf("[daemon]\nmax_sessions = %d\nshutdown_grace = \"1s\"\n%s\n[sandbox]\ndriver = %q\npool_size = %d\n\n[store]\ndurability = %q\n",
		c.maxSessions, floor, cc.driver, cc.poolSize, durability)
	if err := os.WriteFile(conf, []byte(toml), 0o644); err != nil {
		return nil, fmt.Errorf("daemon: %w", err)
	}
	logf, err := os.Create(c.log)
	if err != nil {
		return nil, fmt.Errorf("daemon: %w", err)
	}
	defer logf.Close()
	c.cmd = exec.Command(exe, "serve", "--config", conf, "--socket", c.socket, "--data", c.dataDir)
	c.cmd.Env = append(childEnv(), envServe+"=1")
	c.cmd.Stdout, c.cmd.Stderr = logf, logf
	if err := c.cmd.Start(); err != nil {
		return nil, fmt.Errorf("daemon: start %s: %w", exe, err)
	}
	c.pid = c.cmd.Process.Pid
	go func() { c.waitErr = c.cmd.Wait(); close(c.exited) }()
	c.cl = api.NewClient(c.socket)
	deadline := time.Now().Add(20 * time.Second)
	for {
		hctx, cancel := context.WithTimeout(ctx, time.Second)
		_, err := c.cl.Health(hctx)
		cancel()
		if err == nil {
			return c, nil
		}
		select {
		case <-c.exited:
			return nil, fmt.Errorf("daemon exited before answering: %v; log:\n%s", c.waitErr, tail(c.log))
		case <-ctx.Done():
			c.kill()
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			c.kill()
			return nil, fmt.Errorf("daemon not answering in 20s: %v; log:\n%s", err, tail(c.log))
		}
	}
}

// childEnv is this process's environment without HARNESSD_ variables, so
// a user's HARNESSD_DURABILITY or the like cannot change the daemon's
// configuration behind the report's back.
func childEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "HARNESSD_") {
			env = append(env, kv)
		}
	}
	return env
}

// stop ends the daemon with SIGTERM, as systemd would, and notes (after
// prefix) how long it took to record every session as interrupted;
// SIGKILL after 60 s.
func (c *child) stop(s *Section, prefix string) {
	c.cl.Close()
	t0 := time.Now()
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.exited:
		s.Notes = append(s.Notes, fmt.Sprintf("%sSIGTERM to exit with every session live: %s.", prefix, time.Since(t0).Round(time.Millisecond)))
	case <-time.After(60 * time.Second):
		c.kill()
		s.Notes = append(s.Notes, prefix+"the daemon had not exited 60 s after SIGTERM and was killed.")
	}
}

func (c *child) kill() {
	_ = c.cmd.Process.Kill()
	<-c.exited
}

// create makes n sessions with clients concurrent clients (each its own
// api.Client, so its own connections), adding to into.
func (c *child) create(ctx context.Context, n, clients int, into *creations) ([]string, error) {
	var (
		mu   sync.Mutex
		ids  []string
		lat  []time.Duration
		errs []error
		left atomic.Int64
		wg   sync.WaitGroup
	)
	left.Store(int64(n))
	t0 := time.Now()
	for range clients {
		cl := api.NewClient(c.socket)
		wg.Go(func() {
			defer cl.Close()
			for left.Add(-1) >= 0 {
				t := time.Now()
				info, err := cl.CreateSession(ctx, daemon.CreateRequest{})
				d := time.Since(t)
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
				} else {
					ids = append(ids, info.ID)
					lat = append(lat, d)
				}
				mu.Unlock()
				if err != nil {
					left.Store(0)
				}
			}
		})
	}
	wg.Wait()
	into.took += time.Since(t0)
	into.n += len(ids)
	into.lat = append(into.lat, lat...)
	return ids, errors.Join(errs...)
}

// runTrue runs `true` once in each session, concurrentClients at a time.
func (c *child) runTrue(ctx context.Context, ids []string) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, concurrentClients)
	for w := range concurrentClients {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(ids) || errs[w] != nil {
					return
				}
				if err := actTrue(ctx, c.cl, ids[i]); err != nil {
					errs[w] = fmt.Errorf("true in %s: %w", ids[i], err)
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// sample is what the daemon holds at one moment.
type sample struct {
	rss     int64 // the daemon's VmRSS
	fds     int   // its open file descriptors
	kids    int   // its descendants (the shells)
	kidsRSS int64 // their VmRSS, summed
	kidsPSS int64 // their Pss (shared pages split), summed
	metrics map[string]float64
}

func (c *child) sample(ctx context.Context) (sample, error) {
	var s sample
	var err error
	if s.rss, err = vmRSS(c.pid); err != nil {
		return s, err
	}
	if ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", c.pid)); err == nil {
		s.fds = len(ents)
	}
	for _, pid := range descendants(c.pid) {
		rss, err := vmRSS(pid)
		if err != nil {
			continue // gone meanwhile
		}
		s.kids++
		s.kidsRSS += rss
		s.kidsPSS += pss(pid)
	}
	s.metrics, _ = c.metrics(ctx) // for the notes only
	return s, nil
}

// note explains a sample at n sessions against the base: where the
// daemon's memory went, by the Go runtime's own account.
func (at sample) note(base sample, n int) string {
	per := func(name string) string {
		a, ok1 := at.metrics[name]
		b, ok2 := base.metrics[name]
		if !ok1 || !ok2 {
			return "?"
		}
		return formatBytes((a - b) / float64(n))
	}
	gor := "?"
	if a, ok := at.metrics["go_goroutines"]; ok {
		gor = fmt.Sprintf("%.1f", (a-base.metrics["go_goroutines"])/float64(n))
	}
	return fmt.Sprintf("@%d: per session the daemon grew by %s RSS = Go heap in use %s + goroutine stacks %s (%s goroutines) + the rest (runtime, fragmentation, unreturned pages); %.1f fds (%d open); %d descendant processes with %s RSS, %s PSS in all.",
		n, formatBytes(float64(at.rss-base.rss)/float64(n)), per("go_memstats_heap_inuse_bytes"), per("go_memstats_stack_inuse_bytes"), gor,
		float64(at.fds-base.fds)/float64(n), at.fds, at.kids, formatBytes(float64(at.kidsRSS)), formatBytes(float64(at.kidsPSS)))
}

// metrics scrapes the daemon's /metrics for the gauges without labels.
func (c *child) metrics(ctx context.Context) (map[string]float64, error) {
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", c.socket)
	}}}
	defer hc.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://harnessd/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	m := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), " ")
		if !ok || strings.HasPrefix(name, "#") || strings.Contains(name, "{") {
			continue
		}
		if v, err := strconv.ParseFloat(val, 64); err == nil {
			m[name] = v
		}
	}
	return m, sc.Err()
}

// vmRSS is a process's resident set, from /proc/PID/status.
func vmRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	return statusKiB(b, "VmRSS:")
}

// pss is a process's proportional set size (shared pages divided among
// their sharers), from /proc/PID/smaps_rollup; 0 if unreadable.
func pss(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return 0
	}
	n, _ := statusKiB(b, "Pss:")
	return n
}

// statusKiB finds "key   N kB" in a /proc file and returns N KiB in bytes.
func statusKiB(b []byte, key string) (int64, error) {
	for line := range bytes.Lines(b) {
		rest, ok := bytes.CutPrefix(line, []byte(key))
		if !ok {
			continue
		}
		f := bytes.Fields(rest)
		if len(f) == 0 {
			break
		}
		n, err := strconv.ParseInt(string(f[0]), 10, 64)
		if err != nil {
			break
		}
		return n << 10, nil
	}
	return 0, fmt.Errorf("no %s line", key)
}

// descendants are the processes under pid, from every /proc/N/stat's ppid.
func descendants(pid int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid …; comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := bytes.Fields(b[i+1:])
		if len(f) < 2 {
			continue
		}
		pp, err := strconv.Atoi(string(f[1]))
		if err != nil {
			continue
		}
		children[pp] = append(children[pp], p)
	}
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, k := range children[p] {
			out = append(out, k)
			queue = append(queue, k)
		}
	}
	return out
}

// openFileLimit is the soft "Max open files" limit of a process.
func openFileLimit(pid int) (int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", pid))
	if err != nil {
		return 0, err
	}
	for line := range bytes.Lines(b) {
		if rest, ok := bytes.CutPrefix(line, []byte("Max open files")); ok {
			if f := bytes.Fields(rest); len(f) >= 1 {
				return strconv.Atoi(string(f[0]))
			}
		}
	}
	return 0, errors.New("no Max open files line in /proc/PID/limits")
}

// tail is the last few lines of a log file, for an error message.
func tail(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	b, _ := io.ReadAll(io.LimitReader(f, 1<<20))
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-10):], "\n")
}
