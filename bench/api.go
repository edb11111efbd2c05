package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/harnessd/harnessd/cmd/harnessd/serve"
	"github.com/harnessd/harnessd/core/api"
	"github.com/harnessd/harnessd/core/config"
	"github.com/harnessd/harnessd/core/daemon"
	"github.com/harnessd/harnessd/core/event"
	"github.com/harnessd/harnessd/core/terminal"
)

// Targets of the api section, from the daemon issue.
const (
	strictFloorTarget = 1.3                    // strict p50 / (2 bare commits + terminal)
	batchP50Target    = 500 * time.Microsecond // batch p50
	tailTarget        = 3.0                    // p99 / p50, each mode
)

// idleGap is how long the api section lets a daemon idle before each of
// its after-idle round trips.
const idleGap = 50 * time.Millisecond

// apiRounds is how many slices the api section's iterations are cut into:
// the four contenders take turns slice by slice, so a burst of load from
// elsewhere on the machine lands on all of them rather than on one.
const apiRounds = 10

// api is the daemon's round trip: `true` through the API (client ->
// socket -> session -> PTY -> store -> back) in strict and batch
// durability, beside the in-process terminal and a bare bbolt commit on
// the same disk, and `docker exec` where a Docker engine answers.
func (b *bench) api(ctx context.Context, s *Section) error {
	dir, err := os.MkdirTemp(b.tmp, "api-")
	if err != nil {
		return err
	}
	strict, err := startInProcess(ctx, filepath.Join(dir, "strict"), config.DurabilityStrict, b.opts.heapFloor)
	if err != nil {
		return err
	}
	defer strict.stop()
	batch, err := startInProcess(ctx, filepath.Join(dir, "batch"), config.DurabilityBatch, b.opts.heapFloor)
	if err != nil {
		return err
	}
	defer batch.stop()
	term, err := terminal.New(ctx, terminal.Options{Dir: dir})
	if err != nil {
		return fmt.Errorf("terminal: %w", err)
	}
	defer term.Close()
	commit, err := openBoltProbe(filepath.Join(dir, "bare.db"))
	if err != nil {
		return err
	}
	defer commit.close()

	probes := []probe{
		{name: "api strict", run: strict.roundTrip},
		{name: "api batch", run: batch.roundTrip},
		{name: "terminal", run: func(ctx context.Context) error { return terminalTrue(ctx, term) }},
		{name: "bbolt commit", run: commit.commit},
		{name: "message strict", run: strict.message},
		{name: "message batch", run: batch.message},
		{name: "healthz batch", run: batch.health},
	}
	per, err := b.takeTurns(ctx, probes)
	if err != nil {
		return err
	}
	st, ba, tm, bc := summarize(probes[0].lat), summarize(probes[1].lat), summarize(probes[2].lat), summarize(probes[3].lat)
	ms, mb, hz := summarize(probes[4].lat), summarize(probes[5].lat), summarize(probes[6].lat)
	floor := 2*bc.p50 + tm.p50
	commitPart := mb.p50 - hz.p50 // one commit without fsync, and the pipeline around it
	rest := ba.p50 - tm.p50 - hz.p50 - 2*commitPart

	s.Notes = append(s.Notes,
		fmt.Sprintf("api: `harnessd serve` in this process (serve.Run, sandbox driver none) on a unix socket, store and socket in %s; api.Client.Act(cmd_run \"true\") on one session, wall clock around Act.", dir),
		fmt.Sprintf("all take turns in %d slices of %d after %d untimed each: api strict, api batch (store.Options.SyncEvery %s), terminal.Run(\"true\") in-process, one bbolt Update putting one key (default fsync) in the same directory, a message action through each daemon (API and one store commit, no shell), which splits the round trip into its API-and-store and its terminal parts, and GET /healthz on the batch daemon.", apiRounds, per, warmUp, serve.BatchSyncEvery),
		"strict floor: the cmd_run commit and the cmd_output commit, each fsynced, plus the terminal's own round trip.",
		heapFloorNote(b.opts.heapFloor),
		fmt.Sprintf("strict - batch p50 = %s (what the two syncs cost through the store; 2x bare commit = %s); batch - terminal p50 = %s (API, session, store without sync).",
			formatSeconds((st.p50-ba.p50).Seconds()), formatSeconds((2*bc.p50).Seconds()), formatSeconds((ba.p50-tm.p50).Seconds())),
		fmt.Sprintf("what the batch round trip (p50 %s) is made of, from p50s of this run: the terminal %s; an HTTP request with nothing behind it (GET /healthz through the same client) %s; two commits without fsync with the pipeline around each (a message action minus /healthz: %s each) %s; the rest %s, split below.",
			formatSeconds(ba.p50.Seconds()), formatSeconds(tm.p50.Seconds()), formatSeconds(hz.p50.Seconds()),
			formatSeconds(commitPart.Seconds()), formatSeconds((2*commitPart).Seconds()), formatSeconds(rest.Seconds())),
	)
	dk, dnote := b.dockerExec(ctx)
	s.Notes = append(s.Notes, dnote)

	steps := []wakeStep{{0, 400}, {300 * time.Microsecond, 400}, {3 * time.Millisecond, 200}, {30 * time.Millisecond, 60}}
	if b.opts.quick {
		steps = []wakeStep{{0, 40}, {300 * time.Microsecond, 40}, {3 * time.Millisecond, 20}, {30 * time.Millisecond, 10}}
	}
	wk, err := wakeUps(ctx, steps)
	if err != nil {
		return err
	}
	// An agent's actions come seconds apart, after its model has
	// thought: by then every thread has slept, as it has after 50 ms.
	idleN := 100
	if b.opts.quick {
		idleN = 10
	}
	// Its floor is taken the same way, taking turns with it: after the
	// same gap, a bare commit, the in-process terminal's `true` and a
	// second commit, back to back, as the round trip does them.
	idleProbes := []probe{
		{name: "api strict after idle", run: strict.roundTrip},
		{name: "floor after idle", run: func(ctx context.Context) error {
			if err := commit.commit(ctx); err != nil {
				return err
			}
			if err := terminalTrue(ctx, term); err != nil {
				return err
			}
			return commit.commit(ctx)
		}},
	}
	for range idleN {
		for i := range idleProbes {
			p := &idleProbes[i]
			if err := sleep(ctx, idleGap); err != nil {
				return err
			}
			t0 := time.Now()
			if err := p.run(ctx); err != nil {
				return fmt.Errorf("%s: %w", p.name, err)
			}
			p.lat = append(p.lat, time.Since(t0))
		}
	}
	idl, idleFloor := summarize(idleProbes[0].lat), summarize(idleProbes[1].lat).p50

	s.Notes = append(s.Notes,
		fmt.Sprintf("after idle: %d more strict round trips, each after %s with nothing to do, as an agent's come after its model's turn, taking turns with their floor after the same gap (a bare commit, the in-process terminal's `true` and a second commit, timed together); everything is dearer after a sleep here, the floor too, and an idle daemon's request costs more CPU, not only more waiting (see the sandbox section's pool-hit notes).",
			idleN, formatSeconds(idleGap.Seconds())),
		"wake-ups: one byte to a child process (this binary re-executed) and back over a unix socketpair, both ends Go waiting in the netpoller as the daemon and its clients do; back to back, then each after this process slept 0.3 ms (about a batch action's handler), 3 ms and 30 ms (about the sandbox section's settle before a create), meanwhile the child waits in its read and both ends' threads go idle. An API call makes the hop twice, client to daemon and back.",
		fmt.Sprintf("the rest, timed inside the daemon in two instrumented runs (2026-12-07, load 0.5-1; time.Now at each stage of pipeline.Do and around the API handler, which this run does not do): in the first, the action hooks 13 µs and the observation hooks 30 µs (the shipped policies), the action's commit 55 µs and the observation's 60 µs, the command 223 µs where the in-process terminal took 159 µs, so about 64 µs for its capture (trimmer, full-output spill, live hub); the stages' p50s add up to 382 µs, where the client saw 563 µs. In the second, the API handler took 364 µs in all, where the client saw 547 µs. So about 165-185 µs lies between the client and the handler, where a back-to-back /healthz takes 44-46 µs in all. Waking is part of it: a call whose handler runs ~350 µs lets the client's and the daemon's idle threads sleep, and the wake-up rows give what one round trip between two idle processes costs (this run, p50: back to back %s, after 0.3 ms asleep %s); a request to the daemon wakes more of its threads than the echo does (perf stat of a separate daemon serving /healthz, 2026-12-07: 7.5-8.5 context switches and 0.33-0.35 ms of CPU a request; 4.7 and 0.25 ms with GOMAXPROCS=1, which moved its latency by less than its spread and is not adopted).",
			formatSeconds(wk[0].p50.Seconds()), formatSeconds(wk[1].p50.Seconds())),
	)

	s.Rows = append(s.Rows,
		Row{
			Name: "API strict p50", Figure: dur(st.p50),
			Baseline: labelled("floor: 2x commit + terminal", dur(floor)),
			Ratio:    ratio(st.p50.Seconds(), floor.Seconds()), RatioOf: "strict/floor",
			Target: fmt.Sprintf("<= %.1fx floor", strictFloorTarget), Status: passIf(ratio(st.p50.Seconds(), floor.Seconds()) <= strictFloorTarget),
		},
		Row{
			Name: "API strict p99", Figure: dur(st.p99),
			Baseline: labelled("strict p50", dur(st.p50)),
			Ratio:    ratio(st.p99.Seconds(), st.p50.Seconds()), RatioOf: "p99/p50",
			Target: fmt.Sprintf("< %.0fx p50", tailTarget), Status: passIf(ratio(st.p99.Seconds(), st.p50.Seconds()) < tailTarget),
		},
		Row{
			// Strict's tail is mostly its four fdatasyncs': beside the
			// floor's own tail, what is the daemon's shows.
			Name: "API strict p99 vs its floor's p99", Figure: dur(st.p99),
			Baseline: labelled("2x commit p99 + terminal p99", dur(2*bc.p99+tm.p99)),
			Ratio:    ratio(st.p99.Seconds(), (2*bc.p99 + tm.p99).Seconds()), RatioOf: "strict/floor p99",
		},
		Row{
			Name: "API batch p50", Figure: dur(ba.p50),
			Baseline: labelled("terminal", dur(tm.p50)),
			Ratio:    ratio(ba.p50.Seconds(), tm.p50.Seconds()), RatioOf: "batch/terminal",
			Target: "< " + formatSeconds(batchP50Target.Seconds()), Status: passIf(ba.p50 < batchP50Target),
		},
		Row{
			Name: "API batch p99", Figure: dur(ba.p99),
			Baseline: labelled("batch p50", dur(ba.p50)),
			Ratio:    ratio(ba.p99.Seconds(), ba.p50.Seconds()), RatioOf: "p99/p50",
			Target: fmt.Sprintf("< %.0fx p50", tailTarget), Status: passIf(ratio(ba.p99.Seconds(), ba.p50.Seconds()) < tailTarget),
		},
		Row{Name: "in-process terminal p50", Figure: dur(tm.p50)},
		Row{
			Name: "in-process terminal p99", Figure: dur(tm.p99),
			Baseline: labelled("terminal p50", dur(tm.p50)),
			Ratio:    ratio(tm.p99.Seconds(), tm.p50.Seconds()), RatioOf: "p99/p50",
		},
		Row{Name: "bare bbolt commit p50", Figure: dur(bc.p50)},
		Row{
			Name: "bare bbolt commit p99", Figure: dur(bc.p99),
			Baseline: labelled("commit p50", dur(bc.p50)),
			Ratio:    ratio(bc.p99.Seconds(), bc.p50.Seconds()), RatioOf: "p99/p50",
		},
		Row{Name: "strict floor (2x commit + terminal)", Figure: dur(floor)},
		Row{
			Name: "API message p50, strict (1 commit, no shell)", Figure: dur(ms.p50),
			Baseline: labelled("bare commit", dur(bc.p50)),
			Ratio:    ratio(ms.p50.Seconds(), bc.p50.Seconds()), RatioOf: "message/commit",
		},
		Row{
			Name: "API message p50, batch (1 commit, no shell)", Figure: dur(mb.p50),
			Baseline: labelled("batch round trip", dur(ba.p50)),
			Ratio:    ratio(mb.p50.Seconds(), ba.p50.Seconds()), RatioOf: "message/true",
		},
	)
	s.Rows = append(s.Rows,
		Row{
			Name: "API strict p50, each after " + formatSeconds(idleGap.Seconds()) + " idle", Figure: dur(idl.p50),
			Baseline: labelled("back to back", dur(st.p50)),
			Ratio:    ratio(idl.p50.Seconds(), st.p50.Seconds()), RatioOf: "idle/back to back",
		},
		Row{
			Name: "the same, vs its floor after the same idle", Figure: dur(idl.p50),
			Baseline: labelled("commit, terminal, commit after idle", dur(idleFloor)),
			Ratio:    ratio(idl.p50.Seconds(), idleFloor.Seconds()), RatioOf: "strict/floor",
		},
	)
	s.Rows = append(s.Rows, Row{Name: "wake-up: 1-byte round trip to a process, back to back", Figure: dur(wk[0].p50)})
	for i, st := range steps[1:] {
		w := wk[i+1]
		s.Rows = append(s.Rows, Row{
			Name: "wake-up: the same after " + formatSeconds(st.asleep.Seconds()) + " asleep", Figure: dur(w.p50),
			Baseline: labelled("back to back", dur(wk[0].p50)),
			Ratio:    ratio(w.p50.Seconds(), wk[0].p50.Seconds()), RatioOf: "asleep/back to back",
		})
	}
	if dk != nil {
		s.Rows = append(s.Rows,
			Row{
				Name: "vs docker exec true p50", Figure: dur(st.p50),
				Baseline: labelled("docker exec", dur(dk.p50)),
				Ratio:    ratio(dk.p50.Seconds(), st.p50.Seconds()), RatioOf: "docker/strict",
			},
			Row{
				Name: "vs docker exec true p99", Figure: dur(st.p99),
				Baseline: labelled("docker exec", dur(dk.p99)),
				Ratio:    ratio(dk.p99.Seconds(), st.p99.Seconds()), RatioOf: "docker/strict",
			},
		)
	}
	return nil
}

