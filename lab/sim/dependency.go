package sim

import (
	"math"
	"time"

	"github.com/stormctl/stormctl/resilience"
)

// dependency is a leaf server: one or more instances behind a round-robin
// balancer, each with a concurrency capacity, a bounded FIFO queue and a
// log-normal service time, stretched past Contention requests in progress.
// It keeps working on requests whose caller gave up, unless told to drop
// them.
type dependency struct {
	spec       *DependencySpec
	name       string
	insts      []instance
	next       int // the instance the balancer sends the next attempt to
	startRate  float64
	tokens     float64
	lastRefill time.Duration

	arrivals float64 // attempts received, for peak attempts per second
	// abandoned counts attempts worked on to the end after their caller
	// had given up on them.
	abandoned float64
	codes     map[int]*series
	inUse     *series
	capSer    *series
	waiting   *series
}

// instance is one replica of a dependency; a fault may hit only some.
type instance struct {
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
}

// job is one attempt at a dependency.
type job struct {
	dep    *dependency
	caller ref // the innermost frame's incarnation that sent it
	inst   int
	class  resilience.Class
	queued bool
	fast   bool // answered without taking capacity: connect error or shed
	costs  bool // a shed that took CPU (ShedWork)
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
		d := &dependency{spec: spec, name: spec.Name, codes: map[int]*series{}, insts: make([]instance, max(1, spec.Instances))}
		kv := []string{"service", spec.Name, "pool", "capacity"}
		d.inUse = s.reg.gauge("stormctl_pool_in_use", "Pool slots in use.", kv...)
		d.capSer = s.reg.gauge("stormctl_pool_capacity", "Pool slots.", kv...)
		d.waiting = s.reg.gauge("stormctl_pool_waiting", "Requests waiting for a pool slot.", kv...)
		s.deps = append(s.deps, d)
		s.depByName[d.name] = d
		s.initCodes(d.codes, d.name, 200, 503, spec.ShedCode)
		s.applyFaults(d)
		d.tokens = d.bucket()
	}
}

// applyFaults sets d's parameters from its spec and the faults active now.
func (s *Sim) applyFaults(d *dependency) {
	d.startRate = d.spec.MaxStartRate
	capacity := 0
	for i := range d.insts {
		s.applyInstanceFaults(d, i)
		capacity += d.insts[i].capacity
	}
	d.capSer.v = float64(capacity)
}

// applyInstanceFaults sets instance i's parameters; a fault hits the first
// Fault.Instances instances, or all of them.
func (s *Sim) applyInstanceFaults(d *dependency, i int) {
	spec, in := d.spec, &d.insts[i]
	lat, errShare, capF := spec.Latency, spec.ErrorShare, 1.0
	in.connShare, in.resetShare, in.slowShare = 0, 0, 0
	for _, f := range s.sc.Faults {
		if f.Dependency != d.name || s.now < f.At.D() || s.now >= f.At.D()+f.For.D() {
			continue
		}
		if f.MaxStartRate != nil {
			d.startRate = *f.MaxStartRate
		}
		if f.Instances > 0 && i >= f.Instances {
			continue
		}
		switch {
		case f.Latency != nil && f.SlowShare > 0:
			in.slowShare = f.SlowShare
			in.slowMu, in.slowSigma = lognormal(*f.Latency)
		case f.Latency != nil:
			lat = *f.Latency
		}
		if f.ErrorShare != nil {
			errShare = *f.ErrorShare
		}
		if f.CapacityFactor > 0 {
			capF = f.CapacityFactor
		}
		in.connShare, in.resetShare = f.ConnectErrorShare, f.ResetShare
	}
	in.mu, in.sigma = lognormal(lat)
	in.errShare = errShare
	in.capacity = max(1, int(math.Round(float64(spec.Capacity)*capF)))
	for in.busy < in.capacity && s.startQueued(d, i) {
	}
}

func (d *dependency) code(s *Sim, code int) { s.countCode(d.codes, d.name, code) }

