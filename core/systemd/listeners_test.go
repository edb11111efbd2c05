package systemd

import (
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

func TestListenersNotActivated(t *testing.T) {
	t.Setenv("LISTEN_PID", "")
	t.Setenv("LISTEN_FDS", "")
	os.Unsetenv("LISTEN_PID")
	os.Unsetenv("LISTEN_FDS")
	ls, err := Listeners()
	if ls != nil || err != nil {
		t.Fatalf("Listeners() = %v, %v; want nil, nil", ls, err)
	}
}

func TestListenersEnv(t *testing.T) {
	self := strconv.Itoa(os.Getpid())
	other := strconv.Itoa(os.Getpid() + 1)
	tests := []struct {
		name     string
		pid, fds string
		want     error // nil: no listeners and no error
	}{
		{"wrong LISTEN_PID", other, "1", ErrListenPID},
		{"LISTEN_PID not a number", "12ab", "1", ErrEnv},
		{"LISTEN_FDS without LISTEN_PID", "", "1", ErrEnv},
		{"LISTEN_FDS not a number", self, "one", ErrEnv},
		{"LISTEN_FDS negative", self, "-1", ErrEnv},
		{"LISTEN_FDS zero", self, "0", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("LISTEN_PID", tt.pid)
			t.Setenv("LISTEN_FDS", tt.fds)
			t.Setenv("LISTEN_FDNAMES", "harnessd.socket")
			ls, err := Listeners()
			if ls != nil {
				t.Errorf("Listeners() returned %d listeners", len(ls))
			}
			if !errors.Is(err, tt.want) || (tt.want == nil && err != nil) {
				t.Errorf("Listeners() error = %v, want %v", err, tt.want)
			}
			// Consumed whatever the outcome, so no child inherits them.
			for _, k := range []string{"LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"} {
				if v, ok := os.LookupEnv(k); ok {
					t.Errorf("%s=%q still set", k, v)
				}
			}
		})
	}
}

// listenersChild calls Listeners on the descriptors its parent passed and
// prints what it got as JSON. It sets LISTEN_PID to its own pid itself:
// these tests are about descriptor types; TestSocketActivation checks the
// pid as systemd sets it, through sdtest.
func listenersChild() int {
	os.Setenv("LISTEN_PID", strconv.Itoa(os.Getpid()))
	var r listenersResult
	ls, err := Listeners()
	r.N = len(ls)
	if err != nil {
		r.Err = err.Error()
		r.NotListener = errors.Is(err, ErrNotListener)
	}
	r.CloseOnExec = true
	for _, l := range ls {
		r.Networks = append(r.Networks, l.Addr().Network())
		sc, _ := l.(interface {
			SyscallConn() (syscall.RawConn, error)
		})
		rc, err := sc.SyscallConn()
		if err != nil {
			r.CloseOnExec = false
			continue
		}
		rc.Control(func(fd uintptr) {
			flags, _, errno := syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_GETFD, 0)
			if errno != 0 || flags&syscall.FD_CLOEXEC == 0 {
				r.CloseOnExec = false
			}
		})
	}
	r.EnvLeft = os.Getenv("LISTEN_FDS") + os.Getenv("LISTEN_PID") + os.Getenv("LISTEN_FDNAMES")
	json.NewEncoder(os.Stdout).Encode(r)
	return 0
}

type listenersResult struct {
	N           int
	Networks    []string
	Err         string
	NotListener bool
	CloseOnExec bool
	EnvLeft     string
}

// TestListenersDescriptors passes real descriptors of each kind to a child.
func TestListenersDescriptors(t *testing.T) {
	dir := t.TempDir()
	seq := 0
	path := func() string { seq++; return filepath.Join(dir, strconv.Itoa(seq)+".sock") }
	unixListener := func(t *testing.T) *os.File {
		l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path(), Net: "unix"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		f, err := l.File()
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	tcpListener := func(t *testing.T) *os.File {
		l, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		f, err := l.File()
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	datagram := func(t *testing.T) *os.File {
		c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path(), Net: "unixgram"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		f, err := c.File()
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	seqpacket := func(t *testing.T) *os.File {
		l, err := net.ListenUnix("unixpacket", &net.UnixAddr{Name: path(), Net: "unixpacket"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		f, err := l.File()
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	connected := func(t *testing.T) *os.File { // what Accept=yes passes
		fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		syscall.Close(fds[1])
		return os.NewFile(uintptr(fds[0]), "socketpair")
	}
	regular := func(t *testing.T) *os.File {
		f, err := os.Create(filepath.Join(dir, "plain"))
		if err != nil {
			t.Fatal(err)
		}
		return f
	}

	type fileFunc func(*testing.T) *os.File
	tests := []struct {
		name     string
		files    []fileFunc
		wantN    int
		wantNets []string
		wantErr  string // substring; empty means success
	}{
		{"unix stream", []fileFunc{unixListener}, 1, []string{"unix"}, ""},
		{"unix and tcp", []fileFunc{unixListener, tcpListener}, 2, []string{"unix", "tcp"}, ""},
		{"datagram", []fileFunc{datagram}, 0, nil, "socket type 2, want SOCK_STREAM"},
		{"seqpacket", []fileFunc{seqpacket}, 0, nil, "socket type 5, want SOCK_STREAM"},
		{"connected stream", []fileFunc{connected}, 0, nil, "not listening"},
		{"regular file", []fileFunc{regular}, 0, nil, "socket operation on non-socket"},
		{"good then bad", []fileFunc{unixListener, datagram}, 0, nil, "fd 4 (second)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var files []*os.File
			for _, f := range tt.files {
				file := f(t)
				t.Cleanup(func() { file.Close() })
				files = append(files, file)
			}
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = childEnv("listeners", "LISTEN_FDS="+strconv.Itoa(len(files)), "LISTEN_FDNAMES=first:second")
			cmd.ExtraFiles = files
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("child: %v\n%s", err, stderr.String())
			}
			var r listenersResult
			if err := json.Unmarshal(out, &r); err != nil {
				t.Fatalf("child printed %q: %v", out, err)
			}
			if r.N != tt.wantN || strings.Join(r.Networks, ",") != strings.Join(tt.wantNets, ",") {
				t.Errorf("got %d listeners %v, want %d %v", r.N, r.Networks, tt.wantN, tt.wantNets)
			}
			switch {
			case tt.wantErr == "" && r.Err != "":
				t.Errorf("error %q, want none", r.Err)
			case tt.wantErr != "" && (!strings.Contains(r.Err, tt.wantErr) || !r.NotListener):
				t.Errorf("error %q (ErrNotListener: %v), want ErrNotListener containing %q", r.Err, r.NotListener, tt.wantErr)
			}
			if !r.CloseOnExec {
				t.Error("a listener's descriptor is not close-on-exec: children would inherit it")
			}
			if r.EnvLeft != "" {
				t.Errorf("LISTEN_* left in the environment: %q", r.EnvLeft)
			}
		})
	}
}
