package policy

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Severity of a finding; --fail-on compares against it.
type Severity string

// Severities, lowest first.
const (
	Info Severity = "info"
	Warn Severity = "warn"
	Crit Severity = "crit"
)

// Rank orders severities: info 0, warn 1, crit 2; -1 for anything else.
func (s Severity) Rank() int { return slices.Index([]Severity{Info, Warn, Crit}, s) }

// Finding ids: stable, documented in docs/policy.md.
const (
	MultipliedRetries         = "multiplied_retries"
	DeadlineConflict          = "deadline_conflict"
	TimeoutBelowDependencyP99 = "timeout_below_dependency_p99"
	NoBackoff                 = "no_backoff"
	NoJitter                  = "no_jitter"
	RetriesThrottling         = "retries_throttling"
	NoRetryBudget             = "no_retry_budget"
	SharedPool                = "shared_pool"
	TransportRetryStacked     = "transport_retry_stacked"
	NonIdempotentRetry        = "non_idempotent_retry"
	BreakerPerProcess         = "breaker_per_process"
	PoolSaturation            = "pool_saturation"
	NoTimeout                 = "no_timeout"
)

// Finding is one problem the configuration predicts, with its fix.
type Finding struct {
	ID       string   `json:"id"`
	Severity Severity `json:"severity"`
	// Hop is the service of the hop concerned; empty for the whole path.
	Hop     string `json:"hop"`
	Message string `json:"message"`
	Fix     string `json:"fix"`
	order   int
}

type rules struct {
	a   *Analysis
	p   *Path
	out []Finding
}

func (r *rules) add(id string, sev Severity, hop int, fix, format string, args ...any) {
	f := Finding{ID: id, Severity: sev, Message: fmt.Sprintf(format, args...), Fix: fix, order: hop}
	if hop >= 0 {
		f.Hop = r.p.Hops[hop].Service
	}
	r.out = append(r.out, f)
}

func findings(a *Analysis) []Finding {
	r := &rules{a: a, p: a.path}
	r.path()
	for i, h := range r.p.Hops {
		r.hop(i, h)
		r.deadline(i, h)
		r.pool(i, h)
	}
	slices.SortStableFunc(r.out, func(x, y Finding) int {
		if d := y.Severity.Rank() - x.Severity.Rank(); d != 0 {
			return d
		}
		return x.order - y.order
	})
	return r.out
}

func (r *rules) path() {
	a := r.a
	n := 0
	for _, h := range r.p.Hops {
		if h.Retry.retries() {
			n++
		}
	}
	if n >= 2 {
		sev := Warn
		if a.WorstCaseAttempts.Total > 4 {
			sev = Crit
		}
		r.add(MultipliedRetries, sev, -1, "let one layer own retries (the outermost that knows the deadline) with one budget; set attempts: 1 in the others",
			"%d layers retry: %s attempts per request at worst", n, a.product())
	}
	if a.OccupancyS == nil && len(a.walks) > 0 && math.IsInf(a.walks[Timeout].Occupancy, 1) {
		r.add(NoTimeout, Crit, -1, "give the entry a deadline and each retrying hop a per-attempt timeout",
			"nothing bounds how long a request waits on a hung %s: no timeout or deadline on the path", r.p.Dependency.Name)
	}
}

func (r *rules) hop(i int, h *Hop) {
	rt := h.Retry
	if p99 := r.p.Dependency.P99; h.Timeout > 0 && p99 > 0 && h.Timeout < p99 {
		sev, what := Warn, "answers slower than the timeout fail"
		if rt.retries() && rt.On.Has(Timeout) {
			sev, what = Crit, "and it retries timeouts: every slow call is sent again into the slow dependency"
		}
		r.add(TimeoutBelowDependencyP99, sev, i, "set the timeout above the dependency's degraded p99, or stop retrying timeouts",
			"timeout %s is below %s's p99 %s %s", h.Timeout, r.p.Dependency.Name, p99, what)
	}
	if b := h.Breaker; b != nil && b.Scope != "fleet" {
		r.add(BreakerPerProcess, Warn, i, "hold one breaker state for the destination across the fleet (or a fleet-wide forced-open lever); limit recovery probes fleet-wide",
			"%s trips per process: new or restarted instances start closed and send traffic again", b.Kind)
	}
	if !rt.retries() {
		return
	}
	if rt.Backoff.none() {
		sev := Warn
		if rt.On.Has(Timeout) || rt.On.Has(ServerError) || rt.On.Has(Throttled) {
			sev = Crit
		}
		r.add(NoBackoff, sev, i, "back off exponentially with full jitter: sleep = random(0, min(cap, base·2^n))",
			"retries %s at once, with no backoff", rt.On)
	} else if rt.Backoff.Jitter == JitterNone {
		r.add(NoJitter, Warn, i, "add full jitter so that clients do not retry in lockstep",
			"backs off (%s): every client retries at the same instants", rt.Backoff.describe())
	}
	if rt.On.Has(Throttled) && !rt.HonourRetryAfter {
		r.add(RetriesThrottling, Crit, i, "make 429 non-retryable, or retry only after the Retry-After the server asks for",
			"retries 429s without waiting for Retry-After: throttling is answered with more load")
	}
	if rt.Budget == nil {
		r.add(NoRetryBudget, Warn, i, "cap retries to a share of requests (e.g. 10%) per client or fleet-wide",
			"no retry budget: when %s fails, %d attempts per request go out", r.p.Dependency.Name, rt.Attempts)
	}
	if i > 0 && h.Pool == nil {
		for j := i - 1; j >= 0; j-- {
			if r.p.Hops[j].Retry.retries() {
				r.add(TransportRetryStacked, Warn, i, "retry in one layer only; turn off the transport or sidecar retry, or the one above it",
					"retries %d× beneath %s, which retries too", rt.Attempts, r.p.Hops[j].Service)
				break
			}
			if r.p.Hops[j].Pool != nil {
				break
			}
		}
	}
	if (rt.On.Has(Timeout) || rt.On.Has(ServerError) || rt.On.Has(Reset)) && !rt.IdempotencyKey {
		r.add(NonIdempotentRetry, Warn, i, "send an idempotency key with every attempt of one request, or retry only connection failures",
			"retries %s without an idempotency key: an attempt cut short may still succeed, and act twice", rt.On)
	}
}

