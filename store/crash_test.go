package store

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/harnessd/harnessd/core/event"
)

// The helper-process pattern: the test binary runs itself as the process
// to crash, switched by the environment.
const (
	envChild = "HARNESSD_STORE_CHILD" // "crash" or "hold"
	envPath  = "HARNESSD_STORE_PATH"
	envSeed  = "HARNESSD_STORE_SEED"
	envSync  = "HARNESSD_STORE_SYNC_EVERY" // batch durability's interval; unset: strict
)

// storeChild is the body of the subprocess that TestCrash kills and
// TestLockedByAnotherProcess locks out. TestMain calls it before any test
// runs when the environment names a mode, so the child never runs tests.
func storeChild(mode string) {
	path := os.Getenv(envPath)
	switch mode {
	case "hold":
		s, err := Open(path, nil)
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		_ = s
		fmt.Println("ready")
		time.Sleep(time.Hour) // until killed
	case "crash":
		seed, _ := strconv.ParseUint(os.Getenv(envSeed), 10, 64)
		crashChild(path, seed)
	}
	os.Exit(2)
}

// crashChild appends, writes outputs and deletes sessions as fast as it
// can, printing each acknowledgement only after the call returned, until it
// is killed. Small index knobs make every recovery path likely.
func crashChild(path string, seed uint64) {
	indexBlock, indexWindow, sweepBudget = 8, 64, 10
	every, _ := time.ParseDuration(os.Getenv(envSync))
	s, err := Open(path, &Options{SyncEvery: every})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	ctx := context.Background()
	var outMu sync.Mutex
	say := func(format string, args ...any) {
		line := fmt.Sprintf(format+"\n", args...)
		outMu.Lock()
		os.Stdout.WriteString(line) // one write per line, unbuffered
		outMu.Unlock()
	}
	say("ready")
	const writers = 6
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			newSession := func() string {
				id := fmt.Sprintf("c%d-w%d-%d", seed, w, rng.Uint32())
				if _, err := s.CreateSession(ctx, Session{ID: id}); err != nil {
					say("error create %v", err)
					os.Exit(1)
				}
				return id
			}
			id := newSession()
			for {
				switch r := rng.IntN(1000); {
				case r < 8:
					say("deleting %s", id)
					if err := s.DeleteSession(ctx, id); err != nil {
						say("error delete %v", err)
						os.Exit(1)
					}
					id = newSession()
				case r < 20:
					content := randomOutput(rng)
					ow, err := s.Outputs().Create(ctx, id)
					if err == nil {
						_, err = ow.Write(content)
					}
					if err == nil {
						err = ow.Close()
					}
					if err != nil {
						say("error output %v", err)
						os.Exit(1)
					}
					say("out %s %s %s", id, ow.ID(), hash(content))
				default:
					evs := make([]event.Event, 1+rng.IntN(3))
					for i := range evs {
						evs[i] = randomEvent(rng)
					}
					out, err := s.Append(ctx, id, evs...)
					if err != nil {
						say("error append %v", err)
						os.Exit(1)
					}
					for _, ev := range out {
						b, _ := ev.AppendJSON(nil)
						say("ack %s %d %s", id, ev.Seq, hash(b))
					}
				}
			}
		})
	}
	wg.Wait()
}

func hash(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:8])
}

func randomText(rng *rand.Rand, n int) string {
	const alphabet = "abc xyz\n\t\"\\é😀\x00\x7f"
	b := make([]byte, 0, n)
	for len(b) < n {
		b = append(b, alphabet[rng.IntN(len(alphabet))])
	}
	return string(b) // sometimes invalid UTF-8: the codec must cope
}

func randomEvent(rng *rand.Rand) event.Event {
	size := rng.IntN(400)
	if rng.IntN(50) == 0 {
		size = 20000 + rng.IntN(50000) // some events span overflow pages
	}
	switch rng.IntN(4) {
	case 0:
		return event.Event{Source: event.SourceAgent, Payload: event.CmdRun{Command: randomText(rng, size), TimeoutS: float64(rng.IntN(100)) / 4}}
	case 1:
		return event.Event{Source: event.SourceRuntime, Cause: rng.Uint64N(100), Payload: event.CmdOutput{
			ExitCode: rng.IntN(3) - 1, Cwd: "/work", Output: randomText(rng, size), DurationMS: rng.Int64N(1e6),
			Trimmed: &event.Trimmed{LinesTotal: rng.IntN(1e5), OutputID: "o1"},
		}}
	case 2:
		return event.Event{Source: event.SourceUser, Payload: event.Message{Text: randomText(rng, size)}}
	default:
		return event.Event{Source: event.SourceHook, Payload: event.HookVeto{Hook: "h.lua", Reason: randomText(rng, size)}}
	}
}

