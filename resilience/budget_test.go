package resilience

import (
	"math"
	"net/http"
	"testing"
	"time"
)

func TestBudgetBucket(t *testing.T) {
	now := time.Unix(0, 0)
	b := NewBudget(BudgetConfig{Ratio: 0.2, PerSecond: 10, Burst: 10})
	for i := range 10 {
		if !b.TryRetry(now) {
			t.Fatalf("retry %d refused from a full bucket", i+1)
		}
	}
	if b.TryRetry(now) {
		t.Fatal("retry allowed from an empty bucket")
	}
	// Five requests earn one retry.
	for range 5 {
		b.Deposit(now)
	}
	if !b.TryRetry(now) || b.TryRetry(now) {
		t.Fatal("five requests at 20% did not buy exactly one retry")
	}
	// The floor refills 10/s, never above Burst.
	if got := b.Tokens(now.Add(300 * time.Millisecond)); math.Abs(got-3) > 1e-9 {
		t.Errorf("after 300ms: %v tokens, want 3", got)
	}
	if got := b.Tokens(now.Add(time.Hour)); got != 10 {
		t.Errorf("after an hour: %v tokens, want the burst 10", got)
	}
	// A clock going backwards refills nothing.
	if got := b.Tokens(now); got != 10 {
		t.Errorf("clock went back: %v tokens", got)
	}
}

func TestBudgetConfig(t *testing.T) {
	if got := (BudgetConfig{}).withDefaults(); got != DefaultBudget() {
		t.Errorf("zero config: %+v", got)
	}
	if got := (BudgetConfig{Ratio: 0.1}).withDefaults(); got.Burst != 1 || got.PerSecond != 0 {
		t.Errorf("ratio only: %+v", got)
	}
	for _, c := range []BudgetConfig{{Ratio: -1}, {Ratio: 0.1, PerSecond: -1}, {Ratio: 0.1, Burst: 0.5}} {
		if c.withDefaults().Validate() == nil {
			t.Errorf("%+v validated", c)
		}
	}
}

// TestBudgetCapsRetriesUnderFullFailure sends 1000 logical requests to a
// dependency that always fails, through the real transport, and measures
// the retries that reached it.
func TestBudgetCapsRetriesUnderFullFailure(t *testing.T) {
	for _, ratio := range []float64{0.1, 0.2} {
		srv := newServer(t, statuses(http.StatusServiceUnavailable))
		clock := newFakeClock()
		r := newRetrier(t, Config{Clock: clock.Now, Sleep: clock.Sleep,
			Policy: Policy{MaxAttempts: 3}, Budget: BudgetConfig{Ratio: ratio, Burst: 1}})
		c := client(t, r)
		const requests = 1000
		for range requests {
			if _, err := get(t, c, srv.URL); err != nil {
				t.Fatal(err)
			}
		}
		retries := srv.hits.Load() - requests
		// The bucket starts full (the burst of 1 token), so the first
		// request's deposit is lost to the cap.
		want := int64(math.Floor(1 + ratio*(requests-1) + 1e-9))
		if retries != want {
			t.Errorf("ratio %.1f: %d retries for %d requests (%.3f), want %d", ratio, retries, requests,
				float64(retries)/requests, want)
		}
	}
}

// TestBudgetFloorAllowsRetriesAtLowTraffic: with the default budget a
// service sending one request a second can still retry every failure.
func TestBudgetFloorAllowsRetriesAtLowTraffic(t *testing.T) {
	srv := newServer(t, statuses(http.StatusServiceUnavailable))
	clock := newFakeClock()
	r := newRetrier(t, Config{Clock: clock.Now, Sleep: clock.Sleep, Budget: DefaultBudget()})
	c := client(t, r)
	for range 50 {
		clock.Advance(time.Second)
		if _, err := get(t, c, srv.URL); err != nil {
			t.Fatal(err)
		}
	}
	if got := srv.hits.Load(); got != 150 {
		t.Errorf("%d attempts for 50 requests at 1/s, want all 150", got)
	}
	if b, ok := r.Budget().(*Budget); !ok || b.Tokens(clock.Now()) < 0 {
		t.Errorf("budget %T", r.Budget())
	}
}
