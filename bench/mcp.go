package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harnessd/harnessd/core/config"
)

// mcp is the MCP layer's share: `true` through `harnessd mcp` on stdio
// (an MCP client -> stdio -> the MCP server -> the API's socket -> …)
// beside the same `true` through the API's socket directly, on the same
// daemon and the same session, taking turns slice by slice.
func (b *bench) mcp(ctx context.Context, s *Section) error {
	dir, err := os.MkdirTemp(b.tmp, "mcp-")
	if err != nil {
		return err
	}
	d, err := startInProcess(ctx, dir, config.DurabilityStrict, b.opts.heapFloor)
	if err != nil {
		return err
	}
	defer d.stop()
	self, err := os.Executable()
	if err != nil {
		return err
	}
	// `harnessd mcp` itself: this binary re-exec'd as the CLI (serveChild).
	cmd := exec.CommandContext(ctx, self, "mcp", "--socket", d.cl.Socket())
	cmd.Env = append(os.Environ(), envServe+"=1")
	cmd.Stderr = os.Stderr
	client := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		return fmt.Errorf("harnessd mcp: %w", err)
	}
	defer cs.Close()
	mcpTrue := func(ctx context.Context) error {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "exec", Arguments: map[string]any{"session": d.id, "command": "true"}})
		if err != nil {
			return err
		}
		if res.IsError {
			return fmt.Errorf("exec true: tool error: %v", res.Content)
		}
		out, _ := res.StructuredContent.(map[string]any)
		if out["exit_code"] != 0.0 {
			return fmt.Errorf("exec true: %v", res.StructuredContent)
		}
		return nil
	}
	probes := []probe{
		{name: "mcp", run: mcpTrue},
		{name: "api", run: d.roundTrip},
	}
	per, err := b.takeTurns(ctx, probes)
	if err != nil {
		return err
	}
	m, a := summarize(probes[0].lat), summarize(probes[1].lat)
	s.Notes = append(s.Notes,
		fmt.Sprintf("a daemon in this process (serve.Run, strict durability, sandbox driver none) in %s; `harnessd mcp --socket` as a child process (this binary re-exec'd as the CLI), driven by the Go SDK's client over its stdin/stdout.", filepath.Base(dir)),
		fmt.Sprintf("mcp: tools/call exec {session, command \"true\"}, the structured result checked; api: api.Client.Act(cmd_run \"true\") on the same session. They take turns in %d slices of %d after %d untimed each.", apiRounds, per, warmUp),
		fmt.Sprintf("the MCP layer's share of the round trip, p50: %s (JSON-RPC over two pipes, schema validation, one more process hop to the socket).", formatSeconds((m.p50-a.p50).Seconds())),
	)
	s.Rows = append(s.Rows,
		Row{
			Name: "MCP stdio exec true p50", Figure: dur(m.p50),
			Baseline: labelled("API p50", dur(a.p50)),
			Ratio:    ratio(m.p50.Seconds(), a.p50.Seconds()), RatioOf: "mcp/api",
		},
		Row{
			Name: "MCP stdio exec true p99", Figure: dur(m.p99),
			Baseline: labelled("API p99", dur(a.p99)),
			Ratio:    ratio(m.p99.Seconds(), a.p99.Seconds()), RatioOf: "mcp/api",
		},
	)
	return nil
}
