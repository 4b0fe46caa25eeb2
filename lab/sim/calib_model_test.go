package sim

import (
	"fmt"
	"testing"
)

// model-provider, calibrated to incident shapes 4 and 5: layered retries
// make up to 2×3×2 attempts per order once the provider's queue is full and
// it answers 503, consecutive 503s open per-pod breakers, and the pods the
// autoscaler adds (24 → 78) start closed, so the fleet disagrees about the
// provider for a sustained time. The provider works off the abandoned
// backlog after the fault before orders succeed again.
func TestModelProviderCalibrated(t *testing.T) {
	for _, seed := range []uint64{1, 2} {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			s := run(t, "model-provider", Options{Seed: seed})
			if s.MaxAttemptsPerRequest < 10 || s.MaxAttemptsPerRequest > 12 {
				t.Errorf("max attempts per order %d, want 10-12 (2×3×2 possible)", s.MaxAttemptsPerRequest)
			}
			if p := s.AttemptsPerRequestP99; p < 5 || p > 7 {
				t.Errorf("p99 attempts per order %d, want 5-7 (2×3 timeouts)", p)
			}
			if peak := s.PeakDependencyAttemptsPerS["model-provider"]; peak < 2400 || peak > 4680 {
				t.Errorf("peak provider attempts/s %v, want 2,400-4,680 (12 × 390)", peak)
			}
			most := 0
			for _, p := range s.Pods["risk-agent"] {
				most = max(most, p.Pods)
			}
			if most < 70 || most > 78 {
				t.Errorf("risk-agent peaked at %d pods, want 70-78: %v", most, s.Pods["risk-agent"])
			}
			bf := s.BreakerOpenFraction["risk-agent->model-provider"]
			if bf.Max <= 0.5 || bf.DisagreeS < 20 {
				t.Errorf("breaker open fraction %+v, want max > 0.5 and ≥ 20 s strictly between 0 and 1", bf)
			}
			if s.Recovered == nil || *s.Recovered < s.FaultEnd+30 || *s.Recovered > s.FaultEnd+150 {
				t.Errorf("recovered at %v, want 30-150 s after the fault ends at %v (the backlog is worked off first)",
					s.Recovered, s.FaultEnd)
			}
		})
	}
}

// The protected variant keeps the attempts reaching the provider within
// 1.2× the calm rate (the incident's gate) and recovers within 2 minutes.
func TestModelProviderProtectedCalibrated(t *testing.T) {
	for _, seed := range []uint64{1, 2} {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
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
