package sim

import (
	"context"
	"strings"
	"testing"
	"time"
)

// A breaker that counts only the dependency's own 503s stays closed while
// every attempt times out, and one that counts every failure opens: the
// sidecar's per-try timeout is the caller's verdict, not the server's.
func TestBreakerCountsOnlyItsFailures(t *testing.T) {
	const src = `name: x
edge: {service: a, rps: 50}
services:
  - name: a
    pools: [{name: p, size: 100}]
    endpoints:
      - name: e
        pool: p
        calls:
          - target: d
            breaker: {scope: pod, consecutive_failures: 3, open_for: 1s%s}
            layers: [{name: app, max_attempts: 1, timeout: 100ms}]
dependencies:
  - {name: d, capacity: 100, latency: {p50: 1s, p99: 2s}}
`
	refused := func(failures string) float64 {
		sc, err := Parse("b.yaml", []byte(strings.Replace(src, "%s", failures, 1)))
		if err != nil {
			t.Fatal(err)
		}
		s, err := New(sc, Options{Seed: 1, Until: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		return s.services[0].calls[0].attempts[outBreakerOpen].v
	}
	if n := refused(", failures: [unavailable]"); n != 0 {
		t.Errorf("a breaker counting 503s refused %v calls while every attempt timed out, want 0", n)
	}
	if n := refused(""); n < 400 {
		t.Errorf("a breaker counting every failure refused %v calls while every attempt timed out, want most of 500", n)
	}
}
