package main

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/harnessd/harnessd/core/api"
	"github.com/harnessd/harnessd/core/daemon"
	"github.com/harnessd/harnessd/core/event"
	"github.com/harnessd/harnessd/store"
)

// The load of one kill cycle.
const (
	killSessions       = 4                // sessions made at the start of a cycle, each with a follower
	killClients        = 2                // clients acting in each of them at once
	killShellGrace     = 5 * time.Second  // how long a dead daemon's shells may take to go
	killLoadWaitBound  = 20 * time.Second // how long the load's goroutines may take to notice the kill
	recoveredNoteMatch = "harnessd stopped (crashed or was killed) while this action ran"
)

// loadCommand is a command the load runs, with what it must answer.
type loadCommand struct {
	cmd    string
	exit   int
	output string // "": not checked
}

var loadCommands = []loadCommand{
	{"true", 0, ""},
	{"false", 1, ""},
	{"echo $((6*7))", 0, "42\n"},
	{"printf 'a\\nb\\n'", 0, "a\nb\n"},
	{"seq 1 3000", 0, ""},                                 // trimmed; the full output goes to the store
	{"head -c 200000 /dev/urandom | base64 -w 76", 0, ""}, // 270 kB through the trimmer
	{"sleep 0.3", 0, ""},                                  // likely in flight at the kill
	{"cd /tmp && pwd", 0, "/tmp\n"},
}

// evKey names one event.
type evKey struct {
	session string
	seq     uint64
}

// ledger is what clients were told had been recorded, for one store.
type ledger struct {
	mu       sync.Mutex
	events   map[evKey][32]byte // acknowledged events: the hash of their JSON
	actions  map[evKey]string   // acknowledged cmd_runs (an observation answered them): their command
	sessions map[string]bool    // acknowledged creates
	mismatch int                // one seq acknowledged twice with different contents
}

func newLedger() *ledger {
	return &ledger{events: map[evKey][32]byte{}, actions: map[evKey]string{}, sessions: map[string]bool{}}
}

func fingerprint(ev event.Event) [32]byte {
	b, _ := ev.MarshalJSON()
	return sha256.Sum256(b)
}

func (l *ledger) ackEvent(ev event.Event) {
	fp := fingerprint(ev)
	k := evKey{ev.Session, ev.Seq}
	l.mu.Lock()
	defer l.mu.Unlock()
	if old, ok := l.events[k]; ok && old != fp {
		l.mismatch++
	}
	l.events[k] = fp
}

func (l *ledger) ackAction(session string, seq uint64, command string) {
	l.mu.Lock()
	l.actions[evKey{session, seq}] = command
	l.mu.Unlock()
}

func (l *ledger) ackSession(id string) {
	l.mu.Lock()
	l.sessions[id] = true
	l.mu.Unlock()
}

// acked counts the distinct events acknowledged.
func (l *ledger) acked() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(l.events)
	for k := range l.actions {
		if _, ok := l.events[k]; !ok {
			n++
		}
	}
	return n
}

// killStats are one durability mode's figures.
type killStats struct {
	mode            string
	cycles          int
	execs           int // Act calls answered with their cmd_output
	creates         int // sessions created (acknowledged)
	lost            int // acknowledged events missing or changed after the restart
	gaps            int // seqs missing or repeated in a session's log
	unanswered      int // actions without an answer after recovery
	answeredTwice   int // actions with more than one answer
	notInterrupted  int // sessions not interrupted (or not ending in sandbox_stopped) after recovery
	recovered       int // running actions the restart answered
	storeFailed     int // store files that would not open or verify
	followerGaps    int // a follower saw a gap or duplicate
	wrongAnswers    int // a command's answer was not what it prints
	unexpected      int // client errors before the kill
	shellsLeft      int // shells, what they ran, sandbox inits still running killShellGrace after their daemon died
	shellsSeen      int // shells (and their children) found by the token just before the kills
	modeLogged      bool
	cleanStop       bool
	restarts        []time.Duration
	killDelays      []time.Duration
	firstErrors     []string
	mismatch        int
	ackedEvents     int
	sessionsChecked int
}

func (s *killStats) fail(format string, args ...any) {
	if len(s.firstErrors) < 8 {
		s.firstErrors = append(s.firstErrors, fmt.Sprintf(s.mode+": "+format, args...))
	}
}

