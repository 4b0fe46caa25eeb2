package sim

import "time"

// PodCount is how many pods of a service were ready from T (seconds) on.
type PodCount struct {
	T    float64 `json:"t_s"`
	Pods int     `json:"pods"`
}

// timeline keeps the figures the summary reports over time: attempts per
// intent (for a percentile), ready pods per service (on change) and work
// dependencies completed for callers that had given up.
type timeline struct {
	attempts  []uint64 // intents by attempts made
	pods      map[string][]PodCount
	abandoned []float64 // per dependency, cumulative
	// peakAbandoned is the most abandoned work per second over one Window.
	peakAbandoned []float64
	abandonSnaps  [][]float64
}

func (tl *timeline) observeAttempts(n int) {
	for len(tl.attempts) <= n {
		tl.attempts = append(tl.attempts, 0)
	}
	tl.attempts[n]++
}

// sample records the pods and abandoned work of one scrape interval.
func (tl *timeline) sample(s *Sim, lag int) {
	if tl.pods == nil {
		tl.pods = map[string][]PodCount{}
		tl.abandoned = make([]float64, len(s.deps))
		tl.peakAbandoned = make([]float64, len(s.deps))
	}
	for _, svc := range s.services {
		n := int(svc.replicas.v)
		h := tl.pods[svc.name]
		if len(h) == 0 || h[len(h)-1].Pods != n {
			tl.pods[svc.name] = append(h, PodCount{T: s.now.Seconds(), Pods: n})
		}
	}
	snap := make([]float64, len(s.deps))
	for i, d := range s.deps {
		snap[i] = d.abandoned
	}
	tl.abandonSnaps = append(tl.abandonSnaps, snap)
	if n := len(tl.abandonSnaps); n > lag {
		old := tl.abandonSnaps[n-1-lag]
		for i := range snap {
			tl.peakAbandoned[i] = max(tl.peakAbandoned[i], (snap[i]-old[i])/Window.Seconds())
		}
	}
}

// percentile is the smallest attempt count that at least q of the intents
// did not exceed; 0 without intents.
func (tl *timeline) percentile(q float64) int {
	var total uint64
	for _, c := range tl.attempts {
		total += c
	}
	if total == 0 {
		return 0
	}
	var seen uint64
	for n, c := range tl.attempts {
		if seen += c; float64(seen) >= q*float64(total) {
			return n
		}
	}
	return len(tl.attempts) - 1
}

// fill copies the timeline into the summary.
func (tl *timeline) fill(s *Sim, out *Summary) {
	out.AttemptsPerRequestP99 = tl.percentile(0.99)
	out.Pods = map[string][]PodCount{}
	for k, v := range tl.pods {
		out.Pods[k] = append([]PodCount(nil), v...)
	}
	out.PeakAbandonedWorkPerS = map[string]float64{}
	for i, d := range s.deps {
		if i < len(tl.peakAbandoned) {
			out.PeakAbandonedWorkPerS[d.name] = round(tl.peakAbandoned[i])
		}
	}
}

// Alert is when one saved query (stormctl pack, its default window) first
// passed its thresholds in a run, evaluated every second over the stored
// samples like a Prometheus alerting rule.
type Alert struct {
	Query string `json:"query"`
	// FirstWarn is the first time (s) any series was past warn (or crit
	// for a query with no warn); null if never.
	FirstWarn *float64 `json:"first_warn_s"`
	// FirstFiring is the first time (s) a series had been past crit for
	// the query's whole `for`; null if it never fired.
	FirstFiring *float64 `json:"first_firing_s"`
	// Series names the labels of the series that fired first.
	Series string `json:"series,omitempty"`
	// Calm is the worst status of a series' value averaged over the
	// query's `for` (at least 20 s) before the first fault starts, from the
	// first full window on: anything but "ok" is a false alarm.
	Calm string `json:"calm"`
	// CalmWorst is the worst single value in the same time (null: no
	// data before the fault), which may pass a threshold only briefly.
	CalmWorst *float64 `json:"calm_worst"`
}

// FirstFault is when the scenario's earliest fault starts.
func (sc *Scenario) FirstFault() time.Duration {
	first := sc.Duration.D()
	for _, f := range sc.Faults {
		first = min(first, f.At.D())
	}
	return first
}

// LastFaultEnd is when the scenario's last fault ends; zero without faults.
func (sc *Scenario) LastFaultEnd() time.Duration {
	var end time.Duration
	for _, f := range sc.Faults {
		end = max(end, f.At.D()+f.For.D())
	}
	return end
}
