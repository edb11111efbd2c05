package api

import (
	"bufio"
	"context"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Peer is who is on the other end of a unix-socket connection, as the
// kernel says (SO_PEERCRED): the credentials of the process that
// connected, at the time it connected.
type Peer struct {
	UID, GID int
	PID      int
	// Groups are the peer's supplementary groups, read from
	// /proc/PID/status when a gid rule needs them; nil if unreadable.
	Groups []int
}

type peerKey struct{}

// withPeer is the http.Server's ConnContext: it reads the peer's
// credentials once per connection.
func withPeer(ctx context.Context, c net.Conn) context.Context {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return ctx
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return ctx
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil || credErr != nil {
		return ctx
	}
	return context.WithValue(ctx, peerKey{}, Peer{UID: int(cred.Uid), GID: int(cred.Gid), PID: int(cred.Pid)})
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
		for _, g := range supplementaryGroups(p.PID) {
			if slices.Contains(gids, g) {
				return true
			}
		}
		return false
	}
}

// supplementaryGroups reads the Groups line of /proc/PID/status. The
// process may have exited (or be another by now); then it has none, and
// only its primary gid counts.
func supplementaryGroups(pid int) []int {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return nil
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "Groups:")
		if !ok {
			continue
		}
		var out []int
		for _, f := range strings.Fields(rest) {
			if g, err := strconv.Atoi(f); err == nil {
				out = append(out, g)
			}
		}
		return out
	}
	return nil
}
