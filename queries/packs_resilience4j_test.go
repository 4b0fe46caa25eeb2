package queries

import "testing"

func TestPackResilience4j(t *testing.T) {
	t.Parallel()
	d := newData()
	pay := map[string]string{"job": "checkout", "name": "payments"}
	led := map[string]string{"job": "checkout", "name": "ledger"}
	// Logical calls by kind: 10/s to payments, of which 5 then 7 retried.
	calls := func(l map[string]string, kind string, v phased) {
		d.counter("resilience4j_retry_calls_total", with(l, "kind", kind), v)
	}
	calls(pay, "successful_without_retry", phased{10, 5, 3, 10})
	calls(pay, "successful_with_retry", phased{0, 4, 5, 0})
	calls(pay, "failed_with_retry", phased{0, 1, 2, 0})
	calls(pay, "failed_without_retry", phased{})
	calls(led, "successful_without_retry", phased{5, 5, 5, 5})
	calls(led, "successful_with_retry", phased{})
	calls(led, "failed_with_retry", phased{})
	calls(led, "failed_without_retry", phased{})
	breakerFleet(d, "resilience4j_circuitbreaker_state", pay,
		[]string{"closed", "open", "half_open", "forced_open", "disabled", "metrics_only"})
	d.gauge("resilience4j_bulkhead_max_allowed_concurrent_calls", pay, phased{20, 20, 20, 20})
	d.gauge("resilience4j_bulkhead_available_concurrent_calls", pay, phased{18, 10, 1, 18})
	f := startFixture(t, d)

	P, L := ls("job", "checkout", "name", "payments"), ls("job", "checkout", "name", "ledger")
	pair := pairOf(P, L)
	const pack = "resilience4j"
	f.check("amplification", pack, none, calm, pair(1, 1, OK, OK))
	f.check("amplification", pack, none, rising, pair(1.5, 1, Crit, OK))
	r := f.check("amplification", pack, none, during, pair(1.7, 1, Crit, OK))
	if r.Bound != "lower" {
		t.Errorf("resilience4j amplification bound = %q, want lower", r.Bound)
	}
	// (10 + 1.25) / 10 at the first storm sample, 1.25 one step later, 1.375 after two.
	f.check("amplification", pack, none, stormStart, pair(1.125, 1, OK, OK))
	f.trips("amplification", pack, none, P, stormStart+2*step)
	f.check("retry_ratio", pack, none, rising, pair(5.0/15, 0, Crit, OK))
	f.check("retry_ratio", pack, none, during, pair(7.0/17, 0, Crit, OK))
	f.check("retries_per_request", pack, none, during, pair(0.7, 0, Crit, OK))
	f.check("retries_per_request", pack, none, after, pair(0, 0, OK, OK))
	f.check("breaker_open_fraction", pack, none, calm, want{P: {0, OK}})
	f.check("breaker_open_fraction", pack, none, during, want{P: {0.5, Crit}})
	f.trips("breaker_open_fraction", pack, none, P, stormStart)
	f.check("pool_saturation", pack, none, calm, want{P: {0.1, OK}})
	f.check("pool_saturation", pack, Params{Pool: "payments"}, during, want{P: {0.95, Crit}})
}