// heapFloorNote says what garbage collection the api section's daemons
// ran under.
func heapFloorNote(floor int) string {
	if floor < 0 {
		floor = config.Default().Daemon.HeapFloorMB
	}
	if floor == 0 {
		return "garbage collection: Go's own pacing (-heap-floor-mb 0): a collection each time the heap doubles over what is live, here every ~50 actions."
	}
	return fmt.Sprintf("garbage collection: serve.Run sets a heap floor of %d MiB ([daemon] heap_floor_mb; core/heapfloor), process-wide, so here for the bench's whole process as for a daemon's: with a few MiB live the collector runs every few hundred actions rather than every ~50, which was most of each p99 (-heap-floor-mb 0 shows Go's own pacing).", floor)
}

// inProcess is one `harnessd serve` run by serve.Run in this process.
type inProcess struct {
	cl     *api.Client
	id     string // the one session the round trips use
	cancel context.CancelFunc
	done   chan error
}

// probe is one thing a section times, taking turns with others.
type probe struct {
	name string
	run  func(context.Context) error
	lat  []time.Duration
}

// takeTurns runs each probe warmUp times untimed, then b.opts.n times
// timed, the probes taking turns in apiRounds slices so that load lands
// on all of them alike. It returns the slice length.
func (b *bench) takeTurns(ctx context.Context, probes []probe) (per int, err error) {
	for i := range probes {
		p := &probes[i]
		for range warmUp {
			if err := p.run(ctx); err != nil {
				return 0, fmt.Errorf("%s: warm-up: %w", p.name, err)
			}
		}
		p.lat = make([]time.Duration, 0, b.opts.n)
	}
	per = max(1, b.opts.n/apiRounds)
	for done := 0; done < b.opts.n; done += per {
		for i := range probes {
			p := &probes[i]
			for range min(per, b.opts.n-done) {
				t0 := time.Now()
				if err := p.run(ctx); err != nil {
					return 0, fmt.Errorf("%s: run %d: %w", p.name, len(p.lat), err)
				}
				p.lat = append(p.lat, time.Since(t0))
			}
		}
	}
	return per, nil
}

