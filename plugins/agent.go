package plugins

import (
	"context"
	"fmt"
	"sync"

	plugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/harnessd/harnessd/plugins/proto"
)

// Agent is what a plugin written in Go implements; Serve serves it.
type Agent interface {
	// Info names the agent.
	Info(ctx context.Context) (*pb.InfoResponse, error)
	// Step decides the next action. host reaches harnessd's services for
	// this step's session; it returns ErrNoHost when the host offered none.
	Step(ctx context.Context, req *pb.StepRequest, host Host) (*pb.StepResponse, error)
}

// Host is harnessd's services, as a plugin reaches them; the host side
// implements it too, for one run (Config.Host).
type Host interface {
	// ReadOutput reads lines from..to (1-based, inclusive; to 0: to the
	// end) of a stored output.
	ReadOutput(ctx context.Context, outputID string, from, to int64) (*pb.ReadOutputResponse, error)
	// ReadEvents reads the session's events after seq after, at most
	// limit of them (0: a page).
	ReadEvents(ctx context.Context, after uint64, limit uint32) (*pb.ReadEventsResponse, error)
	// ReportUsage adds usage to the run's totals.
	ReportUsage(ctx context.Context, u *pb.Usage) (*pb.ReportUsageResponse, error)
}

// NoHost is the Host of a plugin the host offered no services to.
type NoHost struct{}

// ReadOutput returns ErrNoHost.
func (NoHost) ReadOutput(context.Context, string, int64, int64) (*pb.ReadOutputResponse, error) {
	return nil, ErrNoHost
}

// ReadEvents returns ErrNoHost.
func (NoHost) ReadEvents(context.Context, uint64, uint32) (*pb.ReadEventsResponse, error) {
	return nil, ErrNoHost
}

// ReportUsage returns ErrNoHost.
func (NoHost) ReportUsage(context.Context, *pb.Usage) (*pb.ReportUsageResponse, error) {
	return nil, ErrNoHost
}

// MaxMessage is the largest gRPC message either side accepts: a step's
// events, a page of output.
const MaxMessage = 64 << 20

// GRPCPlugin is go-plugin's glue for an agent: the plugin side serves Impl,
// the host side gets an *agentClient. net/rpc is refused.
type GRPCPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	// Impl is the agent, on the plugin side; nil on the host side.
	Impl Agent
}

var _ plugin.GRPCPlugin = (*GRPCPlugin)(nil)

// GRPCServer registers the agent's service (plugin side).
func (p *GRPCPlugin) GRPCServer(b *plugin.GRPCBroker, s *grpc.Server) error {
	pb.RegisterAgentServer(s, &agentServer{impl: p.Impl, broker: b, hosts: map[uint32]Host{}})
	return nil
}

// GRPCClient returns the host's client of the agent's service.
func (p *GRPCPlugin) GRPCClient(_ context.Context, b *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return &agentClient{client: pb.NewAgentClient(c), broker: b}, nil
}

// agentServer serves an Agent over gRPC, dialling the host's services
// through the broker the first time a step names them.
type agentServer struct {
	pb.UnimplementedAgentServer
	impl   Agent
	broker *plugin.GRPCBroker

	mu    sync.Mutex
	hosts map[uint32]Host
}

func (s *agentServer) Info(ctx context.Context, _ *pb.InfoRequest) (*pb.InfoResponse, error) {
	in, err := s.impl.Info(ctx)
	if in != nil {
		in.HostServices = true // this side has go-plugin's broker
	}
	return in, err
}

func (s *agentServer) Step(ctx context.Context, req *pb.StepRequest) (*pb.StepResponse, error) {
	return s.impl.Step(ctx, req, s.host(req.GetHostServices()))
}

// host returns the client of the host's services at broker id, dialled
// once; NoHost for id 0 or one that cannot be dialled.
func (s *agentServer) host(id uint32) Host {
	if id == 0 {
		return NoHost{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if h, ok := s.hosts[id]; ok {
		return h
	}
	conn, err := s.broker.DialWithOptions(id, grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(MaxMessage)))
	if err != nil {
		return failedHost{fmt.Errorf("%w: dial broker id %d: %w", ErrNoHost, id, err)}
	}
	h := hostClient{pb.NewHostClient(conn)}
	s.hosts[id] = h
	return h
}

// hostClient is the plugin's client of the host's services.
type hostClient struct{ c pb.HostClient }

func (h hostClient) ReadOutput(ctx context.Context, id string, from, to int64) (*pb.ReadOutputResponse, error) {
	return h.c.ReadOutput(ctx, &pb.ReadOutputRequest{OutputId: id, FromLine: from, ToLine: to})
}

func (h hostClient) ReadEvents(ctx context.Context, after uint64, limit uint32) (*pb.ReadEventsResponse, error) {
	return h.c.ReadEvents(ctx, &pb.ReadEventsRequest{After: after, Limit: limit})
}

func (h hostClient) ReportUsage(ctx context.Context, u *pb.Usage) (*pb.ReportUsageResponse, error) {
	return h.c.ReportUsage(ctx, &pb.ReportUsageRequest{Usage: u})
}

// failedHost answers every call with the error that made the host
// unreachable.
type failedHost struct{ err error }

func (h failedHost) ReadOutput(context.Context, string, int64, int64) (*pb.ReadOutputResponse, error) {
	return nil, h.err
}

func (h failedHost) ReadEvents(context.Context, uint64, uint32) (*pb.ReadEventsResponse, error) {
	return nil, h.err
}

func (h failedHost) ReportUsage(context.Context, *pb.Usage) (*pb.ReportUsageResponse, error) {
	return nil, h.err
}

// agentClient is the host's client of a plugin's agent service.
type agentClient struct {
	client pb.AgentClient
	broker *plugin.GRPCBroker
}

// hostServer serves a Host (the host side) to a plugin over the broker.
type hostServer struct {
	pb.UnimplementedHostServer
	h Host
}

func (s hostServer) ReadOutput(ctx context.Context, r *pb.ReadOutputRequest) (*pb.ReadOutputResponse, error) {
	return s.h.ReadOutput(ctx, r.GetOutputId(), r.GetFromLine(), r.GetToLine())
}

func (s hostServer) ReadEvents(ctx context.Context, r *pb.ReadEventsRequest) (*pb.ReadEventsResponse, error) {
	return s.h.ReadEvents(ctx, r.GetAfter(), r.GetLimit())
}

func (s hostServer) ReportUsage(ctx context.Context, r *pb.ReportUsageRequest) (*pb.ReportUsageResponse, error) {
	if err := validUsage(r.GetUsage()); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	return s.h.ReportUsage(ctx, r.GetUsage())
}
