package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/harnessd/harnessd/core/daemon"
	"github.com/harnessd/harnessd/core/event"
)

// The slow part's settings.
const (
	slowBodyTimeout = 2 * time.Second
	slowSlack       = 3 * time.Second // allowed past the body timeout before a trickler must be cut
	slowGiveUp      = 30 * time.Second
	slowActEvery    = 100 * time.Millisecond
	capConns        = 8  // daemon.max_conns_per_peer in the cap phase
	capExtra        = 20 // connections tried past the cap
	capCutWithin    = time.Second
)

// trickle is one slow connection's fate.
type trickle struct {
	status int           // the response's status, 0 if none
	closed time.Duration // from the end of its headers to the daemon's close; 0 if never
	sent   int           // body bytes sent
	err    string
}

// slow is the slow part: trickling bodies, then the per-peer cap.
func (h *harness) slow(ctx context.Context, p *Part) error {
	if err := h.slowBodies(ctx, p); err != nil {
		return err
	}
	return h.slowCap(ctx, p)
}

func (h *harness) slowBodies(ctx context.Context, p *Part) error {
	d, err := h.launch(ctx, "slow", fmt.Sprintf("body_timeout = %q\nmax_conns_per_peer = %d\n", slowBodyTimeout, h.opts.conns+64))
	if err != nil {
		return err
	}
	defer d.cleanup()
	cl := d.cl
	if _, err := cl.CreateSession(ctx, daemon.CreateRequest{ID: "s"}); err != nil {
		return err
	}

	// A follower, from the start: it must see every answer the actions get.
	fctx, stopFollow := context.WithCancel(ctx)
	defer stopFollow()
	var seenMu sync.Mutex
	seen := map[uint64]bool{}
	followDone := make(chan error, 1)
	go func() {
		followDone <- cl.Events(fctx, "s", 0, true, func(ev event.Event) error {
			seenMu.Lock()
			seen[ev.Seq] = true
			seenMu.Unlock()
			return nil
		})
	}()
	var base []time.Duration // the same actions with no trickler, for comparison
	for range 10 {
		a0 := time.Now()
		if _, err := cl.Act(ctx, "s", event.SourceUser, event.CmdRun{Command: "echo ordinary"}); err != nil {
			return err
		}
		base = append(base, time.Since(a0))
		time.Sleep(slowActEvery)
	}
	fdsBefore := d.openFDs()

	// The tricklers.
	n := h.opts.conns
	res := make([]trickle, n)
	var wg sync.WaitGroup
	var open atomic.Int64
	t0 := time.Now()
	for i := range n {
		c, err := net.Dial("unix", d.spec.socket())
		if err != nil {
			res[i].err = err.Error()
			continue
		}
		open.Add(1)
		wg.Go(func() {
			defer open.Add(-1)
			res[i] = trickleBody(c)
		})
	}
	opened := time.Since(t0)

	// Meanwhile, ordinary actions every slowActEvery.
	var lat []time.Duration
	var acked []uint64
	actsFailed := 0
	var actErrs []string
	for open.Load() > 0 && time.Since(t0) < slowGiveUp && ctx.Err() == nil {
		a0 := time.Now()
		obs, err := cl.Act(ctx, "s", event.SourceUser, event.CmdRun{Command: "echo ordinary"})
		if err != nil {
			actsFailed++
			if len(actErrs) < 3 {
				actErrs = append(actErrs, err.Error())
			}
		} else {
			lat = append(lat, time.Since(a0))
			acked = append(acked, obs.Seq, obs.Cause)
		}
		time.Sleep(slowActEvery)
	}
	wg.Wait()
	time.Sleep(time.Second) // the daemon's side of the closes
	fdsAfter := d.openFDs()

	// The follower saw every acknowledged action and answer.
	missed := 0
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		missed = 0
		seenMu.Lock()
		for _, s := range acked {
			if !seen[s] {
				missed++
			}
		}
		seenMu.Unlock()
		if missed == 0 || time.Now().After(end) {
			break
		}
	}
	stopFollow()
	followErr := <-followDone
	if errors.Is(followErr, context.Canceled) {
		followErr = nil
	}

	var closes []time.Duration
	cut, got408, late, never := 0, 0, 0, 0
	for _, r := range res {
		switch {
		case r.closed == 0:
			never++
		case r.closed > slowBodyTimeout+slowSlack:
			late++
			closes = append(closes, r.closed)
		default:
			cut++
			closes = append(closes, r.closed)
		}
		if r.status == http.StatusRequestTimeout {
			got408++
		}
	}
	p.info("trickling connections", "%d (opened in %v), each sending a byte a second of a 4096-byte body; daemon.body_timeout = %v", n, opened.Round(time.Millisecond), slowBodyTimeout)
	p.check("closed by the daemon in time", cut == n, fmt.Sprintf("all %d within %v", n, slowBodyTimeout+slowSlack), "%d", cut)
	p.zero("closed late", late)
	p.zero("never closed (within "+slowGiveUp.String()+")", never)
	p.info("answered 408 body_timeout before the close", "%d", got408)
	p.info("headers sent to close", "%s", spread(closes))
	if res[0].err != "" {
		p.note("first error: %s", res[0].err)
	}
	p.info("ordinary actions before", "latency %s", spread(base))
	p.info("ordinary actions meanwhile", "%d ok, latency %s", len(lat), spread(lat))
	p.zero("ordinary actions that failed", actsFailed)
	p.zero("answers the follower missed", missed)
	p.check("follower still streaming", followErr == nil, "yes", "%s", errOrYes(followErr))
	p.check("daemon's open fds after", fdsAfter >= 0 && fdsAfter <= fdsBefore+4, fmt.Sprintf("<= %d (before + 4)", fdsBefore+4), "%d (before: %d)", fdsAfter, fdsBefore)
	for _, e := range actErrs {
		p.note("ordinary action failed: %s", e)
	}
	if err := d.stop(); err != nil {
		return err
	}
	h.logf("slow: %d/%d trickling connections cut in time", cut, n)
	return nil
}

