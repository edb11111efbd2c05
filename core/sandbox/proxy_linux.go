package sandbox

import (
	"io"
	"net"
	"sync"
)

// startProxy listens on ProxyAddr inside the sandbox's network namespace
// and forwards every connection to the daemon's proxy socket. The socket
// is reached through target, /proc/self/fd/N of a descriptor of it the
// daemon opened, so the sandbox's filesystem never shows the daemon's run
// directory (and whatever else is in it). The init is not dumpable, so
// the shell cannot borrow the descriptor through /proc/1/fd.
func startProxy(target string) error {
	ln, err := net.Listen("tcp", ProxyAddr)
	if err != nil {
		return initErr("listen", ProxyAddr, err)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go forward(c.(*net.TCPConn), target)
		}
	}()
	return nil
}

func forward(c *net.TCPConn, target string) {
	defer c.Close()
	u, err := net.Dial("unix", target)
	if err != nil {
		return
	}
	up := u.(*net.UnixConn)
	defer up.Close()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, _ = io.Copy(up, c)
		_ = up.CloseWrite()
	}()
	_, _ = io.Copy(c, up)
	_ = c.CloseWrite()
	wg.Wait()
}
