package sim

import (
	"fmt"
	"testing"
	"time"
)

// gateway-blip's bound, behind README's account of why the autopilot does
// not keep its edge under 5%: when the first alert fires (195 s) the blip
// is over, but the slow instance still times out a third of first
// attempts while it works off what its callers abandoned. Four attempts
// hide that (a request fails only when all four land on it) while they
// spend the merchant's rate limit; a lever that lowers the attempts lets
// the instance drain and exposes some of its timeouts meanwhile. Over
// seeds 1-3 no retry lever pulled then keeps the worst minute under 5% on
// every seed, and cap:2, the playbooks' choice while the retries still
// rescue the requests, has the best worst case. Should this fail because
// a lever now stays under 5%, the model has changed: measure again, and
// update README and the autopilot proof with it.
func TestGatewayBlipLeverBound(t *testing.T) {
	sc := findScenario(t, "gateway-blip")
	worst := map[string]float64{}
	for _, v := range []string{"off", "cap:2", "cap:3"} {
		var seeds []string
		for seed := uint64(1); seed <= 3; seed++ {
			ev := []LeverEvent{{At: Duration(195 * time.Second), Kind: "retries", Target: "checkout->payment-gateway", Value: v}}
			s := runSim(t, sc, Options{Seed: seed, Until: 6 * time.Minute, Events: ev}, nil)
			share := s.Summary().MaxEdge5xxShare
			worst[v] = max(worst[v], share)
			seeds = append(seeds, fmt.Sprintf("%.1f%%", 100*share))
		}
		t.Logf("retries %s at 195s: worst minute of edge 5xx, seeds 1-3: %v", v, seeds)
		if worst[v] <= 0.05 {
			t.Errorf("retries %s at 195s keeps gateway-blip's edge under 5%% on seeds 1-3 (worst %.3f)", v, worst[v])
		}
	}
	if worst["cap:2"] >= worst["off"] || worst["cap:2"] >= worst["cap:3"] {
		t.Errorf("cap:2 is not the best lever at 195s: worst minutes %v", worst)
	}
}
