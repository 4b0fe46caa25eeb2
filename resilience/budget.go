package resilience

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// BudgetConfig sizes a retry budget (Finagle style): retries may be at most
// Ratio × logical requests, plus PerSecond retries every second so a
// low-traffic caller can still retry, with at most Burst retries banked.
type BudgetConfig struct {
	Ratio     float64 // tokens earned by each logical request; default 0.2
	PerSecond float64 // tokens earned each second regardless of traffic; default 10
	Burst     float64 // the most tokens held (≥ 1); default max(PerSecond, 1)
	Disabled  bool    // no budget: every retry the policy allows is sent
}

// DefaultBudget is Finagle's default: 20% of requests plus 10 retries/s.
func DefaultBudget() BudgetConfig { return BudgetConfig{Ratio: 0.2, PerSecond: 10, Burst: 10} }

// withDefaults returns DefaultBudget for the zero config and fills Burst.
func (c BudgetConfig) withDefaults() BudgetConfig {
	if c == (BudgetConfig{}) {
		return DefaultBudget()
	}
	if c.Burst == 0 {
		c.Burst = max(c.PerSecond, 1)
	}
	return c
}

// Validate reports a budget that cannot work as written.
func (c BudgetConfig) Validate() error {
	if c.Disabled {
		return nil
	}
	if c.Ratio < 0 || c.PerSecond < 0 || c.Burst < 1 {
		return fmt.Errorf("retry budget ratio %g, per second %g, burst %g: need ratio ≥ 0, per second ≥ 0, burst ≥ 1",
			c.Ratio, c.PerSecond, c.Burst)
	}
	return nil
}

// RetryBudget is consulted once per logical request (Request) and before
// every retry (Retry). Budget keeps one per process; RedisBudget shares one
// across every instance of a service.
type RetryBudget interface {
	Request(ctx context.Context, now time.Time)
	Retry(ctx context.Context, now time.Time) bool
}

// Budget is an in-process token bucket. Its methods take the time instead
// of reading a clock, so a simulation can drive it on a virtual clock.
type Budget struct {
	mu     sync.Mutex
	cfg    BudgetConfig
	tokens float64
	last   time.Time
}

// tokenEpsilon absorbs float error, so five deposits of 0.2 buy a retry.
const tokenEpsilon = 1e-9

// NewBudget returns a full bucket.
func NewBudget(cfg BudgetConfig) *Budget {
	cfg = cfg.withDefaults()
	return &Budget{cfg: cfg, tokens: cfg.Burst}
}

// Deposit records one logical request.
func (b *Budget) Deposit(now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refill(now)
	b.tokens = min(b.cfg.Burst, b.tokens+b.cfg.Ratio)
}

// TryRetry takes a token for one retry, if there is one.
func (b *Budget) TryRetry(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refill(now)
	if b.tokens < 1-tokenEpsilon {
		return false
	}
	b.tokens = max(b.tokens-1, 0)
	return true
}

// Tokens returns the retries the bucket would allow now.
func (b *Budget) Tokens(now time.Time) float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refill(now)
	return b.tokens
}

func (b *Budget) refill(now time.Time) {
	if b.last.IsZero() {
		b.last = now
		return
	}
	if el := now.Sub(b.last); el > 0 {
		b.tokens = min(b.cfg.Burst, b.tokens+el.Seconds()*b.cfg.PerSecond)
		b.last = now
	}
}

// Request implements RetryBudget.
func (b *Budget) Request(_ context.Context, now time.Time) { b.Deposit(now) }

// Retry implements RetryBudget.
func (b *Budget) Retry(_ context.Context, now time.Time) bool { return b.TryRetry(now) }
