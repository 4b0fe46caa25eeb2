package sim

import (
	"math"
	"time"

	"github.com/stormctl/stormctl/resilience"
)

// dependency is a leaf server with a concurrency capacity, a bounded FIFO
// queue and a log-normal service time, stretched past Contention requests
// in progress. It keeps working on requests whose
// caller gave up, unless told to drop them.
type dependency struct {
	spec      *DependencySpec
	name      string
	capacity  int
	busy      int
	queue     ring
	mu, sigma float64
	// slowShare of the calls take slowMu, slowSigma instead (a tail).
	slowShare         float64
	slowMu, slowSigma float64
	errShare          float64
	connShare         float64
	resetShare        float64
	startRate         float64
	tokens            float64
	lastRefill        time.Duration

	arrivals float64 // attempts received, for peak attempts per second
	// abandoned counts attempts worked on to the end after their caller
	// had given up on them.
	abandoned float64
	codes     map[int]*series
	inUse     *series
	capSer    *series
	waiting   *series
}

// job is one attempt at a dependency.
type job struct {
	dep    *dependency
	caller ref // the innermost frame's incarnation that sent it
	class  resilience.Class
	queued bool
	fast   bool // answered without taking capacity: connect error or shed
	shed   bool
	// handshake: the attempt opened a new connection, whose setup the
	// dependency works on before the request.
	handshake bool
}

func lognormal(l Latency) (mu, sigma float64) {
	mu = math.Log(l.P50.D().Seconds())
	sigma = math.Log(float64(l.P99)/float64(l.P50)) / 2.3263478740408408 // z of 0.99
	return mu, sigma
}

func (s *Sim) buildDependencies() {
	for i := range s.sc.Dependencies {
		spec := &s.sc.Dependencies[i]
		d := &dependency{spec: spec, name: spec.Name, codes: map[int]*series{}}
		kv := []string{"service", spec.Name, "pool", "capacity"}
		d.inUse = s.reg.gauge("stormctl_pool_in_use", "Pool slots in use.", kv...)
		d.capSer = s.reg.gauge("stormctl_pool_capacity", "Pool slots.", kv...)
		d.waiting = s.reg.gauge("stormctl_pool_waiting", "Requests waiting for a pool slot.", kv...)
		s.deps = append(s.deps, d)
		s.depByName[d.name] = d
		s.initCodes(d.codes, d.name, 200, 503, spec.ShedCode)
		s.applyFaults(d)
		d.tokens = d.startRate
	}
}

// applyFaults sets d's parameters from its spec and the faults active now.
func (s *Sim) applyFaults(d *dependency) {
	spec := d.spec
	lat, errShare, capF, rate := spec.Latency, spec.ErrorShare, 1.0, spec.MaxStartRate
	d.connShare, d.resetShare, d.slowShare = 0, 0, 0
	for _, f := range s.sc.Faults {
		if f.Dependency != d.name || s.now < f.At.D() || s.now >= f.At.D()+f.For.D() {
			continue
		}
		switch {
		case f.Latency != nil && f.SlowShare > 0:
			d.slowShare = f.SlowShare
			d.slowMu, d.slowSigma = lognormal(*f.Latency)
		case f.Latency != nil:
			lat = *f.Latency
		}
		if f.ErrorShare != nil {
			errShare = *f.ErrorShare
		}
		if f.CapacityFactor > 0 {
			capF = f.CapacityFactor
		}
		if f.MaxStartRate != nil {
			rate = *f.MaxStartRate
		}
		d.connShare, d.resetShare = f.ConnectErrorShare, f.ResetShare
	}
	d.mu, d.sigma = lognormal(lat)
	d.errShare, d.startRate = errShare, rate
	d.capacity = max(1, int(math.Round(float64(spec.Capacity)*capF)))
	d.capSer.v = float64(d.capacity)
	for d.busy < d.capacity && s.startQueued(d) {
	}
}

