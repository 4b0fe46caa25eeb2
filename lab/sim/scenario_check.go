package sim

import (
	"fmt"
	"time"

	"github.com/stormctl/stormctl/internal/yamlfile"
	"github.com/stormctl/stormctl/resilience"
)

// classByName maps resilience's class names ("timeout", "throttled", …) to
// classes, for retry_on lists.
var classByName = func() map[string]resilience.Class {
	m := map[string]resilience.Class{}
	for c := resilience.Success; c <= resilience.Permanent; c++ {
		m[c.String()] = c
	}
	return m
}()

// fallbackLever in fallback_on sends no failure to the degraded path: only
// the degraded lever does.
const fallbackLever = "lever"

// fallbackClass maps a fallback_on name to its class: a retry_on class, or
// breaker_open for a call refused by its breaker.
func fallbackClass(name string) (resilience.Class, bool) {
	if name == "breaker_open" {
		return classBreakerOpen, true
	}
	c, ok := classByName[name]
	return c, ok
}

func (sc *Scenario) defaults() {
	if sc.Duration == 0 {
		sc.Duration = Duration(15 * time.Minute)
	}
	if sc.ScrapeInterval == 0 {
		sc.ScrapeInterval = Duration(time.Second)
	}
	for i := range sc.Services {
		s := &sc.Services[i]
		if s.Replicas == 0 {
			s.Replicas = 1
		}
		for j := range s.Endpoints {
			if s.Endpoints[j].Weight == 0 {
				s.Endpoints[j].Weight = 1
			}
		}
		if a := s.Autoscaler; a != nil && a.Interval == 0 {
			a.Interval = Duration(15 * time.Second)
		}
	}
	for i := range sc.Dependencies {
		d := &sc.Dependencies[i]
		if d.ShedCode == 0 {
			d.ShedCode = 503
		}
	}
}

func (sc *Scenario) validate(doc *yamlfile.Doc) yamlfile.Errors {
	var errs yamlfile.Errors
	bad := func(path, fix, format string, args ...any) {
		errs = append(errs, doc.Errorf(path, fix, format, args...))
	}
	if sc.Name == "" {
		bad("$.name", "name the scenario", "name is required")
	}
	if !(sc.Edge.RPS > 0 && sc.Edge.RPS <= 1e5) {
		bad("$.edge.rps", "", "rps must be in (0, 100000], got %v", sc.Edge.RPS)
	}
	services := map[string]bool{}
	for _, s := range sc.Services {
		services[s.Name] = true
	}
	deps := map[string]bool{}
	for i, d := range sc.Dependencies {
		p := fmt.Sprintf("$.dependencies[%d]", i)
		if d.Name == "" || services[d.Name] || deps[d.Name] {
			bad(p+".name", "give each service and dependency its own name", "dependency name %q is empty or taken", d.Name)
		}
		deps[d.Name] = true
		if d.Capacity < 1 || d.Queue < 0 || d.MaxStartRate < 0 {
			bad(p, "", "capacity must be ≥ 1, queue and max_start_rate ≥ 0")
		}
		if d.ShedCode != 429 && d.ShedCode != 503 {
			bad(p+".shed_code", "use 429 or 503", "shed_code %d", d.ShedCode)
		}
		checkLatency(bad, p+".latency", d.Latency)
		if d.Instances < 0 || d.Instances > maxReplicas {
			bad(p+".instances", fmt.Sprintf("give 1 to %d instances", maxReplicas), "instances %d", d.Instances)
		}
		if d.Burst < 0 || d.ShedWork < 0 {
			bad(p, "", "burst and shed_work must be ≥ 0")
		}
		if d.ConnectCost < 0 {
			bad(p+".connect_cost", "", "connect_cost must be ≥ 0")
		}
		if d.Contention < 0 {
			bad(p+".contention", "give requests in progress ≥ 0", "contention %v", d.Contention)
		}
		if d.ErrorShare < 0 || d.ErrorShare > 1 {
			bad(p+".error_share", "", "error_share must be in [0, 1]")
		}
	}
	if !services[sc.Edge.Service] {
		bad("$.edge.service", "name one of the services", "unknown edge service %q", sc.Edge.Service)
	}
	for i, s := range sc.Services {
		sc.validateService(bad, fmt.Sprintf("$.services[%d]", i), s, services, deps)
	}
	for i, f := range sc.Faults {
		p := fmt.Sprintf("$.faults[%d]", i)
		if !deps[f.Dependency] {
			bad(p+".dependency", "name one of the dependencies", "unknown dependency %q", f.Dependency)
		}
		if f.At < 0 || f.For <= 0 {
			bad(p, "", "at must be ≥ 0 and for > 0")
		}
		if f.Latency != nil {
			checkLatency(bad, p+".latency", *f.Latency)
		}
		if f.Instances < 0 {
			bad(p+".instances", "give how many of the dependency's instances the fault hits, or 0 for all", "instances %d", f.Instances)
		}
		if f.SlowShare < 0 || f.SlowShare > 1 || (f.SlowShare > 0 && f.Latency == nil) {
			bad(p+".slow_share", "give a share in [0, 1] with the fault's latency", "slow_share %v", f.SlowShare)
		}
		if f.CapacityFactor < 0 || f.ConnectErrorShare < 0 || f.ConnectErrorShare > 1 || f.ResetShare < 0 || f.ResetShare > 1 {
			bad(p, "", "shares must be in [0, 1] and capacity_factor ≥ 0")
		}
	}
	for i, r := range sc.Restarts {
		p := fmt.Sprintf("$.restarts[%d]", i)
		if !services[r.Service] {
			bad(p+".service", "name one of the services", "unknown service %q", r.Service)
		}
		if r.At < 0 || r.Startup < 0 {
			bad(p, "", "at and startup must be ≥ 0")
		}
	}
	return errs
}

