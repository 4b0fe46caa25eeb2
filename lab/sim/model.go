package sim

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/stormctl/stormctl/resilience"
)

// service is the runtime state of a ServiceSpec.
type service struct {
	spec      *ServiceSpec
	name      string
	idx       int
	endpoints []*endpoint
	weightSum float64
	calls     []*call // every call of every endpoint
	pods      []*pod
	rr        int // round-robin cursor over ready pods
	poolIdx   map[string]int
	degraded  *degradedPath
	budget    *resilience.Budget // fleet-scoped budget, else per pod
	lev       ServiceLevers
	// metrics
	codes    map[int]*series
	replicas *series
	poolUse  []*series // per pool, summed over pods
	poolCap  []*series
	poolWait []*series
	arrivals float64 // requests received
	holdSum  float64 // slot-seconds held by requests that got a slot
	holdN    float64
	utilSum  float64 // autoscaler: sum of utilisation samples since the last decision
	utilN    int
	wanted   []wanted // autoscaler: recent decisions, for scale-down stabilization
}

type endpoint struct {
	spec   *EndpointSpec
	pool   int
	calls  []*call
	weight float64
	// answered and ok count the endpoint's answers and its 200s.
	answered, ok float64
}

// call is a runtime CallSpec: one caller→target edge of the fleet graph.
type call struct {
	spec     *CallSpec
	svc      *service
	idx      int // in svc.calls
	dep      *dependency
	callee   *service
	layers   []layer
	fleetBr  *resilience.Breaker
	lev      resilience.LeverState
	requests *series
	attempts [numOutcomes]*series
	retries  map[resilience.Class]*series
	duration *histogram
	probes   probeLimiter
	// fallbackOn is the set of failures sent to the degraded path; nil:
	// all, empty (fallback_on: [lever]): none.
	fallbackOn map[resilience.Class]bool
	// breakerCounts is the set of failures the breaker counts; nil: all.
	breakerCounts map[resilience.Class]bool
}

// breakerClass is class as c's breaker sees it: a failure it does not
// count is neutral, like an attempt its caller cancelled.
func (c *call) breakerClass(class resilience.Class) resilience.Class {
	if c.breakerCounts != nil && class != resilience.Success && !c.breakerCounts[class] {
		return resilience.Canceled
	}
	return class
}

// fallsBack reports whether a call that failed with class goes to the
// service's degraded path rather than failing the request.
func (c *call) fallsBack(class resilience.Class) bool {
	return c.spec.Fallback && (c.fallbackOn == nil || c.fallbackOn[class])
}

type layer struct {
	spec   *LayerSpec
	policy resilience.Policy
}

// Outcome labels of stormctl_attempts_total.
const (
	outSuccess = iota
	outError
	outTimeout
	outThrottled
	outShed
	outBreakerOpen
	numOutcomes
)

var outcomeNames = [numOutcomes]string{resilience.OutcomeSuccess, resilience.OutcomeError, resilience.OutcomeTimeout,
	resilience.OutcomeThrottled, resilience.OutcomeShed, resilience.OutcomeBreakerOpen}

// pod is one replica with its own pools, breakers and (pod-scoped) budget.
type pod struct {
	svc      *service
	name     string
	ready    bool
	draining bool
	pools    []pool
	breakers []*resilience.Breaker // by call idx; nil without a pod breaker
	budget   *resilience.Budget
	brState  [][4]*series // by call idx: closed, open, half_open, forced_open
	// conns are the idle keep-alive connections to each call's dependency,
	// by call idx, when the dependency has a connect cost.
	conns []int
	// caches hold, by call idx, when each cached key expires; nil for a
	// call without a cache.
	caches [][]time.Duration
}

type pool struct {
	size, maxWaiting int
	waitTimeout      time.Duration
	inUse, waiting   int
	queue            ring
}

type degradedPath struct {
	spec  *DegradedSpec
	level float64 // queued items, drained continuously
	last  time.Duration
	use   *series
	cap   *series
}

