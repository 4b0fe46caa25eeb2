package policy

import "math"

// eps absorbs float rounding when comparing times (seconds).
const eps = 1e-9

// Walk is the worst case of one failure class: every attempt that reaches
// the dependency fails with that class. Timeouts hang until an attempt's
// timeout or a deadline cuts them; every other class fails at once.
type Walk struct {
	Class Class
	// Attempts reaching the dependency per logical request at the entry,
	// counting the work inner services go on with after a caller gave up.
	Attempts float64
	// Occupancy is how long the entry holds a request (s); +Inf when
	// nothing bounds it.
	Occupancy float64
	// Calls is how many times each hop is invoked per entry request;
	// Hold the longest time a request holds each pooled hop (s).
	Calls, Hold []float64
	// Overflow: the walk was too large to finish; its figures are not
	// reliable.
	Overflow bool
}

type walkKey struct {
	h       int
	cut, dl float64
}

// maxSteps bounds the work of one walk: hostile attempts and deadlines
// could otherwise make it exponential.
const maxSteps = 300_000

type walker struct {
	p     *Path
	c     Class
	mean  bool
	memo  map[walkKey]*span
	steps int
}

// span is the outcome of one invocation of a hop.
type span struct {
	dur         float64
	class       Class
	attempts    float64
	calls, hold []float64
}

// WalkClass walks p for class c. With mean, sleeps are their average
// rather than their longest (what a simulation with jitter sees).
func (p *Path) WalkClass(c Class, mean bool) Walk {
	w, _ := p.walk(c, mean)
	return w
}

func (p *Path) walk(c Class, mean bool) (Walk, *walker) {
	w := &walker{p: p, c: c, mean: mean, memo: map[walkKey]*span{}}
	s := w.hop(0, math.Inf(1), secondsOr(p.Deadline, math.Inf(1)))
	return Walk{Class: c, Attempts: s.attempts, Occupancy: s.dur, Calls: s.calls, Hold: s.hold, Overflow: w.steps > maxSteps}, w
}

// uncut is how long hop h takes on its own, cut by nothing above it; in a
// timeout walk, its configured schedule.
func (w *walker) uncut(h int) float64 { return w.hop(h, math.Inf(1), math.Inf(1)).dur }

func secondsOr(d Duration, def float64) float64 {
	if d <= 0 {
		return def
	}
	return d.D().Seconds()
}

func (w *walker) newSpan() *span {
	n := len(w.p.Hops)
	return &span{calls: make([]float64, n), hold: make([]float64, n)}
}

func (s *span) add(o *span) {
	s.attempts += o.attempts
	for i := range s.calls {
		s.calls[i] += o.calls[i]
		s.hold[i] = max(s.hold[i], o.hold[i])
	}
}

// hop runs hop h until it succeeds (never, here), gives up, or is cut:
// cut is when its caller abandons it, dl the deadline it knows (both s
// from now).
func (w *walker) hop(h int, cut, dl float64) *span {
	if !math.IsInf(cut, 1) || !math.IsInf(dl, 1) {
		// A cut or deadline later than the hop could take changes nothing:
		// dropping it keeps the memo small (deadlines only shorten a walk).
		if cut >= w.uncut(h) {
			cut = math.Inf(1)
		}
		if !math.IsInf(dl, 1) {
			bound := 0.0
			for j := h; j < len(w.p.Hops); j++ {
				bound += w.uncut(j)
			}
			if dl >= bound {
				dl = math.Inf(1)
			}
		}
	}
	key := walkKey{h, cut, dl}
	if s, ok := w.memo[key]; ok {
		return s
	}
	hp := w.p.Hops[h]
	myDl := dl
	if hp.IgnoreDeadline {
		myDl = math.Inf(1)
	}
	myDl = min(myDl, secondsOr(hp.Deadline, math.Inf(1)))
	stop := min(cut, myDl)
	timeout := secondsOr(hp.Timeout, math.Inf(1))
	s := w.newSpan()
	s.calls[h] = 1
	t := 0.0
	for k := 1; ; k++ {
		if w.steps++; w.steps > maxSteps {
			s.dur, s.class = stop, Timeout
			break
		}
		a := w.attempt(h, min(stop-t, timeout), myDl-t)
		s.add(a)
		t += a.dur
		if t >= stop-eps {
			s.dur, s.class = stop, Timeout
			break
		}
		class := a.class
		if a.dur >= timeout-eps {
			class = Timeout
		}
		if k >= hp.Retry.Attempts || !hp.Retry.On.Has(class) {
			s.dur, s.class = t, class
			break
		}
		sleep := hp.Retry.Backoff.Ceiling(k)
		if w.mean {
			sleep = hp.Retry.Backoff.Mean(k)
		}
		if class == Throttled && hp.Retry.HonourRetryAfter {
			sleep = max(sleep, w.p.Dependency.RetryAfter.D())
		}
		if t+sleep.Seconds() >= stop-eps {
			s.dur, s.class = stop, Timeout
			break
		}
		t += sleep.Seconds()
	}
	if hp.Pool != nil {
		s.hold[h] = max(s.hold[h], s.dur)
	}
	w.memo[key] = s
	return s
}

// attempt is one attempt of hop h, given up after ac seconds, with dl
// seconds left of the deadline h knows.
func (w *walker) attempt(h int, ac, dl float64) *span {
	if h == len(w.p.Hops)-1 {
		s := w.newSpan()
		s.attempts, s.class = 1, w.c
		if w.c == Timeout {
			s.dur = math.Inf(1)
		}
		if s.dur >= ac-eps {
			s.dur, s.class = ac, Timeout
		}
		return s
	}
	next := w.p.Hops[h+1]
	var inner *span
	if next.Pool != nil {
		// Another service: it goes on with its own work when h gives up,
		// knowing only a deadline h passes on; its failure arrives as a 5xx.
		ndl := math.Inf(1)
		if w.p.propagates(h) {
			ndl = dl
		}
		inner = w.hop(h+1, math.Inf(1), ndl)
	} else {
		inner = w.hop(h+1, ac, dl)
	}
	out := *inner
	switch {
	case inner.dur >= ac-eps:
		out.dur, out.class = ac, Timeout
	case next.Pool != nil:
		out.class = ServerError
	}
	return &out
}

// occupancyOf reports a duration in seconds, nil when unbounded.
func finite(v float64) *float64 {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return nil
	}
	r := round3(v)
	return &r
}
