package policy

import (
	"slices"
	"strings"
	"testing"
	"time"
)

const ms = Duration(time.Millisecond)

func on(cs ...Class) ClassSet { return ClassSet(0).With(cs...) }

func hopOf(t *testing.T, file string) *Hop {
	t.Helper()
	p := load(t, "testdata/import/"+file)
	if len(p.Hops) != 1 {
		t.Fatalf("%s: %d hops, want 1", file, len(p.Hops))
	}
	return p.Hops[0]
}

func hasNote(h *Hop, part string) bool {
	return slices.ContainsFunc(h.Notes, func(n string) bool { return strings.Contains(n, part) })
}

// TestEnvoy reads an Envoy v3 RouteConfiguration and a Bootstrap with its
// cluster's circuit breakers, with Envoy's documented defaults where a
// field is not set.
func TestEnvoy(t *testing.T) {
	h := hopOf(t, "envoy-routes.yaml#stock")
	want := Retry{Attempts: 4, On: on(Timeout, ConnectError, Reset, ServerError, Throttled), HonourRetryAfter: true,
		Backoff: Backoff{Kind: BackoffEnvoy, Base: 100 * ms, Max: 1000 * ms, Multiplier: 2, Jitter: JitterFull},
		Budget:  &Budget{Kind: "concurrency", Max: 3, Scope: "process"}}
	if h.Format != FormatEnvoy || h.Timeout != 200*ms || h.Deadline != 1000*ms || !sameRetry(h.Retry, want) {
		t.Errorf("stock route: %+v %+v", h, h.Retry)
	}
	if h.Source != "testdata/import/envoy-routes.yaml:13:9" {
		t.Errorf("source %s", h.Source)
	}
	// num_retries defaults to 1, retry_back_off to 25 ms (max 10×), the
	// route timeout to 15 s; reset retries resets, connection failures and
	// per-try timeouts (a local reset to Envoy).
	h = hopOf(t, "envoy-routes.yaml#catalogue")
	want = Retry{Attempts: 2, On: on(Timeout, ConnectError, Reset), Budget: want.Budget,
		Backoff: Backoff{Kind: BackoffEnvoy, Base: 25 * ms, Max: 250 * ms, Multiplier: 2, Jitter: JitterFull}}
	if h.Timeout != 0 || h.Deadline != 15000*ms || !sameRetry(h.Retry, want) || !hasNote(h, "default 1") {
		t.Errorf("catalogue route: %+v %+v", h, h.Retry)
	}
	// Envoy's jittered schedule: random(0, (2^k - 1)·base).
	if got := h.Retry.Backoff.Ceiling(3); got != 175*time.Millisecond {
		t.Errorf("third sleep ceiling %s, want 175ms", got)
	}
	h = hopOf(t, "envoy-bootstrap.yaml")
	if h.Service != "envoy:payments->payments" || h.Retry.Attempts != 2 || h.Retry.On != on(Timeout, ConnectError, Reset) {
		t.Errorf("bootstrap vhost policy: %+v", h)
	}
	if b := h.Retry.Budget; b == nil || b.Kind != "ratio" || b.Ratio != 0.25 {
		t.Errorf("retry_budget 25%%: %+v", b)
	}
	if h.Breaker == nil || h.Breaker.Kind != "envoy outlier_detection" || h.Breaker.Scope != "process" {
		t.Errorf("outlier detection: %+v", h.Breaker)
	}

	// A Cluster in a file of its own (as CDS serves it) gives the route's
	// limits: the DEFAULT priority's max_retries.
	p := load(t, "testdata/incidents/shared-pool.yaml", "testdata/import/envoy-routes.yaml#stock", "testdata/import/envoy-cluster.yaml")
	if len(p.Hops) != 3 {
		t.Fatalf("hops %+v", p.Hops)
	}
	h = p.Hops[2]
	if b := h.Retry.Budget; b == nil || *b != (Budget{Kind: "concurrency", Max: 5, Scope: "process"}) {
		t.Errorf("cluster max_retries 5: %+v", b)
	}
	if h.Breaker == nil || h.Breaker.Source != "testdata/import/envoy-cluster.yaml:20:3" {
		t.Errorf("cluster outlier detection: %+v", h.Breaker)
	}
	if a := Analyze(p); !slices.Contains(ids(a, Warn), "breaker_per_process@envoy:inventory->inventory") {
		t.Errorf("want breaker_per_process on the Envoy hop: %+v", a.Findings)
	}
}

