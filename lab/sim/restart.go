package sim

import (
	"time"

	"github.com/stormctl/stormctl/resilience"
)

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

// restart replaces every pod of the service as a rollout restart does:
// requests in flight on the old pods fail (their callers see 503s, the work
// they sent to dependencies runs on), and as many new pods start, ready
// after the startup time, with empty pools, fresh breakers and budgets and
// no connections.
func (s *Sim) restart(r Restart) {
	svc := s.svcByName[r.Service]
	old := map[*pod]bool{}
	for _, p := range svc.pods {
		if !p.draining {
			old[p] = true
		}
	}
	reqFree, frameFree := s.reqs.freeSet(), s.frames.freeSet()
	var failing []ref
	dying := map[ref]bool{}
	for id, req := range s.reqs.items {
		if !reqFree[id] && req.svc == svc && old[req.pod] {
			rr := ref{id: int32(id), gen: s.reqs.gens[id]}
			failing = append(failing, rr)
			dying[rr] = true
		}
	}
	for id, f := range s.frames.items {
		if !frameFree[id] && dying[f.req] {
			s.frames.release(ref{id: int32(id), gen: s.frames.gens[id]})
		}
	}
	// Waiters first, so that a holder's freed slot starts no one on a dying pod.
	for _, rr := range failing {
		if req := s.reqs.get(rr); req.waiting {
			req.waiting = false
			req.pod.pools[req.ep.pool].waiting--
		}
	}
	for _, rr := range failing {
		s.respond(rr, s.reqs.get(rr), 503)
	}
	for _, p := range svc.pods {
		if !old[p] {
			continue
		}
		p.draining, p.ready = true, false
		for _, st := range p.brState {
			for _, ser := range st {
				if ser != nil {
					ser.gone = true
				}
			}
		}
	}
	for range max(1, len(old)) {
		s.addPod(svc, r.Startup.D())
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
