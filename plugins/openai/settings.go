package openai

import (
	"fmt"
	"net/url"
	"time"

	"github.com/harnessd/harnessd/core/config"
)

// Settings are the openai agent's settings, from its [agents.NAME] table
// (SettingsFrom), passed to the plugin as JSON.
type Settings struct {
	BaseURL       string            `json:"base_url"`
	Model         string            `json:"model"`
	APIKeyEnv     string            `json:"api_key_env,omitempty"`
	Temperature   float64           `json:"temperature"`
	MaxTokens     int               `json:"max_tokens,omitempty"`
	Headers       map[string]string `json:"headers,omitempty"`
	ContextTokens int               `json:"context_tokens,omitempty"`
	PriceInput    float64           `json:"price_input,omitempty"`  // per million prompt tokens
	PriceOutput   float64           `json:"price_output,omitempty"` // per million completion tokens
	Retries       int               `json:"retries"`
	TimeoutS      float64           `json:"timeout_s,omitempty"`
	Mode          string            `json:"mode,omitempty"` // "tools" (default) or "codeact"

	// BackoffMS is the first retry's wait before jitter (default 500);
	// MaxWaitS caps any one wait, Retry-After's included (default 60).
	BackoffMS int     `json:"backoff_ms,omitempty"`
	MaxWaitS  float64 `json:"max_wait_s,omitempty"`
}

// SettingsFrom takes the settings from an agent's config.
func SettingsFrom(a config.Agent) Settings {
	return Settings{
		BaseURL:       a.BaseURL,
		Model:         a.Model,
		APIKeyEnv:     a.APIKeyEnv,
		Temperature:   a.Temperature,
		MaxTokens:     a.MaxTokens,
		Headers:       a.Headers,
		ContextTokens: a.ContextTokens,
		PriceInput:    a.PriceInput,
		PriceOutput:   a.PriceOutput,
		Retries:       a.Retries,
		TimeoutS:      a.Timeout.Seconds(),
		Mode:          a.Mode,
	}
}

func (s *Settings) check() error {
	u, err := url.Parse(s.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("base_url %q: want an http or https URL", s.BaseURL)
	}
	if s.Model == "" {
		return fmt.Errorf("no model")
	}
	switch s.Mode {
	case "":
		s.Mode = config.ModeTools
	case config.ModeTools, config.ModeCodeAct:
	default:
		return fmt.Errorf("mode %q: want %q or %q", s.Mode, config.ModeTools, config.ModeCodeAct)
	}
	if s.Retries < 0 {
		s.Retries = 0
	}
	return nil
}

func (s Settings) timeout() time.Duration {
	if s.TimeoutS <= 0 {
		return 10 * time.Minute
	}
	return time.Duration(s.TimeoutS * float64(time.Second))
}

func (s Settings) backoff() time.Duration {
	if s.BackoffMS <= 0 {
		return 500 * time.Millisecond
	}
	return time.Duration(s.BackoffMS) * time.Millisecond
}

func (s Settings) maxWait() time.Duration {
	if s.MaxWaitS <= 0 {
		return time.Minute
	}
	return time.Duration(s.MaxWaitS * float64(time.Second))
}
