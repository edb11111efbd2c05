package terminal

import (
	"context"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The red team's attacks on interrupting, timeouts and repairs that
// succeeded against the code before their fixes: each failed then.

// drain empties c.
func drain(c chan os.Signal) {
	for {
		select {
		case <-c:
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
	if os.Getenv("HARNESSD_OWN_GROUP_PROBE") == "1" {
		// The child: in a process group of its own (the parent made it
		// so), catching SIGINT, so that a wrong kill(-0) shows here and
		// reaches nothing else.
		selfInt := make(chan os.Signal, 64)
		signal.Notify(selfInt, syscall.SIGINT)
		ownGroupProbe(t, selfInt)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestRedTeamInterruptSignalsOwnProcessGroup$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "HARNESSD_OWN_GROUP_PROBE=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS") {
		t.Errorf("the probe in a process group of its own failed (%v):\n%s", err, out)
	}
}

func ownGroupProbe(t *testing.T, selfInt chan os.Signal) {
	term := newTerm(t, Options{SoftTimeout: 2 * time.Second})
	if res, _ := run(t, term, req{Command: "exec sleep 30", SoftTimeout: 300 * time.Millisecond}); !res.Running {
		t.Fatalf("exec sleep 30: %+v", res)
	}
	drain(selfInt)
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
	drain(selfInt)
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
