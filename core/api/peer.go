package api

import (
	"context"
	"net"
	"os"
	"slices"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Peer is who is on the other end of a unix-socket connection, as the
// kernel says (SO_PEERCRED): the credentials of the process that
// connected, at the time it connected.
type Peer struct {
	UID, GID int
	PID      int
	// Groups are the peer's supplementary groups at connect time
	// (SO_PEERGROUPS); nil if the kernel could not say.
	Groups []int
}

type peerKey struct{}

// withPeer is the http.Server's ConnContext: it reads the peer's
// credentials once per connection.
func withPeer(ctx context.Context, c net.Conn) context.Context {
	p, ok := peerOf(c)
	if !ok {
		return ctx
	}
	return context.WithValue(ctx, peerKey{}, p)
}

// peerOf reads a unix-socket connection's peer credentials.
func peerOf(c net.Conn) (Peer, bool) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return Peer{}, false
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return Peer{}, false
	}
	var cred *unix.Ucred
	var credErr error
	var groups []int
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
		groups = peerGroups(int(fd))
	}); err != nil || credErr != nil {
		return Peer{}, false
	}
	return Peer{UID: int(cred.Uid), GID: int(cred.Gid), PID: int(cred.Pid), Groups: groups}, true
}

// peerGroups reads SO_PEERGROUPS: the groups the kernel recorded when the
// peer connected, so a pid reused since then cannot lend its groups.
func peerGroups(fd int) []int {
	buf := make([]uint32, 64)
	for {
		n := uint32(len(buf) * 4)
		_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_SOCKET, unix.SO_PEERGROUPS,
			uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(&n)), 0)
		if e == unix.ERANGE && len(buf) < 1<<16 {
			buf = make([]uint32, n/4+1)
			continue
		}
		if e != 0 {
			return nil
		}
		out := make([]int, n/4)
		for i := range out {
			out[i] = int(buf[i])
		}
		return out
	}
}

// PeerFrom returns the peer of a request's connection.
func PeerFrom(ctx context.Context) (Peer, bool) {
	p, ok := ctx.Value(peerKey{}).(Peer)
	return p, ok
}

// AllowUsers returns the default policy: root, the daemon's own user,
// the uids listed, and any peer whose primary or supplementary group is
// one of gids.
func AllowUsers(uids, gids []int) func(Peer) bool {
	self := os.Geteuid()
	return func(p Peer) bool {
		if p.UID == 0 || p.UID == self || slices.Contains(uids, p.UID) {
			return true
		}
		if len(gids) == 0 {
			return false
		}
		if slices.Contains(gids, p.GID) {
			return true
		}
		for _, g := range p.Groups {
			if slices.Contains(gids, g) {
				return true
			}
		}
		return false
	}
}
