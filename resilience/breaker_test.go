package resilience

import (
	"errors"
	"net/http"
	"testing"
	"time"
)

func TestBreakerLifecycle(t *testing.T) {
	now := time.Unix(0, 0)
	var states []State
	b := NewBreaker("payments", BreakerConfig{ConsecutiveFailures: 3, OpenFor: 5 * time.Second}, nil)
	b.onChange = func(s State) { states = append(states, s) }
	allow := func() bool {
		t.Helper()
		probe, err := b.Allow(now)
		if probe {
			t.Fatal("closed breaker made a probe")
		}
		return err == nil
	}
	// Failures interrupted by a success do not open it.
	for _, c := range []Class{Unavailable, Timeout, Success, Reset, ConnectError, ClientError, Throttled} {
		if !allow() {
			t.Fatal("refused while closed")
		}
		b.Record(now, false, c)
	}
	if s := b.State(now); s != Closed {
		t.Fatalf("state %s after non-consecutive failures", s)
	}
	for range 3 {
		b.Record(now, false, ServerError)
	}
	_, err := b.Allow(now.Add(time.Second))
	var boe *BreakerOpenError
	if !errors.As(err, &boe) || !errors.Is(err, ErrBreakerOpen) || boe.Forced || !boe.Until.Equal(now.Add(5*time.Second)) {
		t.Fatalf("open breaker: %v", err)
	}
	// Half-open after OpenFor: one probe at a time.
	now = now.Add(5 * time.Second)
	probe, err := b.Allow(now)
	if !probe || err != nil {
		t.Fatalf("half-open: probe %v, %v", probe, err)
	}
	if _, err := b.Allow(now); !errors.Is(err, ErrBreakerOpen) {
		t.Fatalf("second concurrent probe admitted: %v", err)
	}
	// A failed probe opens it again for OpenFor.
	b.Record(now, true, Timeout)
	if _, err := b.Allow(now.Add(4 * time.Second)); !errors.Is(err, ErrBreakerOpen) {
		t.Fatal("failed probe did not reopen")
	}
	now = now.Add(5 * time.Second)
	probe, _ = b.Allow(now)
	// A canceled probe says nothing: the slot is freed, the state kept.
	b.Record(now, probe, Canceled)
	probe, err = b.Allow(now)
	if !probe || err != nil {
		t.Fatalf("slot not freed after a canceled probe: %v", err)
	}
	b.Record(now, true, Success)
	if !allow() || b.State(now) != Closed {
		t.Fatal("successful probe did not close")
	}
	want := []State{Open, HalfOpen, Open, HalfOpen, Closed}
	if len(states) != len(want) {
		t.Fatalf("transitions %v, want %v", states, want)
	}
	for i := range want {
		if states[i] != want[i] {
			t.Fatalf("transitions %v, want %v", states, want)
		}
	}
}

func TestBreakerFailureRate(t *testing.T) {
	now := time.Unix(0, 0)
	b := NewBreaker("payments", BreakerConfig{ConsecutiveFailures: 100, FailureRate: 0.5, MinRequests: 10,
		Window: 10 * time.Second}, nil)
	// 4 of 9: below the rate and below MinRequests.
	for i := range 9 {
		c := Success
		if i%2 == 1 {
			c = Unavailable
		}
		b.Record(now, false, c)
	}
	if b.State(now) != Closed {
		t.Fatal("opened below MinRequests")
	}
	// The window rolls over: the old counts are gone.
	now = now.Add(10 * time.Second)
	for range 9 {
		b.Record(now, false, Success)
	}
	b.Record(now, false, Unavailable)
	if b.State(now) != Closed {
		t.Fatal("opened at 1 failure in 10")
	}
	for range 7 {
		b.Record(now, false, Unavailable)
	}
	if b.State(now) != Closed {
		t.Fatal("opened at 8 of 17")
	}
	b.Record(now, false, Reset)
	if b.State(now) != Open {
		t.Fatal("did not open at 9 failures of 18 (≥ 50%)")
	}
}

func TestBreakerForced(t *testing.T) {
	now := time.Unix(0, 0)
	b := NewBreaker("payments", BreakerConfig{}, nil)
	b.SetForced(true)
	_, err := b.Allow(now)
	var boe *BreakerOpenError
	if !errors.As(err, &boe) || !boe.Forced || b.State(now) != ForcedOpen {
		t.Fatalf("forced: %v, state %s", err, b.State(now))
	}
	// Forced open never transitions by itself.
	if b.State(now.Add(time.Hour)) != ForcedOpen {
		t.Fatal("forced open changed by itself")
	}
	b.SetForced(false)
	if _, err := b.Allow(now); err != nil || b.State(now) != Closed {
		t.Fatalf("released: %v, %s", err, b.State(now))
	}
}

// TestBreakerThroughTransport: failures open the breaker, calls then fail
// fast without reaching the dependency, and a probe closes it again.
func TestBreakerThroughTransport(t *testing.T) {
	healthy := false
	srv := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
		if !healthy {
			w.WriteHeader(http.StatusBadGateway)
		}
	})
	clock := newFakeClock()
	r := newRetrier(t, Config{Clock: clock.Now, Sleep: clock.Sleep, Policy: Policy{MaxAttempts: 3},
		Breaker: BreakerConfig{ConsecutiveFailures: 5, OpenFor: 10 * time.Second}})
	c := client(t, r)
	// 3 attempts, then 2 more and the breaker opens: the second request
	// stops retrying into it and returns the last response.
	for range 2 {
		resp, err := get(t, c, srv.URL)
		if err != nil || resp.StatusCode != http.StatusBadGateway {
			t.Fatalf("%v %v", resp, err)
		}
	}
	if got := srv.hits.Load(); got != 5 {
		t.Fatalf("%d attempts before the breaker opened, want 5", got)
	}
	_, err := get(t, c, srv.URL)
	if !errors.Is(err, ErrBreakerOpen) || srv.hits.Load() != 5 {
		t.Fatalf("open breaker: %v, %d attempts", err, srv.hits.Load())
	}
	healthy = true
	clock.Advance(10 * time.Second)
	if resp, err := get(t, c, srv.URL); err != nil || resp.StatusCode != 200 {
		t.Fatalf("probe: %v %v", resp, err)
	}
	if r.Breaker().State(clock.Now()) != Closed {
		t.Fatal("breaker not closed after a good probe")
	}
}
