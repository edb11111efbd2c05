package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/harnessd/harnessd/core/event"
	"github.com/harnessd/harnessd/core/session"
	"github.com/harnessd/harnessd/core/terminal"
	"github.com/harnessd/harnessd/core/trim"
	"github.com/harnessd/harnessd/store"
)

// javaReference is the reference Java harness's time for the 100,001-line
// case, as quoted in the issue (not measured here).
const javaReference = 920 * time.Millisecond

// logCommand prints the reference's 100,001-line log (100,000 "log line N"
// and a Traceback after line 50,000) without bash's own slow loop, which
// takes about a second by itself and would be what got timed. The last
// stage is cat because sed, like most stdio programs, flushes every line
// when its stdout is a terminal: 100,001 write(2)s onto a PTY cost the
// writer about half a second whoever reads the other side. logLineBuffered
// is that case, measured too so the cost stays visible.
const (
	logCommand      = logLineBuffered + ` | cat`
	logLineBuffered = `seq -f 'log line %g' 1 100000 | sed '50000a Traceback (most recent call last): x'`
)

// streamLine is the line the stream section repeats: 60 bytes with its
// newline.
const streamLine = "harnessd bench: one log line of sixty bytes, over and over."

// lineCase is one command of the lines section.
type lineCase struct {
	name, cmd     string
	lines, kwords int  // what the trimmer must see and keep
	target        bool // the 100,001-line case: < 50 ms, vs the Java harness
	full          bool // not under -quick
}

var lineCases = []lineCase{
	{name: "seq 1 100000", cmd: "seq 1 100000", lines: 100000},
	{name: "100,001-line log", cmd: logCommand, lines: 100001, kwords: 1, target: true},
	{name: "100,001-line log, line-buffered", cmd: logLineBuffered, lines: 100001, kwords: 1, full: true},
}

