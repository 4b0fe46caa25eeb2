package sim

// restart replaces every pod of the service as a rollout restart does:
// requests in flight on the old pods fail (their callers see 503s, the work
// they sent to dependencies runs on), and as many new pods start, ready
// after the startup time, with empty pools and caches, fresh breakers and
// budgets, and no connections.
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
