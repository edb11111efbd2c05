package api_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/harnessd/harnessd/core/api"
	"github.com/harnessd/harnessd/core/config"
	"github.com/harnessd/harnessd/core/daemon"
	"github.com/harnessd/harnessd/core/event"
)

// TestDiskFull runs the daemon with its data on an 8 MiB tmpfs, in both
// durability modes, and fills it. What a client is told must be what
// happened: an action that could not be recorded never runs (507
// store_full); a command that ran but whose answer could not be recorded
// says so (507 record_incomplete) and is answered in the log as soon as
// space returns; /healthz and /metrics say the store cannot write; all of
// it recovers by itself.
func TestDiskFull(t *testing.T) {
	for _, durability := range []string{config.DurabilityStrict, config.DurabilityBatch} {
		t.Run(durability, func(t *testing.T) { diskFull(t, durability) })
	}
}

func diskFull(t *testing.T, durability string) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	os.Mkdir(data, 0o700)
	if err := syscall.Mount("tmpfs", data, "tmpfs", 0, "size=8m"); err != nil {
		t.Fatalf("mount a tmpfs (CI runs as root): %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(data, syscall.MNT_DETACH) })
	cfg := testConfig(t, data)
	cfg.Daemon.Socket = filepath.Join(dir, "h.sock")
	cfg.Store.Durability = durability
	td := startDaemon(t, cfg)
	ctx := context.Background()
	if _, err := td.cl.CreateSession(ctx, daemon.CreateRequest{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	run(t, td.cl, "s", "echo warm")
	filler := filepath.Join(data, "filler")
	fill := func() {
		// Fill what is left, the way a runaway log would.
		f, err := os.Create(filler)
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 64<<10)
		for {
			if _, err := f.Write(buf); err != nil {
				break
			}
		}
		f.Close()
	}
	status := func(err error) (int, string) {
		var ae *api.Error
		if !errors.As(err, &ae) {
			return 0, ""
		}
		return ae.Status, ae.Code
	}

	// 1. Fill the disk, then act until the store needs a page it cannot
	// have. Each action touches its own marker: one refused with
	// store_full must not have run; one answered record_incomplete ran.
	fill()
	pad := " # " + strings.Repeat("x", 3000) // commands this long fill pages quickly
	refused, incomplete, i := false, 0, 0
	for ; i < 5000 && !refused; i++ {
		marker := filepath.Join(dir, fmt.Sprintf("ran-%d", i))
		_, err := td.cl.Act(ctx, "s", event.SourceUser, event.CmdRun{Command: "touch " + marker + pad})
		_, statErr := os.Stat(marker)
		switch st, code := status(err); {
		case err == nil:
		case st == http.StatusInsufficientStorage && code == "store_full":
			if statErr == nil {
				t.Fatalf("action %d was refused (%v) but ran", i, err)
			}
			refused = true
		case st == http.StatusInsufficientStorage && code == "record_incomplete":
			if statErr != nil || !strings.Contains(err.Error(), "ran") {
				t.Fatalf("action %d: %v, but it did not run", i, err)
			}
			incomplete++
		default:
			t.Fatalf("action %d on a full disk: %v", i, err)
		}
	}
	if !refused {
		t.Fatal("5000 actions on a full 8 MiB disk were all recorded")
	}
	t.Logf("%s: refused at action %d, after %d answered record_incomplete", durability, i, incomplete)
	if code, body := raw(t, td.socket, "GET", "/healthz", ""); code != http.StatusInsufficientStorage || !strings.Contains(body, "store_full") {
		t.Errorf("healthz on a full disk: %d %s", code, body)
	}
	if _, body := raw(t, td.socket, "GET", "/metrics", ""); !strings.Contains(body, "harnessd_store_writable 0") {
		t.Errorf("metrics on a full disk do not say the store cannot write")
	}

	// 2. Space returns: everything recovers by itself.
	os.Remove(filler)
	if code, body := raw(t, td.socket, "GET", "/healthz", ""); code != http.StatusOK {
		t.Errorf("healthz after space returned: %d %s", code, body)
	}
	if out := run(t, td.cl, "s", "echo back"); out.Output != "back\n" {
		t.Fatalf("after space returned: %+v", out)
	}

	// 3. The disk fills while a command runs (its output with it): the
	// client is told either its observation, or that it ran and its record
	// is incomplete; once space returns the log is whole again.
	_, err := td.cl.Act(ctx, "s", event.SourceUser, event.CmdRun{Command: "head -c 100000000 /dev/zero > " + filler + "; seq 1 200000"})
	if st, code := status(err); err != nil && (st != http.StatusInsufficientStorage || code != "record_incomplete") {
		t.Fatalf("a command that filled the disk: %v, want its observation or 507 record_incomplete", err)
	}
	os.Remove(filler)
	if out := run(t, td.cl, "s", "echo next"); out.Output != "next\n" {
		t.Fatalf("after: %+v", out)
	}
	// Every action in the log has its answer, in order.
	var evs []event.Event
	if err := td.cl.Events(ctx, "s", 0, false, func(ev event.Event) error { evs = append(evs, ev); return nil }); err != nil {
		t.Fatal(err)
	}
	answered := map[uint64]bool{}
	for _, ev := range evs {
		if ev.Cause != 0 {
			answered[ev.Cause] = true
		}
	}
	for _, ev := range evs {
		if c, ok := ev.Payload.(event.CmdRun); ok && !answered[ev.Seq] {
			t.Errorf("cmd_run %d %q has no answer", ev.Seq, c.Command)
		}
	}
}