// deadline finds hops whose own schedule outlasts a limit above them.
func (r *rules) deadline(i int, h *Hop) {
	s := r.a.timeouts.uncut(i)
	if math.IsInf(s, 1) || s <= 0 {
		return // no timeout of its own: whatever is above cuts it
	}
	limT, from := math.Inf(1), ""
	for j := 0; j < i; j++ {
		up := r.p.Hops[j]
		if t := secondsOr(up.Timeout, math.Inf(1)); t < limT {
			limT, from = t, up.Service+"'s per-attempt timeout"
		}
		if t := secondsOr(up.Deadline, math.Inf(1)); t < limT {
			limT, from = t, up.Service+"'s deadline"
		}
	}
	d := secondsOr(r.p.Deadline, math.Inf(1))
	boundary := i > 0 && h.Pool != nil
	switch {
	case boundary && s > limT+eps:
		r.add(DeadlineConflict, Crit, i, "propagate one deadline down the path and stop work when it passes; keep inner schedules inside outer timeouts",
			"its retries take up to %s but %s gives up after %s: it keeps working for a caller that left", secs(s), from, secs(limT))
	case s > d+eps && (i == 0 && h.IgnoreDeadline || boundary && !r.p.propagates(i-1)):
		r.add(DeadlineConflict, Crit, i, "honour the entry's deadline: cap each attempt at the time left and start no retry that cannot finish",
			"its retries take up to %s, past the %s deadline, and it does not know the deadline: work goes on after the caller gave up", secs(s), secs(d))
	case s > min(limT, d)+eps:
		lim, what := limT, from
		if d < limT {
			lim, what = d, "the entry's deadline"
		}
		r.add(DeadlineConflict, Warn, i, "fit the attempts and backoff inside the limit, or raise the limit",
			"its %d attempts take up to %s but %s is %s: the last ones never run", h.Retry.Attempts, secs(s), what, secs(lim))
	}
}

func (r *rules) pool(i int, h *Hop) {
	pl := h.Pool
	if pl == nil {
		return
	}
	res := r.a.Hops[i]
	over := res.DemandedConcurrency != nil && *res.DemandedConcurrency > float64(pl.Capacity())
	if over {
		r.add(PoolSaturation, Crit, i, "bound occupancy (timeouts above p99 and fewer attempts, or a breaker that fails fast) or shed load before the pool fills",
			"%s demands %s of %d %s when %s fails (%.0f rps × %s held): it saturates from %.0f failing rps",
			h.Service, formatCount(math.Round(*res.DemandedConcurrency)), pl.Capacity(), pl.Name, r.p.Dependency.Name,
			*res.ArrivalRPSWorst, secs(*res.OccupancyS), float64(pl.Capacity()) / *res.OccupancyS)
	}
	if pl.Shared {
		sev, what := Warn, "a slow dependency can take every slot"
		if over {
			sev, what = Crit, "it saturates, and every endpoint sharing it fails"
		}
		r.add(SharedPool, sev, i, "give calls to "+r.p.Dependency.Name+" their own bulkhead (a pool of their own) so the rest keeps working",
			"pool %s is shared with other endpoints (no bulkhead): %s", pl.Name, what)
	}
}

func secs(v float64) string {
	s := fmt.Sprintf("%.3f", v)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s + "s"
}
