package sim

import (
	"time"

	"github.com/stormctl/stormctl/resilience"
)

// A pod accumulates state while it serves, which a new pod (restarted or
// added by the autoscaler) lacks: keep-alive connections to its
// dependencies and the keys its caches hold.

// warm gives a pod that was serving before the run starts what serving
// built up: a connection per thread of its pools to each dependency it
// calls, and every cached key, fetched at some time within its TTL. Only
// pods started during the run pay for their connections and fill their
// caches.
func (s *Sim) warm(p *pod) {
	threads := 0
	for _, pl := range p.pools {
		threads += pl.size
	}
	for i := range p.conns {
		p.conns[i] = threads
	}
	for i, keys := range p.caches {
		ch := p.svc.calls[i].spec.Cache
		for k := range keys {
			keys[k] = time.Duration(s.rng.Float64() * float64(ch.TTL))
		}
	}
}

// takeConn gives the attempt of frame f, from request r's pod, a connection
// to its dependency: an idle one when the pod has one, else a new one,
// which it reports so the dependency works on the handshake first.
func (s *Sim) takeConn(f *frame, r *request) (handshake bool) {
	if f.c.dep.spec.ConnectCost <= 0 {
		return false
	}
	f.conn = true
	if idle := &r.pod.conns[f.c.idx]; *idle > 0 {
		*idle--
		return false
	}
	return true
}

// returnConn puts the connection of an attempt answered in time back into
// its pod's idle set; a connection that failed to connect never opened. An
// attempt cut at its timeout closes its connection instead (the answer
// still owed on it makes it unusable), so timeouts cost reconnects.
func (s *Sim) returnConn(f *frame, class resilience.Class) {
	if !f.conn {
		return
	}
	f.conn = false
	if r := s.reqs.get(f.req); r != nil && class != resilience.ConnectError {
		r.pod.conns[f.c.idx]++
	}
}

// cached reports whether request r's call c is answered from its pod's
// cache; a lookup that misses a popular key remembers it, to store it when
// the fetch succeeds.
func (s *Sim) cached(r *request, c *call) bool {
	r.cacheKey = 0
	ch := c.spec.Cache
	if ch == nil || s.rng.Float64() >= ch.HitShare {
		return false
	}
	k := s.rng.IntN(ch.Keys)
	if r.pod.caches[c.idx][k] > s.now {
		return true
	}
	r.cacheKey = k + 1
	return false
}

// fill stores the key request r fetched with call c, fresh for the TTL.
func (s *Sim) fill(r *request, c *call) {
	if r.cacheKey > 0 {
		r.pod.caches[c.idx][r.cacheKey-1] = s.now + c.spec.Cache.TTL.D()
		r.cacheKey = 0
	}
}
