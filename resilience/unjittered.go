package resilience

import "time"

// BackoffUnjittered returns the sleep before retry n of a schedule without
// jitter: exactly min(BackoffCap, BackoffBase·2^(n-1)), the ceiling of the
// range Backoff draws from. Services should not use it (clients that back
// off in lockstep are the storm); it exists so that a simulation can
// reproduce the clients that do.
func (p *Policy) BackoffUnjittered(n int) time.Duration { return p.backoffCeiling(n) }

// NextUnjittered decides like Next, with BackoffUnjittered as the sleep.
func (p *Policy) NextUnjittered(n int, c Class, retryAfter time.Duration, now, deadline time.Time) Decision {
	switch {
	case !p.Retries(c):
		return Decision{Stop: StopNotRetryable}
	case n >= p.MaxAttempts:
		return Decision{Stop: StopExhausted}
	}
	sleep := max(p.BackoffUnjittered(n), retryAfter)
	if !p.fits(now.Add(sleep), deadline) {
		return Decision{Stop: StopDeadline}
	}
	return Decision{Retry: true, Sleep: sleep}
}
