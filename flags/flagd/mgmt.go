package flagd

import (
	"fmt"
	"github.com/stormctl/stormctl/internal/gauges"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are the server's own, on /metrics of the management port.
type metrics struct {
	reg         *prometheus.Registry
	streams     *prometheus.GaugeVec
	pushes      *prometheus.CounterVec
	pushLatency *prometheus.HistogramVec
	evals       *prometheus.CounterVec
	rejected    prometheus.Counter
	redis       prometheus.Gauge
	levers      prometheus.Gauge
	snapshot    *prometheus.GaugeVec
	snapshotAt  prometheus.Gauge
}

func newMetrics(s *Server) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		streams: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "stormctl_flagd_streams",
			Help: "Open streams by protocol (sync, eval-v1, eval-v2)."}, []string{"protocol"}),
		pushes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "stormctl_flagd_pushes_total",
			Help: "Snapshots sent to streams, by protocol."}, []string{"protocol"}),
		pushLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "stormctl_flagd_push_latency_seconds",
			Help:    "From a snapshot's publication to its send on a stream.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5}}, []string{"protocol"}),
		evals: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "stormctl_flagd_evaluations_total",
			Help: "Unary evaluations by protocol and outcome."}, []string{"protocol", "outcome"}),
		rejected: prometheus.NewCounter(prometheus.CounterOpts{Name: "stormctl_flagd_rejected_snapshots_total",
			Help: "Snapshots that failed validation and were not sent."}),
		redis: prometheus.NewGauge(prometheus.GaugeOpts{Name: "stormctl_flagd_redis_up",
			Help: "1 while Redis is reachable within the stale grace period; 0 when the snapshot is stale."}),
		levers: prometheus.NewGauge(prometheus.GaugeOpts{Name: "stormctl_flagd_snapshot_levers",
			Help: "Live levers in the current snapshot."}),
		snapshot: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "stormctl_flagd_snapshot_info",
			Help: "1 for the current snapshot's version; stale=true while Redis is lost."}, []string{"version", "stale"}),
		snapshotAt: prometheus.NewGauge(prometheus.GaugeOpts{Name: "stormctl_flagd_snapshot_published_timestamp_seconds",
			Help: "When the current snapshot was published."}),
	}
	if s.opts.Loss != nil {
		m.reg.MustRegister(gauges.JournalLost(s.opts.Loss))
	}
	m.reg.MustRegister(m.streams, m.pushes, m.pushLatency, m.evals, m.rejected, m.redis, m.levers, m.snapshot, m.snapshotAt,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

func (m *metrics) streamOpened(p string) { m.streams.WithLabelValues(p).Inc() }
func (m *metrics) streamClosed(p string) { m.streams.WithLabelValues(p).Dec() }

func (m *metrics) pushed(p string, snap *Snapshot) {
	m.pushes.WithLabelValues(p).Inc()
	m.pushLatency.WithLabelValues(p).Observe(time.Since(snap.At).Seconds())
}

func (m *metrics) evaluation(p string, err error) {
	outcome := "ok"
	if err != nil {
		outcome = "error"
	}
	m.evals.WithLabelValues(p, outcome).Inc()
}

func (m *metrics) redisUp(up bool) {
	if up {
		m.redis.Set(1)
	} else {
		m.redis.Set(0)
	}
}

func (m *metrics) published(s *Snapshot) {
	m.snapshot.Reset()
	m.snapshot.WithLabelValues(s.Version, fmt.Sprint(s.Input.Stale)).Set(1)
	m.levers.Set(float64(len(s.Input.Levers)))
	m.snapshotAt.Set(float64(s.At.UnixNano()) / 1e9)
}

// managementHandler serves /healthz (the process is up), /readyz (a
// current snapshot is loaded) and /metrics.
func (s *Server) managementHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		ok, why := s.Ready()
		if !ok {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		_, _ = fmt.Fprintln(w, why)
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{}))
	return mux
}
