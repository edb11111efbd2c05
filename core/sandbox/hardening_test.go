package sandbox

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestTIOCSTIRefused: a command cannot type into the shell's terminal
// (issue 16, item 4). With TIOCSTI the injected line ran outside any
// command of the terminal's, and from then on every result carried the
// previous command's output and exit code.
func TestTIOCSTIRefused(t *testing.T) {
	requireRoot(t)
	d := newDriver(t, NativeOptions{})
	b := newBox(t, d, Spec{})
	inject := `python3 -c 'import fcntl,termios
for c in "touch /workspace/unrecorded\n": fcntl.ioctl(0, termios.TIOCSTI, c.encode())'`
	code, out := b.run(inject)
	if code == 0 || !strings.Contains(out, "Operation not permitted") {
		t.Errorf("TIOCSTI: exit %d, output %q; want EPERM", code, out)
	}
	code, out = b.run(`python3 -c 'import fcntl; fcntl.ioctl(0, 0x541C, b"\x02")'`)
	if code == 0 || !strings.Contains(out, "Operation not permitted") {
		t.Errorf("TIOCLINUX: exit %d, output %q; want EPERM", code, out)
	}
	// The record stays in step with the shell.
	if code, out := b.run("echo A; (exit 3)"); code != 3 || strings.TrimSpace(out) != "A" {
		t.Errorf("after the injection: exit %d, output %q; want 3, \"A\"", code, out)
	}
	if code, out := b.run("echo B"); code != 0 || strings.TrimSpace(out) != "B" {
		t.Errorf("after the injection: exit %d, output %q; want 0, \"B\"", code, out)
	}
	if _, err := os.Stat(filepath.Join(b.ws, "unrecorded")); err == nil {
		t.Errorf("the injected command ran")
	}
}

// TestSocketFamilies: only AF_UNIX, AF_INET, AF_INET6 and AF_NETLINK
// sockets can be made (issue 16, item 3): vsock's ports are the host's,
// whatever the network namespace.
func TestSocketFamilies(t *testing.T) {
	requireRoot(t)
	d := newDriver(t, NativeOptions{})
	b := newBox(t, d, Spec{})
	try := func(family, typ int) string {
		return b.must(`python3 -c 'import socket
try:
    socket.socket(` + itoa(family) + `, ` + itoa(typ) + `).close(); print("ok")
except OSError as e:
    print(e.errno)'`)
	}
	for _, c := range []struct {
		name        string
		family, typ int
		want        string
	}{
		{"AF_UNIX", unix.AF_UNIX, unix.SOCK_STREAM, "ok"},
		{"AF_INET", unix.AF_INET, unix.SOCK_STREAM, "ok"},
		{"AF_INET6", unix.AF_INET6, unix.SOCK_DGRAM, "ok"},
		{"AF_NETLINK", unix.AF_NETLINK, unix.SOCK_RAW, "ok"},
		{"AF_VSOCK", unix.AF_VSOCK, unix.SOCK_STREAM, itoa(int(unix.EAFNOSUPPORT))},
		{"AF_VSOCK dgram", unix.AF_VSOCK, unix.SOCK_DGRAM, itoa(int(unix.EAFNOSUPPORT))},
		{"AF_PACKET", unix.AF_PACKET, unix.SOCK_RAW, itoa(int(unix.EAFNOSUPPORT))},
		{"AF_ALG", unix.AF_ALG, unix.SOCK_SEQPACKET, itoa(int(unix.EAFNOSUPPORT))},
		{"AF_KEY", unix.AF_KEY, unix.SOCK_RAW, itoa(int(unix.EAFNOSUPPORT))},
	} {
		if got := try(c.family, c.typ); got != c.want {
			t.Errorf("socket(%s): %s, want %s", c.name, got, c.want)
		}
	}
	if got := b.must(`python3 -c 'import socket; a, b = socket.socketpair(); print("ok")'`); got != "ok" {
		t.Errorf("socketpair(AF_UNIX): %s", got)
	}
}

// TestPersonality: personality(2) may only query or set PER_LINUX (issue
// 16, item 6): READ_IMPLIES_EXEC would make every readable mapping
// executable.
func TestPersonality(t *testing.T) {
	requireRoot(t)
	d := newDriver(t, NativeOptions{})
	b := newBox(t, d, Spec{})
	for _, c := range []struct{ arg, want string }{
		{"0xffffffff", "0 "},
		{"0", "0 "},
		{"0x0400000", "-1 Operation not permitted"}, // READ_IMPLIES_EXEC
		{"0x0040000", "-1 Operation not permitted"}, // ADDR_NO_RANDOMIZE
		{"0x0200000", "-1 Operation not permitted"}, // MMAP_PAGE_ZERO
	} {
		got := b.must(perlSyscall(unix.SYS_PERSONALITY, c.arg))
		if !strings.HasPrefix(got+" ", c.want) {
			t.Errorf("personality(%s): %q, want %q", c.arg, got, c.want)
		}
	}
	if code, out := b.run("setarch -R true"); code == 0 {
		t.Errorf("setarch -R (ADDR_NO_RANDOMIZE) worked: %q", out)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
