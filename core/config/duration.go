package config

import (
	"fmt"
	"strings"
	"time"
)

// Duration is a time.Duration written in TOML as a string in Go's syntax:
// "10s", "1m30s", "250ms". TOML has no duration type, and a bare integer
// would leave the unit to guesswork, so integers are refused.
type Duration struct{ time.Duration }

// MarshalText returns the duration in Go's syntax without trailing zero
// units: "30m" rather than "30m0s".
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText parses a duration in Go's syntax (time.ParseDuration).
func (d *Duration) UnmarshalText(text []byte) error {
	v, err := time.ParseDuration(string(text))
	if err != nil {
		return fmt.Errorf("invalid duration %q: %w", text, err)
	}
	d.Duration = v
	return nil
}

// String returns the duration as MarshalText does.
func (d Duration) String() string { return formatDuration(d.Duration) }

// formatDuration is time.Duration.String without the zero units it
// leaves after hours or minutes ("1h0m0s" -> "1h", "30m0s" -> "30m").
// ParseDuration reads the result back to the same value.
func formatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}
