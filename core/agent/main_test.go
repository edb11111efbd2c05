package agent_test

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/harnessd/harnessd/core/sandbox"
	"github.com/harnessd/harnessd/plugins"
	"github.com/harnessd/harnessd/plugins/builtin"
	pb "github.com/harnessd/harnessd/plugins/proto"
)

// TestMain makes the test binary everything harnessd's binary is: the
// sandbox init, the built-in agents (`plugin NAME`), and the misbehaving
// plugins the tests need (`plugin test-MODE`).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == sandbox.InitCommand {
		sandbox.InitMain()
	}
	if len(os.Args) > 2 && os.Args[1] == builtin.Command {
		if mode, ok := testAgents[os.Args[2]]; ok {
			os.Exit(mode())
		}
		os.Exit(builtin.Main(os.Args[2:]))
	}
	if dir := os.Getenv(serveHelperEnv); dir != "" {
		os.Exit(serveHelper(dir))
	}
	os.Exit(m.Run())
}

var testAgents = map[string]func() int{
	// Prints something else than go-plugin's handshake.
	"test-garbage": func() int {
		fmt.Println("Welcome to my agent! Type help for help.")
		time.Sleep(time.Minute)
		return 0
	},
	// Exits before the handshake.
	"test-exit": func() int { return 3 },
	// Answers no step.
	"test-hang": serveFunc(func(ctx context.Context, _ *pb.StepRequest, _ plugins.Host) (*pb.StepResponse, error) {
		time.Sleep(time.Hour)
		return nil, nil
	}),
	// Is killed with SIGKILL in the middle of its step.
	"test-sigkill": serveFunc(func(ctx context.Context, _ *pb.StepRequest, _ plugins.Host) (*pb.StepResponse, error) {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		time.Sleep(time.Hour)
		return nil, nil
	}),
	// Answers with what the contract forbids.
	"test-nonsense": serveFunc(func(ctx context.Context, _ *pb.StepRequest, _ plugins.Host) (*pb.StepResponse, error) {
		return &pb.StepResponse{Action: &pb.StepResponse_CmdRun{CmdRun: &pb.CmdRun{Command: "ls", TimeoutS: -5}}}, nil
	}),
	// Uses the host services: pages the output of the command its first
	// step ran, reads events, reports usage.
	"test-host": serveFunc(hostAgent),
}

// serveFunc serves a one-function agent.
func serveFunc(step func(context.Context, *pb.StepRequest, plugins.Host) (*pb.StepResponse, error)) func() int {
	return func() int {
		plugins.Serve(funcAgent(step), nil)
		return 0
	}
}

type funcAgent func(context.Context, *pb.StepRequest, plugins.Host) (*pb.StepResponse, error)

func (f funcAgent) Info(context.Context) (*pb.InfoResponse, error) {
	return &pb.InfoResponse{Name: os.Args[2], Version: "test"}, nil
}

func (f funcAgent) Step(ctx context.Context, req *pb.StepRequest, h plugins.Host) (*pb.StepResponse, error) {
	return f(ctx, req, h)
}
