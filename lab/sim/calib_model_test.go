package sim

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// model-provider, calibrated to incident shapes 4 and 5: layered retries
// make up to 2×3×2 attempts per order once the provider's queue is full and
// it answers 503, consecutive 503s open per-pod breakers, and the pods the
// autoscaler adds (24 → 78) start closed, so the fleet disagrees about the
// provider for a sustained time. Each time the queue overflows the fleet
// trips together and the edge goes green on rules-only decisions until the
// breakers let the traffic through again onto the provider's backlog; after
// the last such wave an order costs 6 attempts, more than the recovered
// provider starts, and the storm holds itself up to the end of the run.
func TestModelProviderCalibrated(t *testing.T) {
	for _, seed := range []uint64{1, 2} {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			t.Parallel()
			sc, err := Find("model-provider")
			if err != nil {
				t.Fatal(err)
			}
			s, err := New(sc, Options{Seed: seed})
			if err != nil {
				t.Fatal(err)
			}
			// The provider's own rates once recovered, from a minute after
			// the fault to the end: what it starts (all 200s now) against
			// what the fleet sends it.
			from := sc.LastFaultEnd() + time.Minute
			if err := s.RunTo(context.Background(), from); err != nil {
				t.Fatal(err)
			}
			d := s.depByName["model-provider"]
			arr0, ok0 := d.arrivals, d.codes[200].v
			if err := s.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			secs := (s.Until() - from).Seconds()
			starts, offered := (d.codes[200].v-ok0)/secs, (d.arrivals-arr0)/secs
			if starts < 2150 || starts > 2350 {
				t.Errorf("recovered provider starts %.0f/s, want ~2,270 (1,000 slots / 0.44 s)", starts)
			}
			if offered <= starts || offered > 2400 {
				t.Errorf("fleet offers %.0f/s to a provider starting %.0f/s, want more, up to 6 × 390", offered, starts)
			}
			sum := s.Summary()
			if sum.MaxAttemptsPerRequest < 10 || sum.MaxAttemptsPerRequest > 12 {
				t.Errorf("max attempts per order %d, want 10-12 (2×3×2 possible)", sum.MaxAttemptsPerRequest)
			}
			if p := sum.AttemptsPerRequestP99; p < 5 || p > 7 {
				t.Errorf("p99 attempts per order %d, want 5-7 (2×3 timeouts)", p)
			}
			if peak := sum.PeakDependencyAttemptsPerS["model-provider"]; peak < 2400 || peak > 4680 {
				t.Errorf("peak provider attempts/s %v, want 2,400-4,680 (12 × 390)", peak)
			}
			most := 0
			for _, p := range sum.Pods["risk-agent"] {
				most = max(most, p.Pods)
			}
			if most < 70 || most > 78 {
				t.Errorf("risk-agent peaked at %d pods, want 70-78: %v", most, sum.Pods["risk-agent"])
			}
			bf := sum.BreakerOpenFraction["risk-agent->model-provider"]
			if bf.Max <= 0.5 || bf.DisagreeS < 20 {
				t.Errorf("breaker open fraction %+v, want max > 0.5 and ≥ 20 s strictly between 0 and 1", bf)
			}
			// Green, then red again: once the storm has turned the edge red,
			// stretches of 20-60 s within the 5% alarm, each a breaker wave,
			// the last ending within a minute of the fault; then red to the end.
			if sum.FirstEdge5xxOver5Pct == nil {
				t.Fatal("the edge never passed 5% 5xx")
			}
			green := s.greenSpans(5*time.Second, *sum.FirstEdge5xxOver5Pct)
			for _, g := range green {
				if g.to-g.from < 20 || g.to-g.from > 60 {
					t.Errorf("green stretch %v after the edge turned red, want 20-60 s", g)
				}
			}
			if len(green) == 0 || green[len(green)-1].to > sum.FaultEnd+60 {
				t.Errorf("green stretches %v, want some, the last ending by %v", green, sum.FaultEnd+60)
			}
			t.Logf("peak %v/s; recovered provider starts %.0f/s, offered %.0f/s; green %v; pods %v; breakers %+v",
				sum.PeakDependencyAttemptsPerS["model-provider"], starts, offered, green, most, bf)
			if sum.Recovered != nil {
				t.Errorf("recovered at %v without a lever, want the storm to hold itself up", *sum.Recovered)
			}
		})
	}
}

// The protected variant keeps the attempts reaching the provider within
// 1.2× the calm rate (the incident's gate) and recovers within 2 minutes.
func TestModelProviderProtectedCalibrated(t *testing.T) {
	for _, seed := range []uint64{1, 2} {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			t.Parallel()
			s := run(t, "model-provider-protected", Options{Seed: seed})
			if r := s.PeakOutboundRatio["model-provider"]; r <= 0 || r > 1.2 {
				t.Errorf("peak attempts to the provider %v× calm, want ≤ 1.2×", r)
			}
			if peak := s.PeakDependencyAttemptsPerS["model-provider"]; peak > 1.2*390 {
				t.Errorf("peak provider attempts/s %v, want ≤ 1.2 × 390", peak)
			}
			if s.MaxAttemptsPerRequest > 2 {
				t.Errorf("max attempts per order %d, want ≤ 2 (one retry owner)", s.MaxAttemptsPerRequest)
			}
			if s.Recovered == nil || *s.Recovered > s.FaultEnd+120 {
				t.Errorf("recovered at %v, want within 2 min of the fault's end at %v", s.Recovered, s.FaultEnd)
			}
		})
	}
}
