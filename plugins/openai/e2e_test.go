package openai_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harnessd/harnessd/cmd/harnessd/serve"
	"github.com/harnessd/harnessd/core/agent"
	"github.com/harnessd/harnessd/core/api"
	"github.com/harnessd/harnessd/core/config"
	"github.com/harnessd/harnessd/core/daemon"
	"github.com/harnessd/harnessd/core/event"
	"github.com/harnessd/harnessd/core/sandbox"
	"github.com/harnessd/harnessd/plugins/builtin"
)

// TestMain is also the sandbox init and the built-in agents, as the
// harnessd binary is.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == sandbox.InitCommand {
		sandbox.InitMain()
	}
	if len(os.Args) > 2 && os.Args[1] == builtin.Command {
		os.Exit(builtin.Main(os.Args[2:]))
	}
	os.Exit(m.Run())
}

// fakeModel speaks the chat-completions protocol with recorded turns, one
// per request, and keeps the requests.
type fakeModel struct {
	t     *testing.T
	mu    sync.Mutex
	turns []turn
	reqs  []seen
}

type seen struct {
	at     time.Time
	header http.Header
	body   map[string]any
	msgs   []chatMsg
}

type chatMsg struct {
	Role       string `json:"role"`
	Content    string `json:"content"`
	ToolCallID string `json:"tool_call_id"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

// turn is one answer: an error status, or a reply with text and at most
// one tool call. check, if set, looks at the request first.
type turn struct {
	status     int
	retryAfter string
	text       string
	tool, args string
	check      func(t *testing.T, s seen)
}

func (f *fakeModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.URL.Path != "/v1/chat/completions" || r.Method != http.MethodPost {
		http.NotFound(w, r)
		return
	}
	data, _ := io.ReadAll(r.Body)
	s := seen{at: time.Now(), header: r.Header.Clone()}
	json.Unmarshal(data, &s.body)
	var req struct {
		Messages []chatMsg `json:"messages"`
	}
	json.Unmarshal(data, &req)
	s.msgs = req.Messages
	f.reqs = append(f.reqs, s)
	n := len(f.reqs) - 1
	if n >= len(f.turns) {
		f.t.Errorf("request %d: the script has %d turns", n, len(f.turns))
		http.Error(w, `{"error":"script over"}`, http.StatusBadRequest)
		return
	}
	tn := f.turns[n]
	if tn.check != nil {
		tn.check(f.t, s)
	}
	if tn.status != 0 {
		if tn.retryAfter != "" {
			w.Header().Set("Retry-After", tn.retryAfter)
		}
		http.Error(w, `{"error":{"message":"try later"}}`, tn.status)
		return
	}
	msg := map[string]any{"role": "assistant", "content": tn.text}
	if tn.tool != "" {
		msg["tool_calls"] = []any{map[string]any{"id": fmt.Sprintf("call_x%d", n), "type": "function",
			"function": map[string]any{"name": tn.tool, "arguments": tn.args}}}
		if tn.text == "" {
			msg["content"] = nil
		}
	}
	json.NewEncoder(w).Encode(map[string]any{
		"id": fmt.Sprintf("chatcmpl-%d", n), "object": "chat.completion", "model": "test-model-0613",
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": "stop"}},
		"usage":   map[string]any{"prompt_tokens": 1000, "completion_tokens": 50, "total_tokens": 1050},
	})
}

func last(s seen) chatMsg { return s.msgs[len(s.msgs)-1] }

// expectLast checks the request's last message.
func expectLast(role, contains string) func(t *testing.T, s seen) {
	return func(t *testing.T, s seen) {
		t.Helper()
		m := last(s)
		if m.Role != role || !strings.Contains(m.Content, contains) {
			t.Errorf("request with %d messages: last message %s %q, want %s containing %q", len(s.msgs), m.Role, m.Content, role, contains)
		}
	}
}

// createFiles writes a script with a bug and its test.
const createFiles = `cat > calc.sh <<'END'
echo $(($1 - $2))
END
cat > test.sh <<'END'
got=$(sh calc.sh 2 3)
if [ "$got" = 5 ]; then echo PASS; else echo "FAIL: add(2, 3) = $got, want 5"; exit 1; fi
END
seq 1 30 > numbers.txt && cat numbers.txt && ls`

func jsonArgs(v map[string]any) string { b, _ := json.Marshal(v); return string(b) }

// TestOpenAIAgentFixesABug: the openai agent, a real plugin process,
// against a fake model server with recorded replies, in a real native
// sandbox: it creates a script and its test, runs the failing test, fixes
// the script, reruns the test and finishes. On the way the server answers
// 429 with Retry-After and 500, the model sends a malformed reply and
// tool-call arguments written as a Python literal and corrects both, and
// starts a long command that it interrupts with is_input C-c.
func TestOpenAIAgentFixesABug(t *testing.T) {
	model := &fakeModel{t: t}
	var first time.Time
	model.turns = []turn{
		{status: 429, retryAfter: "1", check: func(t *testing.T, s seen) {
			first = s.at
			if got := s.header.Get("Authorization"); got != "Bearer sk-test-123" {
				t.Errorf("Authorization %q", got)
			}
			if s.header.Get("X-Team") != "harness" {
				t.Errorf("headers %v", s.header)
			}
			if s.body["model"] != "test-model" || s.body["temperature"] != 0.1 || s.body["max_tokens"] != 512.0 {
				t.Errorf("body %v", s.body)
			}
			var names []string
			for _, tl := range s.body["tools"].([]any) {
				names = append(names, tl.(map[string]any)["function"].(map[string]any)["name"].(string))
			}
			if !slices.Equal(names, []string{"execute_bash", "str_replace_editor", "execute_ipython_cell", "think", "finish"}) {
				t.Errorf("tools %v", names)
			}
			if s.msgs[0].Role != "system" || !strings.Contains(s.msgs[0].Content, "## AGENTS.md\n\nShell scripts are tested with sh test.sh.") ||
				s.msgs[1].Role != "user" || !strings.Contains(s.msgs[1].Content, "calc.sh") {
				t.Errorf("first messages %+v", s.msgs[:2])
			}
		}},
		{tool: "execute_bash", args: jsonArgs(map[string]any{"command": createFiles}), check: func(t *testing.T, s seen) {
			if gap := s.at.Sub(first); gap < time.Second {
				t.Errorf("retried %s after a 429 with Retry-After: 1", gap)
			}
		}},
		{text: "Now I'll run the test:\n```bash\nsh test.sh", check: expectLast("tool", "30\nAGENTS.md  calc.sh  numbers.txt  test.sh\n[exit code 0, cwd /workspace]")},
		{status: 500, check: expectLast("user", "Your last reply could not be used")},
		{text: "Sorry, the fence was not closed.\n```bash\nsh test.sh\n```", check: expectLast("user", "Your last reply could not be used")},
		{tool: "execute_bash", args: `{'command': "sed -i 's/-/+/' calc.sh", 'is_input': False}`,
			check: expectLast("tool", "FAIL: add(2, 3) = -1, want 5\n[exit code 1, cwd /workspace]")},
		{tool: "execute_bash", args: jsonArgs(map[string]any{"command": "sed -i 's/-/+/' calc.sh && cat calc.sh"}),
			check: expectLast("user", `{"command": "sed -i 's/-/+/' calc.sh", "is_input": false}`)},
		{tool: "execute_bash", args: jsonArgs(map[string]any{"command": "sleep 120"}), check: expectLast("tool", "echo $(($1 + $2))")},
		{tool: "execute_bash", args: jsonArgs(map[string]any{"command": "C-c", "is_input": true}), check: expectLast("tool", "[still running")},
		{tool: "think", args: jsonArgs(map[string]any{"thought": "The sleep is gone; rerun the test."}), check: func(t *testing.T, s seen) {
			if m := last(s); m.Role != "tool" || strings.Contains(m.Content, "still running") {
				t.Errorf("after C-c: %+v", m)
			}
		}},
		{tool: "execute_bash", args: jsonArgs(map[string]any{"command": "sh test.sh"}), check: func(t *testing.T, s seen) {
			m := s.msgs[len(s.msgs)-2]
			if m.Role != "assistant" || len(m.ToolCalls) != 1 || m.ToolCalls[0].Function.Name != "think" || last(s).Content != "Your thought has been logged." {
				t.Errorf("the thought is not in the history: %+v", s.msgs[len(s.msgs)-2:])
			}
		}},
		{text: "The test passes.", tool: "finish", args: jsonArgs(map[string]any{"message": "calc.sh subtracted instead of adding; fixed, and test.sh passes."}),
			check: expectLast("tool", "PASS\n[exit code 0")},
	}
	srv := httptest.NewServer(model)
	defer srv.Close()

	dir := t.TempDir()
	cfg := config.Default()
	cfg.Daemon.DataDir = dir
	cfg.Daemon.Socket = filepath.Join(dir, "h.sock")
	cfg.Daemon.ShutdownGrace = config.Duration{Duration: time.Second}
	cfg.Sandbox.Driver = config.DriverNative
	cfg.Sandbox.PoolSize = 1
	cfg.Sandbox.MemoryMB = 256
	cfg.Terminal.SoftTimeout = config.Duration{Duration: 2 * time.Second}
	a := cfg.Agents["openai"]
	a.BaseURL = srv.URL + "/v1"
	a.Model = "test-model"
	a.APIKeyEnv = "HARNESSD_TEST_OPENAI_KEY"
	a.Temperature = 0.1
	a.MaxTokens = 512
	a.Headers = map[string]string{"X-Team": "harness"}
	a.PriceInput, a.PriceOutput = 2, 10
	a.ContextTokens = 1100
	a.Retries = 3
	a.Timeout = config.Duration{Duration: 30 * time.Second}
	cfg.Agents["openai"] = a
	t.Setenv("HARNESSD_TEST_OPENAI_KEY", "sk-test-123")

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	ready := make(chan string, 1)
	served := make(chan error, 1)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	go func() {
		served <- serve.Run(ctx, serve.Options{Config: cfg, Logger: log, Ready: func(s string) { ready <- s }, AgentExe: os.Args[0]})
	}()
	var socket string
	select {
	case socket = <-ready:
	case err := <-served:
		t.Fatal(err)
	}
	cl := api.NewClient(socket)
	defer cl.Close()
	sess, err := cl.CreateSession(ctx, daemon.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sess.Workspace, "AGENTS.md"), []byte("Shell scripts are tested with sh test.sh.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run, err := cl.StartRun(ctx, sess.ID, agent.Request{Agent: "openai", Task: "calc.sh should add its two arguments. Write it with a test, make the test pass."})
	if err != nil {
		t.Fatal(err)
	}
	var end agent.Info
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if end, err = cl.Run(ctx, run.ID); err != nil {
			t.Fatal(err)
		}
		if end.State == agent.StateEnded || time.Now().After(deadline) {
			break
		}
	}
	if end.Reason != agent.ReasonFinished || end.Message != "calc.sh subtracted instead of adding; fixed, and test.sh passes." ||
		end.Steps != 10 || end.Tokens != 10500 || end.Cost < 0.02499 || end.Cost > 0.02501 || end.Restarts != 0 {
		t.Fatalf("%+v", end)
	}
	if len(model.reqs) != len(model.turns) {
		t.Fatalf("%d requests for %d turns", len(model.reqs), len(model.turns))
	}
	if b, err := os.ReadFile(filepath.Join(sess.Workspace, "calc.sh")); err != nil || string(b) != "echo $(($1 + $2))\n" {
		t.Fatalf("calc.sh: %q, %v", b, err)
	}

	var evs []event.Event
	cl.Events(ctx, sess.ID, 0, false, func(ev event.Event) error { evs = append(evs, ev); return nil })
	count := map[string]int{}
	var masked []agent.ContextMasked
	for _, ev := range evs {
		count[string(ev.Kind())]++
		if m, ok := agent.Unwrap(ev).(agent.ContextMasked); ok {
			masked = append(masked, m)
		}
	}
	for k, n := range map[string]int{"run_started": 1, "guidance_loaded": 1, "agent_step": 10, "cmd_run": 6, "cmd_output": 6, "invalid_action": 2, "finish": 1, "run_ended": 1} {
		if count[k] != n {
			t.Errorf("%d %s events, want %d (all: %v)", count[k], k, n, count)
		}
	}
	// The shell ran in a native sandbox, in /workspace.
	if st := evs[0].Payload.(event.SandboxStarted); st.Driver != "native" || st.Workdir != "/workspace" {
		t.Errorf("%+v", st)
	}
	// The context budget masked the oldest observation's body (30 lines
	// of numbers), and later requests show it masked.
	if len(masked) == 0 || masked[0].TokensBefore <= masked[0].TokensAfter {
		t.Fatalf("context_masked: %+v", masked)
	}
	firstOut := evs[slices.IndexFunc(evs, func(e event.Event) bool { return e.Kind() == event.KindCmdOutput })].Seq
	if masked[0].Seqs[0] != firstOut {
		t.Errorf("masked %v first, want the first observation %d", masked[0].Seqs, firstOut)
	}
	lastReq := model.reqs[len(model.reqs)-1]
	if m := lastReq.msgs[3]; m.Role != "tool" || !strings.Contains(m.Content, "lines masked to save context") || !strings.HasPrefix(m.Content, "1\n") {
		t.Errorf("the masked observation reads %q", m.Content)
	}
	stop()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
}
