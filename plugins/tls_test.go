package plugins

import (
	"context"
	"crypto/tls"
	"errors"
	"testing"
	"time"

	pb "github.com/harnessd/harnessd/plugins/proto"
)

// TestTLS: host and plugin talk mutual TLS. A plugin built on Serve uses
// the key pair the host made for it and drops it from its environment; a
// plugin that does go-plugin's AutoMTLS itself (its own certificate in the
// handshake) still works; one that serves without TLS is refused; and a
// client without the host's certificate cannot talk to a plugin.
func TestTLS(t *testing.T) {
	p, err := start(t, "tlsenv", Config{})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := p.Step(context.Background(), &pb.StepRequest{})
	if err != nil || resp.GetFinish().GetMessage() != "key=false cert=true" {
		t.Errorf("the plugin's environment after Serve: %v %v", resp.GetFinish().GetMessage(), err)
	}
	addr := p.client.ReattachConfig().Addr
	conn, err := tls.Dial(addr.Network(), addr.String(), &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12})
	if err == nil {
		conn.SetDeadline(time.Now().Add(3 * time.Second))
		_, err = conn.Read(make([]byte, 1)) // TLS 1.3 reports a refused client certificate here
		conn.Close()
	}
	if err == nil {
		t.Error("a client without the host's certificate got through")
	}
	t.Logf("a client without the host's certificate: %v", err)

	p, err = start(t, "automtls", Config{})
	if err != nil {
		t.Fatalf("a plugin doing AutoMTLS itself: %v", err)
	}
	if _, err := p.Step(context.Background(), &pb.StepRequest{}); err != nil {
		t.Errorf("a plugin doing AutoMTLS itself: step: %v", err)
	}

	begin := time.Now()
	p, err = start(t, "plaintext", Config{StartTimeout: 3 * time.Second})
	t.Logf("a plugin without TLS: %v (%s)", err, time.Since(begin).Round(time.Millisecond))
	if !errors.Is(err, ErrHandshake) || p != nil {
		t.Errorf("a plugin without TLS: %v, %v; want ErrHandshake", p, err)
	}
}
