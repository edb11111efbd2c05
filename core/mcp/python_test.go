package mcp_test

import (
	"context"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harnessd/harnessd/core/mcp"
)

// TestPythonTool runs cells through python_run in the connection's
// default session: state carries over, an exception comes back with its
// name and traceback (not as a tool error: the cell ran), and cancelling
// a long cell interrupts it, after which Python still answers.
func TestPythonTool(t *testing.T) {
	c := connect(t, daemon(t, nil), mcp.Options{})
	if p, _ := ok[mcp.Python](c, "python_run", map[string]any{"code": "import math\nx = 6 * 7"}); p.ExitCode != 0 || p.Session == "" {
		t.Fatalf("first cell: %+v", p)
	}
	p, txt := ok[mcp.Python](c, "python_run", map[string]any{"code": "print(x, math.pi > 3)\nx + 1"})
	if p.ExitCode != 0 || !strings.Contains(p.Output, "42 True") || !strings.Contains(p.Output, "43") || !strings.Contains(txt, "[done;") {
		t.Errorf("state across cells: %+v\n%s", p, txt)
	}
	p, txt = ok[mcp.Python](c, "python_run", map[string]any{"code": "def f():\n    return 1 / 0\nf()"})
	if p.ExitCode != 1 || p.Error != "ZeroDivisionError" || !strings.Contains(p.Output, "Traceback") || !strings.Contains(txt, "[error ZeroDivisionError") {
		t.Errorf("an exception: %+v\n%s", p, txt)
	}
	if strings.Contains(p.Output, "driver") || strings.Contains(p.Output, "harnessd") {
		t.Errorf("the traceback shows harnessd's own frames:\n%s", p.Output)
	}

	ctx, cancel := context.WithCancel(context.Background())
	called := make(chan error, 1)
	go func() {
		_, err := c.cs.CallTool(ctx, &sdk.CallToolParams{Name: "python_run", Arguments: map[string]any{"code": "import time\ntime.sleep(60)\nprint('not-interrupted')"}})
		called <- err
	}()
	time.Sleep(time.Second)
	cancel()
	<-called
	p, _ = ok[mcp.Python](c, "python_run", map[string]any{"code": "x"})
	if p.ExitCode != 0 || !strings.Contains(p.Output, "42") {
		t.Errorf("after a cancelled cell: %+v", p)
	}
	ev, _ := ok[mcp.Events](c, "events", map[string]any{"limit": 1000})
	if !strings.Contains(ev.Text, `"code":"C-c","is_input":true`) || strings.Contains(ev.Text, "not-interrupted\\n") {
		t.Errorf("the log does not show the interrupt:\n%s", ev.Text)
	}
}
