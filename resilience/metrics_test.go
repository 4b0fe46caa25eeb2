package resilience

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestMetricsAfterAScriptedSequence scrapes a registry after a known
// sequence of logical requests and asserts every series of the contract.
func TestMetricsAfterAScriptedSequence(t *testing.T) {
	clock := newFakeClock()
	// Each HTTP attempt takes 1/32 s of virtual time: exact in binary, so
	// the histogram's sum is exact too.
	const attemptTime = time.Second / 32
	script := []func(w http.ResponseWriter){
		status(503), status(200), // 1: a retry on unavailable, then success
		status(404),              // 2: not retried
		status(429),              // 3: throttled without Retry-After: not retried
		retryAfter1, status(200), // 4: throttled, honoured, success
		status(502), status(502), status(502), // 6: three failures open the breaker (with 5's timeout)
	}
	step := 0
	srv := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
		clock.Advance(attemptTime)
		script[step](w)
		step++
	})
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	r := newRetrier(t, Config{Metrics: m, Clock: clock.Now, Sleep: clock.Sleep,
		Breaker: BreakerConfig{ConsecutiveFailures: 4, OpenFor: time.Minute}})
	c := client(t, r)
	for i := range 4 {
		if _, err := get(t, c, srv.URL); err != nil {
			t.Fatalf("request %d: %v", i+1, err)
		}
	}
	// 5: a timeout through Do, not retried by the default policy.
	_, _ = Do(context.Background(), r, func(context.Context) (int, error) {
		return 0, context.DeadlineExceeded
	})
	if _, err := get(t, c, srv.URL); err != nil {
		t.Fatalf("request 6: %v", err)
	}
	// 7: refused by the open breaker.
	if _, err := get(t, c, srv.URL); err == nil {
		t.Fatal("request 7 passed an open breaker")
	}
	if step != len(script) {
		t.Fatalf("server answered %d of %d scripted attempts", step, len(script))
	}

	const want = `
# HELP stormctl_requests_total Logical requests: one per caller intent, however many attempts it took.
# TYPE stormctl_requests_total counter
stormctl_requests_total{dependency="payments",service="checkout"} 7
# HELP stormctl_attempts_total Attempts sent to a dependency (or refused by its breaker), by outcome.
# TYPE stormctl_attempts_total counter
stormctl_attempts_total{dependency="payments",outcome="breaker_open",service="checkout"} 1
stormctl_attempts_total{dependency="payments",outcome="error",service="checkout"} 5
stormctl_attempts_total{dependency="payments",outcome="shed",service="checkout"} 0
stormctl_attempts_total{dependency="payments",outcome="success",service="checkout"} 2
stormctl_attempts_total{dependency="payments",outcome="throttled",service="checkout"} 2
stormctl_attempts_total{dependency="payments",outcome="timeout",service="checkout"} 1
# HELP stormctl_retries_total Retries sent, by the class of the failure retried.
# TYPE stormctl_retries_total counter
stormctl_retries_total{dependency="payments",reason="throttled",service="checkout"} 1
stormctl_retries_total{dependency="payments",reason="unavailable",service="checkout"} 3
# HELP stormctl_breaker_state 1 on the current breaker state of a dependency, 0 on the others.
# TYPE stormctl_breaker_state gauge
stormctl_breaker_state{dependency="payments",service="checkout",state="closed"} 0
stormctl_breaker_state{dependency="payments",service="checkout",state="forced_open"} 0
stormctl_breaker_state{dependency="payments",service="checkout",state="half_open"} 0
stormctl_breaker_state{dependency="payments",service="checkout",state="open"} 1
# HELP stormctl_attempt_duration_seconds Duration of attempts that reached the dependency.
# TYPE stormctl_attempt_duration_seconds histogram
stormctl_attempt_duration_seconds_bucket{dependency="payments",service="checkout",le="0.005"} 1
stormctl_attempt_duration_seconds_bucket{dependency="payments",service="checkout",le="0.01"} 1
stormctl_attempt_duration_seconds_bucket{dependency="payments",service="checkout",le="0.025"} 1
stormctl_attempt_duration_seconds_bucket{dependency="payments",service="checkout",le="0.05"} 10
stormctl_attempt_duration_seconds_bucket{dependency="payments",service="checkout",le="0.1"} 10
stormctl_attempt_duration_seconds_bucket{dependency="payments",service="checkout",le="0.25"} 10
stormctl_attempt_duration_seconds_bucket{dependency="payments",service="checkout",le="0.5"} 10
stormctl_attempt_duration_seconds_bucket{dependency="payments",service="checkout",le="1"} 10
stormctl_attempt_duration_seconds_bucket{dependency="payments",service="checkout",le="2.5"} 10
stormctl_attempt_duration_seconds_bucket{dependency="payments",service="checkout",le="5"} 10
stormctl_attempt_duration_seconds_bucket{dependency="payments",service="checkout",le="10"} 10
stormctl_attempt_duration_seconds_bucket{dependency="payments",service="checkout",le="+Inf"} 10
stormctl_attempt_duration_seconds_sum{dependency="payments",service="checkout"} 0.28125
stormctl_attempt_duration_seconds_count{dependency="payments",service="checkout"} 10
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "stormctl_requests_total",
		"stormctl_attempts_total", "stormctl_retries_total", "stormctl_breaker_state",
		"stormctl_attempt_duration_seconds"); err != nil {
		t.Error(err)
	}
}

func status(code int) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) { w.WriteHeader(code) }
}

func retryAfter1(w http.ResponseWriter) {
	w.Header().Set("Retry-After", "1")
	w.WriteHeader(http.StatusTooManyRequests)
}

func TestMetricsPoolsAndRegistration(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	m.SetPool("checkout", "http", 7, 10, 2)
	const want = `
# HELP stormctl_pool_in_use Pool slots in use.
# TYPE stormctl_pool_in_use gauge
stormctl_pool_in_use{pool="http",service="checkout"} 7
# HELP stormctl_pool_capacity Pool capacity.
# TYPE stormctl_pool_capacity gauge
stormctl_pool_capacity{pool="http",service="checkout"} 10
# HELP stormctl_pool_waiting Callers waiting for a pool slot.
# TYPE stormctl_pool_waiting gauge
stormctl_pool_waiting{pool="http",service="checkout"} 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "stormctl_pool_in_use",
		"stormctl_pool_capacity", "stormctl_pool_waiting"); err != nil {
		t.Error(err)
	}
	if _, err := NewMetrics(reg); err == nil {
		t.Error("registering the contract twice on one registry succeeded")
	}
	var none *Metrics
	none.SetPool("a", "b", 1, 2, 3) // a nil *Metrics records nothing
}
