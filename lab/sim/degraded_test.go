package sim

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/yamlfile"
)

// gateway-blip's checkout can defer the payment, but only when the degraded
// lever says so: unattended, nothing is deferred and the storm is the one
// the calibration measures. Deferring every payment when the first alert
// fires (195 s) leaves the gateway alone while its slow instance drains,
// so no retry lever's bound applies: the worst minute stays under 5% on
// every seed, also after the lever's 10 minutes run out and payments go
// back to the gateway.
func TestGatewayBlipDeferPayment(t *testing.T) {
	sc := findScenario(t, "gateway-blip")
	queued := func(s *Sim) float64 { return s.svcByName["checkout"].degraded.level }
	var untold float64
	s := runSim(t, sc, Options{Seed: 1, Until: 6 * time.Minute}, func(s *Sim) { untold = max(untold, queued(s)) },
		150*time.Second, 250*time.Second, 5*time.Minute)
	if untold != 0 || s.Summary().MaxEdge5xxShare < 0.5 {
		t.Fatalf("without the lever: %.0f payments deferred, worst minute %.1f%%; want none and the storm",
			untold, 100*s.Summary().MaxEdge5xxShare)
	}
	defer195 := []LeverEvent{{At: Duration(195 * time.Second), Kind: "degraded", Target: "checkout", Value: "defer-payment",
		TTL: Duration(10 * time.Minute)}}
	var worst []string
	for seed := uint64(1); seed <= 6; seed++ {
		var held float64
		s := runSim(t, sc, Options{Seed: seed, Events: defer195}, func(s *Sim) { held = queued(s) }, 790*time.Second)
		share := s.Summary().MaxEdge5xxShare
		worst = append(worst, fmt.Sprintf("%.1f%%", 100*share))
		if share >= 0.05 {
			t.Errorf("seed %d: payments deferred at 195s, worst minute %.1f%%, want under 5%%", seed, 100*share)
		}
		// About 10 minutes of orders at 300/s less the worker's 20/s: the
		// queue holds them, under its 200,000.
		if held < 150_000 || held > 200_000 {
			t.Errorf("seed %d: %.0f payments queued before the lever ran out, want about 168,000", seed, held)
		}
	}
	t.Logf("payments deferred at 195s for 10m: worst minute of edge 5xx, seeds 1-6: %v", worst)
}

func TestFallbackOnLeverStandsAlone(t *testing.T) {
	src := "name: x\nedge: {service: a, rps: 1}\nservices:\n  - name: a\n    degraded: {name: d, max_queue: 1, drain_rate: 1}\n" +
		"    pools: [{name: p, size: 1}]\n    endpoints:\n      - name: e\n        pool: p\n        calls:\n          - target: d\n" +
		"            fallback: true\n            fallback_on: [lever, timeout]\n            layers: [{name: app, max_attempts: 1, timeout: 1s}]\n" +
		"dependencies:\n  - {name: d, capacity: 1, latency: {p50: 1ms, p99: 2ms}}\n"
	_, err := Parse("s.yaml", []byte(src))
	var es yamlfile.Errors
	if !errors.As(err, &es) || len(es) == 0 || es[0].Line != 13 {
		t.Fatalf("fallback_on: [lever, timeout]: want an error at line 13, got %v", err)
	}
	if _, err := Parse("s.yaml", []byte(strings.Replace(src, "[lever, timeout]", "[lever]", 1))); err != nil {
		t.Fatalf("fallback_on: [lever]: %v", err)
	}
}
