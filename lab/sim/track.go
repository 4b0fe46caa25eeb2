package sim

import (
	"math"
	"time"
)

// tracker keeps, per scrape interval, figures about a run that the summary
// does not report: each endpoint's answers (an endpoint whose own backend
// is healthy fails with the pool it shares) and the most saturated pool.
type tracker struct {
	names   []string    // "service/endpoint", in fleet order
	answers [][]float64 // per interval: answered, ok per endpoint, interleaved
	poolSat []float64   // per interval: the highest in-use ÷ capacity of any pool
}

func (s *Sim) countEndpoint(r *request, code int) {
	r.ep.answered++
	if code == 200 {
		r.ep.ok++
	}
}

func (tr *tracker) sample(s *Sim) {
	var row []float64
	record := len(tr.names) == 0
	sat := 0.0
	for _, svc := range s.services {
		for _, ep := range svc.endpoints {
			if record {
				tr.names = append(tr.names, svc.name+"/"+ep.spec.Name)
			}
			row = append(row, ep.answered, ep.ok)
		}
		for i := range svc.poolUse {
			if c := svc.poolCap[i].v; c > 0 {
				sat = max(sat, svc.poolUse[i].v/c)
			}
		}
	}
	for _, d := range s.deps {
		if d.capSer.v > 0 {
			sat = max(sat, d.inUse.v/d.capSer.v)
		}
	}
	tr.answers = append(tr.answers, row)
	tr.poolSat = append(tr.poolSat, sat)
}

// MinEndpointSuccess returns, per "service/endpoint", the lowest share of
// its answers that were 200 over one Window, from the first full Window on;
// an endpoint with no answers in any window is left out.
func (s *Sim) MinEndpointSuccess() map[string]float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.minEndpointSuccess()
}

func (s *Sim) minEndpointSuccess() map[string]float64 {
	tr, lag := &s.track, s.stats.lag
	out := map[string]float64{}
	for n := lag; n < len(tr.answers); n++ {
		cur, old := tr.answers[n], tr.answers[n-lag]
		for i, name := range tr.names {
			if da := cur[2*i] - old[2*i]; da > 0 {
				ok := (cur[2*i+1] - old[2*i+1]) / da
				if v, seen := out[name]; !seen || ok < v {
					out[name] = ok
				}
			}
		}
	}
	for k, v := range out {
		out[k] = round(v)
	}
	return out
}

// PeakPoolSaturation returns the highest in-use ÷ capacity of any pool (a
// service's, summed over its ready pods, or a dependency's capacity) sampled
// in [from, to), NaN if none was: what pool_saturation's worst series read
// then.
func (s *Sim) PeakPoolSaturation(from, to time.Duration) float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	dt := s.sc.ScrapeInterval.D()
	peak := math.NaN()
	for i, v := range s.track.poolSat {
		if t := time.Duration(i) * dt; t >= from && t < to {
			peak = max(nanToZero(peak), v)
		}
	}
	return peak
}