func randomOutput(rng *rand.Rand) []byte {
	var b []byte
	n := rng.IntN(3 * ChunkSize)
	for len(b) < n {
		b = append(b, randomText(rng, rng.IntN(120))...)
		b = append(b, '\n')
	}
	if rng.IntN(2) == 0 {
		b = append(b, "no newline at the end"...)
	}
	return b
}

// crashState is what the parent knows was acknowledged.
type crashState struct {
	acks     map[string]map[uint64]string // session -> seq -> hash of the exact JSON
	outputs  map[string][2]string         // output id -> session, hash
	deleting map[string]bool              // deletion begun: the session may be gone
}

// TestCrash kills a writing subprocess with SIGKILL at random moments, over
// and over, and checks after each kill that the store opens, that every
// acknowledged event is there with its exact bytes, that seqs have no gaps
// and that nothing half-written is visible (Verify decodes every event
// strictly and checks the layout and bbolt's pages).
func TestCrash(t *testing.T) {
	cycles := 120
	if testing.Short() {
		cycles = 20
	}
	crashTest(t, cycles)
}

// TestCrashBatch: in batch durability a commit returns before its fsync,
// but a crash of the process (not of the kernel) still loses nothing
// acknowledged: the writes are in the page cache, in order. (A power
// failure can lose the last SyncEvery; that is not testable here.)
func TestCrashBatch(t *testing.T) {
	t.Setenv(envSync, "5ms")
	crashTest(t, 30)
}

func crashTest(t *testing.T, cycles int) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	var path string
	var st crashState
	var totalAcks, totalKills, maxEvents, sweeps, tails int
	start := time.Now()
	for cycle := range cycles {
		if cycle%10 == 0 { // a fresh file now and then keeps checking cheap
			path = filepath.Join(t.TempDir(), "crash.db")
			st = crashState{acks: map[string]map[uint64]string{}, outputs: map[string][2]string{}, deleting: map[string]bool{}}
		}
		lines := runAndKill(t, exe, path, uint64(cycle+1), rng)
		totalKills++
		for _, l := range lines {
			f := strings.Fields(l)
			switch f[0] {
			case "ack":
				seq, _ := strconv.ParseUint(f[2], 10, 64)
				if st.acks[f[1]] == nil {
					st.acks[f[1]] = map[uint64]string{}
				}
				st.acks[f[1]][seq] = f[3]
				totalAcks++
			case "out":
				st.outputs[f[2]] = [2]string{f[1], f[3]}
			case "deleting":
				st.deleting[f[1]] = true
			case "error":
				t.Fatalf("cycle %d: child: %s", cycle, l)
			}
		}
		events, sweep, tail := checkCrashed(t, cycle, path, &st)
		maxEvents = max(maxEvents, events)
		if sweep {
			sweeps++
		}
		if tail {
			tails++
		}
	}
	t.Logf("%d cycles, %d kills, %d acknowledged events checked, up to %d events per file; "+
		"%d reopens rebuilt unindexed tails from the log, %d resumed an interrupted delete; %v",
		cycles, totalKills, totalAcks, maxEvents, tails, sweeps, time.Since(start).Round(time.Millisecond))
}

// runAndKill starts the child on path, lets it run a random while and
// kills it; it returns the lines the child printed.
func runAndKill(t *testing.T, exe, path string, seed uint64, rng *rand.Rand) []string {
	t.Helper()
	c := exec.Command(exe)
	c.Env = append(os.Environ(), envChild+"=crash", envPath+"="+path, envSeed+"="+strconv.FormatUint(seed, 10), envSync+"="+os.Getenv(envSync))
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c.Stderr = os.Stderr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan struct{})
	var lines []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			if sc.Text() == "ready" {
				close(ready)
				continue
			}
			lines = append(lines, sc.Text())
		}
	}()
	if rng.IntN(10) == 0 {
		// Now and then during start-up or recovery.
		time.Sleep(time.Duration(rng.IntN(40)) * time.Millisecond)
	} else {
		select {
		case <-ready:
		case <-time.After(10 * time.Second):
			c.Process.Kill()
			t.Fatal("child never became ready")
		}
		time.Sleep(time.Duration(rng.IntN(150_000)) * time.Microsecond)
	}
	c.Process.Signal(syscall.SIGKILL)
	<-done
	err = c.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child did not die of SIGKILL: %v (output %q)", err, lines)
	}
	return lines
}

