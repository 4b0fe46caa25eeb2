package resilience

import (
	"context"
	"math"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"
)

func TestBackoffFullJitterDistribution(t *testing.T) {
	p := Policy{BackoffBase: 100 * time.Millisecond, BackoffCap: time.Second}
	rnd := SeededRand(1)
	const samples = 20000
	for n, ceiling := range []time.Duration{0, 100, 200, 400, 800, 1000, 1000, 1000} {
		if n == 0 {
			continue
		}
		ceiling *= time.Millisecond
		var sum, sumSq float64
		lowHalf := 0
		for range samples {
			d := p.Backoff(n, rnd)
			if d < 0 || d >= ceiling {
				t.Fatalf("retry %d: sleep %v outside [0, %v)", n, d, ceiling)
			}
			if d < ceiling/2 {
				lowHalf++
			}
			x := float64(d) / float64(ceiling)
			sum += x
			sumSq += x * x
		}
		// Uniform on [0,1): mean 1/2, variance 1/12.
		mean := sum / samples
		variance := sumSq/samples - mean*mean
		if math.Abs(mean-0.5) > 0.01 || math.Abs(variance-1.0/12) > 0.005 {
			t.Errorf("retry %d: normalised mean %.4f (want 0.5), variance %.4f (want %.4f)", n, mean, variance, 1.0/12)
		}
		if share := float64(lowHalf) / samples; math.Abs(share-0.5) > 0.02 {
			t.Errorf("retry %d: %.3f of sleeps below half the ceiling, want 0.5", n, share)
		}
	}
}

func TestBackoffCeilingNeverOverflows(t *testing.T) {
	p := Policy{BackoffBase: time.Hour, BackoffCap: 24 * time.Hour}
	for _, n := range []int{-3, 0, 1, 5, 40, 62, 63, 64, 1 << 30} {
		c := p.backoffCeiling(n)
		if c <= 0 || c > p.BackoffCap {
			t.Errorf("n=%d: ceiling %v outside (0, %v]", n, c, p.BackoffCap)
		}
	}
	if c := (&Policy{BackoffCap: time.Second}).backoffCeiling(3); c != 0 {
		t.Errorf("zero base: ceiling %v, want 0", c)
	}
}

type constRand float64

func (c constRand) Float64() float64 { return float64(c) }

func TestNext(t *testing.T) {
	p := Policy{MaxAttempts: 3, PerAttemptTimeout: 100 * time.Millisecond, BackoffBase: 40 * time.Millisecond,
		BackoffCap: time.Second, RetryOn: DefaultRetryOn}
	now := time.Unix(0, 0)
	half := constRand(0.5)
	for _, tc := range []struct {
		name       string
		n          int
		class      Class
		retryAfter time.Duration
		deadline   time.Time
		want       Decision
	}{
		{"transient, no deadline", 1, Unavailable, 0, time.Time{}, Decision{Retry: true, Sleep: 20 * time.Millisecond}},
		{"second retry doubles", 2, Reset, 0, time.Time{}, Decision{Retry: true, Sleep: 40 * time.Millisecond}},
		{"exhausted", 3, ConnectError, 0, time.Time{}, Decision{Stop: StopExhausted}},
		{"client error", 1, ClientError, 0, time.Time{}, Decision{Stop: StopNotRetryable}},
		{"429 without hint", 1, ThrottledNoHint, 0, time.Time{}, Decision{Stop: StopNotRetryable}},
		{"timeout is opt-in", 1, Timeout, 0, time.Time{}, Decision{Stop: StopNotRetryable}},
		{"500 is not transient", 1, ServerError, 0, time.Time{}, Decision{Stop: StopNotRetryable}},
		{"retry-after is a minimum", 1, Throttled, 2 * time.Second, time.Time{}, Decision{Retry: true, Sleep: 2 * time.Second}},
		{"fits exactly", 1, Unavailable, 0, now.Add(120 * time.Millisecond), Decision{Retry: true, Sleep: 20 * time.Millisecond}},
		{"does not fit", 1, Unavailable, 0, now.Add(119 * time.Millisecond), Decision{Stop: StopDeadline}},
		{"retry-after past deadline", 1, Throttled, time.Second, now.Add(time.Second), Decision{Stop: StopDeadline}},
	} {
		if got := p.Next(tc.n, tc.class, tc.retryAfter, now, tc.deadline, half); got != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestPolicyValidate(t *testing.T) {
	if err := DefaultPolicy().Validate(); err != nil {
		t.Fatalf("default policy: %v", err)
	}
	for _, p := range []Policy{
		{MaxAttempts: -1}, {PerAttemptTimeout: -time.Second}, {BackoffBase: time.Second, BackoffCap: time.Millisecond},
		{RetryOn: []Class{ClientError}}, {RetryOn: []Class{ThrottledNoHint}}, {RetryOn: []Class{Canceled}},
	} {
		p = p.WithDefaults()
		if err := p.Validate(); err == nil {
			t.Errorf("%+v validated", p)
		}
		if _, err := New(Config{Service: "a", Dependency: "b", Policy: p}); err == nil {
			t.Errorf("New accepted %+v", p)
		}
	}
}

// TestClientsAreNotInLockstep runs 100 clients, each with its own Retrier
// and the default random source, against a server that always fails, and
// compares the backoff schedules they chose.
func TestClientsAreNotInLockstep(t *testing.T) {
	srv := newServer(t, statuses(http.StatusServiceUnavailable))
	const clients, attempts = 100, 5
	schedules := make([][]time.Duration, clients)
	var wg sync.WaitGroup
	for i := range clients {
		var mu sync.Mutex
		r := newRetrier(t, Config{Policy: Policy{MaxAttempts: attempts},
			Sleep: func(_ context.Context, d time.Duration) error {
				mu.Lock()
				schedules[i] = append(schedules[i], d)
				mu.Unlock()
				return nil
			}})
		c := client(t, r)
		wg.Go(func() { _, _ = get(t, c, srv.URL) })
	}
	wg.Wait()
	if got := srv.hits.Load(); got != clients*attempts {
		t.Fatalf("server saw %d attempts, want %d", got, clients*attempts)
	}
	for i := range schedules {
		if len(schedules[i]) != attempts-1 {
			t.Fatalf("client %d slept %d times, want %d", i, len(schedules[i]), attempts-1)
		}
		for j := range i {
			if slices.Equal(schedules[i], schedules[j]) {
				t.Fatalf("clients %d and %d share the schedule %v", i, j, schedules[i])
			}
		}
	}
	// The first retries spread over the whole first backoff window
	// [0, 50ms): no 5ms slot holds more than a fifth of the clients.
	slots := map[time.Duration]int{}
	for _, s := range schedules {
		slots[s[0]/(5*time.Millisecond)]++
	}
	for slot, n := range slots {
		if n > clients/5 {
			t.Errorf("%d of %d clients retried in the same 5ms slot %d", n, clients, slot)
		}
	}
	// The check above can fail: two clients with the same seed do collide.
	p := DefaultPolicy()
	a, b := SeededRand(7), SeededRand(7)
	for n := 1; n < attempts; n++ {
		if p.Backoff(n, a) != p.Backoff(n, b) {
			t.Fatal("equal seeds gave different schedules")
		}
	}
}