// TestEnvoyResetRetriesPerTryTimeout: under retry_on reset, an attempt
// cut by per_try_timeout is retried, until the route timeout.
func TestEnvoyResetRetriesPerTryTimeout(t *testing.T) {
	rc := `name: local_route
virtual_hosts:
- name: backend
  domains: ["*"]
  routes:
  - match: {prefix: "/"}
    route:
      cluster: backend
      timeout: 1s
      retry_policy:
        retry_on: reset
        num_retries: 3
        per_try_timeout: 0.3s
        retry_back_off: {base_interval: 0.05s}
`
	p, err := Load([]Input{{Name: "rds.yaml", Data: []byte(rc)}}, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Attempts at 0, 0.35 and 0.8 s (sleeps of at most 50 and 150 ms), the
	// third cut at 1 s by the route timeout; no fourth.
	a := Analyze(p)
	if got := a.WorstCaseAttempts.ByClass["timeout"]; got != 3 || !near(a.OccupancyS, 1) {
		t.Errorf("timeout attempts %v, occupancy %v; want 3 within the 1 s route timeout", got, deref(a.OccupancyS))
	}
	if got := a.WorstCaseAttempts.ByClass["5xx"]; got != 1 {
		t.Errorf("reset does not retry a 503: %v attempts", got)
	}
}

// TestIstio reads networking/v1 and v1beta1 VirtualServices with Istio's
// defaults: 2 retries on connect-failure, refused-stream, unavailable,
// cancelled, retriable-status-codes; no budget without a DestinationRule.
func TestIstio(t *testing.T) {
	h := hopOf(t, "istio-v1.yaml#stock")
	if h.Retry.Attempts != 4 || h.Timeout != 500*ms || h.Deadline != 2000*ms ||
		h.Retry.On != on(Timeout, ConnectError, Reset, ServerError, Throttled) || h.Retry.HonourRetryAfter {
		t.Errorf("stock: %+v %+v", h, h.Retry)
	}
	if b := h.Retry.Budget; b == nil || b.Kind != "concurrency" || b.Max != 5 {
		t.Errorf("maxRetries 5: %+v", b)
	}
	if h.Breaker == nil || h.Breaker.Kind != "istio outlierDetection" {
		t.Errorf("outlierDetection: %+v", h.Breaker)
	}
	h = hopOf(t, "istio-v1.yaml#default")
	if h.Retry.Attempts != 3 || h.Retry.On != on(ConnectError, ServerError) || h.Timeout != 0 || !hasNote(h, "default of 2 retries") {
		t.Errorf("default route: %+v %+v", h, h.Retry)
	}
	h = hopOf(t, "istio-v1beta1.yaml")
	if h.Service != "istio:model-provider/http[0]" || h.Retry.Attempts != 3 || h.Retry.Budget != nil || !hasNote(h, "no budget") {
		t.Errorf("v1beta1: %+v %+v", h, h.Retry)
	}

	// A retries: block overrides the default's fields, but without
	// attempts it disables retries (pilot's ConvertPolicy); reset retries
	// per-try timeouts, as in Envoy.
	vs := func(retries string) *Hop {
		data := "apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {name: ratings}\nspec:\n  hosts: [ratings]\n" +
			"  http:\n  - route:\n    - destination: {host: ratings}\n    retries: " + retries + "\n"
		p, err := Load([]Input{{Name: "vs.yaml", Data: []byte(data)}}, LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return p.Hops[0]
	}
	if h := vs("{retryOn: 5xx, perTryTimeout: 1s}"); h.Retry.Attempts != 1 || h.Retry.retries() || !hasNote(h, "disables") {
		t.Errorf("retries without attempts: %+v", h.Retry)
	}
	if h := vs("{attempts: 3, perTryTimeout: 1s}"); h.Retry.Attempts != 4 || h.Retry.On != on(ConnectError, ServerError) || h.Timeout != 1000*ms {
		t.Errorf("attempts with the default retryOn: %+v", h.Retry)
	}
	if h := vs("{attempts: 2, retryOn: reset}"); h.Retry.On != on(Timeout, ConnectError, Reset) {
		t.Errorf("retryOn reset: %v", h.Retry.On)
	}
}

// TestResilience4j reads a Spring Boot application.yml: configs.default
// merged under an instance, camelCase and kebab-case keys, the time
// limiter, breaker and bulkhead of the same name, and resilience4j's
// defaults; a profile's document is not applied.
func TestResilience4j(t *testing.T) {
	h := hopOf(t, "application.yml#inventory")
	want := Retry{Attempts: 4, On: on(Timeout, ConnectError, Reset, ServerError),
		Backoff: Backoff{Kind: BackoffExponential, Base: 100 * ms, Max: 1000 * ms, Multiplier: 2, Jitter: JitterNone}}
	if h.Service != "checkout/inventory" || h.Timeout != 200*ms || !sameRetry(h.Retry, want) {
		t.Errorf("inventory: %+v %+v", h, h.Retry)
	}
	if h.Pool == nil || h.Pool.Name != "tomcat threads" || h.Pool.Size != 200 || !h.Pool.Shared {
		t.Errorf("no bulkhead: Tomcat's pool, got %+v", h.Pool)
	}
	if h.Breaker == nil || h.Breaker.Scope != "process" || !hasNote(h, "profile") {
		t.Errorf("breaker %+v notes %v", h.Breaker, h.Notes)
	}
	h = hopOf(t, "application.yml#payments")
	want = Retry{Attempts: 2, On: on(ConnectError),
		Backoff: Backoff{Kind: BackoffConstant, Base: 500 * ms, Multiplier: 1.5, Jitter: JitterProportional, JitterFactor: 0.5}}
	if !sameRetry(h.Retry, want) || h.Pool == nil || h.Pool.Size != 20 || h.Pool.Shared || h.Timeout != 0 {
		t.Errorf("payments: %+v %+v %+v", h, h.Retry, h.Pool)
	}
	if got := h.Retry.Backoff.Ceiling(1); got != 750*time.Millisecond {
		t.Errorf("randomized wait ceiling %s, want 750ms", got)
	}
	// Nothing set: 3 attempts counting the first, 500 ms apart, any exception.
	p, err := Load([]Input{{Name: "bare.yml", Data: []byte("resilience4j.retry.instances.backend.registerHealthIndicator: true\n")}}, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := p.Hops[0].Retry
	if r.Attempts != 3 || r.Backoff.Kind != BackoffConstant || r.Backoff.Base != 500*ms || r.On != on(Classes...) {
		t.Errorf("defaults: %+v", r)
	}
	// baseConfig names a config, which itself falls back to configs.default.
	chain := `resilience4j:
  retry:
    configs:
      default: {maxAttempts: 5, waitDuration: 10ms}
      slow: {waitDuration: 2s}
    instances:
      ledger: {baseConfig: slow}
`
	if p, err = Load([]Input{{Name: "chain.yml", Data: []byte(chain)}}, LoadOptions{}); err != nil {
		t.Fatal(err)
	}
	if r := p.Hops[0].Retry; r.Attempts != 5 || r.Backoff.Base != 2000*ms {
		t.Errorf("baseConfig chain: %+v", r)
	}
}

// TestGRPC reads a gRPC service config: maxAttempts counts the original
// and is capped at 5, backoff is fully jittered, the method timeout is the
// call's deadline, retryThrottling is the budget.
func TestGRPC(t *testing.T) {
	h := hopOf(t, "grpc-service-config.json#GetStock")
	want := Retry{Attempts: 5, On: on(ConnectError, Reset, ServerError, Throttled), HonourRetryAfter: true,
		Backoff: Backoff{Kind: BackoffExponential, Base: 100 * ms, Max: 1000 * ms, Multiplier: 2, Jitter: JitterFull},
		Budget:  &Budget{Kind: "tokens", MaxTokens: 10, Ratio: 0.1, Scope: "process"}}
	if h.Deadline != 1000*ms || h.Timeout != 0 || !h.PropagateDeadline || !sameRetry(h.Retry, want) || !hasNote(h, "treated as 5") {
		t.Errorf("GetStock: %+v %+v", h, h.Retry)
	}
	if h := hopOf(t, "grpc-service-config.json#Reserve"); h.Retry.retries() || h.Deadline != 2000*ms {
		t.Errorf("Reserve has no retry policy: %+v", h.Retry)
	}
	// Fast failures: attempts at 0, 0.1, 0.3 and 0.7 s; the fifth would
	// start at 1.5 s, past the 1 s deadline.
	p := load(t, "testdata/import/grpc-service-config.json#GetStock")
	if got := Analyze(p).WorstCaseAttempts.ByClass["5xx"]; got != 4 {
		t.Errorf("5xx attempts within the deadline: %v, want 4", got)
	}
}

// TestMixedPath composes a CallPath edge, checkout's resilience4j retry
// (chosen by the dependency's name) and its sidecar's VirtualService.
func TestMixedPath(t *testing.T) {
	p := load(t, "testdata/import/edge.yaml", "testdata/import/application.yml", "testdata/import/istio-v1.yaml#stock")
	if len(p.Hops) != 2 || p.Hops[0].Format != FormatResilience4j || p.Hops[1].Format != FormatIstio {
		t.Fatalf("hops: %+v", p.Hops)
	}
	a := Analyze(p)
	// The sidecar's 500 ms per try is cut by the app's 200 ms time limit;
	// within it the sidecar retries connection failures at 0, ≤25 and
	// ≤100 ms: 3 per app attempt.
	if a.WorstCaseAttempts.Total != 16 || a.WorstCaseAttempts.ByClass["timeout"] != 4 || a.WorstCaseAttempts.ByClass["connect_error"] != 12 {
		t.Errorf("attempts %+v", a.WorstCaseAttempts)
	}
	if !near(a.OccupancyS, 1.5) || a.Pool != "tomcat threads" || !near(a.DemandedConcurrency, 600) {
		t.Errorf("occupancy %v pool %s demanded %v", deref(a.OccupancyS), a.Pool, deref(a.DemandedConcurrency))
	}
	for _, id := range []string{"multiplied_retries@", "transport_retry_stacked@istio:inventory/stock", "deadline_conflict@istio:inventory/stock"} {
		if !slices.Contains(append(ids(a, Crit), ids(a, Warn)...), id) {
			t.Errorf("missing %s in %+v", id, a.Findings)
		}
	}
}

func sameRetry(a, b Retry) bool {
	if (a.Budget == nil) != (b.Budget == nil) || a.Budget != nil && *a.Budget != *b.Budget {
		return false
	}
	a.Budget, b.Budget = nil, nil
	return a == b
}
