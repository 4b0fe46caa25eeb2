package resilience

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stormctl/stormctl/internal/testenv"
	"github.com/stormctl/stormctl/lever"
)

func startRedis(t *testing.T) (*testenv.Redis, *redis.Client) {
	t.Helper()
	srv := testenv.StartRedis(t, testenv.RedisOptions{})
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1, DialTimeout: 100 * time.Millisecond})
	t.Cleanup(func() { _ = c.Close() })
	return srv, c
}

var errDown = &ClassifiedError{Class: Unavailable, Err: errors.New("503")}

func fail(context.Context) (int, error)    { return 0, errDown }
func succeed(context.Context) (int, error) { return 1, nil }

// retries counts the retries of one logical request made with op.
func countRetries(t *testing.T, r *Retrier, op func(context.Context) (int, error)) int {
	t.Helper()
	n := 0
	_, _ = Do(context.Background(), r, func(ctx context.Context) (int, error) {
		n++
		return op(ctx)
	})
	return n - 1
}

// TestFleetBudgetIsShared: instances A and B serve healthy traffic while C
// calls a failing dependency. With one budget in Redis, A's and B's
// requests pay for C's retries; with a budget each, C gets only its own.
func TestFleetBudgetIsShared(t *testing.T) {
	_, rc := startRedis(t)
	budget := BudgetConfig{Ratio: 0.1, Burst: 20}
	const rounds = 300
	run := func(shared redis.Scripter) int {
		clock := newFakeClock()
		var fleet [3]*Retrier
		for i := range fleet {
			fleet[i] = newRetrier(t, Config{Redis: shared, Namespace: "fleet-test", Clock: clock.Now,
				Sleep: clock.Sleep, Budget: budget, Policy: Policy{MaxAttempts: 3}})
		}
		retriesC := 0
		for range rounds {
			countRetries(t, fleet[0], succeed)
			countRetries(t, fleet[1], succeed)
			retriesC += countRetries(t, fleet[2], fail)
		}
		return retriesC
	}
	shared := run(rc)
	// Every request of the fleet earns 0.1, plus the burst; deposits not yet
	// flushed (under one batch per instance) may be missing.
	limit := int(budget.Ratio*3*rounds + budget.Burst)
	if shared > limit || shared < limit-int(2*flushBatch*budget.Ratio)-1 {
		t.Errorf("shared budget: C made %d retries, want about %d and at most %d", shared, limit, limit)
	}
	own := run(nil)
	if ownLimit := int(budget.Ratio*rounds + budget.Burst); own > ownLimit {
		t.Errorf("local budgets: C made %d retries, more than its own %d", own, ownLimit)
	}
	if shared < 2*own {
		t.Errorf("shared budget gave C %d retries, local %d: the fleet's deposits did not reach C", shared, own)
	}
	key := BudgetKey(lever.NewKeys("fleet-test"), "checkout", "payments")
	if key != "stormctl:{fleet-test}:budget:checkout->payments" {
		t.Errorf("budget key %q", key)
	}
	if ttl := rc.PTTL(context.Background(), key).Val(); ttl <= 0 || ttl > budgetTTL {
		t.Errorf("budget key TTL %v", ttl)
	}
}

// TestFleetBudgetSurvivesRedisOutage: with Redis gone the budget falls back
// to a local one (bounded, not blocking), and is shared again on recovery.
func TestFleetBudgetSurvivesRedisOutage(t *testing.T) {
	srv, rc := startRedis(t)
	clock := newFakeClock()
	cfg := BudgetConfig{Ratio: 0.2, Burst: 5}
	r := newRetrier(t, Config{Redis: rc, Clock: clock.Now, Sleep: clock.Sleep, Budget: cfg})
	srv.Kill()
	start := time.Now()
	retries := 0
	for range 100 {
		retries += countRetries(t, r, fail)
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Errorf("100 requests took %v with Redis down", el)
	}
	if max := int(cfg.Burst + cfg.Ratio*100); retries > max || retries < max-2 {
		t.Errorf("%d retries with Redis down, want the local budget's %d", retries, max)
	}
	srv.Restart()
	clock.Advance(2 * redisBackoff)
	countRetries(t, r, fail)
	key := BudgetKey(lever.NewKeys(""), "checkout", "payments")
	if n, err := rc.Exists(context.Background(), key).Result(); err != nil || n != 1 {
		t.Errorf("budget not back in Redis after recovery: %d %v", n, err)
	}
}

// TestFleetProbeLimit: five instances whose breakers half-open in the same
// second send only FleetProbesPerSecond probes between them.
func TestFleetProbeLimit(t *testing.T) {
	srv, rc := startRedis(t)
	clock := newFakeClock()
	clock.Advance(time.Second - clock.Now().Sub(clock.Now().Truncate(time.Second)))
	var fleet [5]*Retrier
	for i := range fleet {
		fleet[i] = newRetrier(t, Config{Redis: rc, Namespace: "probes", Clock: clock.Now, Sleep: clock.Sleep,
			Policy: Policy{MaxAttempts: 1}, Breaker: BreakerConfig{ConsecutiveFailures: 1, OpenFor: time.Second,
				FleetProbesPerSecond: 2}})
		countRetries(t, fleet[i], fail)
		if s := fleet[i].Breaker().State(clock.Now()); s != Open {
			t.Fatalf("instance %d: breaker %s", i, s)
		}
	}
	probes := func() int {
		n := 0
		for _, r := range fleet {
			_, _ = Do(context.Background(), r, func(context.Context) (int, error) {
				n++
				// A canceled probe frees its slot and leaves the breaker half-open.
				return 0, &ClassifiedError{Class: Canceled}
			})
		}
		return n
	}
	clock.Advance(time.Second)
	if n := probes(); n != 2 {
		t.Errorf("%d probes in the first half-open second, want 2", n)
	}
	clock.Advance(time.Second)
	if n := probes(); n != 2 {
		t.Errorf("%d probes in the next second, want 2", n)
	}
	keys, _ := rc.Keys(context.Background(), "*probes*").Result()
	for _, k := range keys {
		if !strings.HasPrefix(k, "stormctl:{probes}:probes:payments:") {
			t.Errorf("unexpected probe key %q", k)
		}
	}
	// Without Redis each instance falls back to its own probe slot.
	srv.Kill()
	clock.Advance(time.Second)
	if n := probes(); n != 5 {
		t.Errorf("%d probes with Redis down, want one per instance (5)", n)
	}
}
