package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/harnessd/harnessd/core/api"
	"github.com/harnessd/harnessd/core/daemon"
	"github.com/harnessd/harnessd/core/event"
)

// The disk part's bounds.
const (
	diskSize        = "8m"
	diskSessions    = 3
	diskLeaveFree   = 256 << 10        // the filler leaves this much for the load to use up
	diskFullRefusal = 3                // each client stops after this many store_full answers
	diskMaxActions  = 3000             // in all, whatever happens
	diskLoadBound   = 90 * time.Second // the load stops by then, full or not
	diskRecoverWait = 20 * time.Second // /healthz must say 200 this soon after space returns
)

// diskStats are one durability mode's figures.
type diskStats struct {
	mode               string
	ok                 int // answered with the observation
	storeFull          int // 507 store_full
	incomplete         int // 507 record_incomplete
	other              int // anything else: a failure
	refusedButRan      int // store_full, and the marker exists
	incompleteNotRan   int // record_incomplete, and no marker
	okNotRan           int // an observation, and no marker
	healthFull         string
	metricsFull        bool
	recoverTook        time.Duration
	recovered          bool
	afterOK, afterRuns int
	selfFill           string // what the command that filled the disk was told
	selfFillObs        string // its observation, if it had one
	selfFilled         bool   // its file stopped short of 100 MB: it did fill the disk
	unanswered         int
	answeredTwice      int
	gaps               int
	recordedNotRun     int // a cmd_run in the log whose marker does not exist
	ranNotRecorded     int // a marker with no cmd_run in the log
	cleanStop          bool
	errs               []string
}

func (s *diskStats) fail(format string, args ...any) {
	if len(s.errs) < 8 {
		s.errs = append(s.errs, fmt.Sprintf(s.mode+": "+format, args...))
	}
}

// disk is the disk part, once per durability mode.
func (h *harness) disk(ctx context.Context, p *Part) error {
	var all []*diskStats
	defer func() { diskFigures(p, all) }()
	for _, mode := range []string{"strict", "batch"} {
		st := &diskStats{mode: mode}
		all = append(all, st)
		if err := h.diskMode(ctx, mode, st); err != nil {
			var skip skipError
			if errors.As(err, &skip) {
				all = nil
				return err
			}
			return fmt.Errorf("%s: %w", mode, err)
		}
	}
	p.note("the data directory (store and workspaces) is a %s tmpfs; the harness fills it to %d KiB from full with a file of its own, then %d clients (one session each) run `touch MARKER # <3000 bytes>` until each has been refused %d times; the markers are outside the tmpfs (with -native, in the session's workspace: the sandbox sees nothing else of the host)", diskSize, diskLeaveFree>>10, diskSessions, diskFullRefusal)
	p.note("then the file is removed, and later a command fills the tmpfs itself (head -c 100000000 /dev/zero) and prints 200,000 lines, so that its output and its observation cannot be stored")
	return nil
}

