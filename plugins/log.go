package plugins

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log"
	"log/slog"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"
)

// hclogger adapts an slog.Logger to the hclog.Logger go-plugin logs to.
// Its children by Named are the plugin's stderr: go-plugin logs every line
// that is not hclog JSON there at debug, which this adapter drops, because
// lineWriter already logged the line, at info, from Config.Stderr.
type hclogger struct {
	l      *slog.Logger
	name   string
	stderr bool
	args   []any
	level  hclog.Level
}

var _ hclog.Logger = (*hclogger)(nil)

func newHCLogger(l *slog.Logger) *hclogger {
	return &hclogger{l: l, level: hclog.Debug}
}

func (h *hclogger) Log(level hclog.Level, msg string, args ...any) {
	if level < h.level || level == hclog.Off {
		return
	}
	if h.stderr && level <= hclog.Debug {
		return
	}
	var sl slog.Level
	switch level {
	case hclog.Trace, hclog.Debug:
		sl = slog.LevelDebug
	case hclog.Info, hclog.NoLevel:
		sl = slog.LevelInfo
	case hclog.Warn:
		sl = slog.LevelWarn
	default:
		sl = slog.LevelError
	}
	ctx := context.Background()
	if !h.l.Enabled(ctx, sl) {
		return
	}
	if h.name != "" {
		msg = h.name + ": " + msg
	}
	h.l.Log(ctx, sl, msg, append(append([]any{}, h.args...), args...)...)
}

func (h *hclogger) Trace(msg string, args ...any) { h.Log(hclog.Trace, msg, args...) }
func (h *hclogger) Debug(msg string, args ...any) { h.Log(hclog.Debug, msg, args...) }
func (h *hclogger) Info(msg string, args ...any)  { h.Log(hclog.Info, msg, args...) }
func (h *hclogger) Warn(msg string, args ...any)  { h.Log(hclog.Warn, msg, args...) }
func (h *hclogger) Error(msg string, args ...any) { h.Log(hclog.Error, msg, args...) }
func (h *hclogger) IsTrace() bool                 { return false }
func (h *hclogger) IsDebug() bool                 { return h.l.Enabled(context.Background(), slog.LevelDebug) }
func (h *hclogger) IsInfo() bool                  { return h.l.Enabled(context.Background(), slog.LevelInfo) }
func (h *hclogger) IsWarn() bool                  { return h.l.Enabled(context.Background(), slog.LevelWarn) }
func (h *hclogger) IsError() bool                 { return h.l.Enabled(context.Background(), slog.LevelError) }
func (h *hclogger) ImpliedArgs() []any            { return h.args }
func (h *hclogger) Name() string                  { return h.name }
func (h *hclogger) SetLevel(l hclog.Level)        { h.level = l }
func (h *hclogger) GetLevel() hclog.Level         { return h.level }

func (h *hclogger) With(args ...any) hclog.Logger {
	c := *h
	c.args = append(append([]any{}, h.args...), args...)
	return &c
}

func (h *hclogger) Named(name string) hclog.Logger {
	c := *h
	if c.name != "" {
		name = c.name + "." + name
	}
	c.name = name
	c.stderr = true
	return &c
}

func (h *hclogger) ResetNamed(name string) hclog.Logger {
	c := *h
	c.name = name
	return &c
}

func (h *hclogger) StandardLogger(opts *hclog.StandardLoggerOptions) *log.Logger {
	return log.New(h.StandardWriter(opts), "", 0)
}

func (h *hclogger) StandardWriter(*hclog.StandardLoggerOptions) io.Writer {
	return &lineWriter{log: func(line string) { h.Info(line) }}
}

// lineWriter calls log once per line written to it; a line of hclog JSON
// (which go-plugin logs itself, at its own level) is skipped.
type lineWriter struct {
	mu   sync.Mutex
	buf  []byte
	log  func(line string)
	json bool // skip lines that are hclog JSON
}

// maxLine bounds one logged line; the rest of a longer one is dropped.
const maxLine = 16 << 10

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			if room := maxLine - len(w.buf); room > 0 {
				w.buf = append(w.buf, p[:min(room, len(p))]...)
			}
			break
		}
		if room := maxLine - len(w.buf); room > 0 {
			w.buf = append(w.buf, p[:min(room, i)]...)
		}
		w.emit()
		p = p[i+1:]
	}
	return n, nil
}

func (w *lineWriter) emit() {
	line := strings.TrimRight(string(w.buf), "\r")
	w.buf = w.buf[:0]
	if line == "" {
		return
	}
	if w.json && isHCLogJSON(line) {
		return
	}
	w.log(line)
}

// isHCLogJSON reports whether line is one of hclog's JSON lines, which
// go-plugin parses and logs at their own level.
func isHCLogJSON(line string) bool {
	if !strings.HasPrefix(line, "{") || !strings.Contains(line, `"@level"`) {
		return false
	}
	var v struct {
		Level string `json:"@level"`
	}
	return json.Unmarshal([]byte(line), &v) == nil && v.Level != ""
}

// Flush logs a last line that had no newline.
func (w *lineWriter) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 {
		w.emit()
	}
}
