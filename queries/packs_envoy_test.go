package queries

import (
	"math"
	"testing"
)

// msLes are les in milliseconds, for Envoy's and Istio's histograms.
var msLes = []float64{50, 100, 250, 500, 1000, 2500, math.Inf(1)}

func TestPackEnvoy(t *testing.T) {
	t.Parallel()
	d := newData()
	pay := map[string]string{"job": "checkout", "envoy_cluster_name": "payments"}
	led := map[string]string{"job": "checkout", "envoy_cluster_name": "ledger"}
	// upstream_rq_total includes retries; upstream_rq_retry is exported
	// without _total, as Envoy itself does.
	d.counter("envoy_cluster_upstream_rq_total", pay, amp.mul(phased{10, 10, 10, 10}))
	d.counter("envoy_cluster_upstream_rq_total", led, phased{5, 5, 5, 5})
	d.counter("envoy_cluster_upstream_rq_retry", pay, retryRate)
	d.counter("envoy_cluster_upstream_rq_retry", led, phased{})
	d.histogram("envoy_cluster_upstream_rq_time", pay, msLes, amp.mul(phased{10, 10, 10, 10}), phased{50, 800, 1500, 50}, slowLat)
	d.histogram("envoy_cluster_upstream_rq_time", led, msLes, phased{5, 5, 5, 5}, phased{20, 20, 20, 20}, fastLat)
	for i := range 4 {
		pod := with(pay, "instance", string(rune('1'+i)))
		d.gauge("envoy_cluster_circuit_breakers_default_rq_open", pod, [4]phased{{0, 1, 1, 0}, {0, 0, 1, 0}, {}, {}}[i])
	}
	hcm := map[string]string{"job": "checkout", "envoy_http_conn_manager_prefix": "ingress_http"}
	d.counter("envoy_http_downstream_rq_total", hcm, phased{10, 10, 10, 10})
	d.counter("envoy_http_downstream_rq_xx", with(hcm, "envoy_response_code_class", "2"), phased{10, 10, 9, 10})
	d.counter("envoy_http_downstream_rq_xx", with(hcm, "envoy_response_code_class", "5"), phased{0, 0, 1, 0})
	f := startFixture(t, d)

	P := ls("job", "checkout", "envoy_cluster_name", "payments")
	L := ls("job", "checkout", "envoy_cluster_name", "ledger")
	pair := pairOf(P, L)
	const pack = "envoy"
	f.check("amplification", pack, none, calm, pair(1, 1, OK, OK))
	f.check("amplification", pack, none, rising, pair(2, 1, Crit, OK))
	f.check("amplification", pack, none, during, pair(4, 1, Crit, OK))
	f.check("amplification", pack, Params{Service: "checkout", Dependency: "payments"}, after, want{P: {1, OK}})
	f.trips("amplification", pack, none, P, stormStart+step)
	f.check("retry_ratio", pack, none, during, pair(0.75, 0, Crit, OK))
	f.check("retries_per_request", pack, none, during, pair(3, 0, Crit, OK))
	f.check("retries_per_request", pack, none, after, pair(0, 0, OK, OK))
	f.check("breaker_open_fraction", pack, none, rising, want{P: {0.25, Crit}})
	f.check("breaker_open_fraction", pack, none, during, want{P: {0.5, Crit}})
	f.check("breaker_open_fraction", pack, none, after, want{P: {0, OK}})
	f.check("dependency_p99", pack, none, calm, pair(0.0495, 0.0495, OK, OK))
	f.check("dependency_p99", pack, none, during, pair(2.485, 0.0495, Crit, OK))
	E := ls("job", "checkout", "envoy_http_conn_manager_prefix", "ingress_http")
	f.check("edge_error_rate", pack, none, calm, want{E: {0, OK}})
	f.check("edge_error_rate", pack, none, during, want{E: {0.1, Crit}})
}

// TestPackEnvoyThrottling uses an exporter that appends _total to Envoy's
// per-code counter (envoy_cluster_upstream_rq_total{envoy_response_code}),
// the suffix drift the pack matches with __name__=~. It needs its own
// server: OpenMetrics cannot hold both spellings of one family.
func TestPackEnvoyThrottling(t *testing.T) {
	t.Parallel()
	d := newData()
	pay := map[string]string{"job": "checkout", "envoy_cluster_name": "payments"}
	led := map[string]string{"job": "checkout", "envoy_cluster_name": "ledger"}
	d.counter("envoy_cluster_upstream_rq_total", pay, amp.mul(phased{10, 10, 10, 10}))
	d.counter("envoy_cluster_upstream_rq_total", with(pay, "envoy_response_code", "429"), phased{0, 0, 2, 0})
	d.counter("envoy_cluster_upstream_rq_total", led, phased{5, 5, 5, 5})
	f := startFixture(t, d)

	P := ls("job", "checkout", "envoy_cluster_name", "payments")
	L := ls("job", "checkout", "envoy_cluster_name", "ledger")
	f.check("throttle_retries", "envoy", Params{}, calm, want{P: {0, OK}, L: {0, OK}})
	r := f.check("throttle_retries", "envoy", Params{}, during, want{P: {2, Crit}, L: {0, OK}})
	if r.Bound != "upper" || r.Note == "" {
		t.Errorf("envoy throttle_retries must be an upper bound with a note, got bound %q note %q", r.Bound, r.Note)
	}
	f.trips("throttle_retries", "envoy", Params{}, P, stormPhases[1]+step)
}
