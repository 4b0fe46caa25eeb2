// Package gauges holds the Prometheus metrics more than one stormctl
// daemon exports, so each is defined once whatever serves it.
package gauges

import "github.com/prometheus/client_golang/prometheus"

// JournalLost is the gauge every long-running reader (flagd serve, alerts
// serve, the Kubernetes actuator) exports beside its /readyz detail: 1
// while report names a loss of the control plane's journal, else 0.
func JournalLost(report func() string) prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "stormctl_controlplane_journal_lost",
		Help: "1 while the control plane's journal is known to have gone back (acknowledged writes lost; run stormctl journal sync).",
	}, func() float64 {
		if report() != "" {
			return 1
		}
		return 0
	})
}