// maxReplicas bounds the pods of a service and the instances of a
// dependency a scenario may ask for: each is memory the lab allocates.
const maxReplicas = 10000

type badFunc func(path, fix, format string, args ...any)

func checkLatency(bad badFunc, p string, l Latency) {
	if l.P50 <= 0 || l.P99 < l.P50 {
		bad(p, "give p50 > 0 and p99 ≥ p50", "latency p50 %s, p99 %s", l.P50.D(), l.P99.D())
	}
}

func (sc *Scenario) validateService(bad badFunc, p string, s ServiceSpec, services, deps map[string]bool) {
	if s.Name == "" {
		bad(p+".name", "", "name is required")
	}
	if s.Replicas < 1 || s.Replicas > maxReplicas {
		bad(p+".replicas", fmt.Sprintf("give 1 to %d", maxReplicas), "replicas %d", s.Replicas)
	}
	pools := map[string]bool{}
	for j, pl := range s.Pools {
		if pl.Size < 1 || pl.MaxWaiting < 0 || pl.WaitTimeout < 0 {
			bad(fmt.Sprintf("%s.pools[%d]", p, j), "", "size must be ≥ 1, max_waiting and wait_timeout ≥ 0")
		}
		pools[pl.Name] = true
	}
	if len(s.Endpoints) == 0 {
		bad(p+".endpoints", "add at least one endpoint", "service %s has no endpoints", s.Name)
	}
	for j, ep := range s.Endpoints {
		ep := ep
		ep2 := fmt.Sprintf("%s.endpoints[%d]", p, j)
		if !pools[ep.Pool] {
			bad(ep2+".pool", "name one of the service's pools", "unknown pool %q", ep.Pool)
		}
		if ep.Weight < 0 {
			bad(ep2+".weight", "", "weight must be ≥ 0")
		}
		for k, c := range ep.Calls {
			sc.validateCall(bad, fmt.Sprintf("%s.calls[%d]", ep2, k), s, c, services, deps)
		}
	}
	if a := s.Autoscaler; a != nil {
		if !pools[a.Pool] || a.TargetUtilization <= 0 || a.TargetUtilization > 1 || a.Min < 1 || a.Max < a.Min || a.Max > maxReplicas || a.Interval <= 0 || a.ScaleDownStabilization < 0 {
			bad(p+".autoscaler", "", "need a known pool, 0 < target_utilization ≤ 1, 1 ≤ min ≤ max, interval > 0, scale_down_stabilization ≥ 0")
		}
	}
	if d := s.Degraded; d != nil && (d.MaxQueue < 1 || d.DrainRate <= 0) {
		bad(p+".degraded", "", "max_queue must be ≥ 1 and drain_rate > 0")
	}
	if b := s.Budget; b != nil && (b.Ratio < 0 || b.PerSecond < 0 || (b.Scope != "pod" && b.Scope != "fleet")) {
		bad(p+".budget", "scope is pod or fleet", "bad budget")
	}
}

