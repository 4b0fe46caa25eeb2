package sim

import (
	"math"
	"time"
)

// Window is the rate window of the summary's signals, as in the saved
// queries' default.
const Window = time.Minute

// stats keeps, per scrape interval, the cumulative counters the summary
// needs, and derives windowed signals from them.
type stats struct {
	s             *Sim
	edgeRequests  float64
	edgeOK        float64
	edgeAnswered  float64
	maxAttempts   int
	snaps         []snapshot
	lag           int // ticks per window
	peakPoolSat   float64
	peakDepRate   map[string]float64
	ampl, success []float64 // per tick, NaN before a full window
	peakDemand    float64
	tl            timeline
	story         story
}

type snapshot struct {
	requests, attempts       []float64 // per call, fleet-wide
	arrivals, holdSum, holdN []float64 // per service
	depArrivals              []float64
	edgeOK, edgeAns          float64
}

func newStats(s *Sim) *stats {
	return &stats{s: s, lag: max(1, int(Window/s.sc.ScrapeInterval.D())), peakDepRate: map[string]float64{},
		story: story{demand: map[string]float64{}, breakers: map[string]*BreakerFraction{}}}
}

func (st *stats) observeAttempts(n int) {
	st.maxAttempts = max(st.maxAttempts, n)
	st.tl.observeAttempts(n)
}

func (st *stats) sample() {
	s := st.s
	var sn snapshot
	for _, svc := range s.services {
		sn.arrivals = append(sn.arrivals, svc.arrivals)
		sn.holdSum = append(sn.holdSum, svc.holdSum)
		sn.holdN = append(sn.holdN, svc.holdN)
		for _, c := range svc.calls {
			total := 0.0
			for _, a := range c.attempts {
				total += a.v
			}
			sn.requests = append(sn.requests, c.requests.v)
			sn.attempts = append(sn.attempts, total)
		}
		for i := range svc.poolUse {
			if capacity := svc.poolCap[i].v; capacity > 0 {
				st.peakPoolSat = max(st.peakPoolSat, svc.poolUse[i].v/capacity)
			}
		}
	}
	for _, d := range s.deps {
		sn.depArrivals = append(sn.depArrivals, d.arrivals)
	}
	sn.edgeOK, sn.edgeAns = st.edgeOK, st.edgeAnswered
	st.snaps = append(st.snaps, sn)
	n := len(st.snaps)
	ampl, success := math.NaN(), math.NaN()
	if n > 1 {
		prev := st.snaps[n-2]
		dt := s.sc.ScrapeInterval.D().Seconds()
		for i, d := range s.deps {
			st.peakDepRate[d.name] = max(st.peakDepRate[d.name], (sn.depArrivals[i]-prev.depArrivals[i])/dt)
		}
	}
	if n > st.lag {
		old := st.snaps[n-1-st.lag]
		for i := range sn.requests {
			if dr := sn.requests[i] - old.requests[i]; dr > 0 {
				ampl = max(nanToZero(ampl), (sn.attempts[i]-old.attempts[i])/dr)
			}
		}
		if da := sn.edgeAns - old.edgeAns; da > 0 {
			success = (sn.edgeOK - old.edgeOK) / da
		}
		w := Window.Seconds()
		for i, svc := range s.services {
			capacity := 0.0
			for _, c := range svc.poolCap {
				capacity += c.v
			}
			// Little's law: arrival rate × mean time a request holds a slot.
			if dn := sn.holdN[i] - old.holdN[i]; capacity > 0 && dn > 0 {
				occupancy := (sn.holdSum[i] - old.holdSum[i]) / dn
				threads := (sn.arrivals[i] - old.arrivals[i]) / w * occupancy
				st.peakDemand = max(st.peakDemand, threads/capacity)
				st.story.demand[svc.name] = max(st.story.demand[svc.name], threads)
			}
		}
	}
	st.sampleStory(success)
	st.tl.sample(s, st.lag)
	st.ampl = append(st.ampl, ampl)
	st.success = append(st.success, success)
}

func nanToZero(v float64) float64 {
	if math.IsNaN(v) {
		return 0
	}
	return v
}

