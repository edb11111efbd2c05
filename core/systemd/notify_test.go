package systemd

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/core/systemd/sdtest"
)

func TestNotifyWithoutSocket(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", "")
	os.Unsetenv("NOTIFY_SOCKET")
	calls := map[string]func() (bool, error){
		"Notify":    func() (bool, error) { return Notify("READY=1") },
		"Ready":     Ready,
		"Stopping":  Stopping,
		"Reloading": Reloading,
		"Status":    func() (bool, error) { return Status("x %d", 1) },
	}
	for name, call := range calls {
		if sent, err := call(); sent || err != nil {
			t.Errorf("%s() = %v, %v; want false, nil", name, sent, err)
		}
	}
}

func TestNotify(t *testing.T) {
	m := sdtest.New(t)
	t.Setenv("NOTIFY_SOCKET", m.NotifySocket())
	steps := []struct {
		call func() (bool, error)
		want string // the datagram, or a prefix ending in "…"
	}{
		{func() (bool, error) { return Notify() }, ""}, // nothing sent
		{Ready, "READY=1"},
		{func() (bool, error) { return Status("serving %d sessions\nsecond line", 3) }, "STATUS=serving 3 sessions second line"},
		{func() (bool, error) { return Notify("STATUS=a", "ERRNO=0") }, "STATUS=a\nERRNO=0"},
		{Reloading, "RELOADING=1\nMONOTONIC_USEC=…"},
		{Stopping, "STOPPING=1"},
	}
	var want []string
	for _, s := range steps {
		sent, err := s.call()
		if err != nil || sent != (s.want != "") {
			t.Fatalf("sending %q: sent=%v, %v", s.want, sent, err)
		}
		if s.want != "" {
			want = append(want, s.want)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := m.WaitFor(ctx, "STOPPING=1"); err != nil {
		t.Fatal(err)
	}
	got := m.Messages()
	match := slices.EqualFunc(got, want, func(g, w string) bool {
		if p, ok := strings.CutSuffix(w, "…"); ok {
			return strings.HasPrefix(g, p) && len(g) > len(p)
		}
		return g == w
	})
	if !match {
		t.Errorf("received %q, want %q", got, want)
	}
}

func TestNotifyUnreachableSocket(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", t.TempDir()+"/nobody-listens")
	sent, err := Ready()
	if sent || err == nil {
		t.Errorf("Ready() = %v, %v; want false and an error", sent, err)
	}
}
