package resilience

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/open-feature/go-sdk/openfeature"
	"github.com/open-feature/go-sdk/openfeature/isolated"
	"github.com/open-feature/go-sdk/openfeature/memprovider"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/stormctl/stormctl/flags"
)

// levers maps flag key → lever target → value; targets resolve like the
// flags provider: "service->dependency", then "service", then "dependency".
type levers map[string]map[string]any

func (l levers) flags() map[string]memprovider.InMemoryFlag {
	out := map[string]memprovider.InMemoryFlag{}
	for key, targets := range l {
		eval := func(_ memprovider.InMemoryFlag, fc openfeature.FlattenedContext) (any, openfeature.ProviderResolutionDetail) {
			svc, _ := fc[flags.AttrService].(string)
			dep, _ := fc[flags.AttrDependency].(string)
			for _, target := range []string{svc + "->" + dep, svc, dep} {
				if v, ok := targets[target]; ok {
					return v, openfeature.ProviderResolutionDetail{Reason: openfeature.TargetingMatchReason}
				}
			}
			return nil, openfeature.ProviderResolutionDetail{Reason: openfeature.DefaultReason}
		}
		out[key] = memprovider.InMemoryFlag{Key: key, State: memprovider.Enabled, ContextEvaluator: &eval}
	}
	return out
}

// newFlags returns an OpenFeature client of an isolated API over an
// in-memory provider serving l.
func newFlags(t *testing.T, l levers) (openfeature.IClient, *memprovider.InMemoryProvider) {
	t.Helper()
	api := isolated.NewAPI()
	p := memprovider.NewInMemoryProvider(l.flags())
	if err := api.SetProviderAndWait(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = api.Shutdown(context.Background()) })
	return api.NewClient(), p
}

func TestLeverRetriesOffMakesOneAttempt(t *testing.T) {
	srv := newServer(t, statuses(http.StatusServiceUnavailable))
	of, provider := newFlags(t, levers{})
	checkout := client(t, newRetrier(t, Config{Flags: of}))
	search := client(t, newRetrier(t, Config{Service: "search", Dependency: "payments", Flags: of}))
	attempts := func(c *http.Client) int64 {
		t.Helper()
		before := srv.hits.Load()
		if _, err := get(t, c, srv.URL); err != nil {
			t.Fatal(err)
		}
		return srv.hits.Load() - before
	}
	if n := attempts(checkout); n != 3 {
		t.Fatalf("no lever: %d attempts, want 3", n)
	}
	provider.UpdateFlags(levers{flags.RetriesEnabled: {"checkout": false}}.flags())
	if n := attempts(checkout); n != 1 {
		t.Errorf("retries off for checkout: %d attempts, want 1", n)
	}
	if n := attempts(search); n != 3 {
		t.Errorf("retries off for checkout: search made %d attempts, want 3", n)
	}
	provider.UpdateFlags(levers{}.flags())
	if n := attempts(checkout); n != 3 {
		t.Errorf("lever released: %d attempts, want 3", n)
	}
}

func TestLeverMaxAttemptsCaps(t *testing.T) {
	srv := newServer(t, statuses(http.StatusServiceUnavailable))
	of, provider := newFlags(t, levers{})
	c := client(t, newRetrier(t, Config{Flags: of}))
	for _, tc := range []struct {
		cap  any
		want int64
	}{{2, 2}, {int64(1), 1}, {10, 3}, {0, 1}, {-4, 1}} {
		provider.UpdateFlags(levers{flags.RetriesMaxAttempts: {"checkout->payments": tc.cap}}.flags())
		before := srv.hits.Load()
		if _, err := get(t, c, srv.URL); err != nil {
			t.Fatal(err)
		}
		if n := srv.hits.Load() - before; n != tc.want {
			t.Errorf("cap %v: %d attempts, want %d", tc.cap, n, tc.want)
		}
	}
}

func TestLeverForcedOpenFailsFast(t *testing.T) {
	srv := newServer(t, statuses(http.StatusOK))
	of, provider := newFlags(t, levers{flags.BreakerForcedOpen: {"payments": true}})
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	r := newRetrier(t, Config{Flags: of, Metrics: m, Breaker: BreakerConfig{ConsecutiveFailures: 5}})
	c := client(t, r)
	state := func(s State) float64 {
		return testutil.ToFloat64(m.BreakerState.WithLabelValues("checkout", "payments", s.String()))
	}

	_, err = get(t, c, srv.URL)
	var boe *BreakerOpenError
	if !errors.Is(err, ErrBreakerOpen) || !errors.As(err, &boe) || !boe.Forced || boe.Dependency != "payments" {
		t.Fatalf("forced open: err %v", err)
	}
	if srv.hits.Load() != 0 {
		t.Fatalf("forced open: %d requests reached the dependency", srv.hits.Load())
	}
	if state(ForcedOpen) != 1 || state(Closed) != 0 {
		t.Errorf("breaker state gauge: forced_open %v, closed %v", state(ForcedOpen), state(Closed))
	}
	provider.UpdateFlags(levers{}.flags())
	if resp, err := get(t, c, srv.URL); err != nil || resp.StatusCode != 200 {
		t.Fatalf("released: %v %v", resp, err)
	}
	if state(ForcedOpen) != 0 || state(Closed) != 1 {
		t.Errorf("after release: forced_open %v, closed %v", state(ForcedOpen), state(Closed))
	}
}

func TestLeverDegradedAndShedPercent(t *testing.T) {
	of, provider := newFlags(t, levers{flags.DegradedMode: {"checkout": "rules-only"}, flags.ShedPercent: {"checkout": 30}})
	l := NewLevers(of, "checkout")
	ctx := context.Background()
	if got := l.Degraded(ctx); got != "rules-only" {
		t.Errorf("degraded %q", got)
	}
	if got := l.ShedPercent(ctx); got != 30 {
		t.Errorf("shed %d", got)
	}
	if got := NewLevers(of, "search").Degraded(ctx); got != "" {
		t.Errorf("search degraded %q", got)
	}
	for in, want := range map[int]int{150: 100, -5: 0} {
		provider.UpdateFlags(levers{flags.ShedPercent: {"checkout": in}}.flags())
		if got := l.ShedPercent(ctx); got != want {
			t.Errorf("shed lever %d read as %d, want %d", in, got, want)
		}
	}
	// No client, or a flag of the wrong type, reads as no lever.
	none := NewLevers(nil, "checkout")
	if none.Degraded(ctx) != "" || none.ShedPercent(ctx) != 0 {
		t.Error("nil client read a lever")
	}
	if s := none.Dependency(ctx, "payments", 3); !s.RetriesEnabled || s.MaxAttempts != 3 || s.ForcedOpen {
		t.Errorf("nil client: %+v", s)
	}
	provider.UpdateFlags(levers{flags.RetriesEnabled: {"checkout": "no"}}.flags())
	if s := l.Dependency(ctx, "payments", 3); !s.RetriesEnabled || s.MaxAttempts != 3 {
		t.Errorf("mistyped lever: %+v", s)
	}
}