func (s *Sim) buildServices() error {
	for i := range s.sc.Services {
		spec := &s.sc.Services[i]
		svc := &service{spec: spec, name: spec.Name, idx: i, poolIdx: map[string]int{}, codes: map[int]*series{}}
		for j, p := range spec.Pools {
			svc.poolIdx[p.Name] = j
			kv := []string{"service", spec.Name, "pool", p.Name}
			svc.poolUse = append(svc.poolUse, s.reg.gauge("stormctl_pool_in_use", "Pool slots in use.", kv...))
			svc.poolCap = append(svc.poolCap, s.reg.gauge("stormctl_pool_capacity", "Pool slots.", kv...))
			svc.poolWait = append(svc.poolWait, s.reg.gauge("stormctl_pool_waiting", "Requests waiting for a pool slot.", kv...))
		}
		svc.replicas = s.reg.gauge("stormctl_replicas", "Ready replicas.", "service", spec.Name)
		if d := spec.Degraded; d != nil {
			kv := []string{"service", spec.Name, "pool", d.Name}
			svc.degraded = &degradedPath{spec: d,
				use: s.reg.gauge("stormctl_pool_in_use", "Pool slots in use.", kv...),
				cap: s.reg.gauge("stormctl_pool_capacity", "Pool slots.", kv...)}
			svc.degraded.cap.v = float64(d.MaxQueue)
		}
		if b := spec.Budget; b != nil && b.Scope == "fleet" {
			svc.budget = resilience.NewBudget(budgetConfig(b))
		}
		s.services = append(s.services, svc)
		s.svcByName[svc.name] = svc
		s.initCodes(svc.codes, svc.name, 200, 503, 504)
	}
	for _, svc := range s.services {
		for j := range svc.spec.Endpoints {
			ep := &svc.spec.Endpoints[j]
			e := &endpoint{spec: ep, pool: svc.poolIdx[ep.Pool], weight: ep.Weight}
			svc.weightSum += ep.Weight
			for k := range ep.Calls {
				c, err := s.newCall(svc, &ep.Calls[k])
				if err != nil {
					return fmt.Errorf("%s: service %s, endpoint %s, call %d: %w", s.sc.file, svc.name, ep.Name, k, err)
				}
				e.calls = append(e.calls, c)
			}
			svc.endpoints = append(svc.endpoints, e)
		}
	}
	return nil
}

func budgetConfig(b *BudgetSpec) resilience.BudgetConfig {
	return resilience.BudgetConfig{Ratio: b.Ratio, PerSecond: b.PerSecond, Burst: b.Burst}
}

func breakerConfig(b *BreakerSpec) resilience.BreakerConfig {
	return resilience.BreakerConfig{ConsecutiveFailures: b.ConsecutiveFailures, OpenFor: b.OpenFor.D(),
		HalfOpenProbes: b.HalfOpenProbes, FleetProbesPerSecond: b.FleetProbesPerSecond}
}

