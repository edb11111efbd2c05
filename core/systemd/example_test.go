package systemd_test

import (
	"context"
	"log"
	"net"
	"net/http"
	"os/signal"
	"sync"
	"syscall"

	"github.com/harnessd/harnessd/core/systemd"
)

// The order harnessd serve follows: open the store, take the activation
// socket (or listen), serve, Ready, Watchdog; on SIGTERM, Stopping, then
// wind down.
func Example() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	// ... open the store first: READY=1 promises it is usable.
	ls, err := systemd.Listeners()
	if err != nil {
		log.Fatal(err) // LISTEN_PID for someone else, or not a stream socket
	}
	var ln net.Listener
	if len(ls) > 0 {
		ln = ls[0]
	} else if ln, err = net.Listen("unix", "/run/harnessd/harnessd.sock"); err != nil {
		log.Fatal(err)
	}
	srv := &http.Server{}
	var wg sync.WaitGroup
	wg.Go(func() { srv.Serve(ln) })
	systemd.Ready()
	systemd.Status("serving on %s", ln.Addr())
	wg.Go(func() {
		systemd.Watchdog(ctx, func(ctx context.Context) error {
			return nil // e.g. a read transaction on the store, within ctx
		})
	})
	<-ctx.Done()
	systemd.Stopping()
	srv.Shutdown(context.Background())
	wg.Wait()
}
