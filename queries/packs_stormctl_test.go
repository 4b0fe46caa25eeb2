package queries

import (
	"math"
	"testing"
	"time"
)

// les are the attempt-duration buckets of the stormctl and OpenTelemetry fixtures.
var les = []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, math.Inf(1)}

// Latency shares per phase: everything under 50ms when calm, in (0.5s, 1s]
// while rising and in (1s, 2.5s] during the storm, so the p99s are 0.0495,
// 0.995 and 2.485 (histogram_quantile interpolates inside the bucket).
var (
	fast      = []float64{1, 0, 0, 0, 0, 0, 0}
	slowLat   = [4][]float64{fast, {0, 0, 0, 0, 1, 0, 0}, {0, 0, 0, 0, 0, 1, 0}, fast}
	fastLat   = [4][]float64{fast, fast, fast, fast}
	amp       = phased{1, 2, 4, 1}
	retryRate = phased{0, 10, 30, 0} // 10 requests/s × (amplification − 1)
)

// stormctlStorm is the storm in the stormctl metric contract: checkout's
// calls to payments amplify 2× then 4× while ledger stays calm.
func stormctlStorm() data {
	d := newData()
	pay := map[string]string{"service": "checkout", "dependency": "payments"}
	led := map[string]string{"service": "checkout", "dependency": "ledger"}
	d.counter("stormctl_requests_total", pay, phased{10, 10, 10, 10})
	d.counter("stormctl_requests_total", led, phased{5, 5, 5, 5})
	d.counter("stormctl_attempts_total", with(pay, "outcome", "success"), phased{10, 10, 10, 10})
	d.counter("stormctl_attempts_total", with(pay, "outcome", "timeout"), retryRate)
	d.counter("stormctl_attempts_total", with(led, "outcome", "success"), phased{5, 5, 5, 5})
	// ledger never retried: it has no stormctl_retries_total series at all.
	d.counter("stormctl_retries_total", with(pay, "reason", "timeout"), phased{0, 10, 28, 0})
	d.counter("stormctl_retries_total", with(pay, "reason", "throttled"), phased{0, 0, 2, 0})
	d.histogram("stormctl_attempt_duration_seconds", pay, les, phased{10, 20, 40, 10}, phased{0.05, 0.8, 1.5, 0.05}, slowLat)
	d.histogram("stormctl_attempt_duration_seconds", led, les, phased{5, 5, 5, 5}, phased{0.02, 0.02, 0.02, 0.02}, fastLat)
	pool := map[string]string{"service": "checkout", "pool": "http"}
	d.gauge("stormctl_pool_in_use", pool, phased{10, 25, 48, 10})
	d.gauge("stormctl_pool_capacity", pool, phased{50, 50, 50, 50})
	d.gauge("stormctl_pool_waiting", pool, phased{0, 0, 32, 0})
	breakerFleet(d, "stormctl_breaker_state", pay, []string{"closed", "open", "half_open", "forced_open"})
	d.counter("stormctl_server_requests_total", map[string]string{"service": "checkout", "code": "200"}, phased{10, 10, 9, 10})
	d.counter("stormctl_server_requests_total", map[string]string{"service": "checkout", "code": "503"}, phased{0, 0, 1, 0})
	d.gauge("stormctl_replicas", map[string]string{"service": "checkout"}, phased{4, 4, 8, 8})
	return d
}

func TestPackStormctl(t *testing.T) {
	t.Parallel()
	f := startFixture(t, stormctlStorm())

	P, L := ls("service", "checkout", "dependency", "payments"), ls("service", "checkout", "dependency", "ledger")
	S := ls("service", "checkout")
	pair := pairOf(P, L)
	one := func(v float64, s Status) want { return want{S: {v, s}} }
	f.check("amplification", "", none, calm, pair(1, 1, OK, OK))
	f.check("amplification", "", none, rising, pair(2, 1, Crit, OK))
	f.check("amplification", "", none, during, pair(4, 1, Crit, OK))
	f.check("amplification", "", none, after, pair(1, 1, OK, OK))
	f.check("amplification", "", Params{Dependency: "payments", Window: 2 * time.Minute}, during, want{P: {4, Crit}})
	// The first storm sample (12m15s) leaves 1.25 in Prometheus 2's closed 1m
	// window: warn, not crit. Crit comes one step later (1.5).
	f.check("amplification", "", none, stormStart, pair(1.25, 1, Warn, OK))
	f.trips("amplification", "", none, P, stormStart+step)

	f.check("retry_ratio", "", none, rising, pair(0.5, 0, Crit, OK))
	f.check("retry_ratio", "", none, during, pair(0.75, 0, Crit, OK))
	f.check("retry_ratio", "", none, after, pair(0, 0, OK, OK))
	f.check("retry_ratio", "", none, stormStart, pair(0.2, 0, OK, OK)) // exactly warn: not past it
	f.trips("retry_ratio", "", none, P, stormStart+step)

	f.check("retries_per_request", "", none, calm, one(0, OK))
	f.check("retries_per_request", "", none, during, one(3, Crit))
	f.check("throttle_retries", "", none, calm, pair(0, 0, OK, OK))
	f.check("throttle_retries", "", none, during, pair(2, 0, Crit, OK))

	PH := ls("service", "checkout", "pool", "http")
	f.check("pool_saturation", "", none, calm, want{PH: {0.2, OK}})
	f.check("pool_saturation", "", none, rising, want{PH: {0.5, OK}})
	f.check("pool_saturation", "", Params{Pool: "http"}, during, want{PH: {0.96, Crit}})
	f.trips("pool_saturation", "", none, PH, stormPhases[1]+step)

	// In use plus waiting: 10, 25 and 48 + 32 of 50. The pool's own in-use
	// gauge alone could never pass 1.
	f.check("demanded_concurrency", "", none, calm, want{PH: {0.2, OK}})
	f.check("demanded_concurrency", "", none, rising, want{PH: {0.5, OK}})
	f.check("demanded_concurrency", "", Params{Service: "checkout", Dependency: "payments", Pool: "http"}, during, want{PH: {1.6, Crit}})

	f.check("breaker_open_fraction", "", none, calm, want{P: {0, OK}})
	f.check("breaker_open_fraction", "", none, rising, want{P: {0.25, Crit}})
	f.check("breaker_open_fraction", "", none, during, want{P: {0.5, Crit}})
	f.check("breaker_open_fraction", "", none, after, want{P: {0, OK}})
	f.trips("breaker_open_fraction", "", none, P, stormStart)

	f.check("dependency_p99", "", none, calm, pair(0.0495, 0.0495, OK, OK))
	f.check("dependency_p99", "", none, rising, pair(0.995, 0.0495, Warn, OK))
	f.check("dependency_p99", "", none, during, pair(2.485, 0.0495, Crit, OK))

	f.check("edge_error_rate", "", none, rising, one(0, OK))
	f.check("edge_error_rate", "", none, during, one(0.1, Crit))

	f.check("replica_churn", "", none, calm, one(0, OK))
	f.check("replica_churn", "", none, stormPhases[1]+2*time.Minute, one(4, Crit))
	f.check("replica_churn", "", none, after, one(0, OK))
}
