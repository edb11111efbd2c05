package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"
)

// Report is the whole run, as printed with -json.
type Report struct {
	Header Header  `json:"header"`
	Parts  []*Part `json:"parts"`
	Pass   bool    `json:"pass"` // every check of every part that ran passed
}

// Header says what ran where, so that figures are read beside the load
// they were taken under.
type Header struct {
	Date      time.Time `json:"date"`
	GoVersion string    `json:"go_version"`
	CPUs      int       `json:"cpus"`
	LoadStart string    `json:"load_start"` // /proc/loadavg's 1, 5 and 15 minute averages
	LoadEnd   string    `json:"load_end,omitempty"`
	Harnessd  string    `json:"harnessd"` // the binary attacked
	Driver    string    `json:"driver"`   // [sandbox] driver
	Seed      uint64    `json:"seed"`
	Dir       string    `json:"dir"` // where the daemons' data and logs are
}

// Part is one attack: its figures and whether its checks held.
type Part struct {
	Name    string   `json:"name"` // as given to -only
	Title   string   `json:"title"`
	Figures []Figure `json:"figures,omitempty"`
	Notes   []string `json:"notes,omitempty"`
	Skipped string   `json:"skipped,omitempty"` // why it did not run
	Error   string   `json:"error,omitempty"`   // why it could not finish; a failure
	Seconds float64  `json:"seconds"`
}

// Figure is one measured value; with a Want it is a check.
type Figure struct {
	Name   string `json:"name"`
	Value  string `json:"value"`
	Want   string `json:"want,omitempty"`   // what it must be, in words
	Status string `json:"status,omitempty"` // PASS or FAIL when there is a Want
}

// info adds a figure that is not checked.
func (p *Part) info(name, format string, args ...any) {
	p.Figures = append(p.Figures, Figure{Name: name, Value: fmt.Sprintf(format, args...)})
}

// check adds a checked figure: ok says whether it is what want says.
func (p *Part) check(name string, ok bool, want, format string, args ...any) {
	st := "PASS"
	if !ok {
		st = "FAIL"
	}
	p.Figures = append(p.Figures, Figure{Name: name, Value: fmt.Sprintf(format, args...), Want: want, Status: st})
}

// zero adds a count that must be 0.
func (p *Part) zero(name string, n int) {
	p.check(name, n == 0, "0", "%d", n)
}

func (p *Part) note(format string, args ...any) {
	p.Notes = append(p.Notes, fmt.Sprintf(format, args...))
}

// Pass says whether the part ran and every check held; a skipped part
// passes.
func (p *Part) Pass() bool {
	if p.Error != "" {
		return false
	}
	for _, f := range p.Figures {
		if f.Status == "FAIL" {
			return false
		}
	}
	return true
}

func (p *Part) status() string {
	switch {
	case p.Skipped != "":
		return "SKIP"
	case p.Pass():
		return "PASS"
	}
	return "FAIL"
}

func newHeader() Header {
	return Header{Date: time.Now().UTC().Truncate(time.Second), GoVersion: runtime.Version(), CPUs: runtime.NumCPU(), LoadStart: loadAvg()}
}

// loadAvg is the 1, 5 and 15 minute load averages.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// writeText prints the report as one small table per part.
func (r *Report) writeText(w io.Writer) {
	h := r.Header
	fmt.Fprintf(w, "harnessd fault injection  %s  %s, %d CPUs, load %s at start, %s at end\n",
		h.Date.Format(time.RFC3339), h.GoVersion, h.CPUs, h.LoadStart, h.LoadEnd)
	fmt.Fprintf(w, "daemon %s, sandbox.driver = %q, seed %d, data and logs in %s\n", h.Harnessd, h.Driver, h.Seed, h.Dir)
	for _, p := range r.Parts {
		fmt.Fprintf(w, "\n%s: %s  [%s, %.1fs]\n", p.Name, p.Title, p.status(), p.Seconds)
		if p.Skipped != "" {
			fmt.Fprintf(w, "  skipped: %s\n", p.Skipped)
		}
		var table bytes.Buffer
		tw := tabwriter.NewWriter(&table, 0, 0, 2, ' ', 0)
		for _, f := range p.Figures {
			if f.Want == "" {
				fmt.Fprintf(tw, "  %s\t%s\t\t\n", f.Name, f.Value)
			} else {
				fmt.Fprintf(tw, "  %s\t%s\twant %s\t%s\n", f.Name, f.Value, f.Want, f.Status)
			}
		}
		tw.Flush()
		for line := range strings.Lines(table.String()) {
			fmt.Fprintln(w, strings.TrimRight(line, " \n"))
		}
		if p.Error != "" {
			fmt.Fprintf(w, "  error: %s\n", p.Error)
		}
		for _, n := range p.Notes {
			fmt.Fprintf(w, "  - %s\n", n)
		}
	}
	verdict := "PASS"
	if !r.Pass {
		verdict = "FAIL"
	}
	fmt.Fprintf(w, "\n%s\n", verdict)
}

func (r *Report) writeJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}
