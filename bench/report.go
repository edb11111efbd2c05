package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"
)

// Report is the whole benchmark result, as printed with -json.
type Report struct {
	Header   Header     `json:"header"`
	Sections []*Section `json:"sections"`
}

// Header describes the machine and the run, so figures can be compared
// only with figures taken under the same conditions.
type Header struct {
	Date       time.Time `json:"date"`
	GoVersion  string    `json:"go_version"`
	Kernel     string    `json:"kernel"`
	CPUs       int       `json:"cpus"`
	CPUModel   string    `json:"cpu_model,omitempty"`
	LoadAvg    string    `json:"load_avg,omitempty"` // 1, 5 and 15 minutes, at the start
	Quick      bool      `json:"quick"`
	Iterations int       `json:"iterations"`
}

// Section is one part of the report.
type Section struct {
	Name    string   `json:"name"` // as given to -only
	Title   string   `json:"title"`
	Notes   []string `json:"notes,omitempty"`   // what was run, and how
	Skipped string   `json:"skipped,omitempty"` // why nothing was measured
	Error   string   `json:"error,omitempty"`   // what went wrong; the rows may be partial
	Rows    []Row    `json:"rows,omitempty"`
	Seconds float64  `json:"seconds"` // how long the section took
}

// Row is one figure, its baseline and the ratio between them.
type Row struct {
	Name     string   `json:"name"`
	Figure   Measure  `json:"figure"`
	Baseline *Measure `json:"baseline,omitempty"`
	Ratio    float64  `json:"ratio,omitempty"`
	RatioOf  string   `json:"ratio_of,omitempty"` // what the ratio divides, e.g. "bash-c/warm"
	Target   string   `json:"target,omitempty"`
	Status   string   `json:"status,omitempty"` // PASS or MISS when there is a target
}

// Measure is one measured (or quoted) value in SI units.
type Measure struct {
	Label string  `json:"label,omitempty"` // what it is, for a baseline
	Value float64 `json:"value"`
	Unit  string  `json:"unit"` // unitSeconds, unitBytes, unitMBps, unitPerSec, unitCount or unitFraction
}

const (
	unitSeconds  = "s"
	unitBytes    = "B"
	unitMBps     = "MB/s" // 10^6 bytes a second
	unitPerSec   = "/s"   // events (e.g. sessions created) a second
	unitCount    = "count"
	unitFraction = "fraction" // 0 to 1, shown as a percentage
)

func dur(d time.Duration) Measure { return Measure{Value: d.Seconds(), Unit: unitSeconds} }

func bytesM(n int64) Measure { return Measure{Value: float64(n), Unit: unitBytes} }

func mbps(n int64, d time.Duration) Measure {
	return Measure{Value: float64(n) / 1e6 / d.Seconds(), Unit: unitMBps}
}

func perSecond(r float64) Measure { return Measure{Value: r, Unit: unitPerSec} }

func count(n int) Measure { return Measure{Value: float64(n), Unit: unitCount} }

func labelled(label string, m Measure) *Measure {
	m.Label = label
	return &m
}

// ratio is a/b, or 0 when b is not positive.
func ratio(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return a / b
}

// passIf is the status for a target: PASS if ok, MISS otherwise.
func passIf(ok bool) string {
	if ok {
		return "PASS"
	}
	return "MISS"
}

func newHeader(opts options) Header {
	h := Header{
		Date:       time.Now().UTC().Truncate(time.Second),
		GoVersion:  runtime.Version(),
		CPUs:       runtime.NumCPU(),
		Quick:      opts.quick,
		Iterations: opts.n,
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		h.Kernel = runtime.GOOS + " " + strings.TrimSpace(string(b))
	} else {
		h.Kernel = runtime.GOOS
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) >= 3 {
			h.LoadAvg = strings.Join(f[:3], " ")
		}
	}
	h.CPUModel = cpuModel()
	return h
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func writeJSON(w io.Writer, rep *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(rep); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}

