package policy

import (
	"fmt"
	"math"
	"strings"
)

// Analysis is what a call path's configuration alone says about a storm.
// Its JSON shape is stable (docs/policy.md); a figure the configuration
// cannot give is null, and NoData says why.
type Analysis struct {
	Name       string   `json:"name"`
	Files      []string `json:"files"`
	Entry      string   `json:"entry"`
	Dependency string   `json:"dependency"`
	// DependencyP99S and DependencySuccess are the dependency as the path
	// describes it (degraded); the worst case assumes every attempt fails.
	DependencyP99S    *float64 `json:"dependency_p99_s"`
	DependencySuccess *float64 `json:"dependency_success"`
	RateRPS           *float64 `json:"rate_rps"`
	DeadlineS         *float64 `json:"deadline_s"`
	// WorstCaseAttempts is the product of every hop's attempts (any mix of
	// failures), and per failure class what the timeouts, backoff and
	// deadlines let happen when every attempt fails that way.
	WorstCaseAttempts Attempts `json:"worst_case_attempts"`
	// OccupancyS is the longest one request holds the entry's pool, over
	// the failure classes; OccupancyClass is the class that does it.
	OccupancyS          *float64 `json:"occupancy_s"`
	OccupancyClass      string   `json:"occupancy_class"`
	DemandedConcurrency *float64 `json:"demanded_concurrency"`
	Pool                string   `json:"pool,omitempty"`
	PoolSize            *int     `json:"pool_size"`
	// SaturationRPS is the rate of failing requests at which the entry's
	// pool is full: pool_size / occupancy_s.
	SaturationRPS      *float64    `json:"saturation_rps"`
	DependencyRPSWorst *float64    `json:"dependency_rps_worst"`
	Hops               []HopResult `json:"hops"`
	Findings           []Finding   `json:"findings"`
	NoData             []string    `json:"no_data,omitempty"`

	walks    []Walk
	path     *Path
	timeouts *walker // the timeout walk, for each hop's own schedule
}

// Attempts is worst_case_attempts.
type Attempts struct {
	Total   float64            `json:"total"`
	ByClass map[string]float64 `json:"by_class"`
}

// HopResult is one hop as the analysis read it, with its own pool's
// figures when it has one.
type HopResult struct {
	Service             string   `json:"service"`
	Format              string   `json:"format"`
	Source              string   `json:"source"`
	Attempts            int      `json:"attempts"`
	On                  []string `json:"on"`
	TimeoutS            *float64 `json:"timeout_s"`
	DeadlineS           *float64 `json:"deadline_s"`
	Backoff             string   `json:"backoff"`
	Budget              string   `json:"budget"`
	Breaker             string   `json:"breaker"`
	Pool                *Pool    `json:"pool,omitempty"`
	ArrivalRPSWorst     *float64 `json:"arrival_rps_worst,omitempty"`
	OccupancyS          *float64 `json:"occupancy_s,omitempty"`
	DemandedConcurrency *float64 `json:"demanded_concurrency,omitempty"`
	Notes               []string `json:"notes,omitempty"`
}

// Analyze computes the worst case of p and its findings.
func Analyze(p *Path) *Analysis {
	a := &Analysis{Name: p.Name, Files: p.Files, Entry: p.Hops[0].Service, Dependency: p.Dependency.Name, path: p,
		WorstCaseAttempts: Attempts{Total: 1, ByClass: map[string]float64{}}, Findings: []Finding{}}
	if p.Rate > 0 {
		a.RateRPS = ptr(round3(p.Rate))
	} else {
		a.NoData = append(a.NoData, "no rate: give rate: in the CallPath or --rate, for demanded_concurrency and dependency_rps_worst")
	}
	if p.Deadline > 0 {
		a.DeadlineS = ptr(round3(p.Deadline.D().Seconds()))
	}
	if p.Dependency.P99 > 0 {
		a.DependencyP99S = ptr(round3(p.Dependency.P99.D().Seconds()))
	}
	a.DependencySuccess = p.Dependency.Success
	for _, h := range p.Hops {
		if h.Retry.retries() {
			a.WorstCaseAttempts.Total *= float64(h.Retry.Attempts)
		}
	}
	occ := -1.0
	overflow := false
	for _, c := range Classes {
		w, wk := p.walk(c, false)
		if c == Timeout {
			a.timeouts = wk
		}
		a.walks = append(a.walks, w)
		overflow = overflow || w.Overflow
		a.WorstCaseAttempts.ByClass[c.String()] = w.Attempts
		if w.Occupancy > occ {
			occ, a.OccupancyClass = w.Occupancy, c.String()
		}
	}
	if overflow {
		a.NoData = append(a.NoData, "the path is too large to walk exactly: per-class figures are lower bounds")
	}
	a.OccupancyS = finite(occ)
	if a.OccupancyS == nil {
		a.NoData = append(a.NoData, "nothing bounds how long a request holds the entry: no timeout or deadline on the path")
	}
	if pl := p.Hops[0].Pool; pl != nil {
		a.Pool, a.PoolSize = pl.Name, ptr(pl.Capacity())
	} else {
		a.NoData = append(a.NoData, "the entry hop has no pool: give pool: {name, size} on the first hop for saturation_rps")
	}
	if a.RateRPS != nil && a.OccupancyS != nil {
		a.DemandedConcurrency = ptr(round3(p.Rate * *a.OccupancyS))
	}
	if a.PoolSize != nil && a.OccupancyS != nil && *a.OccupancyS > 0 {
		a.SaturationRPS = ptr(round3(float64(*a.PoolSize) / *a.OccupancyS))
	}
	if a.RateRPS != nil {
		a.DependencyRPSWorst = ptr(round3(p.Rate * a.WorstCaseAttempts.Total))
	}
	for i, h := range p.Hops {
		a.Hops = append(a.Hops, a.hopResult(i, h))
	}
	a.Findings = findings(a)
	return a
}

