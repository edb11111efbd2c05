package systemd

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// The helper-process pattern: the test binary runs itself as the child a
// test needs, switched by envChild. TestMain dispatches before any test
// runs, so a child never runs tests.
const envChild = "HARNESSD_SYSTEMD_CHILD"

var children = map[string]func() int{
	"serve":     serveChild,     // activation_test.go
	"listeners": listenersChild, // listeners_test.go
}

func TestMain(m *testing.M) {
	if mode := os.Getenv(envChild); mode != "" {
		child, ok := children[mode]
		if !ok {
			fmt.Fprintf(os.Stderr, "unknown %s=%q\n", envChild, mode)
			os.Exit(2)
		}
		os.Exit(child())
	}
	os.Exit(m.Run())
}

// childEnv returns this process's environment with envChild=mode, and
// none of the variables systemd sets (the test may itself run under
// systemd). Under -race it also drops the race detector's one-second sleep
// at exit, which would otherwise be most of each child's run time.
func childEnv(mode string, extra ...string) []string {
	var env []string
	gorace := "atexit_sleep_ms=0"
	for _, kv := range os.Environ() {
		switch k, v, _ := strings.Cut(kv, "="); k {
		case envChild, "LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES", "NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID":
			continue
		case "GORACE":
			gorace = v + " " + gorace
			continue
		}
		env = append(env, kv)
	}
	return append(append(env, envChild+"="+mode, "GORACE="+gorace), extra...)
}
