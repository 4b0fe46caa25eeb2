package sim

import (
	"time"

	"github.com/stormctl/stormctl/resilience"
)

// request is one inbound request at a service pod: from the edge, or an
// attempt of a caller's frame (parent).
type request struct {
	svc      *service
	ep       *endpoint
	pod      *pod
	parent   ref // caller frame incarnation; id -1 for edge requests
	intent   ref // the customer intent (edge request) this work serves
	arrived  time.Duration
	deadline time.Duration // 0: none known to this service
	next     int           // index of the next call
	waiting  bool
	holds    bool // holds a pool slot
	acquired time.Duration
	answered bool // edge requests: the caller has its answer (maybe a 504)
	// cacheKey is 1 + the cache key the current call fetches, 0 for none.
	cacheKey int
}

func (s *Sim) pickEndpoint(svc *service) *endpoint {
	if len(svc.endpoints) == 1 {
		return svc.endpoints[0]
	}
	u := s.rng.Float64() * svc.weightSum
	for _, e := range svc.endpoints {
		if u < e.weight {
			return e
		}
		u -= e.weight
	}
	return svc.endpoints[len(svc.endpoints)-1]
}

// pickPod chooses a ready pod round-robin, as a load balancer would.
func (s *Sim) pickPod(svc *service) *pod {
	n := len(svc.pods)
	for i := 0; i < n; i++ {
		svc.rr = (svc.rr + 1) % n
		if p := svc.pods[svc.rr]; p.ready && !p.draining {
			return p
		}
	}
	return nil
}

// arrive admits a new request at svc: shed by the lever, queued for a pool
// slot, or rejected when the pool's queue is full.
func (s *Sim) arrive(svc *service, parent, intent ref, deadline time.Duration) {
	rr := s.reqs.alloc()
	r := s.reqs.get(rr)
	r.svc, r.ep, r.parent, r.arrived, r.deadline = svc, s.pickEndpoint(svc), parent, s.now, deadline
	svc.arrivals++
	if parent.id < 0 {
		intent = s.intents.alloc()
		if s.sc.Edge.Deadline > 0 {
			s.schedule(deadline, evDeadline, rr)
		}
		s.stats.edgeRequests++
	}
	r.intent = intent
	s.intents.get(intent).live++
	if pct := svc.lev.ShedPercent; pct > 0 && s.rng.Float64()*100 < float64(pct) {
		s.respond(rr, r, 503)
		return
	}
	r.pod = s.pickPod(svc)
	if r.pod == nil {
		s.respond(rr, r, 503)
		return
	}
	pl := &r.pod.pools[r.ep.pool]
	switch {
	case pl.inUse < pl.size:
		pl.inUse++
		r.holds, r.acquired = true, s.now
		s.begin(rr, r)
	case pl.waiting < pl.maxWaiting:
		pl.waiting++
		r.waiting = true
		pl.queue.push(rr)
		if pl.waitTimeout > 0 {
			s.schedule(s.now+pl.waitTimeout, evPoolTimeout, rr)
		}
	default:
		s.respond(rr, r, 503)
	}
}

// begin runs a request that holds its pool slot.
func (s *Sim) begin(rr ref, r *request) {
	if r.deadline > 0 && s.now >= r.deadline {
		s.respond(rr, r, 504)
		return
	}
	if w := r.ep.spec.Work.D(); w > 0 {
		s.schedule(s.now+w, evWorkDone, rr)
		return
	}
	s.nextCall(rr, r)
}

// nextCall starts the request's next call, or answers when all are done.
func (s *Sim) nextCall(rr ref, r *request) {
	if r.next == len(r.ep.calls) {
		s.respond(rr, r, 200)
		return
	}
	c := r.ep.calls[r.next]
	if c.spec.Fallback && r.svc.lev.Degraded != "" {
		s.degrade(rr, r)
		return
	}
	if s.cached(r, c) {
		r.next++
		s.nextCall(rr, r)
		return
	}
	s.startFrame(rr, ref{id: -1}, c, 0)
}

// callDone continues the request after its current call ended with class.
func (s *Sim) callDone(rr ref, class resilience.Class) {
	r := s.reqs.get(rr)
	if r == nil {
		return
	}
	c := r.ep.calls[r.next]
	switch {
	case class == resilience.Success:
		s.fill(r, c)
		r.next++
		s.nextCall(rr, r)
	case c.fallsBack(class):
		s.degrade(rr, r)
	case class == resilience.Timeout:
		s.respond(rr, r, 504)
	default:
		s.respond(rr, r, 503)
	}
}

// degrade hands the current call to the service's degraded path: a queue
// drained at a fixed rate, which can fill up and refuse in turn.
func (s *Sim) degrade(rr ref, r *request) {
	d := r.svc.degraded
	d.level = max(0, d.level-(s.now-d.last).Seconds()*d.spec.DrainRate)
	d.last = s.now
	if d.level+1 > float64(d.spec.MaxQueue) {
		s.respond(rr, r, 503)
		return
	}
	d.level++
	r.next++
	s.nextCall(rr, r)
}

// respond answers the request, frees its pool slot for the next waiter and
// reports to the caller's frame if that attempt is still awaited.
func (s *Sim) respond(rr ref, r *request, code int) {
	if r.holds {
		r.svc.holdSum += (s.now - r.acquired).Seconds()
		r.svc.holdN++
		s.release(r.pod, r.ep.pool)
	}
	if r.parent.id < 0 {
		if !r.answered {
			s.answerEdge(r, code)
		}
	} else {
		svcCode(s, r.svc, code)
		s.countEndpoint(r, code)
		class := resilience.Success
		if code >= 500 {
			class = resilience.Unavailable
		}
		s.wireResult(r.parent, class, 0, false)
	}
	s.endIntent(r.intent)
	s.reqs.release(rr)
}

// intent counts the attempts sent to dependencies on behalf of one
// customer intent, through every layer and service, including the work
// that goes on after the customer got an answer.
type intent struct {
	attempts int
	live     int // requests still being worked on
}

// endIntent drops one request's hold on the intent; when the last request
// serving it has answered, no further attempt can be made for it.
func (s *Sim) endIntent(ir ref) {
	in := s.intents.get(ir)
	if in.live--; in.live == 0 {
		s.stats.observeAttempts(in.attempts)
		s.intents.release(ir)
	}
}

// answerEdge records what the edge caller got; a request past its deadline
// is answered 504 by the edge while the fleet may still work on it.
func (s *Sim) answerEdge(r *request, code int) {
	r.answered = true
	s.stats.edgeAnswered++
	if code == 200 {
		s.stats.edgeOK++
	}
	svcCode(s, r.svc, code)
	s.countEndpoint(r, code)
}

func svcCode(s *Sim, svc *service, code int) { s.countCode(svc.codes, svc.name, code) }

// release frees a pool slot and starts the oldest waiter still waiting.
func (s *Sim) release(p *pod, pi int) {
	pl := &p.pools[pi]
	for {
		wr, ok := pl.queue.pop()
		if !ok {
			pl.inUse--
			return
		}
		if w := s.reqs.get(wr); w != nil && w.waiting {
			w.waiting, w.holds, w.acquired = false, true, s.now
			pl.waiting--
			s.begin(wr, w)
			return
		}
	}
}