func diskFigures(p *Part, all []*diskStats) {
	for _, s := range all {
		m := s.mode + ": "
		p.info(m+"actions answered", "%d ok, %d store_full, %d record_incomplete", s.ok, s.storeFull, s.incomplete)
		p.check(m+"store_full answers", s.storeFull > 0, "> 0 (the disk filled)", "%d", s.storeFull)
		p.zero(m+"store_full, yet it ran", s.refusedButRan)
		p.zero(m+"record_incomplete, yet it did not run", s.incompleteNotRan)
		p.zero(m+"answered, yet it did not run", s.okNotRan)
		p.zero(m+"other answers (500, ...)", s.other)
		p.check(m+"/healthz while full", strings.HasPrefix(s.healthFull, "507"), "507 store_full", "%s", s.healthFull)
		p.check(m+"/metrics harnessd_store_writable while full", s.metricsFull, "0", "%s", map[bool]string{true: "0", false: "not 0"}[s.metricsFull])
		p.check(m+"/healthz 200 after space returned", s.recovered, "within "+diskRecoverWait.String(), "%s", durOrNever(s.recovered, s.recoverTook))
		p.check(m+"actions after recovery", s.afterRuns > 0 && s.afterOK == s.afterRuns, "all ok", "%d/%d ok", s.afterOK, s.afterRuns)
		p.check(m+"a command filling the disk: it filled", s.selfFilled, "yes", "%s", yesNo(s.selfFilled))
		p.check(m+"a command filling the disk: its answer", s.selfFill == "ok" || s.selfFill == "507 record_incomplete", "ok or 507 record_incomplete", "%s", s.selfFill)
		if s.selfFillObs != "" {
			p.note("%s: the command that filled the disk was answered: %s", s.mode, s.selfFillObs)
		}
		p.zero(m+"cmd_run in the log that did not run", s.recordedNotRun)
		p.zero(m+"command that ran, not in the log", s.ranNotRecorded)
		p.zero(m+"unanswered cmd_runs at the end", s.unanswered)
		p.zero(m+"cmd_runs answered twice", s.answeredTwice)
		p.zero(m+"seq gaps or duplicates", s.gaps)
		p.check(m+"SIGTERM: exit 0", s.cleanStop, "yes", "%s", yesNo(s.cleanStop))
		for _, e := range s.errs {
			p.note("%s", e)
		}
	}
}

func durOrNever(ok bool, d time.Duration) string {
	if !ok {
		return "never"
	}
	return d.Round(time.Millisecond).String()
}

