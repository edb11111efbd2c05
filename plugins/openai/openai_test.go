package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	pb "github.com/harnessd/harnessd/plugins/proto"
)

func newClient(t *testing.T, h http.HandlerFunc, retries int) (*client, *[]time.Duration) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	s := Settings{BaseURL: srv.URL + "/v1", Model: "m", Retries: retries, BackoffMS: 1, TimeoutS: 0.3, MaxWaitS: 5}
	if err := s.check(); err != nil {
		t.Fatal(err)
	}
	var waits []time.Duration
	c := &client{s: s, http: &http.Client{}, sleep: func(_ context.Context, d time.Duration) error {
		waits = append(waits, d)
		return nil
	}}
	return c, &waits
}

const okBody = `{"choices":[{"message":{"content":"hi"}}],"usage":{"prompt_tokens":3,"completion_tokens":1}}`

// TestRetries: 429 and 5xx are retried, Retry-After (seconds or a date)
// is honoured up to the cap, other statuses and garbage are not retried,
// and a request that takes too long is retried as a timeout.
func TestRetries(t *testing.T) {
	for _, c := range []struct {
		name      string
		answers   []func(w http.ResponseWriter)
		retries   int
		wantErr   string
		attempts  int
		wantWaits []time.Duration // a minimum for each wait
	}{
		{"429 then ok", []func(http.ResponseWriter){status(429, "2"), ok}, 3, "", 2, []time.Duration{2 * time.Second}},
		{"retry-after date", []func(http.ResponseWriter){status(503, time.Now().Add(3*time.Second).UTC().Format(http.TimeFormat)), ok}, 3, "", 2, []time.Duration{time.Second}},
		{"retry-after capped", []func(http.ResponseWriter){status(429, "3600"), ok}, 3, "", 2, []time.Duration{5 * time.Second}},
		{"5xx until out of retries", []func(http.ResponseWriter){status(500, ""), status(502, ""), status(500, "")}, 2, "HTTP 500", 3, nil},
		{"400 is final", []func(http.ResponseWriter){status(400, ""), ok}, 3, "HTTP 400", 1, nil},
		{"not JSON", []func(http.ResponseWriter){func(w http.ResponseWriter) { w.Write([]byte("<html>")) }}, 3, "not JSON", 1, nil},
		{"no choices", []func(http.ResponseWriter){func(w http.ResponseWriter) { w.Write([]byte(`{"choices":[]}`)) }}, 3, "without choices", 1, nil},
		{"timeout", []func(http.ResponseWriter){func(w http.ResponseWriter) { time.Sleep(time.Second) }, ok}, 3, "", 2, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			var n atomic.Int32
			cl, waits := newClient(t, func(w http.ResponseWriter, r *http.Request) {
				i := int(n.Add(1)) - 1
				c.answers[min(i, len(c.answers)-1)](w)
			}, c.retries)
			resp, attempts, err := cl.complete(context.Background(), &chatRequest{Model: "m"})
			if c.wantErr == "" && (err != nil || *resp.Choices[0].Message.Content != "hi") {
				t.Fatalf("%v", err)
			}
			if c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)) {
				t.Fatalf("%v, want %q", err, c.wantErr)
			}
			if attempts != c.attempts {
				t.Errorf("%d attempts, want %d", attempts, c.attempts)
			}
			for i, w := range c.wantWaits {
				if i >= len(*waits) || (*waits)[i] < w || (*waits)[i] > 5*time.Second {
					t.Errorf("waits %v, want wait %d at least %s (at most the 5s cap)", *waits, i, w)
				}
			}
		})
	}
}

func status(code int, retryAfter string) func(http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		if retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		http.Error(w, "busy", code)
	}
}

func ok(w http.ResponseWriter) { w.Write([]byte(okBody)) }

func ev(seq, cause uint64, src, kind string, fields string) []byte {
	s := fmt.Sprintf(`{"seq":%d,"source":%q,"kind":%q`, seq, src, kind)
	if cause != 0 {
		s += fmt.Sprintf(`,"cause":%d`, cause)
	}
	if fields != "" {
		s += "," + fields
	}
	return []byte(s + "}")
}