// lines is section 2: 100,000 and 100,001 lines end to end through
// session.Command, against the same command into /dev/null under bash -c and
// onto a bare PTY drained by a plain read loop.
func (b *bench) lines(ctx context.Context, s *Section) error {
	reps := 5
	if b.opts.quick {
		reps = 1
	}
	store, sess, err := b.newSession(ctx, "lines")
	if err != nil {
		return err
	}
	defer sess.Close(context.WithoutCancel(ctx), "benchmark done")
	s.Notes = append(s.Notes,
		"end to end: session.Command with the default trim.Config, spilling to the outputs of a bbolt store (strict durability) in a temp dir, as the daemon does.",
		"baselines: `bash -c '{ CMD; } >/dev/null'` (the commands' own cost), and `bash -c CMD` onto a bare PTY read into a discarded buffer (the PTY floor).",
		fmt.Sprintf("each figure is the median of %s, interleaved with the baselines', after 1 untimed run of each; RSS growth is this process's peak during that first run.", plural(reps, "run")),
		"100,001-line log: "+logCommand,
		"(the final `| cat` makes the output block-written; without it sed writes each line to the tty on its own, which the last case measures)",
	)
	for _, c := range lineCases {
		if c.full && b.opts.quick {
			s.Notes = append(s.Notes, "skipped under -quick: "+c.name)
			continue
		}
		rows, note, err := measureLines(ctx, store, sess, c, reps)
		s.Rows = append(s.Rows, rows...)
		if note != "" {
			s.Notes = append(s.Notes, note)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
	}
	return nil
}

// measureLines measures one command. The first run is checked and its peak
// RSS growth taken (the first run pays for any warm-up, so it is the
// conservative figure); the timed runs follow, each beside one run of each
// baseline, interleaved so a change in the machine's load hits all three.
func measureLines(ctx context.Context, store trim.OutputStore, sess *session.Session, c lineCase, reps int) ([]Row, string, error) {
	var first ran
	growth, _, note, err := peakGrowth(func() error {
		var err error
		first, _, err = runChecked(ctx, sess, c.cmd)
		return err
	})
	if err != nil {
		return nil, note, err
	}
	if err := checkLines(ctx, store, first.Trim, c.lines, c.kwords); err != nil {
		return nil, note, err
	}
	want := first.Trim.BytesTotal
	shellScript := "{ " + c.cmd + "; } >/dev/null"
	if _, err := shellTime(ctx, shellScript); err != nil { // untimed, as the first run
		return nil, note, err
	}
	if _, _, err := ptyDrain(ctx, c.cmd); err != nil {
		return nil, note, err
	}
	var times, shells, floors []time.Duration
	for range reps {
		obs, d, err := runChecked(ctx, sess, c.cmd)
		if err != nil {
			return nil, note, err
		}
		if obs.Trim.LinesTotal != c.lines || obs.Trim.BytesTotal != want {
			return nil, note, fmt.Errorf("%d lines, %d bytes reached the trimmer, want %d and %d", obs.Trim.LinesTotal, obs.Trim.BytesTotal, c.lines, want)
		}
		times = append(times, d)
		d, err = shellTime(ctx, shellScript)
		if err != nil {
			return nil, note, err
		}
		shells = append(shells, d)
		n, d, err := ptyDrain(ctx, c.cmd)
		if err != nil {
			return nil, note, err
		}
		if n != want {
			return nil, note, fmt.Errorf("raw pty: %q gave %d bytes, want %d", c.cmd, n, want)
		}
		floors = append(floors, d)
	}

	e2e, shell, floor := median(times), median(shells), median(floors)
	rows := []Row{{
		Name: c.name + ": end to end", Figure: dur(e2e),
		Baseline: labelled("shell to /dev/null", dur(shell)),
		Ratio:    ratio(e2e.Seconds(), shell.Seconds()), RatioOf: "harnessd/shell",
	}}
	if c.target {
		rows[0].Target, rows[0].Status = "< 50 ms", passIf(e2e < 50*time.Millisecond)
	}
	rows = append(rows, Row{
		Name: c.name + ": vs raw PTY", Figure: dur(e2e),
		Baseline: labelled("raw PTY read", dur(floor)),
		Ratio:    ratio(e2e.Seconds(), floor.Seconds()), RatioOf: "harnessd/pty",
	})
	if c.target {
		rows = append(rows, Row{
			Name: c.name + ": vs Java harness", Figure: dur(e2e),
			Baseline: labelled("Java reference (quoted)", dur(javaReference)),
			Ratio:    ratio(javaReference.Seconds(), e2e.Seconds()), RatioOf: "java/harnessd",
		})
	}
	rows = append(rows, Row{Name: c.name + ": RSS growth (peak, 1st run)", Figure: bytesM(growth)})
	return rows, note, nil
}

// checkLines verifies, once and untimed, that what was timed is the whole
// pipeline: every line reached the trimmer, the keyword lines were kept
// (each may bring context lines with it), and the full output can be paged
// back from the store up to its last line.
func checkLines(ctx context.Context, store trim.OutputStore, r trim.Result, lines, kwords int) error {
	if r.LinesTotal != lines || r.KeptKeyword < kwords || kwords == 0 && r.KeptKeyword != 0 {
		return fmt.Errorf("trimmer saw %d lines with %d middle lines kept, want %d and at least %d", r.LinesTotal, r.KeptKeyword, lines, kwords)
	}
	if r.OutputID == "" {
		return errors.New("full output was not kept")
	}
	got, err := store.ReadLines(ctx, r.OutputID, lines, lines)
	if err != nil {
		return fmt.Errorf("read back line %d: %w", lines, err)
	}
	if got.Total != lines {
		return fmt.Errorf("store holds %d lines, want %d", got.Total, lines)
	}
	return nil
}

// stream is section 3: a long stream through session.Command, its throughput
// and this process's peak RSS growth, against the producer alone into
// `wc -c` and onto a bare PTY.
func (b *bench) stream(ctx context.Context, s *Section) error {
	size := int64(1 << 30)
	if b.opts.quick {
		size = 32 << 20
	}
	producer := fmt.Sprintf("yes '%s' | head -c %d", streamLine, size)
	s.Title = fmt.Sprintf("a %s stream through session.Command", formatBytes(float64(size)))
	s.Notes = append(s.Notes,
		"command: "+producer,
		"end to end: session.Command with the default trim.Config, spilling the whole stream to the outputs of a bbolt store (strict durability) in a temp dir, as the daemon does.",
		"baselines: `bash -c 'CMD | wc -c'` (the producer's own speed), and `bash -c CMD` onto a bare PTY read into a discarded buffer (the PTY floor).",
		"RSS growth: VmHWM after the run minus VmRSS before it, with the peak reset through /proc/self/clear_refs; this process only.",
	)

	// The baseline first: it also brings yes and head into the page cache.
	t0 := time.Now()
	out, err := exec.CommandContext(ctx, "bash", "-c", producer+" | wc -c").Output()
	base := time.Since(t0)
	if err != nil {
		return fmt.Errorf("baseline %q: %w", producer, cause(ctx, err))
	}
	if n, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64); err != nil || n != size {
		return fmt.Errorf("baseline %q: wc -c says %q, want %d", producer, out, size)
	}

	n, floor, err := ptyDrain(ctx, producer)
	if err != nil {
		return err
	}
	if n != size {
		return fmt.Errorf("raw pty: %q gave %d bytes, want %d", producer, n, size)
	}

	_, sess, err := b.newSession(ctx, "stream")
	if err != nil {
		return err
	}
	defer sess.Close(context.WithoutCancel(ctx), "benchmark done")
	if _, _, err := runChecked(ctx, sess, "true"); err != nil {
		return err
	}
	var e2e time.Duration
	growth, anon, peakNote, err := peakGrowth(func() error {
		obs, d, err := runChecked(ctx, sess, producer)
		if err != nil {
			return err
		}
		e2e = d
		if obs.Trim.BytesTotal != size {
			return fmt.Errorf("%d bytes reached the trimmer, want %d", obs.Trim.BytesTotal, size)
		}
		if obs.Trim.OutputID == "" {
			return errors.New("full output was not kept")
		}
		return nil
	})
	if err != nil {
		return err
	}
	if peakNote != "" {
		s.Notes = append(s.Notes, peakNote)
	}
	through := mbps(size, e2e)
	s.Rows = append(s.Rows,
		Row{
			Name: "throughput", Figure: through,
			Baseline: labelled("producer | wc -c", mbps(size, base)),
			Ratio:    ratio(through.Value, mbps(size, base).Value), RatioOf: "harnessd/producer",
			Target: ">= 200 MB/s", Status: passIf(through.Value >= 200),
		},
		Row{
			Name: "throughput vs raw PTY", Figure: through,
			Baseline: labelled("raw PTY read", mbps(size, floor)),
			Ratio:    ratio(through.Value, mbps(size, floor).Value), RatioOf: "harnessd/pty",
		},
		Row{
			Name: "anonymous memory growth (peak)", Figure: bytesM(anon),
			Target: "< 16 MiB", Status: passIf(anon < 16<<20),
		},
		Row{Name: "RSS growth (peak), file pages included", Figure: bytesM(growth)},
	)
	s.Notes = append(s.Notes, "where the time goes (CPU profile of this section, 2026-12-07): the reader's PTY reads (at most 4095 bytes each) about as much as the raw PTY floor's own; the consumer (markers, display, clean, trim) ~1.1 ns a byte; the store's commits (one per ~1.5 MiB, two fsyncs each in strict durability) ~2.6 ns a byte, half of it pwrite and the rest bbolt's page copies; the scheduler's wake-ups ~2 ns a byte. The terminal alone keeps pace with a bare PTY (go test ./core/terminal -bench Stream: 78-87 against 80-83 MB/s, 8-9 against 5-6 ns of CPU a byte), and the spill alone runs at 330-395 MB/s on an idle machine (go test ./store -bench OutputSpill); together, on 2 cores shared with the producer and the kernel's tty work, that CPU is the gap. A batch-durability store moved nothing measurable (61-68 against 51-67 MB/s, the floor 83-109 MB/s in the same minutes). Before 2026-12-03 the spill committed one 64 KiB chunk at a time and held the stream near the disk's small-synced-write rate (~40 MB/s here), and the display's escape detector looked at every byte.")
	s.Notes = append(s.Notes, "anonymous memory is what the process holds itself (heap, stacks: RssAnon, sampled every 20 ms); the RSS also counts the store file's pages mapped by bbolt, which hold the spilled output and which the kernel can reclaim.")
	return nil
}