// kill is the kill part: cycles of load, SIGKILL, restart, accounting.
func (h *harness) kill(ctx context.Context, p *Part) error {
	strict := (h.opts.cycles + 1) / 2
	modes := []struct {
		name   string
		cycles int
		env    []string
	}{
		{"strict", strict, nil},
		{"batch", h.opts.cycles - strict, []string{"HARNESSD_DURABILITY=batch"}},
	}
	var all []*killStats
	for _, m := range modes {
		if m.cycles == 0 {
			continue
		}
		st := &killStats{mode: m.name}
		all = append(all, st)
		if err := h.killMode(ctx, m.name, m.cycles, m.env, st); err != nil {
			killFigures(p, all)
			return fmt.Errorf("%s: %w", m.name, err)
		}
	}
	killFigures(p, all)
	p.note("each cycle: %d sessions, each with %d clients running cmd_run actions through core/api's client and one follower; one more client creating sessions and running a command in each; SIGKILL at a random moment up to %v into the load (-load); then the store file is opened and verified (bbolt's page check and the store's layout) with the daemon down, the daemon restarted, and everything in the store checked over the API", killSessions, killClients, h.opts.load)
	p.note("batch cycles run with HARNESSD_DURABILITY=batch, and the daemon's log must say durability=batch")
	return nil
}

func killFigures(p *Part, all []*killStats) {
	sum := func(f func(*killStats) int) (int, string) {
		n := 0
		var per []string
		for _, s := range all {
			n += f(s)
			per = append(per, fmt.Sprintf("%s %d", s.mode, f(s)))
		}
		return n, strings.Join(per, ", ")
	}
	row := func(name string, checked bool, f func(*killStats) int) {
		n, per := sum(f)
		if checked {
			p.check(name, n == 0, "0", "%d (%s)", n, per)
		} else {
			p.info(name, "%d (%s)", n, per)
		}
	}
	row("cycles", false, func(s *killStats) int { return s.cycles })
	row("acknowledged execs", false, func(s *killStats) int { return s.execs })
	row("acknowledged events", false, func(s *killStats) int { return s.ackedEvents })
	row("acknowledged session creates", false, func(s *killStats) int { return s.creates })
	row("lost acknowledged events", true, func(s *killStats) int { return s.lost + s.mismatch })
	row("seq gaps or duplicates", true, func(s *killStats) int { return s.gaps })
	row("store failed to open or verify", true, func(s *killStats) int { return s.storeFailed })
	row("unanswered actions after recovery", true, func(s *killStats) int { return s.unanswered })
	row("actions answered twice", true, func(s *killStats) int { return s.answeredTwice })
	row("running actions answered by the restart", false, func(s *killStats) int { return s.recovered })
	row("sessions not interrupted after restart", true, func(s *killStats) int { return s.notInterrupted })
	row("follower gaps or duplicates", true, func(s *killStats) int { return s.followerGaps })
	row("wrong command answers", true, func(s *killStats) int { return s.wrongAnswers })
	row("client errors before the kill", true, func(s *killStats) int { return s.unexpected })
	seen, per := sum(func(s *killStats) int { return s.shellsSeen })
	p.check("shell processes found just before the kills", seen > 0, "> 0 (the leak check sees them)", "%d (%s)", seen, per)
	row("processes left 5s after SIGKILL", true, func(s *killStats) int { return s.shellsLeft })
	var restarts, delays []time.Duration
	modeOK, stopOK := true, true
	for _, s := range all {
		restarts = append(restarts, s.restarts...)
		delays = append(delays, s.killDelays...)
		modeOK = modeOK && s.modeLogged
		stopOK = stopOK && s.cleanStop
	}
	p.info("kill moment into the load", "%s", spread(delays))
	p.info("restart to /healthz 200", "%s", spread(restarts))
	p.check("daemon logged the durability asked for", modeOK, "yes", "%s", yesNo(modeOK))
	p.check("SIGTERM after the last cycle: exit 0", stopOK, "yes", "%s", yesNo(stopOK))
	for _, s := range all {
		for _, e := range s.firstErrors {
			p.note("%s", e)
		}
	}
}

// killMode runs cycles against one store with one durability.
func (h *harness) killMode(ctx context.Context, mode string, cycles int, env []string, st *killStats) error {
	spec, err := h.newSpec("kill-"+mode, env...)
	if err != nil {
		return err
	}
	if err := spec.writeConfig(h.driver, h.token, ""); err != nil {
		return err
	}
	led := newLedger()
	d, _, err := spec.start(ctx)
	if err != nil {
		return err
	}
	st.modeLogged = d.logSays("durability=" + mode)
	for c := 1; c <= cycles; c++ {
		if ctx.Err() != nil {
			d.kill()
			return ctx.Err()
		}
		d, err = h.killCycle(ctx, spec, d, fmt.Sprintf("%c%02d", mode[0], c), led, st)
		if err != nil {
			if d != nil {
				d.kill()
			}
			return err
		}
		st.cycles++
		h.logf("kill %s cycle %d/%d: %d execs acknowledged so far, %d lost, restart %v", mode, c, cycles, st.execs, st.lost, st.restarts[len(st.restarts)-1].Round(time.Millisecond))
	}
	st.ackedEvents = led.acked()
	st.mismatch = led.mismatch
	if err := d.stop(); err != nil {
		st.fail("%v", err)
	} else {
		st.cleanStop = true
	}
	return nil
}