// trickleBody sends an action's headers, then its body a byte a second,
// until the daemon answers or closes; it reports when the close came.
func trickleBody(c net.Conn) trickle {
	defer c.Close()
	const length = 4096
	body := fmt.Sprintf(`{"kind":"cmd_run","command":"echo never %0*d"}`, length-40, 0)
	fmt.Fprintf(c, "POST /v1/sessions/s/actions HTTP/1.1\r\nHost: harnessd\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", len(body))
	start := time.Now()
	var t trickle
	var sent atomic.Int64
	stop := make(chan struct{})
	go func() {
		for i := 0; i < len(body); i++ {
			if _, err := c.Write([]byte{body[i]}); err != nil {
				return
			}
			sent.Add(1)
			select {
			case <-stop:
				return
			case <-time.After(time.Second):
			}
		}
	}()
	defer close(stop)
	c.SetReadDeadline(start.Add(slowGiveUp))
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err == nil {
		t.status = resp.StatusCode
		_, err = io.Copy(io.Discard, br) // then the close
	}
	switch {
	case err == nil, errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), isReset(err):
		t.closed = time.Since(start)
	default:
		t.err = err.Error()
	}
	t.sent = int(sent.Load())
	return t
}

func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && !op.Timeout()
}

func errOrYes(err error) string {
	if err != nil {
		return err.Error()
	}
	return "yes"
}

// slowCap checks daemon.max_conns_per_peer: past it, a connection is
// closed at once, and served again once one of the held ones goes.
func (h *harness) slowCap(ctx context.Context, p *Part) error {
	d, err := h.launch(ctx, "cap", fmt.Sprintf("max_conns_per_peer = %d\n", capConns))
	if err != nil {
		return err
	}
	defer d.cleanup()
	if _, err := d.cl.CreateSession(ctx, daemon.CreateRequest{ID: "c"}); err != nil {
		return err
	}
	d.cl.Close() // its idle connection would count
	time.Sleep(100 * time.Millisecond)

	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	served := 0
	for range capConns {
		c, err := net.Dial("unix", d.spec.socket())
		if err != nil {
			return err
		}
		held = append(held, c)
		fmt.Fprintf(c, "GET /v1/sessions/c/events?follow=true HTTP/1.1\r\nHost: harnessd\r\n\r\n")
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil && resp.StatusCode == http.StatusOK {
			served++
		}
	}
	var cuts []time.Duration
	answered := 0
	for range capExtra {
		t0 := time.Now()
		c, err := net.Dial("unix", d.spec.socket())
		if err != nil {
			cuts = append(cuts, time.Since(t0)) // refused outright counts as cut
			continue
		}
		fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: harnessd\r\n\r\n")
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, err = http.ReadResponse(bufio.NewReader(c), nil)
		switch {
		case err == nil:
			answered++
		case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), isReset(err):
			cuts = append(cuts, time.Since(t0))
		}
		c.Close()
	}
	late := 0
	for _, d := range cuts {
		if d > capCutWithin {
			late++
		}
	}
	// One held connection goes: a new one is served.
	held[0].Close()
	held = held[1:]
	var again time.Duration
	servedAgain := false
	for t0 := time.Now(); time.Since(t0) < 5*time.Second; time.Sleep(20 * time.Millisecond) {
		if code, _, err := get(ctx, d.spec.socket(), "/healthz"); err == nil && code == http.StatusOK {
			again, servedAgain = time.Since(t0), true
			break
		}
	}
	p.info("per-peer cap", "daemon.max_conns_per_peer = %d, held by %d followers", capConns, capConns)
	p.check("followers under the cap served", served == capConns, fmt.Sprint(capConns), "%d", served)
	p.check("connections past the cap cut", len(cuts) == capExtra && answered == 0, fmt.Sprintf("all %d, none answered", capExtra), "%d cut, %d answered", len(cuts), answered)
	p.check("cut within "+capCutWithin.String(), late == 0, "all", "%s", spread(cuts))
	p.check("served again once one closed", servedAgain, "yes", "%s", durOrNever(servedAgain, again))
	if _, err := os.Stat(d.spec.socket()); err != nil {
		return err
	}
	for _, c := range held {
		c.Close()
	}
	held = nil
	return d.stop()
}