// startInProcess serves a daemon over dir (store, workspaces and socket)
// with the given durability and no sandbox, and creates one session.
// heapFloor is its [daemon] heap_floor_mb, or -1 for the default.
func startInProcess(ctx context.Context, dir, durability string, heapFloor int) (*inProcess, error) {
	p, err := startDaemon(ctx, dir, func(c *config.Config) {
		c.Sandbox.Driver = config.DriverNone
		c.Store.Durability = durability
		if heapFloor >= 0 {
			c.Daemon.HeapFloorMB = heapFloor
		}
	})
	if err != nil {
		return nil, fmt.Errorf("daemon (%s): %w", durability, err)
	}
	return p, nil
}

// startDaemon serves a daemon in this process over dir (store,
// workspaces and socket), with the defaults as set changes them, and
// creates one session.
func startDaemon(ctx context.Context, dir string, set func(*config.Config)) (*inProcess, error) {
	cfg := config.Default()
	cfg.Daemon.DataDir = dir
	cfg.Daemon.Socket = filepath.Join(dir, "h.sock")
	cfg.Daemon.ShutdownGrace = config.Duration{Duration: 500 * time.Millisecond}
	set(&cfg)
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	dctx, cancel := context.WithCancel(ctx)
	p := &inProcess{cancel: cancel, done: make(chan error, 1)}
	ready := make(chan string, 1)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	go func() {
		p.done <- serve.Run(dctx, serve.Options{Config: cfg, Logger: log, Ready: func(s string) { ready <- s }})
	}()
	select {
	case socket := <-ready:
		p.cl = api.NewClient(socket)
	case err := <-p.done:
		cancel()
		return nil, err
	case <-time.After(20 * time.Second):
		cancel()
		return nil, errors.New("not ready in 20s")
	}
	info, err := p.cl.CreateSession(ctx, daemon.CreateRequest{ID: "bench"})
	if err != nil {
		p.stop()
		return nil, fmt.Errorf("create session: %w", err)
	}
	p.id = info.ID
	return p, nil
}

