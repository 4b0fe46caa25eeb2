package resilience

import (
	"testing"
	"time"
)

func TestNextUnjittered(t *testing.T) {
	p := Policy{MaxAttempts: 4, PerAttemptTimeout: 200 * time.Millisecond, BackoffBase: 100 * time.Millisecond,
		BackoffCap: 300 * time.Millisecond, RetryOn: []Class{Timeout}}
	now := time.Unix(1000, 0)
	for n, want := range map[int]time.Duration{1: 100 * time.Millisecond, 2: 200 * time.Millisecond, 3: 300 * time.Millisecond} {
		d := p.NextUnjittered(n, Timeout, 0, now, time.Time{})
		if !d.Retry || d.Sleep != want {
			t.Errorf("retry %d: %+v, want a sleep of exactly %s", n, d, want)
		}
		// Next draws from [0, ceiling): the un-jittered sleep is its bound.
		if j := p.Next(n, Timeout, 0, now, time.Time{}, SeededRand(uint64(n))); j.Sleep >= want {
			t.Errorf("retry %d: jittered sleep %s not below the ceiling %s", n, j.Sleep, want)
		}
	}
	cases := []struct {
		name       string
		n          int
		c          Class
		retryAfter time.Duration
		deadline   time.Time
		want       Decision
	}{
		{"not retryable", 1, Unavailable, 0, time.Time{}, Decision{Stop: StopNotRetryable}},
		{"exhausted", 4, Timeout, 0, time.Time{}, Decision{Stop: StopExhausted}},
		{"retry-after is a minimum", 1, Timeout, time.Second, time.Time{}, Decision{Retry: true, Sleep: time.Second}},
		{"no room before the deadline", 2, Timeout, 0, now.Add(300 * time.Millisecond), Decision{Stop: StopDeadline}},
		{"just fits", 2, Timeout, 0, now.Add(400 * time.Millisecond), Decision{Retry: true, Sleep: 200 * time.Millisecond}},
	}
	for _, c := range cases {
		if got := p.NextUnjittered(c.n, c.c, c.retryAfter, now, c.deadline); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}
