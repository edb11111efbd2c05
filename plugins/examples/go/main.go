// Command go is an example harnessd agent plugin in Go: the census agent.
//
// Its task is a word. It runs grep over the workspace for it, and when
// the trimmed observation left lines out, it reads the full output back
// through harnessd's host services (ReadOutput) instead of running the
// command again; then it finishes with how many lines match, in how many
// files. It shows what a Go plugin needs: plugins.Serve, the Agent
// interface, the events of a step, and the Host.
//
// Build it and name it in harness.toml:
//
//	go build -o /usr/local/lib/harnessd/census ./plugins/examples/go
//	[agents.census]
//	command = ["/usr/local/lib/harnessd/census"]
//	sha256 = "…"   # sha256sum /usr/local/lib/harnessd/census
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/harnessd/harnessd/plugins"
	pb "github.com/harnessd/harnessd/plugins/proto"
)

// census is the agent.
type census struct {
	// seen keeps each run's events: a step gets only those since the
	// process's last step.
	seen map[string][]event
}

// event is what the agent reads of an event's JSON.
type event struct {
	Seq      uint64 `json:"seq"`
	Kind     string `json:"kind"`
	Source   string `json:"source"`
	Cause    uint64 `json:"cause"`
	Run      string `json:"run"`
	ExitCode int    `json:"exit_code"`
	Output   string `json:"output"`
	Trimmed  *struct {
		LinesTotal   int    `json:"lines_total"`
		LinesOmitted int    `json:"lines_omitted"`
		OutputID     string `json:"output_id"`
	} `json:"trimmed"`
}

func (c *census) Info(context.Context) (*pb.InfoResponse, error) {
	return &pb.InfoResponse{Name: "census", Version: "1", Actions: []string{"cmd_run", "finish"}}, nil
}

func (c *census) Step(ctx context.Context, req *pb.StepRequest, host plugins.Host) (*pb.StepResponse, error) {
	for _, raw := range req.GetEvents() {
		var ev event
		if err := json.Unmarshal(raw, &ev); err != nil {
			return nil, fmt.Errorf("event %.60s: %w", raw, err)
		}
		c.seen[req.GetRun()] = append(c.seen[req.GetRun()], ev)
	}
	word := strings.TrimSpace(req.GetTask())
	if word == "" || strings.ContainsAny(word, "'\n") {
		return finish("give me one word to count, without quotes"), nil
	}
	// The observation of this run's grep, if it ran.
	var out *event
	evs := c.seen[req.GetRun()]
	for i := range evs {
		if evs[i].Kind == "run_started" && evs[i].Run == req.GetRun() {
			out = nil // this run starts here
		}
		if evs[i].Kind == "cmd_output" {
			out = &evs[i]
		}
	}
	if out == nil {
		return &pb.StepResponse{
			Thought: "count the lines that mention " + word,
			Action:  &pb.StepResponse_CmdRun{CmdRun: &pb.CmdRun{Command: fmt.Sprintf("grep -rnI --exclude-dir=.git -- '%s' .", word), TimeoutS: 60}},
		}, nil
	}
	if out.ExitCode == 1 {
		return finish(fmt.Sprintf("no line mentions %q", word)), nil
	}
	if out.ExitCode != 0 {
		return finish(fmt.Sprintf("grep failed with exit code %d", out.ExitCode)), nil
	}
	text := out.Output
	if out.Trimmed != nil && out.Trimmed.LinesOmitted > 0 {
		// The model saw head and tail; the agent wants every line. Page
		// it back from harnessd rather than run grep again.
		full, err := readAll(ctx, host, out.Trimmed.OutputID)
		if err != nil {
			return nil, err
		}
		text = full
	}
	lines, files := 0, map[string]bool{}
	for _, l := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		if file, _, ok := strings.Cut(l, ":"); ok {
			lines++
			files[file] = true
		}
	}
	return finish(fmt.Sprintf("%d lines mention %q, in %d files", lines, word, len(files))), nil
}

// readAll reads a whole stored output, a page at a time.
func readAll(ctx context.Context, host plugins.Host, id string) (string, error) {
	var b strings.Builder
	from := int64(1)
	for {
		page, err := host.ReadOutput(ctx, id, from, 0)
		if err != nil {
			return "", fmt.Errorf("read output %s: %w", id, err)
		}
		b.WriteString(page.GetText())
		if page.GetToLine() >= page.GetTotalLines() || page.GetToLine() < from {
			return b.String(), nil
		}
		from = page.GetToLine() + 1
	}
}

func finish(msg string) *pb.StepResponse {
	return &pb.StepResponse{Action: &pb.StepResponse_Finish{Finish: &pb.Finish{Message: msg}}}
}

func main() {
	plugins.Serve(&census{seen: map[string][]event{}}, nil)
}