// roundTrip runs `true` in the session and checks the observation.
func (p *inProcess) roundTrip(ctx context.Context) error {
	return actTrue(ctx, p.cl, p.id)
}

// message records a message action in the session: the API and one
// store commit, with no shell involved.
func (p *inProcess) message(ctx context.Context) error {
	obs, err := p.cl.Act(ctx, p.id, event.SourceAgent, event.Message{Text: "bench"})
	if err != nil {
		return err
	}
	if obs.Kind() != event.KindMessage {
		return fmt.Errorf("message: answered with %s", obs.Kind())
	}
	return nil
}

// health is GET /healthz: the API's own round trip with next to nothing
// behind it (a store read).
func (p *inProcess) health(ctx context.Context) error {
	_, err := p.cl.Health(ctx)
	return err
}

// stop shuts the daemon down as SIGTERM does and waits for it.
func (p *inProcess) stop() {
	if p.cl != nil {
		p.cl.Close()
	}
	p.cancel()
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
	}
}

// actTrue runs `true` in session id through cl and checks its answer.
func actTrue(ctx context.Context, cl *api.Client, id string) error {
	obs, err := cl.Act(ctx, id, event.SourceUser, event.CmdRun{Command: "true"})
	if err != nil {
		return err
	}
	out, ok := obs.Payload.(event.CmdOutput)
	if !ok {
		return fmt.Errorf("true: answered with %s", obs.Kind())
	}
	if out.ExitCode != 0 || out.Output != "" {
		return fmt.Errorf("true: exit %d, output %q, note %q", out.ExitCode, out.Output, out.Note)
	}
	return nil
}

