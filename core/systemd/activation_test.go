package systemd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/harnessd/harnessd/core/systemd/sdtest"
)

// serveChild is a miniature daemon, in the order harnessd serve follows:
// take the activation socket, serve HTTP on it, Ready, Watchdog; on
// SIGTERM, Stopping, shut down, exit 0.
func serveChild() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	ls, err := Listeners()
	if err != nil || len(ls) != 1 {
		fmt.Fprintf(os.Stderr, "Listeners: %d listeners, %v\n", len(ls), err)
		return 3
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /state", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]string{
			"pid":            strconv.Itoa(os.Getpid()),
			"LISTEN_PID":     os.Getenv("LISTEN_PID"),
			"LISTEN_FDS":     os.Getenv("LISTEN_FDS"),
			"LISTEN_FDNAMES": os.Getenv("LISTEN_FDNAMES"),
		})
	})
	srv := &http.Server{Handler: mux}
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := srv.Serve(ls[0]); !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintln(os.Stderr, "Serve:", err)
		}
	})
	if sent, err := Ready(); !sent || err != nil {
		fmt.Fprintf(os.Stderr, "Ready: sent=%v, %v\n", sent, err)
		return 4
	}
	Status("serving on %s", ls[0].Addr())
	wg.Go(func() {
		if err := Watchdog(ctx, func(context.Context) error { return nil }); err != nil {
			fmt.Fprintln(os.Stderr, "Watchdog:", err)
		}
	})
	<-ctx.Done()
	Stopping()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	srv.Shutdown(sctx)
	wg.Wait()
	return 0
}

// TestSocketActivation runs serveChild as systemd would run the daemon: the
// manager creates the socket, the child only inherits it as fd 3.
func TestSocketActivation(t *testing.T) {
	m := sdtest.New(t)
	sock := m.Listen(t, filepath.Join(t.TempDir(), "harnessd.sock"))
	const wd = 300 * time.Millisecond // pings every 150ms
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = childEnv("serve")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	m.Prepare(cmd, wd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("child output:\n%s", out.String())
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	if err := m.WaitFor(ctx, "READY=1"); err != nil {
		t.Fatal(err)
	}
	readyAt := time.Now()

	// The API works over the path the manager created.
	client := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		},
	}}
	defer client.CloseIdleConnections()
	resp, err := client.Get("http://harnessd/state")
	if err != nil {
		t.Fatal(err)
	}
	var state map[string]string
	err = json.NewDecoder(resp.Body).Decode(&state)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	// The same pid the manager started: LISTEN_PID was right without any
	// help from the child, and the child consumed the variables.
	want := map[string]string{"pid": strconv.Itoa(cmd.Process.Pid), "LISTEN_PID": "", "LISTEN_FDS": "", "LISTEN_FDNAMES": ""}
	for k, v := range want {
		if state[k] != v {
			t.Errorf("child's %s = %q, want %q", k, state[k], v)
		}
	}

	// Pings keep coming: at least one in every window of 3 intervals.
	if err := m.WaitFor(ctx, "WATCHDOG=1"); err != nil {
		t.Fatal(err)
	}
	n0 := m.Count("WATCHDOG=1")
	time.Sleep(3 * wd)
	n1 := m.Count("WATCHDOG=1")
	if n1 <= n0 {
		t.Errorf("no WATCHDOG=1 within %v (%d before, %d after)", 3*wd, n0, n1)
	}
	// Not a busy loop either: 150ms apart means about 8 since READY.
	elapsed := time.Since(readyAt)
	if limit := 3 * int(elapsed/(wd/2)+2); n1 > limit {
		t.Errorf("%d pings in %v, more than %d: pinging too often", n1, elapsed, limit)
	}
	t.Logf("%d WATCHDOG=1 in %v with WATCHDOG_USEC=%d", n1, elapsed.Round(time.Millisecond), wd.Microseconds())

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := m.WaitFor(ctx, "STOPPING=1"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("child after SIGTERM: %v, want exit 0", err)
		}
	case <-ctx.Done():
		t.Fatal("child did not exit after SIGTERM")
	}

	// The manager still holds the socket, as systemd does: a client that
	// connects while the daemon is down waits in the backlog.
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatalf("dial after the child exited: %v", err)
	}
	c.Close()
	t.Logf("messages: %q", m.Messages())
}
