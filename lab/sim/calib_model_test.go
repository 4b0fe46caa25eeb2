package sim

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"
)

// model-provider, calibrated to incident shapes 4 and 5: every layer's
// attempt times out on the slow provider (the sidecar's 1.5 s per-try
// timeout inside the agent's 2 s one, twice per checkout attempt), so an
// order costs up to 2×3×2 attempts and the fleet offers the provider more
// than 3,400 a second. The autoscaler grows the agent 24 → 78 pods; each
// time the provider's queue overflows and answers 503 the pods' breakers
// trip, the fleet disagrees about the provider, and the edge goes green on
// rules-only decisions until the breakers let the traffic through again.
// After the fault the provider starts what it can (~2,270/s), the fleet
// still offers more whenever its breakers let it, and the edge turns red
// again and again: the storm holds itself up to the end of the run.
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
			// the fault to the end: what it starts (all 200s now).
			from := sc.LastFaultEnd() + time.Minute
			if err := s.RunTo(context.Background(), from); err != nil {
				t.Fatal(err)
			}
			d := s.depByName["model-provider"]
			ok0 := d.codes[200].v
			if err := s.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			starts := (d.codes[200].v - ok0) / (s.Until() - from).Seconds()
			if starts < 2150 || starts > 2350 {
				t.Errorf("recovered provider starts %.0f/s, want ~2,270 (1,000 slots / 0.44 s)", starts)
			}
			offered := s.peakArrivals(d, 5*time.Second, from.Seconds())
			if offered < 1.5*starts || offered > 1.25*12*390 {
				t.Errorf("after the fault the fleet offers at most %.0f/s to a provider starting %.0f/s, want well more: about 12 × 390", offered, starts)
			}
			sum := s.Summary()
			if sum.MaxAttemptsPerRequest < 10 || sum.MaxAttemptsPerRequest > 12 {
				t.Errorf("max attempts per order %d, want 10-12 (2×3×2 possible)", sum.MaxAttemptsPerRequest)
			}
			if p := sum.AttemptsPerRequestP99; p < 10 || p > 12 {
				t.Errorf("p99 attempts per order %d, want 10-12 (every layer's attempt times out)", p)
			}
			// More than 3,400 starts a second even as a one-minute rate; a
			// second's peak may pass 12 × 390 when new pods take the orders
			// waiting for a worker all at once.
			if peak := s.peakArrivals(d, Window, 0); peak < 3400 || peak > 12*390 {
				t.Errorf("peak provider attempts/s over a minute %.0f, want 3,400-4,680 (12 × 390)", peak)
			}
			if peak := sum.PeakDependencyAttemptsPerS["model-provider"]; peak > 1.5*12*390 {
				t.Errorf("peak provider attempts/s %v, want at most 1.5 × 12 × 390", peak)
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
			if sum.FirstEdge5xxOver5Pct == nil {
				t.Fatal("the edge never passed 5% 5xx")
			}
			// Green, then red again: once the storm has turned the edge red,
			// stretches of 20-60 s within the 5% alarm while the fault lasts
			// and just after it, each a breaker wave, one of them outlasting
			// the fault; then red again in every minute to the end.
			end := sum.FaultEnd + 60
			var green []span
			for _, g := range s.greenSpans(5*time.Second, *sum.FirstEdge5xxOver5Pct) {
				if g.from < end {
					green = append(green, g)
				}
			}
			for _, g := range green {
				if g.to-g.from < 20 || g.to-g.from > 60 {
					t.Errorf("green stretch %v after the edge turned red, want 20-60 s", g)
				}
			}
			if len(green) == 0 || green[len(green)-1].to <= sum.FaultEnd {
				t.Errorf("green stretches %v, want some, the last outlasting the fault at %v", green, sum.FaultEnd)
			}
			if m := s.minuteWithoutRed(end, 0.5); m >= 0 {
				t.Errorf("the edge stayed above 50%% success through the minute from %v s, want red again every minute", m)
			}
			t.Logf("peak %v/s (%.0f/s over a minute); recovered provider starts %.0f/s, offered up to %.0f/s; green %v; pods %v; breakers %+v",
				sum.PeakDependencyAttemptsPerS["model-provider"], s.peakArrivals(d, Window, 0), starts, offered, green, most, bf)
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

// peakArrivals is the most attempts per second d received over window,
// from t0 (s) on.
func (s *Sim) peakArrivals(d *dependency, window time.Duration, t0 float64) float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	idx := slices.Index(s.deps, d)
	dt := s.sc.ScrapeInterval.D().Seconds()
	lag := max(1, int(window.Seconds()/dt))
	peak := 0.0
	for n := lag; n < len(s.stats.snaps); n++ {
		if float64(n-lag)*dt >= t0 {
			peak = max(peak, (s.stats.snaps[n].depArrivals[idx]-s.stats.snaps[n-lag].depArrivals[idx])/window.Seconds())
		}
	}
	return peak
}

// minuteWithoutRed returns the start (s) of the first whole minute from t0
// on in which the edge's success over 5 s never fell below ok, or -1.
func (s *Sim) minuteWithoutRed(t0, ok float64) float64 {
	dt := s.sc.ScrapeInterval.D().Seconds()
	succ := s.edgeSuccessOver(5 * time.Second)
	for from := t0; from+60 <= float64(len(succ)-1)*dt; from += 60 {
		red := false
		for i := int(from / dt); float64(i)*dt < from+60; i++ {
			red = red || succ[i] < ok
		}
		if !red {
			return from
		}
	}
	return -1
}
