package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// The chat-completions protocol, as much of it as the agent uses.

type chatRequest struct {
	Model       string    `json:"model"`
	Messages    []message `json:"messages"`
	Temperature float64   `json:"temperature"`
	MaxTokens   int       `json:"max_tokens,omitempty"`
	Tools       []tool    `json:"tools,omitempty"`
	ToolChoice  string    `json:"tool_choice,omitempty"`
}

type message struct {
	Role       string     `json:"role"` // system, user, assistant, tool
	Content    string     `json:"content"`
	ToolCalls  []toolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`

	seq        uint64 // the observation's event, for masking; 0 for others
	maskedForm string // the observation with its body masked
}

type toolCall struct {
	ID       string   `json:"id"`
	Type     string   `json:"type"`
	Function function `json:"function"`
}

type function struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type tool struct {
	Type     string  `json:"type"`
	Function toolDef `json:"function"`
}

type toolDef struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Parameters  map[string]any `json:"parameters"`
}

type chatResponse struct {
	Model   string `json:"model"`
	Choices []struct {
		Message struct {
			Content   *string    `json:"content"`
			ToolCalls []toolCall `json:"tool_calls"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage struct {
		PromptTokens     int64 `json:"prompt_tokens"`
		CompletionTokens int64 `json:"completion_tokens"`
	} `json:"usage"`
}

// client posts chat completions with retries.
type client struct {
	s     Settings
	key   string
	http  *http.Client
	sleep func(ctx context.Context, d time.Duration) error
}

// statusError is an answer the server gave with an error status.
type statusError struct {
	status int
	body   string
	retry  time.Duration // Retry-After, 0 when absent
}

func (e *statusError) Error() string {
	return fmt.Sprintf("chat completions: HTTP %d: %s", e.status, e.body)
}

// retryable reports whether err is worth another try: 429, a 5xx, a
// timeout or a connection that failed.
func retryable(err error) bool {
	var se *statusError
	if errors.As(err, &se) {
		return se.status == http.StatusTooManyRequests || se.status >= 500
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, errTimeout)
}

var errTimeout = errors.New("request timed out")

// complete sends req, retrying what is retryable with exponential backoff
// and full jitter, waiting at least what Retry-After asks (at most
// MaxWaitS). It reports how many attempts it made.
func (c *client) complete(ctx context.Context, req *chatRequest) (*chatResponse, int, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, 0, err
	}
	var last error
	for attempt := 0; ; attempt++ {
		resp, err := c.post(ctx, body)
		if err == nil {
			return resp, attempt + 1, nil
		}
		last = err
		if ctx.Err() != nil || !retryable(err) || attempt >= c.s.Retries {
			return nil, attempt + 1, last
		}
		wait := c.s.backoff() << attempt
		wait = time.Duration(rand.Int64N(int64(wait) + 1)) // full jitter
		var se *statusError
		if errors.As(err, &se) && se.retry > wait {
			wait = se.retry
		}
		wait = min(wait, c.s.maxWait())
		if err := c.sleep(ctx, wait); err != nil {
			return nil, attempt + 1, fmt.Errorf("%w (while waiting to retry: %w)", last, err)
		}
	}
}

func (c *client) post(ctx context.Context, body []byte) (*chatResponse, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, c.s.timeout(), errTimeout)
	defer cancel()
	url := strings.TrimSuffix(c.s.BaseURL, "/") + "/chat/completions"
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	hreq.Header.Set("Content-Type", "application/json")
	if c.key != "" {
		hreq.Header.Set("Authorization", "Bearer "+c.key)
	}
	for k, v := range c.s.Headers {
		hreq.Header.Set(k, v)
	}
	resp, err := c.http.Do(hreq)
	if err != nil {
		if context.Cause(ctx) == errTimeout {
			return nil, fmt.Errorf("%w after %s", errTimeout, c.s.timeout())
		}
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		if context.Cause(ctx) == errTimeout {
			return nil, fmt.Errorf("%w after %s", errTimeout, c.s.timeout())
		}
		return nil, fmt.Errorf("reading the answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, &statusError{status: resp.StatusCode, body: shorten(string(data), 500), retry: retryAfter(resp.Header.Get("Retry-After"))}
	}
	var cr chatResponse
	if err := json.Unmarshal(data, &cr); err != nil {
		return nil, fmt.Errorf("chat completions: the answer is not JSON: %w: %s", err, shorten(string(data), 200))
	}
	if len(cr.Choices) == 0 {
		return nil, fmt.Errorf("chat completions: an answer without choices: %s", shorten(string(data), 200))
	}
	return &cr, nil
}

// retryAfter reads a Retry-After header: seconds, or an HTTP date.
func retryAfter(v string) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseFloat(v, 64); err == nil && n >= 0 {
		return time.Duration(n * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(0, time.Until(t))
	}
	return 0
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// shorten cuts s to at most n bytes, at a character boundary.
func shorten(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	cut := max(0, n-len("…"))
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