func terminalTrue(ctx context.Context, term *terminal.Terminal) error {
	res, err := term.Run(ctx, event.CmdRun{Command: "true"}, io.Discard)
	if err != nil {
		return err
	}
	if res.ExitCode != 0 || res.Running || res.Rebuilt {
		return fmt.Errorf("exit %d, running %v, rebuilt %v: %s", res.ExitCode, res.Running, res.Rebuilt, res.Note)
	}
	return nil
}

// boltProbe is a bare bbolt file: the cost of one durable commit on this
// disk, with nothing of harnessd's around it.
type boltProbe struct {
	db  *bolt.DB
	key uint64
	val []byte
}

func openBoltProbe(path string) (*boltProbe, error) {
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		return nil, fmt.Errorf("bare bbolt: %w", err)
	}
	return &boltProbe{db: db, val: make([]byte, 64)}, nil
}

// commit is one Update putting one new key, fsynced as bbolt does by
// default.
func (p *boltProbe) commit(context.Context) error {
	p.key++
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], p.key)
	return p.db.Update(func(tx *bolt.Tx) error {
		bk, err := tx.CreateBucketIfNotExists([]byte("b"))
		if err != nil {
			return err
		}
		return bk.Put(k[:], p.val)
	})
}

func (p *boltProbe) close() { p.db.Close() }