// diskMode runs the disk attack against one daemon with one durability.
func (h *harness) diskMode(ctx context.Context, mode string, st *diskStats) error {
	spec, err := h.newSpec("disk-" + mode)
	if err != nil {
		return err
	}
	if err := syscall.Mount("tmpfs", spec.data, "tmpfs", 0, "size="+diskSize+",mode=0700"); err != nil {
		return skipError{fmt.Sprintf("mount a %s tmpfs on %s: %v (the kernel refused it)", diskSize, spec.data, err)}
	}
	defer syscall.Unmount(spec.data, syscall.MNT_DETACH)
	// Where each session's commands leave their markers: a directory
	// outside the tmpfs, or, in a native sandbox, which sees no host
	// directory but its workspace, the workspace (an empty file still
	// fits on a full tmpfs: it takes an inode, not a page).
	markerDir := map[string]string{} // session -> host directory
	inside := func(id, host string) string { return host }
	if h.driver == "native" {
		inside = func(id, host string) string { return "/workspace/markers/" + filepath.Base(host) }
	}
	if err := spec.writeConfig(h.driver, h.token, fmt.Sprintf("\n[store]\ndurability = %q\n", mode)); err != nil {
		return err
	}
	d, _, err := spec.start(ctx)
	if err != nil {
		return err
	}
	defer d.cleanup()
	if !d.logSays("durability=" + mode) {
		st.fail("the daemon's log does not say durability=%s", mode)
		st.other++
	}
	cl := d.cl
	ids := make([]string, diskSessions)
	for i := range ids {
		ids[i] = fmt.Sprintf("d%d", i)
		info, err := cl.CreateSession(ctx, daemon.CreateRequest{ID: ids[i]})
		if err != nil {
			return err
		}
		markerDir[ids[i]] = filepath.Join(spec.dir, "markers")
		if h.driver == "native" {
			markerDir[ids[i]] = filepath.Join(info.Workspace, "markers")
			if _, err := cl.Act(ctx, ids[i], event.SourceUser, event.CmdRun{Command: "mkdir /workspace/markers"}); err != nil {
				return err
			}
		} else if err := os.MkdirAll(markerDir[ids[i]], 0o755); err != nil {
			return err
		}
	}

	var next atomic.Int64
	var mu sync.Mutex
	// act runs `touch MARKER` plus rest in a session and checks the
	// answer against the marker; it returns the answer's status.
	act := func(id, rest string) (string, event.Event) {
		m := filepath.Join(markerDir[id], fmt.Sprintf("m%d", next.Add(1)))
		obs, err := cl.Act(ctx, id, event.SourceUser, event.CmdRun{Command: "touch " + inside(id, m) + rest})
		_, statErr := os.Stat(m)
		ran := statErr == nil
		status, code := apiStatus(err)
		mu.Lock()
		defer mu.Unlock()
		switch {
		case err == nil:
			st.ok++
			if !ran {
				st.okNotRan++
				st.fail("%s: answered, but %s does not exist", id, m)
			}
			return "ok", obs
		case status == http.StatusInsufficientStorage && code == "store_full":
			st.storeFull++
			if ran {
				st.refusedButRan++
				st.fail("%s: 507 store_full, but the command ran: %v", id, err)
			}
		case status == http.StatusInsufficientStorage && code == "record_incomplete":
			st.incomplete++
			if !ran || !strings.Contains(err.Error(), "ran") {
				st.incompleteNotRan++
				st.fail("%s: 507 record_incomplete, but the command did not run: %v", id, err)
			}
		default:
			st.other++
			st.fail("%s: %v", id, err)
			return "error: " + err.Error(), obs
		}
		return fmt.Sprintf("%d %s", status, code), obs
	}
	for _, id := range ids {
		act(id, "; echo warm")
	}

	// 1. Fill the disk, then load it until the store cannot write.
	filler := filepath.Join(spec.data, "filler")
	if err := fill(filler, diskLeaveFree); err != nil {
		return err
	}
	pad := " # " + strings.Repeat("x", 3000) // long commands fill pages fast
	var total atomic.Int64
	deadline := time.Now().Add(diskLoadBound)
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Go(func() {
			for refused := 0; refused < diskFullRefusal && total.Add(1) <= diskMaxActions && time.Now().Before(deadline) && ctx.Err() == nil; {
				if r, _ := act(id, pad); strings.HasSuffix(r, "store_full") {
					refused++
				} else if strings.HasPrefix(r, "error") {
					return
				}
			}
		})
	}
	wg.Wait()
	// One more, alone, so that nothing commits between its refusal and
	// the health check.
	for range 20 {
		if r, _ := act(ids[0], pad); strings.HasSuffix(r, "store_full") {
			break
		}
	}
	code, body, err := get(ctx, spec.socket(), "/healthz")
	st.healthFull = fmt.Sprintf("%d %s", code, errCode(body))
	if err != nil {
		st.healthFull = err.Error()
	}
	_, metrics, _ := get(ctx, spec.socket(), "/metrics")
	st.metricsFull = strings.Contains(metrics, "\nharnessd_store_writable 0\n")

	// 2. Space returns: health, then actions, by themselves.
	os.Remove(filler)
	st.recoverTook, st.recovered = waitHealthy(ctx, spec.socket(), diskRecoverWait)
	for _, id := range ids {
		st.afterRuns++
		if r, _ := act(id, "; echo back"); r == "ok" {
			st.afterOK++
		}
	}

	// 3. A command fills the disk itself while it runs: its output and its
	// observation cannot be stored.
	// (A native sandbox sees only its workspace, which is on the tmpfs too.)
	filler2, filler2In := filepath.Join(spec.data, "filler2"), ""
	if h.driver == "native" {
		filler2, filler2In = filepath.Join(filepath.Dir(markerDir[ids[1]]), "filler2"), "/workspace/filler2"
	} else {
		filler2In = filler2
	}
	var obs event.Event
	st.selfFill, obs = act(ids[1], fmt.Sprintf("; head -c 100000000 /dev/zero > %s; seq 1 200000", filler2In))
	if fi, err := os.Stat(filler2); err == nil && fi.Size() < 100000000 {
		st.selfFilled = true // it stopped short: the disk was full
	}
	if o, ok := obs.Payload.(event.CmdOutput); ok {
		st.selfFillObs = fmt.Sprintf("exit %d, %d lines shown, note %q", o.ExitCode, strings.Count(o.Output, "\n"), o.Note)
	}
	os.Remove(filler2)
	if _, ok := waitHealthy(ctx, spec.socket(), diskRecoverWait); !ok {
		st.fail("/healthz not 200 after the command's file was removed")
	}
	for _, id := range ids {
		st.afterRuns++
		if r, _ := act(id, "; echo after"); r == "ok" {
			st.afterOK++
		}
	}

	// 4. The log is exactly what ran, each action answered once.
	ranMarkers := map[string]bool{} // as the commands name them
	for _, id := range ids {
		ents, _ := os.ReadDir(markerDir[id])
		for _, e := range ents {
			ranMarkers[inside(id, filepath.Join(markerDir[id], e.Name()))] = true
		}
	}
	markerRE := regexp.MustCompile(`^touch ([^\s;]+)`)
	for _, id := range ids {
		evs, err := readAll(ctx, cl, id)
		if err != nil {
			return err
		}
		answers := map[uint64]int{}
		for i, ev := range evs {
			if ev.Seq != uint64(i+1) {
				st.gaps++
			}
			if ev.IsObservation() && ev.Cause != 0 {
				answers[ev.Cause]++
			}
		}
		for _, ev := range evs {
			c, ok := ev.Payload.(event.CmdRun)
			if !ok {
				continue
			}
			switch answers[ev.Seq] {
			case 0:
				st.unanswered++
				st.fail("%s: cmd_run #%d has no answer", id, ev.Seq)
			case 1:
			default:
				st.answeredTwice++
			}
			if m := markerRE.FindStringSubmatch(c.Command); m != nil {
				if !ranMarkers[m[1]] {
					st.recordedNotRun++
					st.fail("%s: cmd_run #%d is in the log but did not run", id, ev.Seq)
				}
				delete(ranMarkers, m[1])
			}
		}
	}
	st.ranNotRecorded = len(ranMarkers)
	for m := range ranMarkers {
		st.fail("%s ran but no cmd_run in the log made it", m)
	}
	if err := d.stop(); err != nil {
		st.fail("%v", err)
	} else {
		st.cleanStop = true
	}
	h.logf("disk %s: %d ok, %d store_full, %d record_incomplete", mode, st.ok, st.storeFull, st.incomplete)
	return nil
}

