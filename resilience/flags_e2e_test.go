package resilience

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/open-feature/go-sdk/openfeature"
	"github.com/open-feature/go-sdk/openfeature/isolated"
	"github.com/redis/go-redis/v9"

	"github.com/stormctl/stormctl/flags"
	"github.com/stormctl/stormctl/lever"
)

// writeLever applies (value != "") or releases a lever the way the control
// plane's scripts do: the lever key with its expiry, the index, the
// version, and the change published.
func writeLever(t *testing.T, c *redis.Client, keys lever.Keys, kind lever.Kind, target, value string) {
	t.Helper()
	ctx := context.Background()
	m := lever.Member(kind, target)
	v, err := c.HIncrBy(ctx, keys.Versions(), m, 1).Result()
	if err != nil {
		t.Fatal(err)
	}
	change := lever.Change{Op: lever.OpDel, Kind: kind, Target: target, Version: v}
	now := time.Now().Truncate(time.Millisecond)
	l := lever.Lever{Kind: kind, Target: target, Value: value, ActionID: "act-" + m, Actor: "oncall",
		Reason: "storm", CreatedAt: now, ExpiresAt: now.Add(10 * time.Minute), Version: v}
	if value != "" {
		change.Op, change.Lever = lever.OpSet, &l
	}
	raw, _ := json.Marshal(l)
	msg, _ := json.Marshal(change)
	_, err = c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		if value != "" {
			p.SetArgs(ctx, keys.Lever(kind, target), raw, redis.SetArgs{ExpireAt: l.ExpiresAt})
			p.ZAdd(ctx, keys.Index(), redis.Z{Score: float64(l.ExpiresAt.UnixMilli()), Member: m})
		} else {
			p.Del(ctx, keys.Lever(kind, target))
			p.ZRem(ctx, keys.Index(), m)
		}
		p.Publish(ctx, keys.Changes(), msg)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// waitFlag waits until the provider serves want for key, so the next
// request is the first one after the lever reached this instance.
func waitFlag(t *testing.T, c openfeature.IClient, key string, want bool, ec openfeature.EvaluationContext) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for c.Boolean(context.Background(), key, !want, ec) != want {
		if time.Now().After(deadline) {
			t.Fatalf("%s never became %v", key, want)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestLeversEndToEndThroughTheFlagsProvider: levers written to a real Redis
// reach the middleware through flags.NewProvider and the OpenFeature SDK.
func TestLeversEndToEndThroughTheFlagsProvider(t *testing.T) {
	_, rc := startRedis(t)
	keys := lever.NewKeys("e2e")
	api := isolated.NewAPI()
	if err := api.SetProviderAndWait(context.Background(), flags.NewProvider(rc, flags.Namespace("e2e"))); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = api.Shutdown(context.Background()) })
	of := api.NewClient()
	ec := openfeature.NewTargetlessEvaluationContext(map[string]any{flags.AttrService: "checkout", flags.AttrDependency: "payments"})

	srv := newServer(t, statuses(http.StatusServiceUnavailable))
	c := client(t, newRetrier(t, Config{Flags: of, Breaker: BreakerConfig{ConsecutiveFailures: 1000}}))
	attempts := func() (int64, error) {
		before := srv.hits.Load()
		_, err := get(t, c, srv.URL)
		return srv.hits.Load() - before, err
	}
	if n, err := attempts(); n != 3 || err != nil {
		t.Fatalf("no lever: %d attempts, %v", n, err)
	}

	// stormctl retries off checkout → one attempt; release → retries resume.
	writeLever(t, rc, keys, lever.Retries, "checkout", lever.ValueOff)
	waitFlag(t, of, flags.RetriesEnabled, false, ec)
	if n, _ := attempts(); n != 1 {
		t.Errorf("retries off: %d attempts, want 1", n)
	}
	writeLever(t, rc, keys, lever.Retries, "checkout", "")
	waitFlag(t, of, flags.RetriesEnabled, true, ec)
	if n, _ := attempts(); n != 3 {
		t.Errorf("released: %d attempts, want 3", n)
	}

	// A breaker forced open for the dependency fails fast, fleet-wide.
	writeLever(t, rc, keys, lever.Breaker, "payments", lever.ValueOpen)
	waitFlag(t, of, flags.BreakerForcedOpen, true, ec)
	if n, err := attempts(); n != 0 || !errors.Is(err, ErrBreakerOpen) {
		t.Errorf("forced open: %d attempts, %v", n, err)
	}
	writeLever(t, rc, keys, lever.Breaker, "payments", "")
	waitFlag(t, of, flags.BreakerForcedOpen, false, ec)
	if n, err := attempts(); n != 3 || err != nil {
		t.Errorf("breaker released: %d attempts, %v", n, err)
	}

	// Shed 100% at checkout's ingress, and the degraded mode.
	writeLever(t, rc, keys, lever.Shed, "checkout", "100")
	writeLever(t, rc, keys, lever.Degraded, "checkout", "rules-only")
	l := NewLevers(of, "checkout")
	deadline := time.Now().Add(2 * time.Second)
	for l.ShedPercent(context.Background()) != 100 || l.Degraded(context.Background()) != "rules-only" {
		if time.Now().After(deadline) {
			t.Fatal("shed and degraded levers never arrived")
		}
		time.Sleep(time.Millisecond)
	}
	rec := httptest.NewRecorder()
	Shed(http.NotFoundHandler(), ShedConfig{Service: "checkout", Flags: of}).
		ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	if rec.Code != http.StatusServiceUnavailable {
		t.Errorf("shed 100%%: status %d", rec.Code)
	}
}