// killCycle loads d, kills it at a random moment, checks the store, starts
// the next daemon and accounts for everything acknowledged. It returns the
// new daemon.
func (h *harness) killCycle(ctx context.Context, spec *daemonSpec, d *proc, cycle string, led *ledger, st *killStats) (*proc, error) {
	delay := time.Duration(h.rng.Int64N(int64(h.opts.load)))
	seed := h.rng.Uint64()
	st.killDelays = append(st.killDelays, delay)
	loadCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var killed atomic.Bool
	var mu sync.Mutex // guards st during the load
	clientErr := func(what string, err error) {
		if killed.Load() || loadCtx.Err() != nil {
			return // the kill's doing
		}
		mu.Lock()
		st.unexpected++
		st.fail("%s: %s before the kill: %v", cycle, what, err)
		mu.Unlock()
	}
	cl := api.NewClient(spec.socket())
	defer cl.Close()

	var wg sync.WaitGroup
	act := func(id string, rng *rand.Rand) bool {
		lc := loadCommands[rng.IntN(len(loadCommands))]
		obs, err := cl.Act(loadCtx, id, event.SourceUser, event.CmdRun{Command: lc.cmd})
		if err != nil {
			clientErr("act in "+id, err)
			return false
		}
		out, ok := obs.Payload.(event.CmdOutput)
		led.ackEvent(obs)
		led.ackAction(id, obs.Cause, lc.cmd)
		mu.Lock()
		st.execs++
		if !ok || out.ExitCode != lc.exit || (lc.output != "" && out.Output != lc.output) {
			st.wrongAnswers++
			st.fail("%s: %q answered %s", cycle, lc.cmd, summarize(obs))
		}
		mu.Unlock()
		return true
	}
	follow := func(id string) {
		var last uint64
		err := cl.Events(loadCtx, id, 0, true, func(ev event.Event) error {
			if ev.Seq != last+1 {
				mu.Lock()
				st.followerGaps++
				st.fail("%s: follower of %s got seq %d after %d", cycle, id, ev.Seq, last)
				mu.Unlock()
			}
			last = ev.Seq
			led.ackEvent(ev)
			return nil
		})
		if err != nil {
			clientErr("follow "+id, err)
		} else if !killed.Load() {
			clientErr("follow "+id, errors.New("the stream ended"))
		}
	}
	create := func(id string) bool {
		if _, err := cl.CreateSession(loadCtx, daemon.CreateRequest{ID: id}); err != nil {
			clientErr("create "+id, err)
			return false
		}
		led.ackSession(id)
		mu.Lock()
		st.creates++
		mu.Unlock()
		return true
	}
	for i := range killSessions {
		wg.Go(func() {
			id := fmt.Sprintf("%s-s%d", cycle, i)
			if !create(id) {
				return
			}
			wg.Go(func() { follow(id) })
			for j := range killClients {
				wg.Go(func() {
					rng := rand.New(rand.NewPCG(seed, uint64(i*killClients+j)))
					for loadCtx.Err() == nil && act(id, rng) {
					}
				})
			}
		})
	}
	wg.Go(func() { // session churn: creates are acknowledged too
		rng := rand.New(rand.NewPCG(seed, 1000))
		for n := 0; loadCtx.Err() == nil; n++ {
			id := fmt.Sprintf("%s-c%d", cycle, n)
			if !create(id) || !act(id, rng) {
				return
			}
		}
	})

	select {
	case <-time.After(delay):
	case <-ctx.Done():
	}
	st.shellsSeen += len(shellsLeft(h.token)) // so that 0 left after the kill means something
	killed.Store(true)
	d.kill()
	cancel()
	waited := make(chan struct{})
	go func() { wg.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(killLoadWaitBound):
		return nil, fmt.Errorf("%s: the load's clients did not notice the kill in %v", cycle, killLoadWaitBound)
	}
	if n := waitGone(h.token, h.ownBin, killShellGrace); n > 0 {
		st.shellsLeft += n
		st.fail("%s: %d processes (shells, what they ran, sandbox inits) still running %v after their daemon was killed", cycle, n, killShellGrace)
	}

	// The store file itself, with no daemon: it opens and verifies.
	if err := verifyStore(ctx, spec.store()); err != nil {
		st.storeFailed++
		st.fail("%s: %v", cycle, err)
	}

	next, took, err := spec.start(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: restart after SIGKILL: %w", cycle, err)
	}
	st.restarts = append(st.restarts, took)
	if err := account(ctx, next, led, cycle, st); err != nil {
		return next, fmt.Errorf("%s: accounting: %w", cycle, err)
	}
	return next, nil
}