// writeText prints the header and one table per section.
func writeText(w io.Writer, rep *Report) error {
	h := rep.Header
	mode := "full"
	if h.Quick {
		mode = "quick (small sizes: a smoke run, not figures)"
	}
	cpu := fmt.Sprintf("%d CPUs", h.CPUs)
	if h.CPUModel != "" {
		cpu += " (" + h.CPUModel + ")"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "harnessd benchmark  %s\n", h.Date.Format(time.RFC3339))
	fmt.Fprintf(&b, "%s, %s, %s, load average %s\n", cpu, h.Kernel, h.GoVersion, h.LoadAvg)
	fmt.Fprintf(&b, "mode %s, -n %d\n", mode, h.Iterations)
	for _, s := range rep.Sections {
		fmt.Fprintf(&b, "\n== %s: %s  (%.1fs)\n", s.Name, s.Title, s.Seconds)
		for _, n := range s.Notes {
			fmt.Fprintf(&b, "   %s\n", n)
		}
		if s.Skipped != "" {
			fmt.Fprintf(&b, "   %s\n", s.Skipped)
		}
		if len(s.Rows) > 0 {
			tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "   NAME\tFIGURE\tBASELINE\tRATIO\tTARGET\tRESULT")
			for _, r := range s.Rows {
				base, rat := "-", "-"
				if r.Baseline != nil {
					base = formatMeasure(*r.Baseline)
					if r.Baseline.Label != "" {
						base += " " + r.Baseline.Label
					}
				}
				if r.Ratio > 0 {
					rat = formatRatio(r.Ratio) + " " + r.RatioOf
				}
				target, status := r.Target, r.Status
				if target == "" {
					target, status = "-", ""
				}
				fmt.Fprintf(tw, "   %s\t%s\t%s\t%s\t%s\t%s\n", r.Name, formatMeasure(r.Figure), base, rat, target, status)
			}
			if err := tw.Flush(); err != nil {
				return fmt.Errorf("write report: %w", err)
			}
		}
		if s.Error != "" {
			fmt.Fprintf(&b, "   ERROR: %s\n", s.Error)
		}
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}

func formatMeasure(m Measure) string {
	switch m.Unit {
	case unitSeconds:
		return formatSeconds(m.Value)
	case unitBytes:
		return formatBytes(m.Value)
	case unitMBps:
		return fmt.Sprintf("%.0f MB/s", m.Value)
	case unitPerSec:
		return fmt.Sprintf("%.1f /s", m.Value)
	case unitCount:
		return fmt.Sprintf("%.0f", m.Value)
	case unitFraction:
		return fmt.Sprintf("%.1f%%", m.Value*100)
	}
	return fmt.Sprintf("%g %s", m.Value, m.Unit)
}

func formatSeconds(s float64) string {
	switch {
	case s < 1e-3:
		return fmt.Sprintf("%.1f µs", s*1e6)
	case s < 1:
		return fmt.Sprintf("%.2f ms", s*1e3)
	default:
		return fmt.Sprintf("%.2f s", s)
	}
}

func formatBytes(n float64) string {
	sign := ""
	if n < 0 {
		sign, n = "-", -n
	}
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%s%.2f GiB", sign, n/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%s%.1f MiB", sign, n/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%s%.0f KiB", sign, n/(1<<10))
	default:
		return fmt.Sprintf("%s%.0f B", sign, n)
	}
}

func formatRatio(r float64) string {
	switch {
	case r >= 100:
		return fmt.Sprintf("%.0fx", math.Round(r))
	case r >= 10:
		return fmt.Sprintf("%.1fx", r)
	case r >= 0.1:
		return fmt.Sprintf("%.2fx", r)
	default:
		// A small share (hooks beside a round trip): two significant digits.
		return fmt.Sprintf("%.2gx", r)
	}
}
