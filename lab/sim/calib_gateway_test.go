package sim

import (
	"fmt"
	"strings"
	"sync"
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
			ev := []LeverEvent{gatewayRetries(195, v)}
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

// The bound holds for any controller of the retries lever, not only for the
// autopilot's timing. On seed 1, cap:3 pulled at 215 s, just before the
// merchant's rate limit runs out, keeps the edge under 5%: an oracle that
// knew when it runs out could meet the goal there. On seed 4 the same lever
// at the same time falls into the 429 storm, and no schedule of the lever
// searched here (off, cap:2 or cap:3 from 165 s to 225 s, then tightened
// 10-40 s later) keeps the edge under 5%.
func TestGatewayBlipNoRetryScheduleUnder5Pct(t *testing.T) {
	sc := findScenario(t, "gateway-blip")
	worst := func(t *testing.T, seed uint64, ev ...LeverEvent) float64 {
		return runSim(t, sc, Options{Seed: seed, Until: 300 * time.Second, Events: ev}, nil).Summary().MaxEdge5xxShare
	}
	if w := worst(t, 1, gatewayRetries(215, "cap:3")); w > 0.05 {
		t.Errorf("seed 1, cap:3 at 215s: worst minute %.1f%%, want under 5%%", 100*w)
	}
	tighter := map[string][]string{"cap:3": {"cap:2", "off"}, "cap:2": {"off"}, "off": nil}
	var schedules [][]LeverEvent
	for _, t1 := range []int{165, 180, 195, 205, 215, 225} {
		for first, next := range tighter {
			schedules = append(schedules, []LeverEvent{gatewayRetries(t1, first)})
			for _, d := range []int{10, 25, 40} {
				for _, v := range next {
					schedules = append(schedules, []LeverEvent{gatewayRetries(t1, first), gatewayRetries(t1+d, v)})
				}
			}
		}
	}
	var mu sync.Mutex
	best, bestAt := 1.0, ""
	t.Run("seed 4", func(t *testing.T) {
		for _, ev := range schedules {
			var steps []string
			for _, e := range ev {
				steps = append(steps, fmt.Sprintf("%s@%v", e.Value, e.At.D()))
			}
			name := strings.Join(steps, ",")
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				w := worst(t, 4, ev...)
				mu.Lock()
				defer mu.Unlock()
				if w < best {
					best, bestAt = w, name
				}
			})
		}
	})
	t.Logf("seed 4: the best of %d retry lever schedules is %s, worst minute %.1f%%", len(schedules), bestAt, 100*best)
	if best <= 0.05 {
		t.Errorf("seed 4: %s keeps gateway-blip's edge under 5%% (worst minute %.1f%%): measure again and update README", bestAt, 100*best)
	}
}

// Detecting the blip sooner would not help either, because the bound is
// arithmetic: while one instance of three times out every call it gets, a
// request fails only when each of its k attempts lands there, (1/3)^k of
// them: 33% with retries off, 11% with cap:2, 3.7% with cap:3. Under 5%
// needs three attempts, and up to three attempts per request at 300
// requests/s start about 430 calls/s (300 × (1 + 1/3 + 1/9)) against the
// merchant's limit of 340/s, so on some seeds the burst runs out and the
// 429 storm follows. A lever pulled 10 s into the blip, sooner than any
// alert could fire, shows both.
func TestGatewayBlipEarlyLeverArithmetic(t *testing.T) {
	sc := findScenario(t, "gateway-blip")
	want := map[string][2]float64{"off": {0.30, 0.36}, "cap:2": {0.10, 0.125}}
	stormed := 0
	for seed := uint64(1); seed <= 4; seed++ {
		for _, v := range []string{"off", "cap:2", "cap:3"} {
			ev := []LeverEvent{gatewayRetries(130, v)}
			w := runSim(t, sc, Options{Seed: seed, Until: 300 * time.Second, Events: ev}, nil).Summary().MaxEdge5xxShare
			t.Logf("seed %d, retries %s at 130s: worst minute %.1f%%", seed, v, 100*w)
			switch r, ok := want[v]; {
			case ok && (w < r[0] || w > r[1]):
				t.Errorf("seed %d, retries %s at 130s: worst minute %.1f%%, want %.0f-%.1f%%", seed, v, 100*w, 100*r[0], 100*r[1])
			case v == "cap:3" && w > 0.2:
				stormed++
			case v == "cap:3" && w > 0.05:
				t.Errorf("seed %d, cap:3 at 130s: worst minute %.1f%%, want about 1/27 or the 429 storm", seed, 100*w)
			}
		}
	}
	if stormed == 0 {
		t.Errorf("cap:3 at 130s kept every seed out of the 429 storm: the early lever may now meet the goal; measure again and update README")
	}
}

// gatewayRetries is the retries lever on checkout's calls to the gateway,
// set to v at second sec.
func gatewayRetries(sec int, v string) LeverEvent {
	return LeverEvent{At: Duration(time.Duration(sec) * time.Second), Kind: "retries", Target: "checkout->payment-gateway", Value: v}
}
