package resilience

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/open-feature/go-sdk/openfeature"
	"github.com/redis/go-redis/v9"

	"github.com/stormctl/stormctl/lever"
)

// Config builds a Retrier for calls from Service to Dependency. Zero
// fields take the documented defaults, so the smallest config names the
// two and the flags client.
type Config struct {
	Service, Dependency string
	Policy              Policy        // zero fields from DefaultPolicy
	Budget              BudgetConfig  // zero: DefaultBudget
	Breaker             BreakerConfig // zero fields from the defaults on BreakerConfig
	// Redis, when set, makes the budget and the half-open probe limit
	// fleet-wide, under the control-plane Namespace's keys.
	Redis     redis.Scripter
	Namespace string
	// Flags reads the levers; nil means no levers.
	Flags   openfeature.IClient
	Metrics *Metrics
	// Clock, Rand and Sleep default to the real clock, math/rand/v2's
	// global source and a timer; tests and simulations replace them.
	Clock func() time.Time
	Rand  Rand
	Sleep func(ctx context.Context, d time.Duration) error
}

// Retrier runs logical requests to one dependency: attempts under the
// policy, the budget, the breaker and the levers. It is safe for
// concurrent use; make one per (service, dependency) and share it.
type Retrier struct {
	service, dependency string
	policy              Policy
	budget              RetryBudget // nil: no budget
	breaker             *Breaker    // nil: no breaker
	levers              *Levers
	evalCtx             openfeature.EvaluationContext
	metrics             *depMetrics
	clock               func() time.Time
	rnd                 Rand
	sleep               func(ctx context.Context, d time.Duration) error
}

// New validates cfg and returns its Retrier.
func New(cfg Config) (*Retrier, error) {
	if cfg.Service == "" || cfg.Dependency == "" {
		return nil, errors.New("resilience: service and dependency are required")
	}
	p := cfg.Policy.WithDefaults()
	bc := cfg.Budget.withDefaults()
	brc := cfg.Breaker.withDefaults()
	for _, err := range []error{p.Validate(), bc.Validate(), brc.Validate()} {
		if err != nil {
			return nil, fmt.Errorf("resilience %s->%s: %w", cfg.Service, cfg.Dependency, err)
		}
	}
	r := &Retrier{service: cfg.Service, dependency: cfg.Dependency, policy: p,
		levers: NewLevers(cfg.Flags, cfg.Service), metrics: cfg.Metrics.dependency(cfg.Service, cfg.Dependency),
		clock: cfg.Clock, rnd: cfg.Rand, sleep: cfg.Sleep}
	r.evalCtx = r.levers.dependencyContext(cfg.Dependency)
	if r.clock == nil {
		r.clock = time.Now
	}
	if r.rnd == nil {
		r.rnd = globalRand{}
	}
	if r.sleep == nil {
		r.sleep = sleepCtx
	}
	keys := lever.NewKeys(cfg.Namespace)
	switch {
	case bc.Disabled:
	case cfg.Redis != nil:
		r.budget = NewRedisBudget(cfg.Redis, keys, cfg.Service, cfg.Dependency, bc)
	default:
		r.budget = NewBudget(bc)
	}
	if !brc.Disabled {
		var lim ProbeLimiter
		if cfg.Redis != nil {
			lim = NewRedisProbeLimiter(cfg.Redis, keys, brc.FleetProbesPerSecond)
		}
		r.breaker = NewBreaker(cfg.Dependency, brc, lim)
		r.breaker.onChange = r.metrics.setState
	}
	return r, nil
}

// Policy returns the policy in force when no lever applies.
func (r *Retrier) Policy() Policy {
	p := r.policy
	p.RetryOn = slices.Clone(p.RetryOn)
	return p
}

// Budget returns the retry budget, nil when disabled.
func (r *Retrier) Budget() RetryBudget { return r.budget }

// Breaker returns the dependency's breaker, nil when disabled.
func (r *Retrier) Breaker() *Breaker { return r.breaker }