// verifyStore opens a store file no daemon holds and checks it.
func verifyStore(ctx context.Context, path string) error {
	s, err := store.Open(path, &store.Options{Timeout: 5 * time.Second})
	if err != nil {
		return fmt.Errorf("store would not open after SIGKILL: %w", err)
	}
	defer s.Close()
	vctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := s.Verify(vctx); err != nil {
		return fmt.Errorf("store does not verify after SIGKILL: %w", err)
	}
	return nil
}

// account reads every session of the restarted daemon and checks it
// against the ledger.
func account(ctx context.Context, d *proc, led *ledger, cycle string, st *killStats) error {
	infos, err := d.cl.Sessions(ctx)
	if err != nil {
		return err
	}
	logs := map[string][]event.Event{}
	for _, in := range infos {
		var evs []event.Event
		if err := d.cl.Events(ctx, in.ID, 0, false, func(ev event.Event) error { evs = append(evs, ev); return nil }); err != nil {
			return fmt.Errorf("events of %s: %w", in.ID, err)
		}
		logs[in.ID] = evs
		st.sessionsChecked++
		checkLog(in, evs, cycle, st)
	}
	led.mu.Lock()
	defer led.mu.Unlock()
	for id := range led.sessions {
		if _, ok := logs[id]; !ok {
			st.lost++
			st.fail("%s: acknowledged session %s is gone", cycle, id)
		}
	}
	lookup := func(k evKey) (event.Event, bool) {
		evs := logs[k.session]
		if k.seq == 0 || k.seq > uint64(len(evs)) || evs[k.seq-1].Seq != k.seq {
			return event.Event{}, false
		}
		return evs[k.seq-1], true
	}
	for k, fp := range led.events {
		if ev, ok := lookup(k); !ok || fingerprint(ev) != fp {
			st.lost++
			st.fail("%s: acknowledged event %s#%d missing or changed (found: %v)", cycle, k.session, k.seq, ok)
		}
	}
	for k, cmd := range led.actions {
		ev, ok := lookup(k)
		c, isRun := ev.Payload.(event.CmdRun)
		if !ok || !isRun || c.Command != cmd {
			st.lost++
			st.fail("%s: acknowledged cmd_run %s#%d %q missing or changed", cycle, k.session, k.seq, cmd)
		}
	}
	return nil
}

// checkLog checks one session's whole log after a restart: seqs from 1
// with no gap, every action answered once, the end recorded.
func checkLog(in daemon.Info, evs []event.Event, cycle string, st *killStats) {
	answers := map[uint64]int{}
	for i, ev := range evs {
		if ev.Seq != uint64(i+1) {
			st.gaps++
			st.fail("%s: session %s: event %d has seq %d", cycle, in.ID, i+1, ev.Seq)
			return
		}
		if ev.IsObservation() && ev.Cause != 0 {
			answers[ev.Cause]++
			if o, ok := ev.Payload.(event.CmdOutput); ok && strings.Contains(o.Note, recoveredNoteMatch) && strings.HasPrefix(in.ID, cycle+"-") {
				st.recovered++
			}
		}
	}
	for _, ev := range evs {
		if !ev.IsAction() || ev.Kind() == event.KindMessage || ev.Kind() == event.KindFinish {
			continue
		}
		switch n := answers[ev.Seq]; {
		case n == 0:
			st.unanswered++
			st.fail("%s: session %s: %s #%d has no answer", cycle, in.ID, ev.Kind(), ev.Seq)
		case n > 1:
			st.answeredTwice++
			st.fail("%s: session %s: %s #%d answered %d times", cycle, in.ID, ev.Kind(), ev.Seq, n)
		}
	}
	last := event.Event{}
	if len(evs) > 0 {
		last = evs[len(evs)-1]
	}
	if in.State != daemon.StateInterrupted || last.Kind() != event.KindSandboxStopped {
		st.notInterrupted++
		st.fail("%s: session %s: state %s, last event %s", cycle, in.ID, in.State, last.Kind())
	}
}

// summarize is an event in a few words, for messages.
func summarize(ev event.Event) string {
	if o, ok := ev.Payload.(event.CmdOutput); ok {
		out := o.Output
		if len(out) > 60 {
			out = out[:60] + "…"
		}
		return fmt.Sprintf("cmd_output exit %d %q note %q", o.ExitCode, out, o.Note)
	}
	return string(ev.Kind())
}

// spread is a set of durations as "n=…, p50 …, max …".
func spread(ds []time.Duration) string {
	if len(ds) == 0 {
		return "none"
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return fmt.Sprintf("n=%d, min %v, p50 %v, max %v", len(s), s[0].Round(time.Millisecond), s[len(s)/2].Round(time.Millisecond), s[len(s)-1].Round(time.Millisecond))
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
