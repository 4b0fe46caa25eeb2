package sim

import (
	"math"
	"sort"
)

// story keeps, per scrape interval, the figures that tell an incident's
// timeline: demanded threads, outbound attempts against calm, the first
// exhausted pool, the edge's 5xx share and how far a fleet's breakers
// disagree.
type story struct {
	demand    map[string]float64 // per service: peak arrival rate × mean hold
	exhausted *float64
	edge5xx   *float64
	breakers  map[string]*BreakerFraction
}

// BreakerFraction is how much of a service's fleet had its own breaker to
// a dependency open: the most at once, and for how long the fleet
// disagreed (some pods open, some not).
type BreakerFraction struct {
	Max       float64 `json:"max"`
	DisagreeS float64 `json:"disagree_s"`
}

// sampleStory records one scrape interval's figures.
func (st *stats) sampleStory(success float64) {
	s, sy := st.s, &st.story
	dt := s.sc.ScrapeInterval.D().Seconds()
	fault, t := s.sc.FirstFault(), s.now.Seconds()
	if s.now >= fault {
		if sy.exhausted == nil && st.poolFull() {
			sy.exhausted = &t
		}
		if sy.edge5xx == nil && !math.IsNaN(success) && 1-success > edgeAlarm {
			sy.edge5xx = &t
		}
	}
	for _, svc := range s.services {
		for ci, c := range svc.calls {
			if c.spec.Breaker == nil || c.spec.Breaker.Scope != "pod" {
				continue
			}
			open, n := 0, 0
			for _, p := range svc.pods {
				if ser := p.brState[ci][1]; p.ready && ser != nil {
					n++
					if ser.v == 1 {
						open++
					}
				}
			}
			if n == 0 {
				continue
			}
			key := svc.name + "->" + c.spec.Target
			bf := sy.breakers[key]
			if bf == nil {
				bf = &BreakerFraction{}
				sy.breakers[key] = bf
			}
			frac := float64(open) / float64(n)
			bf.Max = max(bf.Max, frac)
			if frac > 0 && frac < 1 {
				bf.DisagreeS += dt
			}
		}
	}
}

// poolFull reports whether any service's pool, summed over its ready
// pods, is all in use.
func (st *stats) poolFull() bool {
	for _, svc := range st.s.services {
		for i := range svc.poolUse {
			if c := svc.poolCap[i].v; c > 0 && svc.poolUse[i].v/c >= 0.99 {
				return true
			}
		}
	}
	return false
}

// fillStory copies the story's figures into the summary.
func (st *stats) fillStory(out *Summary) {
	sy := &st.story
	out.PeakDemandedThreads = map[string]float64{}
	for k, v := range sy.demand {
		out.PeakDemandedThreads[k] = math.Round(v*10) / 10
	}
	st.fillOutbound(out)
	out.FirstPoolExhausted, out.FirstEdge5xxOver5Pct = sy.exhausted, sy.edge5xx
	out.MaxEdge5xxShare = round(1 - out.MinEdgeSuccessRate)
	out.BreakerOpenFraction = map[string]BreakerFraction{}
	for k, v := range sy.breakers {
		out.BreakerOpenFraction[k] = BreakerFraction{Max: round(v.Max), DisagreeS: v.DisagreeS}
	}
	from := int((st.s.sc.FirstFault() + Window) / st.s.sc.ScrapeInterval.D())
	var vs []float64
	for i := from; i < len(st.ampl); i++ {
		if !math.IsNaN(st.ampl[i]) {
			vs = append(vs, st.ampl[i])
		}
	}
	if len(vs) > 0 {
		sort.Float64s(vs)
		out.SteadyAmplification = round(vs[len(vs)/2])
	}
}

// fillOutbound compares each dependency's attempt rate over one Window,
// from the fault on, with its mean rate in calm (from the first full Window
// to the fault), as rate(…[1m]) against the same rate before the fault.
func (st *stats) fillOutbound(out *Summary) {
	out.PeakOutboundRatio, out.PeakOutboundAt = map[string]float64{}, map[string]float64{}
	dt := st.s.sc.ScrapeInterval.D()
	from, fault := st.lag, int(st.s.sc.FirstFault()/dt)
	if fault <= from || fault >= len(st.snaps) {
		return
	}
	for i, d := range st.s.deps {
		calm := (st.snaps[fault].depArrivals[i] - st.snaps[from].depArrivals[i]) / (float64(fault-from) * dt.Seconds())
		if calm <= 0 {
			continue
		}
		for n := fault; n < len(st.snaps); n++ {
			rate := (st.snaps[n].depArrivals[i] - st.snaps[n-st.lag].depArrivals[i]) / Window.Seconds()
			if r := rate / calm; r > out.PeakOutboundRatio[d.name] {
				out.PeakOutboundRatio[d.name], out.PeakOutboundAt[d.name] = round(r), float64(n)*dt.Seconds()
			}
		}
	}
}
