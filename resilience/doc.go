// Package resilience is stormctl's data-plane middleware for Go services:
// retries that back off with full jitter inside one deadline, only on
// transient failures, with an idempotency key, under a retry budget and a
// per-dependency breaker, and obeying the control-plane levers read through
// OpenFeature (retries off or capped, breaker forced open, load shed,
// degraded mode). It exports DESIGN.md's metric contract.
//
// Adopting it in a service:
//
//	r, err := resilience.New(resilience.Config{
//		Service: "checkout", Dependency: "payments",
//		Flags: openfeature.NewDefaultClient(), Metrics: metrics,
//	})
//	payments := &http.Client{Transport: &resilience.Transport{Retrier: r}}
//
// The decisions are pure functions of the time and a random source
// (Classify, Policy.Backoff, Policy.Next, Budget.TryRetry, Breaker.Allow),
// so a simulation can drive the same code on a virtual clock.
package resilience
