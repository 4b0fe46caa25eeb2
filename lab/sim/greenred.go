package sim

import (
	"math"
	"time"
)

// edgeSuccessOver returns, per scrape interval, the share of the edge's
// answers that were successes over the preceding window (NaN before a full
// window or without answers): a closer look than the summary's one-minute
// signals, fine enough to see a green stretch of a few tens of seconds.
func (s *Sim) edgeSuccessOver(window time.Duration) []float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	snaps := s.stats.snaps
	lag := max(1, int(window/s.sc.ScrapeInterval.D()))
	out := make([]float64, len(snaps))
	for i := range snaps {
		out[i] = math.NaN()
		if i < lag {
			continue
		}
		if ans := snaps[i].edgeAns - snaps[i-lag].edgeAns; ans > 0 {
			out[i] = (snaps[i].edgeOK - snaps[i-lag].edgeOK) / ans
		}
	}
	return out
}

// span is a stretch of simulated time, in seconds.
type span struct{ from, to float64 }

// greenSpans returns the stretches, from t0 (s) on, in which the edge's
// 5xx share over window stayed within the edge error alarm's 5%.
func (s *Sim) greenSpans(window time.Duration, t0 float64) []span {
	dt := s.sc.ScrapeInterval.D().Seconds()
	var out []span
	open := false
	for i, ok := range s.edgeSuccessOver(window) {
		t := float64(i) * dt
		green := !math.IsNaN(ok) && ok >= 1-edgeAlarm
		switch {
		case t < t0:
		case green && !open:
			out, open = append(out, span{from: t, to: t}), true
		case green:
			out[len(out)-1].to = t
		case open:
			open = false
		}
	}
	return out
}

// edgeAlarm is the 5xx share of the edge past which the saved
// edge_error_rate query raises its alarm.
const edgeAlarm = 0.05