func (sc *Scenario) validateCall(bad badFunc, p string, s ServiceSpec, c CallSpec, services, deps map[string]bool) {
	if !services[c.Target] && !deps[c.Target] || c.Target == s.Name {
		bad(p+".target", "name a dependency or another service", "unknown call target %q", c.Target)
	}
	if len(c.Layers) == 0 {
		bad(p+".layers", "add at least one layer (max_attempts: 1 for no retries)", "call to %s has no layers", c.Target)
	}
	if c.Fallback && s.Degraded == nil {
		bad(p+".fallback", "add a degraded: section to the service", "fallback without a degraded path")
	}
	for m, name := range c.FallbackOn {
		switch _, ok := fallbackClass(name); {
		case name == fallbackLever && len(c.FallbackOn) > 1:
			bad(fmt.Sprintf("%s.fallback_on[%d]", p, m), "write fallback_on: [lever] alone, or name failure classes",
				"lever means no failure falls back, so it cannot be listed with others")
		case !c.Fallback || !ok && name != fallbackLever:
			bad(fmt.Sprintf("%s.fallback_on[%d]", p, m), "set fallback: true; name breaker_open, a retry_on class or lever",
				"cannot fall back on %q", name)
		}
	}
	if b := c.Breaker; b != nil && (b.Scope != "pod" && b.Scope != "fleet" || b.ConsecutiveFailures < 1 || b.OpenFor <= 0) {
		bad(p+".breaker", "scope is pod or fleet; consecutive_failures ≥ 1; open_for > 0", "bad breaker")
	}
	if b := c.Breaker; b != nil {
		checkClasses(bad, p+".breaker.failures", b.Failures)
	}
	if ch := c.Cache; ch != nil && !(ch.HitShare > 0 && ch.HitShare <= 1 && ch.Keys >= 1 && ch.Keys <= 1e6 && ch.TTL > 0) {
		bad(p+".cache", "0 < hit_share ≤ 1, 1 ≤ keys ≤ 1000000, ttl > 0", "bad cache")
	}
	for l, ly := range c.Layers {
		lp := fmt.Sprintf("%s.layers[%d]", p, l)
		if ly.MaxAttempts < 1 || ly.Timeout < 0 || ly.Backoff.Base < 0 || ly.Backoff.Cap < ly.Backoff.Base {
			bad(lp, "", "max_attempts ≥ 1, timeout ≥ 0, 0 ≤ backoff.base ≤ backoff.cap")
		}
		if l == 0 && ly.Timeout == 0 {
			bad(lp+".timeout", "the outermost layer needs a timeout", "timeout is required")
		}
		checkClasses(bad, lp+".retry_on", ly.RetryOn)
	}
}

// checkClasses reports each name in the list at p that is not a failure
// class.
func checkClasses(bad badFunc, p string, names []string) {
	for m, name := range names {
		if _, ok := classByName[name]; !ok {
			bad(fmt.Sprintf("%s[%d]", p, m), "one of connect, reset, timeout, unavailable, throttled, server_error",
				"unknown failure class %q", name)
		}
	}
}