// newSession starts a session whose full outputs go to a bbolt store of
// its own under the scratch directory, closed when ctx ends. It records no events
// (Config.Events nil): what is timed is the shell and the output path. The
// soft timeout and the max wait are long so a loaded machine cannot split
// one command into two Runs (a 1 GiB stream under 36 MB/s outlasts the
// default max wait of 30 s).
func (b *bench) newSession(ctx context.Context, name string) (trim.OutputStore, *session.Session, error) {
	st, err := store.Open(filepath.Join(b.tmp, "outputs-"+name+".db"), nil)
	if err != nil {
		return nil, nil, fmt.Errorf("output store: %w", err)
	}
	context.AfterFunc(ctx, func() { st.Close() })
	id := "bench-" + name
	if _, err := st.CreateSession(ctx, store.Session{ID: id}); err != nil {
		return nil, nil, fmt.Errorf("output store: %w", err)
	}
	sess, err := session.New(ctx, id, session.Config{
		Terminal: terminal.Options{Dir: b.tmp, SoftTimeout: 2 * time.Minute, MaxWait: 5 * time.Minute},
		Outputs:  st.Outputs(),
	})
	if err != nil {
		return nil, nil, err
	}
	return st.Outputs(), sess, nil
}

// ran is one command's observation and the trimmer's counts.
type ran struct {
	Output event.CmdOutput
	Trim   trim.Result
}