// fill writes path until the filesystem is full, then gives back leave
// bytes.
func fill(path string, leave int64) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	var n int64
	for {
		w, err := f.Write(buf)
		n += int64(w)
		if err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				break
			}
			return err
		}
	}
	return f.Truncate(max(n-leave, 0))
}

// waitHealthy polls /healthz until it answers 200, up to bound.
func waitHealthy(ctx context.Context, socket string, bound time.Duration) (time.Duration, bool) {
	t0 := time.Now()
	for time.Since(t0) < bound && ctx.Err() == nil {
		if code, _, err := get(ctx, socket, "/healthz"); err == nil && code == http.StatusOK {
			return time.Since(t0), true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return time.Since(t0), false
}

// errCode is the code of an API error body, or the body itself.
func errCode(body string) string {
	if i := strings.Index(body, `"code":"`); i >= 0 {
		rest := body[i+8:]
		if j := strings.IndexByte(rest, '"'); j >= 0 {
			return rest[:j]
		}
	}
	return strings.TrimSpace(body)
}

// readAll is a session's whole log.
func readAll(ctx context.Context, cl *api.Client, id string) ([]event.Event, error) {
	var evs []event.Event
	err := cl.Events(ctx, id, 0, false, func(ev event.Event) error { evs = append(evs, ev); return nil })
	return evs, err
}
