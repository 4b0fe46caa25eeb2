package sim

import (
	"math"
	"time"

	"github.com/stormctl/stormctl/resilience"
)

// gauges brings every gauge up to date at the current simulated time.
func (s *Sim) gauges() {
	now := s.wall(s.now)
	for _, svc := range s.services {
		ready := 0
		for i := range svc.poolUse {
			svc.poolUse[i].v, svc.poolCap[i].v, svc.poolWait[i].v = 0, 0, 0
		}
		for _, p := range svc.pods {
			if p.ready && !p.draining {
				ready++
			}
			idle := true
			for i, pl := range p.pools {
				svc.poolUse[i].v += float64(pl.inUse)
				svc.poolWait[i].v += float64(pl.waiting)
				if p.ready && !p.draining {
					svc.poolCap[i].v += float64(pl.size)
				}
				idle = idle && pl.inUse == 0 && pl.waiting == 0
			}
			if p.draining && idle && p.ready {
				p.ready = false // removed: its series go stale
				for _, st := range p.brState {
					for _, ser := range st {
						if ser != nil {
							ser.gone = true
						}
					}
				}
			}
			if !p.ready {
				continue
			}
			for ci, st := range p.brState {
				if st[0] == nil {
					continue
				}
				cur := svc.calls[ci].breaker(p).State(now)
				for k, ser := range st {
					ser.v = 0
					if resilience.State(k) == cur {
						ser.v = 1
					}
				}
			}
		}
		svc.replicas.v = float64(ready)
		if d := svc.degraded; d != nil {
			d.level = max(0, d.level-(s.now-d.last).Seconds()*d.spec.DrainRate)
			d.last = s.now
			d.use.v = math.Ceil(d.level)
		}
		for _, c := range svc.calls {
			c.duration.cumulate()
		}
	}
	for _, d := range s.deps {
		d.inUse.v, d.waiting.v = 0, 0
		for i := range d.insts {
			d.inUse.v += float64(d.insts[i].busy)
			d.waiting.v += float64(d.insts[i].queue.size)
		}
	}
}

// sampleUtilisation feeds the autoscalers one utilisation sample from the
// gauges, once per scrape interval (a scrape of /metrics must not).
func (s *Sim) sampleUtilisation() {
	for _, svc := range s.services {
		a := svc.spec.Autoscaler
		if a == nil {
			continue
		}
		i := svc.poolIdx[a.Pool]
		if capacity := svc.poolCap[i].v; capacity > 0 {
			svc.utilSum += min(1, (svc.poolUse[i].v+svc.poolWait[i].v)/capacity)
			svc.utilN++
		}
	}
}

// autoscale makes one decision for svc, like a Kubernetes HPA on pool
// utilisation: desired = ceil(current × utilisation / target). New pods
// start with fresh, closed breakers.
func (s *Sim) autoscale(svc *service) {
	a := svc.spec.Autoscaler
	s.schedule(s.now+a.Interval.D(), evAutoscale, ref{id: int32(svc.idx)})
	util := 0.0
	if svc.utilN > 0 {
		util = svc.utilSum / float64(svc.utilN)
	}
	svc.utilSum, svc.utilN = 0, 0
	if svc.lev.AutoscalingFrozen {
		return
	}
	var active []*pod
	for _, p := range svc.pods {
		if !p.draining { // ready or starting
			active = append(active, p)
		}
	}
	cur := len(active)
	want := int(math.Ceil(float64(cur) * util / a.TargetUtilization))
	want = s.stabilize(svc, max(a.Min, min(a.Max, want)))
	for i := cur; i < want; i++ {
		s.addPod(svc, a.Startup.D())
	}
	for i := cur - 1; i >= want; i-- {
		active[i].draining = true
	}
}

// wanted is one autoscaler decision: the pods it asked for at a time.
type wanted struct {
	at   time.Duration
	pods int
}

// stabilize returns the largest size svc's autoscaler wanted within its
// scale-down stabilization window, including want now: the fleet grows at
// once but shrinks only when no recent decision needed it larger.
func (s *Sim) stabilize(svc *service, want int) int {
	window := svc.spec.Autoscaler.ScaleDownStabilization.D()
	if window <= 0 {
		return want
	}
	kept := svc.wanted[:0]
	out := want
	for _, w := range svc.wanted {
		if s.now-w.at < window {
			kept = append(kept, w)
			out = max(out, w.pods)
		}
	}
	svc.wanted = append(kept, wanted{at: s.now, pods: want})
	return out
}