// runChecked runs one command and times it with the wall clock around
// session.Command; anything but a clean exit 0 is an error.
func runChecked(ctx context.Context, sess *session.Session, cmd string) (ran, time.Duration, error) {
	t0 := time.Now()
	out, tr, err := sess.Command(ctx, event.CmdRun{Command: cmd})
	d := time.Since(t0)
	res := ran{Output: out, Trim: tr}
	if err != nil {
		return res, d, fmt.Errorf("run %q: %w", cmd, err)
	}
	if out.ExitCode != 0 || out.TimedOut || out.ShellRebuilt {
		return res, d, fmt.Errorf("run %q: exit %d (-1: still running), timed out %v, shell rebuilt %v: %s",
			cmd, out.ExitCode, out.TimedOut, out.ShellRebuilt, out.Note)
	}
	return res, d, nil
}

// shellTime times one `bash -c script`.
func shellTime(ctx context.Context, script string) (time.Duration, error) {
	t0 := time.Now()
	if err := exec.CommandContext(ctx, "bash", "-c", script).Run(); err != nil {
		return 0, fmt.Errorf("bash -c %q: %w", script, cause(ctx, err))
	}
	return time.Since(t0), nil
}

// peakGrowth runs fn and returns how far this process's peak RSS rose
// above its RSS just before, and how far its anonymous memory (RssAnon,
// sampled every 20 ms: the kernel keeps no peak of it) did. The kernel's
// peak (VmHWM) is reset to the current RSS by writing 5 to
// /proc/self/clear_refs; where that is refused the growth of the lifetime
// peak is returned, a lower bound, and a note says so.
func peakGrowth(fn func() error) (rss, anon int64, note string, err error) {
	runtime.GC()
	debug.FreeOSMemory()
	before, err := readMem()
	if err != nil {
		return 0, 0, "", err
	}
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		note = fmt.Sprintf("peak RSS could not be reset (%v): growth is of the lifetime peak, a lower bound.", err)
	}
	stop := make(chan struct{})
	peak := make(chan int64, 1)
	go func() {
		max := before.anon
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				peak <- max
				return
			case <-t.C:
				if m, err := readMem(); err == nil && m.anon > max {
					max = m.anon
				}
			}
		}
	}()
	ferr := fn()
	close(stop)
	anon = <-peak - before.anon
	if ferr != nil {
		return 0, 0, note, ferr
	}
	after, err := readMem()
	if err != nil {
		return 0, 0, note, err
	}
	if note != "" {
		return after.hwm - before.hwm, anon, note, nil
	}
	return after.hwm - before.rss, anon, "", nil
}

// mem is this process's resident set, its peak and its anonymous part,
// in bytes.
type mem struct{ rss, hwm, anon int64 }

func readMem() (mem, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return mem{}, fmt.Errorf("read RSS: %w", err)
	}
	defer f.Close()
	var m mem
	seen := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || (k != "VmRSS" && k != "VmHWM" && k != "RssAnon") {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			return mem{}, fmt.Errorf("read RSS: %s: %w", k, err)
		}
		switch k {
		case "VmRSS":
			m.rss = kb << 10
			seen++
		case "VmHWM":
			m.hwm = kb << 10
			seen++
		default:
			m.anon = kb << 10
		}
	}
	if err := sc.Err(); err != nil {
		return mem{}, fmt.Errorf("read RSS: %w", err)
	}
	if seen != 2 {
		return mem{}, errors.New("read RSS: no VmRSS/VmHWM in /proc/self/status")
	}
	return m, nil
}

// plural is "1 run", "5 runs".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
