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

// TestPackEnvoyThrottling reads the retries caused by 429s from Envoy's
// retry family (cluster.<name>.retry.upstream_rq_429), not the final 429
// responses, with the per-code counters written with _total as some
// exporters do (the suffix drift the pack matches with __name__=~). It needs
// its own server: OpenMetrics cannot hold both spellings of one family.
func TestPackEnvoyThrottling(t *testing.T) {
	t.Parallel()
	d := newData()
	pay := map[string]string{"job": "checkout", "instance": "10.0.0.7:9901", "envoy_cluster_name": "payments"}
	led := with(pay, "envoy_cluster_name", "ledger")
	d.counter("envoy_cluster_upstream_rq_total", with(pay, "envoy_response_code", "200"), phased{10, 10, 8, 10})
	// 3/s of 429s reach the caller in the storm; 2/s more made Envoy retry.
	d.counter("envoy_cluster_upstream_rq_total", with(pay, "envoy_response_code", "429"), phased{0, 0, 5, 0})
	d.counter("envoy_cluster_retry_upstream_rq", with(pay, "envoy_response_code", "429"), phased{0, 0, 2, 0})
	d.counter("envoy_cluster_upstream_rq_total", with(led, "envoy_response_code", "200"), phased{5, 5, 5, 5})
	f := startFixture(t, d)

	P := ls("job", "checkout", "envoy_cluster_name", "payments")
	L := ls("job", "checkout", "envoy_cluster_name", "ledger")
	f.check("throttle_retries", "envoy", Params{}, calm, want{P: {0, OK}, L: {0, OK}})
	r := f.check("throttle_retries", "envoy", Params{}, during, want{P: {2, Crit}, L: {0, OK}})
	if r.Bound != "" {
		t.Errorf("envoy throttle_retries counts retries by cause: exact, not a %s bound", r.Bound)
	}
	f.trips("throttle_retries", "envoy", Params{}, P, stormPhases[1]+step)
	// The envoy-istio pack reads the same storm as no data: its tag names
	// are not these, and no data must not read as 0 "ok".
	ri, err := f.cat.Render("throttle_retries", "envoy-istio", Params{})
	if err != nil {
		t.Fatal(err)
	}
	if got := f.eval(ri.Expr, during); len(got) != 0 {
		t.Errorf("envoy-istio on Envoy's own tag names: %v, want no data\n%s", got, ri.Expr)
	}
}
