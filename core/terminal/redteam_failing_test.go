//go:build redteam

package terminal

import (
	"context"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The red team's successful attacks: each test fails on the code it was
// written against. They build only with the tag redteam, so the default
// test run stays green:
//
//	go test -race -count=1 -tags redteam ./core/terminal -run 'TestRedTeam'
//
// One of them (TestRedTeamInterruptSignalsOwnProcessGroup) makes the
// terminal send SIGINT to the test binary's own process group. So that it
// cannot kill `go test` or a pipe it feeds, this file moves the test
// binary into a process group of its own and catches SIGINT for the whole
// run: selfInt collects what arrives.
var selfInt = make(chan os.Signal, 64)

func init() {
	signal.Notify(selfInt, syscall.SIGINT)
	_ = syscall.Setpgid(0, 0)
}

func drainSelfInt() {
	for {
		select {
		case <-selfInt:
		default:
			return
		}
	}
}

// TestRedTeamInterruptSignalsOwnProcessGroup: when the shell dies while
// interrupt() watches for new foreground jobs, TIOCGPGRP on the master
// reports 0 (the session has no foreground group any more), cur != pg,
// and shell.go's interrupt sends kill(-0, SIGINT): SIGINT to harnessd's
// own process group. Here bash was replaced by `exec sleep 30`; an
// Interrupt kills sleep (the shell), then signals the daemon.
func TestRedTeamInterruptSignalsOwnProcessGroup(t *testing.T) {
	term := newTerm(t, Options{SoftTimeout: 2 * time.Second})
	if res, _ := run(t, term, req{Command: "exec sleep 30", SoftTimeout: 300 * time.Millisecond}); !res.Running {
		t.Fatalf("exec sleep 30: %+v", res)
	}
	drainSelfInt()
	if err := term.Interrupt(context.Background()); err != nil {
		t.Fatalf("Interrupt: %v", err)
	}
	select {
	case <-selfInt:
		t.Errorf("Interrupt of `exec sleep 30` sent SIGINT to the test process's own process group")
	case <-time.After(500 * time.Millisecond):
	}
	// The same through the hard-timeout ladder (the watcher, no caller).
	if res, _ := run(t, term, req{Command: "exec sleep 30", Timeout: 300 * time.Millisecond, SoftTimeout: 100 * time.Millisecond}); !res.Running {
		t.Fatalf("exec sleep 30 (deadline): %+v", res)
	}
	drainSelfInt()
	select {
	case <-selfInt:
		t.Errorf("the hard timeout of `exec sleep 30` sent SIGINT to the test process's own process group")
	case <-time.After(1500 * time.Millisecond):
	}
}

// TestRedTeamWatcherInterruptsFinishedCommand: a command that finished
// before its deadline while no call waited is still busy (nobody looked);
// at the deadline the watcher's expire runs the interrupt ladder
// (terminal.go:1638, 1651 -> interrupt 1402) without first checking
// isDone, SIGINTs bash at its prompt, and reports exit 130 and TimedOut
// for `sleep 0.3` with a 1s limit. wait's own hard timer (terminal.go:1220)
// does the same when it fires before the poll has looked.
func TestRedTeamWatcherInterruptsFinishedCommand(t *testing.T) {
	term := newTerm(t, Options{SoftTimeout: 2 * time.Second})
	if res, _ := run(t, term, req{Command: "sleep 0.3", Timeout: time.Second, SoftTimeout: 100 * time.Millisecond}); !res.Running {
		t.Fatalf("sleep 0.3: %+v", res)
	}
	time.Sleep(1500 * time.Millisecond)
	res, out := run(t, term, req{})
	if res.TimedOut || res.ExitCode != 0 {
		t.Errorf("sleep 0.3 (1s limit), read at 1.5s: %+v %q, want exit 0, not timed out", res, out)
	}

	// The same with a call waiting: with the prompt invisible (stderr
	// away) the end is seen only by wait's poll, which backs off to 100ms,
	// so the hard timer at 400ms fires first for a command that ended at
	// ~345ms, and interrupt signals bash at its prompt.
	res, out = run(t, term, req{Command: "exec 2>/dev/null; sleep 0.34", Timeout: 400 * time.Millisecond})
	if res.TimedOut || res.ExitCode != 0 {
		t.Errorf("sleep 0.34 (400ms limit), a call waiting: %+v %q, want exit 0, not timed out", res, out)
	}
}

// TestRedTeamStoppedDuringRepair: a command turns job control off and
// has bash stopped a moment later. The next call's prepare types `set -m`
// (terminal.go:1011 -> repair -> typeAndWait), which never sends SIGCONT
// (wait does, typeAndWait does not), so the repair times out and the shell
// is rebuilt. prepare then checks stdout on the dead shell (`sh` taken at
// terminal.go:984, used at 1015) and notes a stdout redirect that never
// happened.
func TestRedTeamStoppedDuringRepair(t *testing.T) {
	term := newTerm(t, Options{SoftTimeout: 3 * time.Second})
	run(t, term, req{Command: "set +m; (sleep 0.3; kill -STOP $$) &"})
	time.Sleep(600 * time.Millisecond)
	res, out := run(t, term, req{Command: "echo ok"})
	if res.Rebuilt {
		t.Errorf("a stopped bash was rebuilt instead of continued: %q", res.Note)
	}
	if strings.Contains(res.Note, "stdout does not go to the terminal") {
		t.Errorf("note about stdout checked on the old, dead shell: %q (output %q)", res.Note, out)
	}
}

// TestRedTeamInterruptRacesReinit: Interrupt (no mu) reads sh.procOK,
// promptBuf, promptLen and image in atPrompt (shell.go:610) while a Run's
// reinit after `exec bash` writes them in learn (shell.go:443-445) and
// sets image = 0 (terminal.go:1351). Fails under -race.
func TestRedTeamInterruptRacesReinit(t *testing.T) {
	term := newTerm(t, Options{SoftTimeout: 5 * time.Second})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			_ = term.Interrupt(context.Background())
			time.Sleep(200 * time.Microsecond)
		}
	}()
	for range 3 {
		run(t, term, req{Command: "exec bash"})
	}
	close(stop)
	wg.Wait()
}

// TestRedTeamRefusedCommandGetsPreviousExitCode: a command sent while the
// previous one still runs is NOT run (terminal.go:718), but the call then
// waits (719) and, when the previous command ends, returns that command's
// exit code as this call's, not Running, with a note that still says
// "the previous command is still running".
func TestRedTeamRefusedCommandGetsPreviousExitCode(t *testing.T) {
	term := newTerm(t, Options{SoftTimeout: 3 * time.Second})
	run(t, term, req{Command: "sleep 0.4; (exit 7)", SoftTimeout: 50 * time.Millisecond})
	res, out := run(t, term, req{Command: "echo B"})
	if !strings.Contains(out, "B") && res.ExitCode == 7 && !strings.Contains(res.Note, "exit code 7") {
		t.Errorf("`echo B` was not run but its call reports the previous command's exit code as its own: %+v %q", res, out)
	}
}