// checkCrashed opens the crashed store and checks it against what was
// acknowledged. It returns the number of events in the file, and whether
// the reopen had a delete to finish and unindexed events to recover.
func checkCrashed(t *testing.T, cycle int, path string, st *crashState) (events int, sweep, tail bool) {
	t.Helper()
	ctx := t.Context()
	if db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second}); err == nil {
		db.View(func(tx *bolt.Tx) error {
			if tx.Bucket(bucketTrash) == nil || tx.Bucket(bucketMeta) == nil || tx.Bucket(bucketLog) == nil {
				return nil // killed before its first Open made the buckets: a valid empty file
			}
			sweep = tx.Bucket(bucketTrash).Stats().KeyN > 0
			var mark uint64
			if v := tx.Bucket(bucketMeta).Get(keyIndexed); len(v) == 8 {
				mark = bytesToU64(v)
			}
			k, _ := tx.Bucket(bucketLog).Cursor().Seek(u64key(mark + 1))
			tail = k != nil
			return nil
		})
		db.Close()
	}
	s, err := Open(path, nil)
	if err != nil {
		t.Fatalf("cycle %d: open after the kill: %v", cycle, err)
	}
	defer func() {
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}()
	if err := s.Verify(ctx); err != nil {
		t.Fatalf("cycle %d: %v", cycle, err)
	}
	for id, acked := range st.acks {
		last, err := s.LastSeq(ctx, id)
		if errors.Is(err, ErrSessionNotFound) && st.deleting[id] {
			delete(st.acks, id)
			continue
		}
		if err != nil {
			t.Fatalf("cycle %d: session %s with %d acked events: %v", cycle, id, len(acked), err)
		}
		next := uint64(1)
		err = s.ReadRaw(ctx, id, 0, func(seq uint64, data []byte) error {
			if seq != next {
				return fmt.Errorf("seq %d, want %d", seq, next)
			}
			next++
			if h, ok := acked[seq]; ok && h != hash(data) {
				return fmt.Errorf("seq %d: stored bytes differ from the acknowledged event", seq)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("cycle %d: session %s: %v", cycle, id, err)
		}
		if next-1 != last {
			t.Fatalf("cycle %d: session %s: read %d events, last seq %d", cycle, id, next-1, last)
		}
		for seq := range acked {
			if seq > last {
				t.Fatalf("cycle %d: session %s: acknowledged seq %d lost (last is %d)", cycle, id, seq, last)
			}
		}
		events += int(last)
	}
	for oid, o := range st.outputs {
		var got []byte
		from := 1
		for {
			l, err := s.Outputs().ReadLines(ctx, oid, from, 0)
			if err != nil {
				if errors.Is(err, ErrOutputNotFound) && st.deleting[o[0]] {
					delete(st.outputs, oid)
					break
				}
				t.Fatalf("cycle %d: output %s: %v", cycle, oid, err)
			}
			got = append(got, l.Text...)
			if l.To >= l.Total {
				if hash(got) != o[1] {
					t.Fatalf("cycle %d: output %s differs from what was written", cycle, oid)
				}
				break
			}
			from = l.To + 1
		}
	}
	return events, sweep, tail
}

// Opening a store another process holds fails with ErrLocked after the
// timeout, and works once that process is gone.
func TestLockedByAnotherProcess(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "held.db")
	c := exec.Command(exe)
	c.Env = append(os.Environ(), envChild+"=hold", envPath+"="+path)
	out, _ := c.StdoutPipe()
	c.Stderr = os.Stderr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer c.Wait()
	defer c.Process.Kill()
	line, _ := bufio.NewReader(out).ReadString('\n')
	if line != "ready\n" {
		t.Fatalf("child: %q", line)
	}
	start := time.Now()
	_, err = Open(path, &Options{Timeout: 300 * time.Millisecond})
	took := time.Since(start)
	var locked *LockedError
	if !errors.Is(err, ErrLocked) || !errors.As(err, &locked) || locked.Path != path {
		t.Fatalf("Open = %v, want a LockedError", err)
	}
	if took > 2*time.Second {
		t.Fatalf("Open took %v to give up", took)
	}
	if want := "store " + path + " is in use by another process"; !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not say %q", err, want)
	}
	c.Process.Kill()
	c.Wait()
	s, err := Open(path, nil)
	if err != nil {
		t.Fatalf("Open after the holder died: %v", err)
	}
	s.Close()
}
