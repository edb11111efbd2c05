// Package openai is the built-in agent for any OpenAI-compatible
// chat-completions endpoint: llama.cpp's server, vLLM, Ollama, hosted
// APIs.
//
// # Basics
//
// Each step rebuilds the run's conversation from the session's events
// (so a restarted plugin goes on where the last one stopped): a system
// prompt with the repository guidance, the task, then the run's actions
// as the model's tool calls and the observations as their results. In
// "tools" mode the model gets execute_bash {command, is_input, timeout,
// reset}, str_replace_editor (OpenHands' file editor: view, create,
// str_replace, insert, undo_edit), execute_ipython_cell {code} (the
// session's persistent Python), think {thought} and finish {message};
// a reply without a tool call
// is read CodeAct-style (a fenced bash block, a <finish> tag). Every reply
// and tool call goes to harnessd to parse (core/parse), so a malformed one
// becomes an invalid_action the model sees next step. think is the agent's
// own: a step with only a thought.
//
// A request that fails with 429, a 5xx, a timeout or a broken connection
// is retried (Settings.Retries) with exponential backoff and full jitter,
// waiting at least what Retry-After asks. With a context budget
// (context_tokens), the bodies of the oldest observations are masked when
// the conversation would not fit (first and last lines, exit code and
// output id kept); the step says which, and harnessd records it as
// context_masked. Each step reports its tokens and its cost at the
// configured prices.
//
// # Caveats
//
// Token counts for the budget are estimated (four bytes a token); those
// reported come from the server's usage.
package openai

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/harnessd/harnessd/core/config"
	"github.com/harnessd/harnessd/plugins"
	pb "github.com/harnessd/harnessd/plugins/proto"
)

// Name is the built-in agent's name.
const Name = "openai"

// Agent is the openai agent.
type Agent struct {
	s Settings
	c *client

	mu   sync.Mutex
	runs map[string]*runState
}

// runState is what the plugin keeps of one run: every event it was given
// (a step gets only the new ones) and the observations it said it masked.
type runState struct {
	events   []rawEvent
	reported map[uint64]bool
}

// New returns an agent for s, with the API key from the environment
// variable s names.
func New(s Settings) (*Agent, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	key := ""
	if s.APIKeyEnv != "" {
		key = os.Getenv(s.APIKeyEnv)
	}
	return &Agent{
		s:    s,
		c:    &client{s: s, key: key, http: &http.Client{}, sleep: sleep},
		runs: map[string]*runState{},
	}, nil
}

// Info implements plugins.Agent.
func (a *Agent) Info(context.Context) (*pb.InfoResponse, error) {
	return &pb.InfoResponse{Name: Name, Version: "1 (" + a.s.Model + ")", Actions: []string{"cmd_run", "message", "finish", "think"}}, nil
}

// Step implements plugins.Agent: one model call.
func (a *Agent) Step(ctx context.Context, req *pb.StepRequest, _ plugins.Host) (*pb.StepResponse, error) {
	evs, err := decodeEvents(req.GetEvents())
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	st := a.runs[req.GetRun()]
	if st == nil {
		st = &runState{reported: map[uint64]bool{}}
		a.runs[req.GetRun()] = st
	}
	st.events = append(st.events, evs...)
	all := st.events
	a.mu.Unlock()

	tools := a.s.Mode != config.ModeCodeAct
	msgs := messages(req, all, tools)
	var masked *pb.Masked
	if a.s.ContextTokens > 0 {
		reserve := int64(a.s.MaxTokens)
		if reserve <= 0 || reserve > int64(a.s.ContextTokens)/2 {
			reserve = int64(a.s.ContextTokens) / 4
		}
		seqs, before, after := mask(msgs, int64(a.s.ContextTokens)-reserve)
		var fresh []uint64
		for _, s := range seqs {
			if !st.reported[s] {
				st.reported[s] = true
				fresh = append(fresh, s)
			}
		}
		if len(fresh) > 0 {
			masked = &pb.Masked{Seqs: fresh, TokensBefore: before, TokensAfter: after}
		}
	}
	creq := &chatRequest{Model: a.s.Model, Messages: msgs, Temperature: a.s.Temperature, MaxTokens: a.s.MaxTokens}
	if tools {
		creq.Tools, creq.ToolChoice = toolDefs(), "auto"
	}
	begin := time.Now()
	resp, attempts, err := a.c.complete(ctx, creq)
	if err != nil {
		return nil, fmt.Errorf("model %s at %s (%d attempts, %s): %w", a.s.Model, a.s.BaseURL, attempts, time.Since(begin).Round(time.Millisecond), err)
	}
	out := reply(resp, tools)
	out.Masked = masked
	model := resp.Model
	if model == "" {
		model = a.s.Model
	}
	out.Usage = &pb.Usage{
		PromptTokens:     resp.Usage.PromptTokens,
		CompletionTokens: resp.Usage.CompletionTokens,
		Cost:             (float64(resp.Usage.PromptTokens)*a.s.PriceInput + float64(resp.Usage.CompletionTokens)*a.s.PriceOutput) / 1e6,
		Model:            shorten(model, plugins.MaxName),
	}
	return out, nil
}

// reply turns the model's answer into a step: its first tool call (one
// action a step), or its text for harnessd to parse; think is a step with
// only a thought. Text beside a tool call is the step's thought.
func reply(resp *chatResponse, tools bool) *pb.StepResponse {
	m := resp.Choices[0].Message
	text := ""
	if m.Content != nil {
		text = *m.Content
	}
	if !tools || len(m.ToolCalls) == 0 {
		return &pb.StepResponse{Action: &pb.StepResponse_Reply{Reply: &pb.Reply{Text: text}}}
	}
	call := m.ToolCalls[0].Function
	name := strings.TrimPrefix(strings.ToLower(strings.TrimSpace(call.Name)), "functions.")
	thought := strings.TrimSpace(text)
	if name == "think" {
		var args struct {
			Thought string `json:"thought"`
		}
		if json.Unmarshal([]byte(call.Arguments), &args) != nil || args.Thought == "" {
			args.Thought = call.Arguments // what it wrote is the thought
		}
		return &pb.StepResponse{Thought: strings.TrimSpace(thought + "\n" + args.Thought)}
	}
	if len(m.ToolCalls) > 1 {
		thought = strings.TrimSpace(thought + fmt.Sprintf("\n(%d more tool calls in this reply were not run: one action a step)", len(m.ToolCalls)-1))
	}
	return &pb.StepResponse{
		Thought: shorten(thought, plugins.MaxThought),
		Action:  &pb.StepResponse_Reply{Reply: &pb.Reply{Tool: call.Name, Arguments: call.Arguments}},
	}
}

// Main serves the agent with the settings in the environment; it is
// `harnessd plugin openai`. Settings it cannot use are the answer to Info,
// so the host records why the agent failed.
func Main() int {
	var s Settings
	err := plugins.Settings(&s)
	var a plugins.Agent
	if err == nil {
		a, err = New(s)
	}
	if err != nil {
		a = plugins.Broken(fmt.Errorf("openai agent: %w", err))
	}
	plugins.Serve(a, nil)
	return 0
}
