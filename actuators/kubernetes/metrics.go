package kubernetes

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stormctl/stormctl/internal/gauges"

	"github.com/stormctl/stormctl/controlplane"
)

// Metrics are the actuator's own Prometheus metrics.
type Metrics struct {
	passes      *prometheus.CounterVec
	passSeconds prometheus.Histogram
	writes      *prometheus.CounterVec
	actuations  *prometheus.CounterVec
	leader      prometheus.Gauge
	leaseLost   prometheus.Counter
	// written counts every patch sent, for tests and benchmarks (the
	// exported figure is writes, by kind).
	written prometheus.Counter
}

// NewMetrics creates the metrics and registers them with reg (nil: not
// registered, as in tests).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		passes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "stormctl_actuator_passes_total", Help: "Reconciliation passes, by result (ok, error).",
		}, []string{"result"}),
		passSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "stormctl_actuator_pass_duration_seconds", Help: "Duration of successful reconciliation passes.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 12),
		}),
		writes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "stormctl_actuator_writes_total", Help: "Patches sent to the API server, by object kind.",
		}, []string{"object"}),
		actuations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "stormctl_actuator_actuations_total", Help: "Journaled actuations, by event (applied, restored, failed, conflict).",
		}, []string{"event"}),
		leader: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "stormctl_actuator_leader", Help: "1 while this replica holds the leader Lease and acts.",
		}),
		leaseLost: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "stormctl_actuator_lease_lost_total", Help: "Terms that ended because this replica lost the leader Lease (it campaigns again).",
		}),
		written: prometheus.NewCounter(prometheus.CounterOpts{Name: "stormctl_actuator_writes"}),
	}
	if reg != nil {
		reg.MustRegister(m.passes, m.passSeconds, m.writes, m.actuations, m.leader, m.leaseLost)
	}
	return m
}

// Writes counts the patches this actuator has sent to the API server.
func (a *Actuator) Writes() prometheus.Counter { return a.opts.Metrics.written }

// registerLoss exports d's verdict as the journal-lost gauge every
// long-running reader exports.
func registerLoss(reg prometheus.Registerer, d *controlplane.LossDetector) {
	reg.MustRegister(gauges.JournalLost(d.Report))
}