func (d *dependency) code(s *Sim, code int) { s.countCode(d.codes, d.name, code) }

// submit receives one attempt from the frame caller, on a new connection
// when handshake is set.
func (s *Sim) submit(d *dependency, caller ref, handshake bool) {
	d.arrivals++
	jr := s.jobs.alloc()
	j := s.jobs.get(jr)
	j.dep, j.caller, j.handshake = d, caller, handshake
	fast := func(c resilience.Class, code int) {
		j.class, j.fast, j.shed = c, true, code != 0
		if code != 0 {
			d.code(s, code)
		}
		s.schedule(s.now+time.Millisecond, evJobDone, jr)
	}
	if d.connShare > 0 && s.rng.Float64() < d.connShare {
		fast(resilience.ConnectError, 0)
		return
	}
	if d.startRate > 0 {
		d.tokens = min(d.startRate/10, d.tokens+(s.now-d.lastRefill).Seconds()*d.startRate)
		d.lastRefill = s.now
		if d.tokens < 1 {
			fast(shedClass(d.spec.ShedCode), d.spec.ShedCode)
			return
		}
		d.tokens--
	}
	switch {
	case d.busy < d.capacity:
		s.startJob(d, jr)
	case d.queue.size < d.spec.Queue:
		j.queued = true
		d.queue.push(jr)
	default:
		fast(shedClass(d.spec.ShedCode), d.spec.ShedCode)
	}
}

// shedClass is how a caller classifies a shed answer: resilience sees a 429
// with a Retry-After as Throttled.
func shedClass(code int) resilience.Class {
	if code == 429 {
		return resilience.Throttled
	}
	return resilience.Unavailable
}

func (s *Sim) startJob(d *dependency, jr ref) {
	d.busy++
	j := s.jobs.get(jr)
	j.queued = false
	mu, sigma := d.mu, d.sigma
	if d.slowShare > 0 && s.rng.Float64() < d.slowShare {
		mu, sigma = d.slowMu, d.slowSigma
	}
	work := math.Exp(mu + sigma*s.rng.NormFloat64())
	if c := d.spec.Contention; c > 0 && d.busy > c {
		// Requests in progress share the CPU: the more, the slower each.
		work *= float64(d.busy) / float64(c)
	}
	lat := time.Duration(work * float64(time.Second))
	if j.handshake {
		lat += d.spec.ConnectCost.D()
	}
	switch u := s.rng.Float64(); {
	case u < d.resetShare:
		j.class = resilience.Reset
	case u < d.resetShare+d.errShare:
		j.class = resilience.Unavailable
	default:
		j.class = resilience.Success
	}
	s.schedule(s.now+lat, evJobDone, jr)
}

// startQueued starts the next queued job; false when the queue is empty.
func (s *Sim) startQueued(d *dependency) bool {
	for {
		jr, ok := d.queue.pop()
		if !ok {
			return false
		}
		j := s.jobs.get(jr)
		if d.spec.DropAbandoned && s.frames.get(j.caller) == nil {
			s.jobs.release(jr)
			continue
		}
		s.startJob(d, jr)
		return true
	}
}

func (s *Sim) jobDone(jr ref) {
	j := s.jobs.get(jr)
	if j == nil {
		return
	}
	d, caller, class, shed := j.dep, j.caller, j.class, j.shed
	ran := !j.fast
	s.jobs.release(jr)
	if ran {
		if f := s.frames.get(caller); f == nil || !f.inflight {
			d.abandoned++
		}
		d.busy--
		switch class {
		case resilience.Success:
			d.code(s, 200)
		case resilience.Unavailable:
			d.code(s, 503)
		}
		if d.busy < d.capacity {
			s.startQueued(d)
		}
	}
	var retryAfter time.Duration
	if class == resilience.Throttled {
		retryAfter = d.spec.RetryAfter.D()
	}
	s.wireResult(caller, class, retryAfter, shed)
}
