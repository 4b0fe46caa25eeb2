package flags_test

import (
	"context"
	"testing"
	"time"

	"github.com/open-feature/go-sdk/openfeature"
	"go.uber.org/goleak"

	"github.com/stormctl/stormctl/flags"
	"github.com/stormctl/stormctl/internal/testenv"
	"github.com/stormctl/stormctl/lever"
)

// noLeaks checks, after every other cleanup of the test, that no goroutine
// started during it is left.
func noLeaks(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
}

func TestOutageStaleErrorAndRecovery(t *testing.T) {
	noLeaks(t)
	const staleAfter, errorAfter = 500 * time.Millisecond, 1500 * time.Millisecond
	srv, rc, w := newRedis(t, testenv.RedisOptions{Persist: true})
	w.set(t, lever.Retries, "checkout", "off", time.Hour, true)
	p := flags.NewProvider(rc, flags.ResyncInterval(time.Hour), flags.StaleAfter(staleAfter),
		flags.ErrorAfter(errorAfter), flags.Heartbeat(100*time.Millisecond), flags.FailSafe(flags.DegradedMode, "on"))
	c, ev := sdk(t, p)
	ctx, checkout := context.Background(), evalCtx("checkout", "payments")
	type got struct {
		retries, shed, degraded any
		reason                  openfeature.Reason
	}
	eval := func() got {
		r, _ := c.BooleanValueDetails(ctx, flags.RetriesEnabled, true, checkout)
		s, _ := c.IntValueDetails(ctx, flags.ShedPercent, 99, checkout)
		d, _ := c.StringValueDetails(ctx, flags.DegradedMode, "x", checkout)
		return got{r.Value, s.Value, d.Value, r.Reason}
	}
	if g := eval(); g != (got{false, int64(0), "", openfeature.TargetingMatchReason}) {
		t.Fatalf("live: %+v", g)
	}
	// Written without a message: only a resync can bring it.
	w.set(t, lever.Shed, "checkout", "30", time.Hour, false)

	killed := time.Now()
	srv.Kill()
	eventually(t, staleAfter, "reason CACHED right after the connection is lost", func() bool {
		return eval().reason == openfeature.CachedReason
	})
	// Past each grace period: the event, the client's state, and the
	// snapshot still served, with the fail-safe in place of degraded.
	for _, step := range []struct {
		event openfeature.EventType
		grace time.Duration
		state openfeature.State
	}{
		{openfeature.ProviderStale, staleAfter, openfeature.StaleState},
		{openfeature.ProviderError, errorAfter, openfeature.ErrorState},
	} {
		ev.wait(t, step.event, 5*time.Second)
		if d := time.Since(killed); d < step.grace {
			t.Errorf("%s after %s, before the %s grace period", step.event, d, step.grace)
		}
		if c.State() != step.state {
			t.Errorf("client state %s, want %s", c.State(), step.state)
		}
		if g := eval(); g != (got{false, int64(0), "on", flags.ReasonStale}) {
			t.Errorf("%s: %+v, want the snapshot with degraded fail-safe on", step.state, g)
		}
	}

	srv.Restart()
	ev.wait(t, openfeature.ProviderReady, 10*time.Second)
	if c.State() != openfeature.ReadyState {
		t.Errorf("client state %s, want READY", c.State())
	}
	if g := eval(); g != (got{false, int64(30), "", openfeature.TargetingMatchReason}) {
		t.Errorf("recovered: %+v, want the resynced levers and no fail-safe", g)
	}
}

func TestInitWhileRedisDown(t *testing.T) {
	noLeaks(t)
	srv, rc, _ := newRedis(t, testenv.RedisOptions{})
	srv.Kill()
	p := flags.NewProvider(rc, flags.ErrorAfter(300*time.Millisecond), flags.FailSafe(flags.DegradedMode, "on"))
	c, ev, err := sdkInit(t, p)
	if err == nil {
		t.Fatal("init succeeded without Redis")
	}
	if c.State() != openfeature.ErrorState {
		t.Errorf("client state %s, want ERROR", c.State())
	}
	ctx, checkout := context.Background(), evalCtx("checkout", "")
	if d, _ := c.StringValueDetails(ctx, flags.DegradedMode, "", checkout); d.Value != "on" || d.Reason != flags.ReasonStale {
		t.Errorf("fail-safe before any sync: %q %s", d.Value, d.Reason)
	}
	if d, _ := c.BooleanValueDetails(ctx, flags.RetriesEnabled, true, checkout); !d.Value || d.ErrorCode != openfeature.ProviderNotReadyCode {
		t.Errorf("no snapshot: %v %s, want the caller's default and PROVIDER_NOT_READY", d.Value, d.ErrorCode)
	}
	srv.Restart()
	ev.wait(t, openfeature.ProviderReady, 10*time.Second)
	if d, _ := c.StringValueDetails(ctx, flags.DegradedMode, "x", checkout); d.Value != "" || d.Reason != openfeature.DefaultReason {
		t.Errorf("after recovery: %q %s", d.Value, d.Reason)
	}
}