// Summary is the outcome of a run; its JSON shape is stable.
type Summary struct {
	Scenario  string  `json:"scenario"`
	Seed      uint64  `json:"seed"`
	Simulated float64 `json:"simulated_s"`
	// FaultEnd is when the last fault ends (seconds).
	FaultEnd float64 `json:"fault_end_s"`

	PeakAmplification float64 `json:"peak_amplification"`
	// MaxAttemptsPerRequest is the most attempts that reached dependencies
	// for one edge request (customer intent), through every retry layer and
	// service, including those made after the edge had answered.
	MaxAttemptsPerRequest int `json:"max_attempts_per_request"`
	// AttemptsPerRequestP99 is the 99th percentile of the same count.
	AttemptsPerRequestP99 int `json:"attempts_per_request_p99"`
	// PeakDependencyAttemptsPerS is, per dependency, the most attempts per
	// second it received over one scrape interval.
	PeakDependencyAttemptsPerS map[string]float64 `json:"peak_dependency_attempts_per_s"`
	PeakPoolSaturation         float64            `json:"peak_pool_saturation"`
	PeakDemandedConcurrency    float64            `json:"peak_demanded_concurrency"`
	MinEdgeSuccessRate         float64            `json:"min_edge_success_rate"`
	// AmplificationAfterFault is the amplification over the minute ending
	// two minutes after the last fault ends: above 1 the storm outlived it.
	AmplificationAfterFault float64 `json:"amplification_after_fault"`
	// EdgeSuccessAfterFault is the edge success rate over the same minute.
	EdgeSuccessAfterFault float64 `json:"edge_success_after_fault"`
	// The first time (s) the saved amplification and edge_error_rate
	// queries breach their critical thresholds; null if never.
	DetectAmplification *float64 `json:"detect_amplification_s"`
	DetectEdgeErrorRate *float64 `json:"detect_edge_error_rate_s"`
	// Recovered is the first time (s) after the fault from which, to the
	// end of the run, amplification stays ≤ 1.1 and edge success ≥ 0.95.
	Recovered *float64 `json:"recovered_s"`
	// Alerts are the saved queries' first warning and firing times, and
	// LeadS how long the earliest retry signal (amplification, retry_ratio,
	// retries_per_request, throttle_retries) fired before edge_error_rate:
	// null if either never fired. The lab fills them (Lab.Summary).
	Alerts []Alert  `json:"alerts,omitempty"`
	LeadS  *float64 `json:"lead_s"`
	// Pods is each service's ready pods over time, one entry per change.
	Pods map[string][]PodCount `json:"pods"`
	// PeakAbandonedWorkPerS is, per dependency, the most attempts per
	// second (over one Window) it worked on to the end although their
	// caller had given up: load that serves nobody.
	PeakAbandonedWorkPerS map[string]float64 `json:"peak_abandoned_work_per_s"`
	// PeakDemandedThreads is, per service, the most pool slots its traffic
	// asked for over one Window by Little's law: arrival rate × mean time a
	// request held a slot. Above the pool's size the pool must refuse.
	PeakDemandedThreads map[string]float64 `json:"peak_demanded_threads"`
	// SteadyAmplification is the median amplification from one Window
	// after the first fault to the end of the run.
	SteadyAmplification float64 `json:"steady_amplification"`
	// PeakOutboundRatio is, per dependency, the most attempts per second
	// it received in one scrape interval after the fault started, over its
	// mean rate in calm; PeakOutboundAt is when (s).
	PeakOutboundRatio map[string]float64 `json:"peak_outbound_ratio"`
	PeakOutboundAt    map[string]float64 `json:"peak_outbound_at_s"`
	// FirstPoolExhausted is the first time (s into the run, not before the
	// fault starts) a service had every slot of a pool in use; null if never.
	FirstPoolExhausted *float64 `json:"first_pool_exhausted_s"`
	// FirstEdge5xxOver5Pct is the first time (s into the run, not before the
	// fault starts) more than 5% of the edge's answers over one Window were 5xx.
	FirstEdge5xxOver5Pct *float64 `json:"first_edge_5xx_over_5pct_s"`
	// MaxEdge5xxShare is the worst share of 5xx answers at the edge over
	// one Window: 1 − MinEdgeSuccessRate.
	MaxEdge5xxShare float64 `json:"max_edge_5xx_share"`
	// BreakerOpenFraction is, per service->dependency call with per-pod
	// breakers, the largest share of ready pods whose own breaker was open
	// and how long the fleet disagreed (strictly between 0 and 1).
	BreakerOpenFraction map[string]BreakerFraction `json:"breaker_open_fraction"`
	// MinEndpointSuccess is, per "service/endpoint", the lowest share of
	// its answers that were 200 over one Window: an endpoint whose own
	// backend is healthy fails with the pool it shares.
	MinEndpointSuccess map[string]float64 `json:"min_endpoint_success"`
}

// RecoveredAmplification and RecoveredSuccess define recovery.
const (
	RecoveredAmplification = 1.1
	RecoveredSuccess       = 0.95
)

// Summary computes the run's summary from the sampled signals.
func (s *Sim) Summary() Summary {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	out := Summary{Scenario: s.sc.Name, Seed: s.opts.Seed, Simulated: s.now.Seconds(),
		MaxAttemptsPerRequest: st.maxAttempts, PeakDependencyAttemptsPerS: map[string]float64{},
		PeakPoolSaturation: round(st.peakPoolSat), PeakDemandedConcurrency: round(st.peakDemand), MinEdgeSuccessRate: 1}
	for k, v := range st.peakDepRate {
		out.PeakDependencyAttemptsPerS[k] = round(v)
	}
	out.FaultEnd = s.sc.LastFaultEnd().Seconds()
	for i := range st.ampl {
		if !math.IsNaN(st.ampl[i]) {
			out.PeakAmplification = max(out.PeakAmplification, st.ampl[i])
		}
		if !math.IsNaN(st.success[i]) {
			out.MinEdgeSuccessRate = min(out.MinEdgeSuccessRate, st.success[i])
		}
	}
	out.PeakAmplification, out.MinEdgeSuccessRate = round(out.PeakAmplification), round(out.MinEdgeSuccessRate)
	dt := s.sc.ScrapeInterval.D().Seconds()
	if i := int((out.FaultEnd + 120) / dt); i < len(st.ampl) {
		out.AmplificationAfterFault, out.EdgeSuccessAfterFault = round(nanToZero(st.ampl[i])), round(nanToZero(st.success[i]))
	}
	var rec *float64
	for i := len(st.ampl) - 1; i >= 0 && float64(i)*dt >= out.FaultEnd; i-- {
		a, ok := st.ampl[i], st.success[i]
		if math.IsNaN(a) || a > RecoveredAmplification || math.IsNaN(ok) || ok < RecoveredSuccess {
			break
		}
		t := float64(i) * dt
		rec = &t
	}
	if rec != nil && *rec < out.Simulated-Window.Seconds() {
		out.Recovered = rec
	}
	st.tl.fill(s, &out)
	st.fillStory(&out)
	out.MinEndpointSuccess = s.minEndpointSuccess()
	return out
}

func round(v float64) float64 { return math.Round(v*1000) / 1000 }