// TestMessages: the run's events as a conversation, tool calls paired
// with their results, sub-runs left out.
func TestMessages(t *testing.T) {
	raws := [][]byte{
		ev(1, 0, "runtime", "sandbox_started", `"driver":"none"`),
		ev(2, 0, "user", "cmd_run", `"command":"make"`), // before the run: left out
		ev(3, 0, "runtime", "run_started", `"run":"r1","agent":"a","task":"t"`),
		ev(4, 0, "runtime", "agent_step", `"run":"r1","step":1,"action":"cmd_run","thought":"look first"`),
		ev(5, 0, "agent", "cmd_run", `"command":"ls"`),
		ev(6, 5, "runtime", "cmd_output", `"exit_code":0,"cwd":"/w","output":"a\nb\n"`),
		ev(7, 0, "runtime", "agent_step", `"run":"r1","step":2,"action":"delegate"`),
		ev(8, 0, "agent", "delegate", `"agent":"helper","task":"do it"`),
		ev(9, 0, "runtime", "run_started", `"run":"r2","parent":"r1","agent":"helper","task":"do it"`),
		ev(10, 0, "agent", "cmd_run", `"command":"helper stuff"`),
		ev(11, 10, "runtime", "cmd_output", `"exit_code":0,"cwd":"/w","output":"x"`),
		ev(12, 0, "runtime", "run_ended", `"run":"r2","reason":"finished"`),
		ev(13, 8, "runtime", "delegate_result", `"run":"r2","agent":"helper","reason":"finished","message":"done"`),
		ev(14, 0, "runtime", "invalid_action", `"reason":"bad","guidance":"do better"`),
		ev(15, 0, "runtime", "agent_step", `"run":"r1","step":3,"action":"think","thought":"hmm"`),
		ev(16, 0, "runtime", "agent_step", `"run":"r1","step":4,"action":"reply"`),
		ev(17, 0, "agent", "cmd_run", `"command":"sleep 9"`), // no output recorded
		ev(18, 0, "user", "message", `"text":"keep going"`),
	}
	evs, err := decodeEvents(raws)
	if err != nil {
		t.Fatal(err)
	}
	req := &pb.StepRequest{Run: "r1", Task: "the task", Guidance: []*pb.Guidance{{Path: "AGENTS.md", Text: "be brief"}}}
	msgs := messages(req, evs, true)
	var got []string
	for _, m := range msgs {
		s := m.Role + ":" + m.Content
		for _, c := range m.ToolCalls {
			s += fmt.Sprintf(" [%s %s %s]", c.ID, c.Function.Name, c.Function.Arguments)
		}
		if m.ToolCallID != "" {
			s += " <" + m.ToolCallID + ">"
		}
		got = append(got, s)
	}
	want := []string{
		"system:" + msgs[0].Content,
		"user:the task",
		`assistant:look first [call_5 execute_bash {"command":"ls"}]`,
		"tool:a\nb\n[exit code 0, cwd /w] <call_5>",
		"assistant:(Delegated to agent helper: do it)",
		"user:The delegated run of agent helper ended (finished): done",
		"user:Your last reply could not be used: bad\ndo better",
		`assistant: [call_15 think {"thought":"hmm"}]`,
		"tool:Your thought has been logged. <call_15>",
		`assistant: [call_17 execute_bash {"command":"sleep 9"}]`,
		"tool:(no result was recorded) <call_17>",
		"user:keep going",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\n\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !strings.Contains(msgs[0].Content, "## AGENTS.md\n\nbe brief") {
		t.Errorf("system prompt without guidance: %q", msgs[0].Content)
	}
	// CodeAct: commands are fenced blocks, outputs observations.
	msgs = messages(req, evs, false)
	if msgs[2].Content != "look first\n\n```bash\nls\n```" || msgs[3].Role != "user" || !strings.HasPrefix(msgs[3].Content, "Observation:\na\nb\n") {
		t.Errorf("codeact: %+v", msgs[2:4])
	}
}

func TestMask(t *testing.T) {
	big := strings.Repeat("line\n", 200)
	mk := func(seq uint64) message {
		full, masked := render(rawEvent{Seq: seq, Output: "first\n" + big + "last\n", ExitCode: 2, Cwd: "/w",
			Trimmed: &struct {
				LinesTotal   int    `json:"lines_total"`
				LinesOmitted int    `json:"lines_omitted"`
				OutputID     string `json:"output_id"`
			}{OutputID: fmt.Sprintf("o%d", seq)}})
		return message{Role: "tool", Content: full, seq: seq, maskedForm: masked}
	}
	msgs := []message{{Role: "system", Content: "sys"}, {Role: "user", Content: "task"}, mk(3), mk(5), mk(7), mk(9), mk(11)}
	seqs, before, after := mask(msgs, total(msgs)-100)
	if len(seqs) != 1 || seqs[0] != 3 || after >= before || after > before-100 {
		t.Fatalf("masked %v, %d -> %d", seqs, before, after)
	}
	want := "first\n[... 200 lines masked to save context, full output o3 ...]\nlast\n[exit code 2, cwd /w]"
	if msgs[2].Content != want {
		t.Errorf("masked form %q", msgs[2].Content)
	}
	// The latest three are never masked, whatever the budget.
	seqs, _, _ = mask(msgs, 1)
	if fmt.Sprint(seqs) != "[5]" || msgs[4].Content == msgs[4].maskedForm {
		t.Errorf("masked %v", seqs)
	}
	if seqs, _, _ := mask([]message{mk(1)}, 0); seqs != nil {
		t.Errorf("no budget masked %v", seqs)
	}
}

func TestReply(t *testing.T) {
	text := func(s string) *string { return &s }
	mk := func(content *string, calls ...toolCall) *chatResponse {
		r := &chatResponse{}
		r.Choices = make([]struct {
			Message struct {
				Content   *string    `json:"content"`
				ToolCalls []toolCall `json:"tool_calls"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		}, 1)
		r.Choices[0].Message.Content = content
		r.Choices[0].Message.ToolCalls = calls
		return r
	}
	call := func(name, args string) toolCall {
		return toolCall{ID: "c", Type: "function", Function: function{Name: name, Arguments: args}}
	}
	r := reply(mk(text("```bash\nls\n```")), true)
	if r.GetReply().GetText() != "```bash\nls\n```" {
		t.Errorf("%v", r)
	}
	r = reply(mk(text("checking"), call("execute_bash", `{"command":"ls"}`), call("finish", `{}`)), true)
	if r.GetReply().GetTool() != "execute_bash" || !strings.HasPrefix(r.GetThought(), "checking\n(1 more tool calls") {
		t.Errorf("%v", r)
	}
	r = reply(mk(nil, call("think", `{"thought":"plan"}`)), true)
	if r.GetAction() != nil || r.GetThought() != "plan" {
		t.Errorf("%v", r)
	}
	r = reply(mk(nil, call("think", `{'thought': 'py'}`)), true)
	if r.GetAction() != nil || r.GetThought() != `{'thought': 'py'}` {
		t.Errorf("%v", r)
	}
	// In codeact mode tool calls are not offered, and text is all there is.
	if r := reply(mk(text("hi"), call("x", "{}")), false); r.GetReply().GetText() != "hi" {
		t.Errorf("%v", r)
	}
	if r := reply(mk(nil), true); r.GetReply() == nil || r.GetReply().GetText() != "" {
		t.Errorf("%v", r)
	}
}

func TestSettings(t *testing.T) {
	for _, s := range []Settings{{BaseURL: "ftp://x", Model: "m"}, {BaseURL: "http://x"}, {BaseURL: "http://x", Model: "m", Mode: "chat"}} {
		if err := s.check(); err == nil {
			t.Errorf("%+v accepted", s)
		}
	}
	b, _ := json.Marshal(Settings{BaseURL: "http://x/v1", Model: "m", Retries: 2})
	var back Settings
	if err := json.Unmarshal(b, &back); err != nil || back.Model != "m" || back.Retries != 2 {
		t.Errorf("%+v %v", back, err)
	}
	if !retryable(fmt.Errorf("x: %w", errTimeout)) || retryable(errors.New("other")) {
		t.Error("retryable")
	}
}
