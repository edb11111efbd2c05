package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/harnessd/harnessd/core/event"
	"github.com/harnessd/harnessd/core/sandbox/netproxy"
	"github.com/harnessd/harnessd/core/session"
)

// egress is one session's proxy: its own unix socket (so every decision
// is the session's), served until close. Decisions are queued for the
// session's log by a goroutine the egress owns; the proxy's callback never
// blocks on the store.
type egress struct {
	socket    string
	p         *netproxy.Proxy
	decisions chan event.NetConnect
	dropped   atomic.Int64
	record    atomic.Pointer[func(event.NetConnect)]
	wg        sync.WaitGroup
	stop      context.CancelFunc
}

func (d *Daemon) newEgress(name string) (*egress, error) {
	dir := filepath.Join(d.runDir, "proxy")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	e := &egress{socket: filepath.Join(dir, name+".sock"), decisions: make(chan event.NetConnect, 256)}
	pc := d.conf().Sandbox.Proxy
	p, err := netproxy.New(netproxy.Config{
		Allow: pc.Allow, Deny: pc.Deny, Ports: pc.Ports, Hosts: d.proxyHosts,
		Logger: d.log,
		OnDecision: func(dec netproxy.Decision) {
			ev := event.NetConnect{Method: dec.Method, Host: dec.Host, Port: dec.Port, Allowed: dec.Allowed,
				Reason: dec.Reason, Status: dec.Status, Closed: dec.Closed, BytesUp: dec.BytesUp, BytesDown: dec.BytesDown}
			select {
			case e.decisions <- ev:
			default:
				e.dropped.Add(1)
			}
		},
	})
	if err != nil {
		return nil, fmt.Errorf("sandbox.proxy: %w", err)
	}
	ln, err := netproxy.ListenUnix(e.socket)
	if err != nil {
		return nil, err
	}
	e.p = p
	ctx, cancel := context.WithCancel(context.Background())
	e.stop = cancel
	e.wg.Go(func() {
		if err := p.Serve(ctx, ln); err != nil && !errors.Is(err, netproxy.ErrClosed) {
			d.log.Warn("egress proxy", "socket", e.socket, "err", err)
		}
	})
	e.wg.Go(func() {
		for ev := range e.decisions { // until close, after the proxy's last decision
			if f := e.record.Load(); f != nil {
				(*f)(ev)
			}
		}
	})
	return e, nil
}

// attach sends the egress's decisions to a session's log from now on.
func (e *egress) attach(s *session.Session, log *slog.Logger) {
	f := func(ev event.NetConnect) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := s.Record(ctx, event.SourceRuntime, 0, ev); err != nil {
			log.Warn("net_connect not recorded", "session", s.ID(), "err", err)
		}
	}
	e.record.Store(&f)
}

// close stops the proxy, records its last decisions, and removes the
// socket.
func (e *egress) close() {
	e.p.Close() // returns after Serve, so no decision comes after it
	e.stop()
	close(e.decisions)
	e.wg.Wait()
	if n := e.dropped.Load(); n > 0 {
		if f := e.record.Load(); f != nil {
			(*f)(event.NetConnect{Host: "(unrecorded)", Reason: fmt.Sprintf("%d decisions were not recorded: the session's log fell behind", n)})
		}
	}
	os.Remove(e.socket)
}
