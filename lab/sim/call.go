package sim

import (
	"time"

	"github.com/stormctl/stormctl/resilience"
)

// classBreakerOpen ends a call refused by its breaker. No policy lists it,
// so resilience's Policy.Next never retries it: like resilience's Retrier,
// a refused call fails fast (or falls back).
const classBreakerOpen resilience.Class = 200

// frame is one invocation of one retry layer of a call. Its slab generation
// is bumped at every attempt, so a timer or an answer that belongs to an
// earlier attempt finds a stale ref and is ignored.
type frame struct {
	req      ref // the request making the call
	parent   ref // the enclosing layer's incarnation; id -1 for the outermost
	c        *call
	layer    int
	attempt  int
	max      int
	child    ref // the inner layer's frame, when not innermost
	start    time.Duration
	inflight bool // innermost: an attempt is on the wire
	probe    bool
	conn     bool // the attempt on the wire holds a tracked connection
}

func (s *Sim) startFrame(rr ref, parent ref, c *call, layer int) ref {
	fr := s.frames.alloc()
	f := s.frames.get(fr)
	f.req, f.parent, f.c, f.layer = rr, parent, c, layer
	f.max = c.layers[layer].policy.MaxAttempts
	if !c.lev.RetriesEnabled {
		f.max = 1
	} else {
		f.max = min(f.max, c.lev.MaxAttempts)
	}
	if pf := s.frames.get(parent); pf != nil {
		pf.child = fr
	}
	if layer == 0 {
		c.requests.v++
		if b := s.budgetFor(c, s.reqs.get(rr)); b != nil {
			b.Deposit(s.wall(s.now))
		}
	}
	s.attempt(fr)
	return fr
}

// bump starts a new incarnation of frame f, keeping its parent's child
// reference current so that a timeout of the parent can abandon it.
func (s *Sim) bump(fr ref, f *frame) ref {
	fr = s.frames.bump(fr)
	if pf := s.frames.get(f.parent); pf != nil {
		pf.child = fr
	}
	return fr
}

func (s *Sim) budgetFor(c *call, r *request) *resilience.Budget {
	if c.svc.budget != nil {
		return c.svc.budget
	}
	if r == nil || r.pod == nil {
		return nil
	}
	return r.pod.budget
}

// attempt starts the next attempt of frame fr.
func (s *Sim) attempt(fr ref) {
	f := s.frames.get(fr)
	fr = s.bump(fr, f)
	f.attempt++
	r := s.reqs.get(f.req)
	c := f.c
	if to := c.layers[f.layer].spec.Timeout.D(); to > 0 {
		if r.deadline > 0 && !c.layers[f.layer].spec.IgnoreDeadline {
			to = max(0, min(to, r.deadline-s.now))
		}
		s.schedule(s.now+to, evTimeout, fr)
	}
	if f.layer < len(c.layers)-1 {
		s.startFrame(f.req, fr, c, f.layer+1)
		return
	}
	br := c.breaker(r.pod)
	if br != nil {
		probe, err := br.Allow(s.wall(s.now))
		if err != nil {
			c.attempts[outBreakerOpen].v++
			s.finishFrame(fr, classBreakerOpen)
			return
		}
		f.probe = probe
	} else if c.lev.ForcedOpen {
		c.attempts[outBreakerOpen].v++
		s.finishFrame(fr, classBreakerOpen)
		return
	}
	f.inflight, f.start = true, s.now
	if c.dep != nil {
		// Attempts per customer intent count what reaches a dependency; a
		// call to another service is counted by that service's own calls.
		s.intents.get(r.intent).attempts++
		s.submit(c.dep, fr, s.takeConn(f, r))
		return
	}
	var deadline time.Duration
	if c.spec.PropagateDeadline {
		deadline = r.deadline
	}
	s.arrive(c.callee, fr, r.intent, deadline)
}

