package resilience

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"time"
)

// Policy says how many attempts one logical request may make, how long each
// may take and how long to wait between them. Backoff is capped exponential
// with full jitter, always: a schedule without jitter keeps a fleet of
// clients in lockstep, which is the storm itself.
type Policy struct {
	// MaxAttempts counts the first attempt; 1 never retries. Default 3.
	MaxAttempts int
	// PerAttemptTimeout bounds one attempt, response body included. Default 1s.
	PerAttemptTimeout time.Duration
	// BackoffBase and BackoffCap shape the sleep before retry n:
	// uniform in [0, min(BackoffCap, BackoffBase·2^(n-1))). Defaults 50ms, 2s.
	BackoffBase, BackoffCap time.Duration
	// RetryOn lists the classes worth another attempt. Default
	// DefaultRetryOn. Timeout is opt-in: a timed-out attempt may still be
	// running on the server, so retrying it adds load exactly when the
	// dependency is slow; add it for idempotent calls whose timeout is above
	// the dependency's p99.
	RetryOn []Class
}

// DefaultRetryOn is the RetryOn of a Policy that names none: failures where
// the request did not reach the server or the server said "not now".
var DefaultRetryOn = []Class{ConnectError, Reset, Unavailable, Throttled}

// DefaultPolicy returns the defaults documented on Policy.
func DefaultPolicy() Policy {
	return Policy{MaxAttempts: 3, PerAttemptTimeout: time.Second, BackoffBase: 50 * time.Millisecond,
		BackoffCap: 2 * time.Second, RetryOn: slices.Clone(DefaultRetryOn)}
}

// WithDefaults fills every zero field from DefaultPolicy, as New does; a
// simulation calling Next directly starts from it.
func (p Policy) WithDefaults() Policy {
	d := DefaultPolicy()
	if p.MaxAttempts == 0 {
		p.MaxAttempts = d.MaxAttempts
	}
	if p.PerAttemptTimeout == 0 {
		p.PerAttemptTimeout = d.PerAttemptTimeout
	}
	if p.BackoffBase == 0 {
		p.BackoffBase = d.BackoffBase
	}
	if p.BackoffCap == 0 {
		p.BackoffCap = max(d.BackoffCap, p.BackoffBase)
	}
	if p.RetryOn == nil {
		p.RetryOn = d.RetryOn
	}
	return p
}

// Validate reports a policy that cannot be run as written.
func (p Policy) Validate() error {
	switch {
	case p.MaxAttempts < 1:
		return fmt.Errorf("max attempts %d: must be at least 1", p.MaxAttempts)
	case p.PerAttemptTimeout <= 0:
		return fmt.Errorf("per-attempt timeout %s: must be positive", p.PerAttemptTimeout)
	case p.BackoffBase < 0 || p.BackoffCap < p.BackoffBase:
		return fmt.Errorf("backoff base %s, cap %s: need 0 ≤ base ≤ cap", p.BackoffBase, p.BackoffCap)
	}
	for _, c := range p.RetryOn {
		if !c.retryable() {
			return fmt.Errorf("retry on %s: never retryable", c)
		}
	}
	return nil
}

// Retries reports whether a failure of class c may be retried.
func (p *Policy) Retries(c Class) bool { return slices.Contains(p.RetryOn, c) }

// Backoff returns the full-jitter sleep before retry n (1 for the retry
// after the first attempt): uniform in [0, min(BackoffCap, BackoffBase·2^(n-1))).
func (p *Policy) Backoff(n int, rnd Rand) time.Duration {
	return time.Duration(rnd.Float64() * float64(p.backoffCeiling(n)))
}

func (p *Policy) backoffCeiling(n int) time.Duration {
	shift := max(n-1, 0)
	if p.BackoffBase <= 0 {
		return 0
	}
	if shift >= 62 || p.BackoffBase > time.Duration(math.MaxInt64>>shift) {
		return p.BackoffCap
	}
	return min(p.BackoffCap, p.BackoffBase<<shift)
}

// StopReason says why a logical request made no further attempt.
type StopReason string

// Stop reasons.
const (
	StopNone         StopReason = ""
	StopNotRetryable StopReason = "not_retryable"
	StopExhausted    StopReason = "attempts_exhausted"
	StopDeadline     StopReason = "deadline"
	StopBudget       StopReason = "budget"
	StopBreaker      StopReason = "breaker_open"
)

// Decision is what to do after a failed attempt.
type Decision struct {
	Retry bool
	Sleep time.Duration // before the next attempt, when Retry
	Stop  StopReason    // why not, when !Retry
}

// Next decides, without side effects, what follows attempt number n (1 for
// the first) that failed with class c. A Retry-After asked by the server
// is a minimum sleep. A retry is refused when its sleep plus a full
// PerAttemptTimeout does not fit before deadline (zero: none): an attempt
// cut shorter than the timeout tuned for the dependency mostly fails and
// leaves the server working on abandoned requests.
func (p *Policy) Next(n int, c Class, retryAfter time.Duration, now, deadline time.Time, rnd Rand) Decision {
	switch {
	case !p.Retries(c):
		return Decision{Stop: StopNotRetryable}
	case n >= p.MaxAttempts:
		return Decision{Stop: StopExhausted}
	}
	sleep := max(p.Backoff(n, rnd), retryAfter)
	if !p.fits(now.Add(sleep), deadline) {
		return Decision{Stop: StopDeadline}
	}
	return Decision{Retry: true, Sleep: sleep}
}

// fits reports whether an attempt starting at start can run its full
// timeout before deadline.
func (p *Policy) fits(start, deadline time.Time) bool {
	return deadline.IsZero() || !start.Add(p.PerAttemptTimeout).After(deadline)
}

// Rand is the random source of jitter and load shedding; *rand.Rand of
// math/rand/v2 is one, but is not safe for concurrent use (see SeededRand).
type Rand interface {
	Float64() float64
}

// globalRand is math/rand/v2's process-wide source, safe for concurrent use
// and seeded differently in every process, so no two instances share a
// jitter schedule.
type globalRand struct{}

func (globalRand) Float64() float64 { return rand.Float64() }

// SeededRand returns a deterministic Rand, safe for concurrent use, for
// tests and simulations.
func SeededRand(seed uint64) Rand {
	return &lockedRand{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

type lockedRand struct {
	mu sync.Mutex
	r  *rand.Rand
}

func (l *lockedRand) Float64() float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.r.Float64()
}
