package alerts

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/stormctl/stormctl/internal/gauges"
)

// Metrics are the receiver's own, on /metrics of the management address.
// A nil *Metrics counts nothing.
type Metrics struct {
	Registry      *prometheus.Registry
	webhooks      *prometheus.CounterVec
	events        *prometheus.CounterVec
	autopilot     *prometheus.CounterVec
	notifications *prometheus.CounterVec
	queued        prometheus.Gauge
	latency       prometheus.Histogram
}

// NewMetrics registers the receiver's metrics in a new registry.
func NewMetrics() *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		webhooks: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "stormctl_alerts_webhooks_total",
			Help: "Webhooks by outcome: accepted, or the refusal (unauthorized, bad_signature, replayed, too_large, too_many_alerts, malformed, error)."},
			[]string{"outcome"}),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "stormctl_alerts_events_total",
			Help: "Alert events by status (firing, resolved) and outcome (handled, duplicate, in_progress: another delivery still held it, error)."}, []string{"status", "outcome"}),
		autopilot: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "stormctl_alerts_autopilot_total",
			Help: "Autopilot decisions by outcome (applied, requested, refused, paused, not_allowed, no_action, kept, extended, released, error)."},
			[]string{"outcome"}),
		notifications: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "stormctl_alerts_notifications_total",
			Help: "Notifications by outcome (sent; failed: not queued, or not delivered after its tries; dropped: the outbox was full; lost: deleted from the outbox unsent)."}, []string{"outcome"}),
		queued: prometheus.NewGauge(prometheus.GaugeOpts{Name: "stormctl_alerts_notifications_queued",
			Help: "Notices waiting in the outbox to be posted, by any replica, as this replica's sender last read it."}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "stormctl_alerts_webhook_duration_seconds",
			Help:    "From a webhook's arrival to its answer, autopilot included.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}}),
	}
	m.Registry.MustRegister(m.webhooks, m.events, m.autopilot, m.notifications, m.queued, m.latency,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

func (m *Metrics) webhook(outcome string, seconds float64) {
	if m != nil {
		m.webhooks.WithLabelValues(outcome).Inc()
		m.latency.Observe(seconds)
	}
}

func (m *Metrics) event(status, outcome string) {
	if m != nil {
		m.events.WithLabelValues(status, outcome).Inc()
	}
}

func (m *Metrics) decision(outcome string) {
	if m != nil {
		m.autopilot.WithLabelValues(outcome).Inc()
	}
}

func (m *Metrics) notification(outcome string) {
	if m != nil {
		m.notifications.WithLabelValues(outcome).Inc()
	}
}

func (m *Metrics) outboxLen(n int64) {
	if m != nil {
		m.queued.Set(float64(n))
	}
}

// watchLoss exports stormctl_controlplane_journal_lost, as flagd serve
// does: 1 while report says the control plane's journal went back.
func (m *Metrics) watchLoss(report func() string) error {
	return m.Registry.Register(gauges.JournalLost(report))
}