// Levers returns the service's levers, e.g. for Degraded.
func (r *Retrier) Levers() *Levers { return r.levers }

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Do runs op as one logical request: attempts under the retrier's policy,
// budget, breaker and levers. Each attempt gets its own context with the
// per-attempt timeout inside ctx's deadline. It returns the last attempt's
// result, or a *BreakerOpenError when the breaker refused the first
// attempt (or refused a retry). A nil Retrier runs op once.
func Do[T any](ctx context.Context, r *Retrier, op func(context.Context) (T, error)) (T, error) {
	if r == nil {
		return op(ctx)
	}
	return run(ctx, r, 0, op, func(_ T, err error, now time.Time) judgement {
		return judgement{class: Classify(err, nil), retryAfter: retryAfter(err, nil, now)}
	}, func(v T, cancel context.CancelFunc, _ bool) T {
		cancel()
		return v
	})
}

// judgement is what run learns from one attempt.
type judgement struct {
	class      Class
	retryAfter time.Duration
	shed       bool // the server shed it at ingress
}

// run is the attempt loop shared by Do and Transport. judge classifies an
// attempt; release disposes of an attempt's result and its context, final
// when the result goes back to the caller. maxAttempts > 0 caps the policy.
func run[T any](ctx context.Context, r *Retrier, maxAttempts int, op func(context.Context) (T, error),
	judge func(T, error, time.Time) judgement, release func(T, context.CancelFunc, bool) T) (T, error) {
	var zero T
	r.metrics.request()
	now := r.clock()
	lev := r.levers.read(ctx, r.evalCtx, r.policy.MaxAttempts)
	p := r.policy
	p.MaxAttempts = lev.MaxAttempts
	if maxAttempts > 0 {
		p.MaxAttempts = min(p.MaxAttempts, maxAttempts)
	}
	if r.budget != nil {
		r.budget.Request(ctx, now)
	}
	if r.breaker != nil {
		r.breaker.SetForced(lev.ForcedOpen)
	}
	deadline, _ := ctx.Deadline()
	for n := 1; ; n++ {
		if err := ctx.Err(); err != nil {
			return zero, err
		}
		now = r.clock()
		// Re-checked here because a timer can fire later than asked.
		if n > 1 && !p.fits(now, deadline) {
			return zero, fmt.Errorf("%s->%s: no time left for attempt %d: %w", r.service, r.dependency, n, context.DeadlineExceeded)
		}
		probe := false
		if r.breaker != nil {
			var err error
			if probe, err = r.breaker.Allow(now); err != nil {
				r.metrics.attempt(OutcomeBreakerOpen, 0)
				return zero, err
			}
		}
		actx, cancel := context.WithTimeout(ctx, p.PerAttemptTimeout)
		v, err := op(actx)
		end := r.clock()
		j := judge(v, err, end)
		if j.class != Success && errors.Is(ctx.Err(), context.Canceled) {
			j.class = Canceled
		}
		outcome := j.class.outcome()
		if j.shed {
			outcome = OutcomeShed
		}
		r.metrics.attempt(outcome, end.Sub(now).Seconds())
		if r.breaker != nil {
			r.breaker.Record(end, probe, j.class)
		}
		if j.class == Success {
			return release(v, cancel, true), err
		}
		d := p.Next(n, j.class, j.retryAfter, end, deadline, r.rnd)
		if d.Retry && r.breaker != nil && r.breaker.isOpen(end) {
			d = Decision{Stop: StopBreaker}
		}
		// The budget is asked last, so a retry that would not be sent
		// anyway spends no token.
		if d.Retry && r.budget != nil && !r.budget.Retry(ctx, end) {
			d = Decision{Stop: StopBudget}
		}
		if !d.Retry {
			return release(v, cancel, true), err
		}
		release(v, cancel, false)
		r.metrics.retry(j.class)
		if serr := r.sleep(ctx, d.Sleep); serr != nil {
			return zero, serr
		}
	}
}
