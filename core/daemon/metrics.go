package daemon

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/harnessd/harnessd/core/event"
)

// Metrics are the daemon's Prometheus series. A Metrics has its own
// registry (not the global one), so two daemons in one test process do not
// collide.
type Metrics struct {
	reg *prometheus.Registry

	sessionsLive    prometheus.Gauge
	sessionsCreated prometheus.Counter
	commands        *prometheus.CounterVec
	commandSeconds  prometheus.Histogram
	bytesTrimmed    prometheus.Counter
	bytesOutput     prometheus.Counter
	invalidActions  prometheus.Counter
	actions         *prometheus.CounterVec
	poolTakes       *prometheus.CounterVec
	commitSeconds   prometheus.Histogram
	requests        *prometheus.CounterVec
}

// NewMetrics creates the daemon's series, and the Go runtime's and the
// process's, on a new registry.
func NewMetrics() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		sessionsLive: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "harnessd_sessions_live", Help: "Sessions whose shell is running.",
		}),
		sessionsCreated: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "harnessd_sessions_created_total", Help: "Sessions created since the daemon started.",
		}),
		commands: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "harnessd_commands_total", Help: "Commands run, by outcome: ok (exit 0), failed (non-zero exit), running (returned at the soft timeout), timed_out (hard timeout).",
		}, []string{"outcome"}),
		commandSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "harnessd_command_duration_seconds", Help: "Time from a command's start to its observation.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 12), // 100µs … 7 min
		}),
		bytesTrimmed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "harnessd_output_bytes_trimmed_total", Help: "Output bytes left out of observations (kept in the store).",
		}),
		bytesOutput: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "harnessd_output_bytes_total", Help: "Output bytes commands printed.",
		}),
		invalidActions: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "harnessd_invalid_actions_total", Help: "Malformed actions answered with invalid_action.",
		}),
		actions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "harnessd_actions_total", Help: "Actions taken through the pipeline, by kind and result: done (executed and answered), vetoed (refused by a hook), refused (invalid or no executor, nothing recorded), failed (an error after the action was recorded).",
		}, []string{"kind", "result"}),
		poolTakes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "harnessd_pool_takes_total", Help: "Session creates that asked the warm pool for a sandbox, by result: hit (one was ready) or miss (started cold).",
		}, []string{"result"}),
		commitSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "harnessd_store_commit_seconds", Help: "Latency of one bbolt commit (with its fsync in strict durability).",
			Buckets: prometheus.ExponentialBuckets(0.00005, 2, 16), // 50µs … 1.6s
		}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "harnessd_api_requests_total", Help: "API requests, by route and status code.",
		}, []string{"route", "code"}),
	}
	m.reg.MustRegister(m.sessionsLive, m.sessionsCreated, m.commands, m.commandSeconds,
		m.bytesTrimmed, m.bytesOutput, m.invalidActions, m.actions, m.poolTakes, m.commitSeconds, m.requests,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves the series in Prometheus' text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// ObserveCommit records one store commit; it fits store.Options.OnCommit.
func (m *Metrics) ObserveCommit(d time.Duration, _ int) { m.commitSeconds.Observe(d.Seconds()) }

// ObserveRequest counts one API request.
func (m *Metrics) ObserveRequest(route string, code int) {
	m.requests.WithLabelValues(route, statusText(code)).Inc()
}

func (m *Metrics) observeOutput(out event.CmdOutput, bytesTotal, bytesOmitted int64, d time.Duration) {
	outcome := "ok"
	switch {
	case out.TimedOut:
		outcome = "timed_out"
	case out.ExitCode == -1:
		outcome = "running"
	case out.ExitCode != 0:
		outcome = "failed"
	}
	m.commands.WithLabelValues(outcome).Inc()
	m.commandSeconds.Observe(d.Seconds())
	m.bytesOutput.Add(float64(bytesTotal))
	m.bytesTrimmed.Add(float64(bytesOmitted))
}

// watchStore exports whether the store can write, as of its last commit.
func (m *Metrics) watchStore(writeErr func() error) {
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "harnessd_store_writable", Help: "1 if the store's last commit succeeded, 0 if it failed (a full disk, most often): actions are refused with 507 until it can write again.",
	}, func() float64 {
		if writeErr() != nil {
			return 0
		}
		return 1
	}))
}

func (m *Metrics) observePoolTake(hit bool) {
	if hit {
		m.poolTakes.WithLabelValues("hit").Inc()
	} else {
		m.poolTakes.WithLabelValues("miss").Inc()
	}
}

func statusText(code int) string {
	const digits = "0123456789"
	if code < 100 || code > 999 {
		return "other"
	}
	return string([]byte{digits[code/100], digits[code/10%10], digits[code%10]})
}