// Walks are the per-class walks behind the analysis, in Classes order.
func (a *Analysis) Walks() []Walk { return a.walks }

// Path is the analysed path.
func (a *Analysis) Path() *Path { return a.path }

func (a *Analysis) hopResult(i int, h *Hop) HopResult {
	r := HopResult{Service: h.Service, Format: h.Format, Source: h.Source, Attempts: h.Retry.Attempts, On: h.Retry.On.Names(),
		Backoff: h.Retry.Backoff.describe(), Budget: h.Retry.Budget.describe(), Breaker: "none", Pool: h.Pool, Notes: h.Notes}
	if !h.Retry.retries() {
		r.Backoff = "-"
	}
	if h.Timeout > 0 {
		r.TimeoutS = ptr(round3(h.Timeout.D().Seconds()))
	}
	if h.Deadline > 0 {
		r.DeadlineS = ptr(round3(h.Deadline.D().Seconds()))
	}
	if h.Breaker != nil {
		r.Breaker = h.Breaker.Kind + " (" + h.Breaker.Scope + ")"
	}
	if h.Pool == nil {
		return r
	}
	calls, hold := 0.0, 0.0
	for _, w := range a.walks {
		calls, hold = max(calls, w.Calls[i]), max(hold, w.Hold[i])
	}
	r.OccupancyS = finite(hold)
	if a.RateRPS != nil {
		r.ArrivalRPSWorst = ptr(round3(a.path.Rate * calls))
		if r.OccupancyS != nil {
			r.DemandedConcurrency = ptr(round3(a.path.Rate * calls * *r.OccupancyS))
		}
	}
	return r
}

func (b Backoff) describe() string {
	var s string
	switch b.Kind {
	case BackoffConstant:
		s = "constant " + b.Base.String()
	case BackoffExponential:
		s = fmt.Sprintf("exponential %s ×%g", b.Base, b.Multiplier)
		if b.Max > 0 {
			s += " ≤" + b.Max.String()
		}
	case BackoffEnvoy:
		s = fmt.Sprintf("envoy %s ≤%s", b.Base, b.Max)
	default:
		return "none"
	}
	switch b.Jitter {
	case JitterFull:
		s += ", full jitter"
	case JitterProportional:
		s += fmt.Sprintf(", ±%g%% jitter", b.JitterFactor*100)
	default:
		s += ", no jitter"
	}
	return s
}

func (b *Budget) describe() string {
	if b == nil {
		return "none"
	}
	switch b.Kind {
	case "tokens":
		return fmt.Sprintf("tokens %g, ratio %g (%s)", b.MaxTokens, b.Ratio, b.Scope)
	case "concurrency":
		return fmt.Sprintf("%d retries in flight (%s)", b.Max, b.Scope)
	}
	s := fmt.Sprintf("%g%% of requests", round3(b.Ratio*100))
	if b.PerSecond > 0 {
		s += fmt.Sprintf(" + %g/s", b.PerSecond)
	}
	return s + " (" + b.Scope + ")"
}

func ptr[T any](v T) *T { return &v }

// formatCount writes an attempt count without a needless decimal point.
func formatCount(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.3g", v)
}

// product writes "4 × 2 = 8" over the hops that retry.
func (a *Analysis) product() string {
	var parts []string
	for _, h := range a.path.Hops {
		if h.Retry.retries() {
			parts = append(parts, fmt.Sprintf("%s %d", h.Service, h.Retry.Attempts))
		}
	}
	return strings.Join(parts, " × ") + " = " + formatCount(a.WorstCaseAttempts.Total)
}
