package flags_test

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/open-feature/go-sdk/openfeature"

	"github.com/stormctl/stormctl/flags"
	"github.com/stormctl/stormctl/internal/testenv"
	"github.com/stormctl/stormctl/lever"
)

func TestPushAppliesWithoutResync(t *testing.T) {
	_, rc, w := newRedis(t, testenv.RedisOptions{})
	c, ev := sdk(t, flags.NewProvider(rc, flags.ResyncInterval(time.Hour)))
	ctx, checkout := context.Background(), evalCtx("checkout", "payments")

	w.set(t, lever.Retries, "checkout", "off", time.Hour, true)
	d := ev.wait(t, openfeature.ProviderConfigChange, 5*time.Second)
	if want := []string{flags.RetriesEnabled, flags.RetriesMaxAttempts}; !slices.Equal(d.FlagChanges, want) {
		t.Errorf("changed flags = %v, want %v", d.FlagChanges, want)
	}
	if v, _ := c.BooleanValueDetails(ctx, flags.RetriesEnabled, true, checkout); v.Value || v.Reason != openfeature.TargetingMatchReason {
		t.Errorf("after retries off: %v %s", v.Value, v.Reason)
	}

	w.release(t, lever.Retries, "checkout")
	ev.wait(t, openfeature.ProviderConfigChange, 5*time.Second)
	if v, _ := c.BooleanValueDetails(ctx, flags.RetriesEnabled, false, checkout); !v.Value || v.Reason != openfeature.DefaultReason {
		t.Errorf("after release: %v %s", v.Value, v.Reason)
	}
}

func TestMissedMessageRepairedByResync(t *testing.T) {
	_, rc, w := newRedis(t, testenv.RedisOptions{})
	slow, _ := sdk(t, flags.NewProvider(rc, flags.ResyncInterval(time.Hour)))
	fast, ev := sdk(t, flags.NewProvider(rc, flags.ResyncInterval(200*time.Millisecond)))
	ctx, checkout := context.Background(), evalCtx("checkout", "")

	w.set(t, lever.Degraded, "checkout", "on", time.Hour, false)
	d := ev.wait(t, openfeature.ProviderConfigChange, 5*time.Second)
	if !slices.Equal(d.FlagChanges, []string{flags.DegradedMode}) {
		t.Errorf("changed flags = %v", d.FlagChanges)
	}
	if v := fast.String(ctx, flags.DegradedMode, "", checkout); v != "on" {
		t.Errorf("resyncing provider: degraded = %q, want on", v)
	}
	if v, _ := slow.StringValueDetails(ctx, flags.DegradedMode, "", checkout); v.Value != "" || v.Reason != openfeature.DefaultReason {
		t.Errorf("provider without resync saw an unpublished lever: %q %s", v.Value, v.Reason)
	}

	// A release whose message was lost.
	if err := rc.Del(ctx, w.keys.Lever(lever.Degraded, "checkout")).Err(); err != nil {
		t.Fatal(err)
	}
	ev.wait(t, openfeature.ProviderConfigChange, 5*time.Second)
	if v := fast.String(ctx, flags.DegradedMode, "x", checkout); v != "" {
		t.Errorf("after an unpublished release: degraded = %q", v)
	}
}

func TestExpiryAtExpiresAt(t *testing.T) {
	_, rc, w := newRedis(t, testenv.RedisOptions{})
	c, ev := sdk(t, flags.NewProvider(rc, flags.ResyncInterval(time.Hour)))
	ctx, checkout := context.Background(), evalCtx("checkout", "")

	l := w.set(t, lever.Shed, "checkout", "40", 600*time.Millisecond, true)
	ev.wait(t, openfeature.ProviderConfigChange, 5*time.Second)
	if v := c.Int(ctx, flags.ShedPercent, 0, checkout); v != 40 && time.Now().Before(l.ExpiresAt) {
		t.Fatalf("shed = %d before expiry, want 40", v)
	}
	time.Sleep(time.Until(l.ExpiresAt))
	if v, _ := c.IntValueDetails(ctx, flags.ShedPercent, 9, checkout); v.Value != 0 || v.Reason != openfeature.DefaultReason {
		t.Errorf("at ExpiresAt: shed = %d %s, want 0 DEFAULT", v.Value, v.Reason)
	}
	d := ev.wait(t, openfeature.ProviderConfigChange, 5*time.Second)
	if !slices.Equal(d.FlagChanges, []string{flags.ShedPercent}) {
		t.Errorf("expiry event flags = %v", d.FlagChanges)
	}
}

// The provider's clock decides, even while Redis still holds the lever.
func TestExpiryFollowsTheClock(t *testing.T) {
	_, rc, w := newRedis(t, testenv.RedisOptions{})
	var now atomic.Pointer[time.Time]
	start := time.Now()
	now.Store(&start)
	clock := func() time.Time { return *now.Load() }
	c, ev := sdk(t, flags.NewProvider(rc, flags.ResyncInterval(time.Hour), flags.Clock(clock)))
	ctx, checkout := context.Background(), evalCtx("checkout", "")

	l := w.set(t, lever.Autoscaling, "checkout", "frozen", time.Hour, true)
	ev.wait(t, openfeature.ProviderConfigChange, 5*time.Second)
	before := l.ExpiresAt.Add(-time.Millisecond)
	now.Store(&before)
	if !c.Boolean(ctx, flags.AutoscalingFrozen, false, checkout) {
		t.Error("frozen = false 1ms before ExpiresAt")
	}
	now.Store(&l.ExpiresAt)
	if v, _ := c.BooleanValueDetails(ctx, flags.AutoscalingFrozen, true, checkout); v.Value || v.Reason != openfeature.DefaultReason {
		t.Errorf("at ExpiresAt: frozen = %v %s", v.Value, v.Reason)
	}
}