// dockerImage is the image docker exec is measured in, if it is already
// present: the benchmark never pulls.
const dockerImage = "busybox:latest"

// dockerExec measures `docker exec <container> true` when a Docker engine
// answers and the image is present; otherwise it returns nil and says why
// it was skipped.
func (b *bench) dockerExec(ctx context.Context) (*latencies, string) {
	bin, skip := dockerReady(ctx)
	if skip != "" {
		return nil, "docker exec: skipped: " + skip
	}
	out, err := exec.CommandContext(ctx, bin, "run", "-d", "--rm", "--network", "none", dockerImage, "sleep", "3600").Output()
	if err != nil {
		return nil, "docker exec: skipped: docker run: " + firstLine(out, err)
	}
	id := strings.TrimSpace(string(out))
	defer exec.Command(bin, "rm", "-f", id).Run()
	n := max(5, b.opts.n/20)
	lat := make([]time.Duration, 0, n)
	for i := range 2 + n {
		t0 := time.Now()
		if out, err := exec.CommandContext(ctx, bin, "exec", id, "true").CombinedOutput(); err != nil {
			return nil, "docker exec: failed: " + firstLine(out, cause(ctx, err))
		}
		if i >= 2 {
			lat = append(lat, time.Since(t0))
		}
	}
	d := summarize(lat)
	return &d, fmt.Sprintf("docker exec: `docker exec %s true` in a running %s container (--network none), %d timed after 2 untimed.",
		id[:min(12, len(id))], dockerImage, d.n)
}

// dockerReady finds the docker client and checks that an engine answers
// and dockerImage is present; when not, it returns why (a sentence).
func dockerReady(ctx context.Context) (bin, skip string) {
	bin, err := exec.LookPath("docker")
	if err != nil {
		return "", "docker not installed."
	}
	if out, err := exec.CommandContext(ctx, bin, "version", "--format", "{{.Server.Version}}").CombinedOutput(); err != nil {
		return "", "no Docker engine answers (`docker version`: " + firstLine(out, err) + ")."
	}
	if out, err := exec.CommandContext(ctx, bin, "image", "inspect", dockerImage).CombinedOutput(); err != nil {
		return "", "image " + dockerImage + " is not present, and the benchmark never pulls (" + firstLine(out, err) + ")."
	}
	return bin, ""
}

// firstLine is the first line of a failed command's output, or its error.
func firstLine(out []byte, err error) string {
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	if line == "" && err != nil {
		return err.Error()
	}
	if line == "" {
		return "no output"
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return line + ", " + ee.Error()
	}
	return line
}
