package plugins

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	plugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	pb "github.com/harnessd/harnessd/plugins/proto"
)

// ServeOptions configures Serve. The zero value is what most plugins want.
type ServeOptions struct {
	// ParentPoll is how often the plugin checks that its parent is still
	// there. Default 200ms.
	ParentPoll time.Duration
}

// Serve serves a as an agent plugin on this process, which go-plugin takes
// over (stdout is the handshake, stderr the log), and returns when the
// host closes it. If the parent process goes away without closing it (the
// daemon was killed with SIGKILL), the process exits at once, status 3.
// Run as anything but a plugin (the magic cookie missing), it prints why
// to stderr and exits with status 1.
func Serve(a Agent, opts *ServeOptions) {
	if opts == nil {
		opts = &ServeOptions{}
	}
	if opts.ParentPoll <= 0 {
		opts.ParentPoll = 200 * time.Millisecond
	}
	go watchParent(opts.ParentPoll)
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: Handshake,
		Plugins:         plugin.PluginSet{PluginName: &GRPCPlugin{Impl: a}},
		GRPCServer: func(opts []grpc.ServerOption) *grpc.Server {
			return grpc.NewServer(append(opts, grpc.MaxRecvMsgSize(MaxMessage), grpc.MaxSendMsgSize(MaxMessage))...)
		},
		Logger:      hclog.New(&hclog.LoggerOptions{Level: hclog.Info, Output: os.Stderr, JSONFormat: true}),
		TLSProvider: serverTLS, // the key pair the host made for us (tls.go)
	})
}

// watchParent exits the process once its parent has changed: the parent
// died and the process was re-parented. (PR_SET_PDEATHSIG would fire when
// the thread that forked it ends, which in a Go parent can be any time.)
func watchParent(every time.Duration) {
	ppid := os.Getppid()
	for range time.Tick(every) {
		if os.Getppid() != ppid {
			// Nothing is printed: stderr led to the parent, and a write
			// could block or fail before the exit.
			os.Exit(3)
		}
	}
}

// Settings decodes the agent's settings, which the host passes as a JSON
// object in EnvSettings, into v, strictly: an unknown key is an error.
// Unset or empty means no settings, leaving v as it is.
func Settings(v any) error {
	s := os.Getenv(EnvSettings)
	if strings.TrimSpace(s) == "" {
		return nil
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("agent settings (%s): %w", EnvSettings, err)
	}
	return nil
}

// Broken is an agent that cannot work (its settings are wrong, say): its
// Info fails with err, so the host records why instead of a bare failed
// handshake.
func Broken(err error) Agent { return broken{err} }

type broken struct{ err error }

func (b broken) Info(context.Context) (*pb.InfoResponse, error) { return nil, b.err }

func (b broken) Step(context.Context, *pb.StepRequest, Host) (*pb.StepResponse, error) {
	return nil, b.err
}