// submit receives one attempt from the frame caller, on a new connection
// when handshake is set.
func (s *Sim) submit(d *dependency, caller ref, handshake bool) {
	d.arrivals++
	jr := s.jobs.alloc()
	j := s.jobs.get(jr)
	j.dep, j.caller, j.handshake, j.inst = d, caller, handshake, d.next
	d.next = (d.next + 1) % len(d.insts)
	in := &d.insts[j.inst]
	fast := func(c resilience.Class, code int) {
		j.class, j.fast, j.shed = c, true, code != 0
		took := time.Millisecond
		if code != 0 {
			d.code(s, code)
			if w := d.spec.ShedWork.D(); w > 0 {
				// Saying no is work too (TLS, authentication, the limit
				// check): it takes its share of the CPU like any request.
				in.busy++
				j.costs, took = true, time.Duration(float64(w)*s.contention(d, in))
			}
		}
		s.schedule(s.now+took, evJobDone, jr)
	}
	if in.connShare > 0 && s.rng.Float64() < in.connShare {
		fast(resilience.ConnectError, 0)
		return
	}
	if d.startRate > 0 {
		d.tokens = min(d.bucket(), d.tokens+(s.now-d.lastRefill).Seconds()*d.startRate)
		d.lastRefill = s.now
		if d.tokens < 1 {
			fast(shedClass(d.spec.ShedCode), d.spec.ShedCode)
			return
		}
		d.tokens--
	}
	switch {
	case in.busy < in.capacity:
		s.startJob(d, jr)
	case in.queue.size < d.spec.Queue:
		j.queued = true
		in.queue.push(jr)
	default:
		fast(shedClass(d.spec.ShedCode), d.spec.ShedCode)
	}
}

// bucket is how many starts the rate limit's token bucket holds.
func (d *dependency) bucket() float64 {
	burst := d.spec.Burst.D()
	if burst <= 0 {
		burst = 100 * time.Millisecond
	}
	return d.startRate * burst.Seconds()
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
	j := s.jobs.get(jr)
	in := &d.insts[j.inst]
	in.busy++
	j.queued = false
	mu, sigma := in.mu, in.sigma
	if in.slowShare > 0 && s.rng.Float64() < in.slowShare {
		mu, sigma = in.slowMu, in.slowSigma
	}
	work := math.Exp(mu + sigma*s.rng.NormFloat64())
	if j.handshake {
		work += d.spec.ConnectCost.D().Seconds()
	}
	lat := time.Duration(work * s.contention(d, in) * float64(time.Second))
	switch u := s.rng.Float64(); {
	case u < in.resetShare:
		j.class = resilience.Reset
	case u < in.resetShare+in.errShare:
		j.class = resilience.Unavailable
	default:
		j.class = resilience.Success
	}
	s.schedule(s.now+lat, evJobDone, jr)
}

// contention is how much slower work is on instance in now: requests in
// progress past Contention share its CPU.
func (s *Sim) contention(d *dependency, in *instance) float64 {
	if c := d.spec.Contention; c > 0 && float64(in.busy) > c {
		return float64(in.busy) / c
	}
	return 1
}

// startQueued starts the next job queued at instance i; false when its
// queue is empty.
func (s *Sim) startQueued(d *dependency, i int) bool {
	for {
		jr, ok := d.insts[i].queue.pop()
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
	d, caller, class, shed, in := j.dep, j.caller, j.class, j.shed, j.inst
	ran := !j.fast
	if j.costs {
		d.insts[in].busy--
	}
	s.jobs.release(jr)
	if ran {
		if f := s.frames.get(caller); f == nil || !f.inflight {
			d.abandoned++
		}
		d.insts[in].busy--
		switch class {
		case resilience.Success:
			d.code(s, 200)
		case resilience.Unavailable:
			d.code(s, 503)
		}
		if d.insts[in].busy < d.insts[in].capacity {
			s.startQueued(d, in)
		}
	}
	var retryAfter time.Duration
	if class == resilience.Throttled {
		retryAfter = d.spec.RetryAfter.D()
	}
	s.wireResult(caller, class, retryAfter, shed)
}