func (s *Sim) newCall(svc *service, spec *CallSpec) (*call, error) {
	c := &call{spec: spec, svc: svc, idx: len(svc.calls), dep: s.depByName[spec.Target], callee: s.svcByName[spec.Target],
		retries: map[resilience.Class]*series{}, lev: resilience.LeverState{RetriesEnabled: true, MaxAttempts: math.MaxInt32}}
	for _, name := range spec.FallbackOn {
		if c.fallbackOn == nil {
			c.fallbackOn = map[resilience.Class]bool{}
		}
		if cl, ok := fallbackClass(name); ok {
			c.fallbackOn[cl] = true
		}
	}
	if b := spec.Breaker; b != nil && len(b.Failures) > 0 {
		c.breakerCounts = map[resilience.Class]bool{}
		for _, name := range b.Failures {
			c.breakerCounts[classByName[name]] = true
		}
	}
	for i := range spec.Layers {
		ls := &spec.Layers[i]
		p := resilience.Policy{MaxAttempts: ls.MaxAttempts, PerAttemptTimeout: ls.Timeout.D(),
			BackoffBase: ls.Backoff.Base.D(), BackoffCap: ls.Backoff.Cap.D(), RetryOn: []resilience.Class{}}
		for _, name := range ls.RetryOn {
			p.RetryOn = append(p.RetryOn, classByName[name])
		}
		if p.PerAttemptTimeout == 0 {
			// An inner layer without its own timeout runs under the outer one;
			// the policy still needs a positive bound for its deadline check.
			p.PerAttemptTimeout = time.Nanosecond
		}
		if err := p.Validate(); err != nil {
			return nil, fmt.Errorf("layer %s: %w", ls.Name, err)
		}
		c.layers = append(c.layers, layer{spec: ls, policy: p})
	}
	kv := []string{"service", svc.name, "dependency", spec.Target}
	c.requests = s.reg.counter("stormctl_requests_total", "Logical requests (one per caller intent).", kv...)
	for o := range c.attempts {
		c.attempts[o] = s.reg.counter("stormctl_attempts_total", "Attempts sent, by outcome.", append(kv, "outcome", outcomeNames[o])...)
	}
	for _, l := range c.layers {
		for _, cl := range l.policy.RetryOn {
			if c.retries[cl] == nil {
				c.retries[cl] = s.reg.counter("stormctl_retries_total", "Retries, by the failure retried.", append(kv, "reason", cl.String())...)
			}
		}
	}
	c.duration = s.reg.histogram("stormctl_attempt_duration_seconds", "Attempt duration.", kv...)
	if b := spec.Breaker; b != nil && b.Scope == "fleet" {
		c.probes = probeLimiter{sim: s, perSecond: max(b.FleetProbesPerSecond, 1)}
		c.fleetBr = resilience.NewBreaker(spec.Target, breakerConfig(b), &c.probes)
	}
	svc.calls = append(svc.calls, c)
	return c, nil
}

// addPod starts a replica; it becomes ready after startup.
func (s *Sim) addPod(svc *service, startup time.Duration) *pod {
	p := &pod{svc: svc, name: svc.name + "-" + strconv.Itoa(len(svc.pods))}
	for _, ps := range svc.spec.Pools {
		p.pools = append(p.pools, pool{size: ps.Size, maxWaiting: ps.MaxWaiting, waitTimeout: ps.WaitTimeout.D()})
	}
	if b := svc.spec.Budget; b != nil && b.Scope == "pod" {
		p.budget = resilience.NewBudget(budgetConfig(b))
	}
	for _, c := range svc.calls {
		var br *resilience.Breaker
		if b := c.spec.Breaker; b != nil && b.Scope == "pod" {
			// A new pod starts with an empty breaker: it knows nothing of
			// what the fleet has learned about the dependency.
			br = resilience.NewBreaker(c.spec.Target, breakerConfig(b), nil)
			br.SetForced(c.lev.ForcedOpen)
		}
		p.breakers = append(p.breakers, br)
		var st [4]*series
		if c.spec.Breaker != nil {
			for i, name := range []string{"closed", "open", "half_open", "forced_open"} {
				st[i] = s.reg.gauge("stormctl_breaker_state", "1 on the breaker's current state.",
					"service", svc.name, "dependency", c.spec.Target, "pod", p.name, "state", name)
			}
		}
		p.brState = append(p.brState, st)
	}
	p.conns = make([]int, len(svc.calls))
	for _, c := range svc.calls {
		var keys []time.Duration
		if ch := c.spec.Cache; ch != nil {
			keys = make([]time.Duration, ch.Keys)
		}
		p.caches = append(p.caches, keys)
	}
	svc.pods = append(svc.pods, p)
	if startup <= 0 {
		p.ready = true
	} else {
		s.schedule(s.now+startup, evPodReady, ref{int32(svc.idx), uint32(len(svc.pods) - 1)})
	}
	return p
}

// breaker returns the breaker guarding c on p, if any.
func (c *call) breaker(p *pod) *resilience.Breaker {
	if c.fleetBr != nil {
		return c.fleetBr
	}
	return p.breakers[c.idx]
}

// probeLimiter admits a fixed number of half-open probes per simulated
// second across the fleet, as resilience's Redis limiter does for real.
type probeLimiter struct {
	sim       *Sim
	perSecond int
	second    int64
	used      int
}

func (l *probeLimiter) AllowProbe(_ string, now time.Time) bool {
	sec := now.Unix()
	if sec != l.second {
		l.second, l.used = sec, 0
	}
	if l.used >= l.perSecond {
		return false
	}
	l.used++
	return true
}