// wireResult is the answer to the innermost frame's attempt.
func (s *Sim) wireResult(fr ref, class resilience.Class, retryAfter time.Duration, shed bool) {
	f := s.frames.get(fr)
	if f == nil || !f.inflight {
		return // the caller gave up on this attempt
	}
	f.inflight = false
	s.returnConn(f, class)
	o := outError
	switch {
	case class == resilience.Success:
		o = outSuccess
	case class == resilience.Throttled:
		o = outThrottled
	case shed:
		o = outShed
	}
	s.recordAttempt(f, o, class)
	s.layerResult(fr, class, retryAfter)
}

func (s *Sim) recordAttempt(f *frame, o int, class resilience.Class) {
	c := f.c
	c.attempts[o].v++
	c.duration.observe((s.now - f.start).Seconds())
	if r := s.reqs.get(f.req); r != nil {
		if br := c.breaker(r.pod); br != nil {
			br.Record(s.wall(s.now), f.probe, c.breakerClass(class))
		}
	}
}

// layerResult decides, with resilience's policy, budget and breaker, what
// follows an attempt of fr that ended with class.
func (s *Sim) layerResult(fr ref, class resilience.Class, retryAfter time.Duration) {
	f := s.frames.get(fr)
	fr = s.bump(fr, f)
	if class == resilience.Success {
		s.finishFrame(fr, class)
		return
	}
	c, r := f.c, s.reqs.get(f.req)
	l := &c.layers[f.layer]
	p := l.policy
	p.MaxAttempts = f.max
	if !l.spec.HonourRetryAfter {
		retryAfter = 0
	}
	var deadline time.Time
	if r.deadline > 0 && !l.spec.IgnoreDeadline {
		deadline = s.wall(r.deadline)
	}
	now := s.wall(s.now)
	var d resilience.Decision
	if l.spec.Backoff.Jitter {
		d = p.Next(f.attempt, class, retryAfter, now, deadline, s.rng)
	} else {
		d = p.NextUnjittered(f.attempt, class, retryAfter, now, deadline)
	}
	if br := c.breaker(r.pod); d.Retry && br != nil {
		if st := br.State(now); st == resilience.Open || st == resilience.ForcedOpen {
			d.Retry = false
		}
	}
	if b := s.budgetFor(c, r); d.Retry && b != nil && !b.TryRetry(now) {
		d.Retry = false
	}
	if !d.Retry {
		s.finishFrame(fr, class)
		return
	}
	if ctr := c.retries[class]; ctr != nil {
		ctr.v++
	}
	if d.Sleep <= 0 {
		s.attempt(fr)
		return
	}
	s.schedule(s.now+d.Sleep, evBackoff, fr)
}

// finishFrame ends a layer invocation and reports to the enclosing layer,
// or to the request when it was the outermost.
func (s *Sim) finishFrame(fr ref, class resilience.Class) {
	f := s.frames.get(fr)
	parent, rr := f.parent, f.req
	s.frames.release(fr)
	if parent.id >= 0 {
		s.layerResult(parent, class, 0)
		return
	}
	s.callDone(rr, class)
}

// attemptTimeout cuts the current attempt of fr at its layer's timeout; the
// work already sent keeps running where it is.
func (s *Sim) attemptTimeout(fr ref) {
	f := s.frames.get(fr)
	if f == nil {
		return
	}
	if f.inflight {
		f.inflight = false
		s.recordAttempt(f, outTimeout, resilience.Timeout)
	} else {
		s.abandon(f.child)
	}
	s.layerResult(fr, resilience.Timeout, 0)
}

// abandon releases an inner frame whose enclosing layer gave up; an attempt
// on the wire is metered as a timeout but not held against the breaker.
func (s *Sim) abandon(fr ref) {
	f := s.frames.get(fr)
	if f == nil {
		return
	}
	if f.inflight {
		s.recordAttempt(f, outTimeout, resilience.Canceled)
	} else if f.layer < len(f.c.layers)-1 {
		s.abandon(f.child)
	}
	s.frames.release(fr)
}
