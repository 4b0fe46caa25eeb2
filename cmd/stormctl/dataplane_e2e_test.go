package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/open-feature/go-sdk/openfeature"
	"github.com/open-feature/go-sdk/openfeature/isolated"
	"github.com/redis/go-redis/v9"

	"github.com/stormctl/stormctl/flags"
	"github.com/stormctl/stormctl/internal/iostreams"
	"github.com/stormctl/stormctl/internal/testenv"
	"github.com/stormctl/stormctl/resilience"
)

// TestRetriesOffReachesTheMiddleware is the data plane end to end: a
// responder runs `stormctl retries off checkout->payments` (guards, evidence
// from a real Prometheus, the Lua apply on a real redis-server), a checkout
// client built on resilience and the flags provider makes one attempt on its
// next request, and after `stormctl action release` retries resume.
func TestRetriesOffReachesTheMiddleware(t *testing.T) {
	prom := testenv.StartPrometheus(t, testenv.PromOptions{OpenMetrics: stormFixture(fixtureEnd())})
	rs := testenv.StartRedis(t, testenv.RedisOptions{})
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte("contexts:\n  t:\n    redis: {namespace: e2e}\ncurrent-context: t\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("STORMCTL_CONFIG", cfg)
	t.Setenv("STORMCTL_PROMETHEUS_URL", prom.URL)
	t.Setenv("STORMCTL_REDIS_URL", rs.URL("", ""))
	t.Setenv("STORMCTL_ACTOR", "alice")
	t.Setenv("XDG_STATE_HOME", t.TempDir())

	// The checkout service: the flags provider on its own connection, and
	// the retrying transport in front of a payments server that always 503s.
	rc := redis.NewClient(&redis.Options{Addr: rs.Addr})
	t.Cleanup(func() { _ = rc.Close() })
	api := isolated.NewAPI()
	if err := api.SetProviderAndWait(context.Background(), flags.NewProvider(rc, flags.Namespace("e2e"))); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = api.Shutdown(context.Background()) })
	of := api.NewClient()
	retrier, err := resilience.New(resilience.Config{Service: "checkout", Dependency: "payments", Flags: of,
		Policy:  resilience.Policy{MaxAttempts: 3, BackoffBase: time.Millisecond, BackoffCap: 2 * time.Millisecond},
		Breaker: resilience.BreakerConfig{ConsecutiveFailures: 1000}})
	if err != nil {
		t.Fatal(err)
	}
	var hits atomic.Int64
	payments := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(payments.Close)
	client := &http.Client{Transport: &resilience.Transport{Base: http.DefaultTransport, Retrier: retrier}}
	attempts := func() int64 {
		before := hits.Load()
		resp, err := client.Get(payments.URL)
		if err == nil {
			resp.Body.Close()
		}
		return hits.Load() - before
	}
	ec := openfeature.NewTargetlessEvaluationContext(map[string]any{flags.AttrService: "checkout", flags.AttrDependency: "payments"})
	waitRetries := func(enabled bool) {
		t.Helper()
		deadline := time.Now().Add(2 * time.Second)
		for of.Boolean(context.Background(), flags.RetriesEnabled, !enabled, ec) != enabled {
			if time.Now().After(deadline) {
				t.Fatalf("the provider never saw retries enabled=%v", enabled)
			}
			time.Sleep(time.Millisecond)
		}
	}

	if n := attempts(); n != 3 {
		t.Fatalf("before the lever: %d attempts, want 3", n)
	}
	io, _, out, errOut := iostreams.Test()
	if code := Main([]string{"retries", "off", "checkout->payments", "--ttl", "10m", "--reason", "amplification 4x", "--yes", "-o", "json"}, io); code != 0 {
		t.Fatalf("retries off: exit %d\n%s", code, errOut)
	}
	var applied struct {
		ActionID string `json:"action_id"`
	}
	if err := json.Unmarshal(out.Bytes(), &applied); err != nil || applied.ActionID == "" {
		t.Fatalf("apply output has no action_id: %v\n%s", err, out)
	}
	waitRetries(false)
	if n := attempts(); n != 1 {
		t.Errorf("retries off: %d attempts, want 1", n)
	}

	io, _, _, errOut = iostreams.Test()
	if code := Main([]string{"action", "release", applied.ActionID, "--reason", "gateway recovered", "--yes"}, io); code != 0 {
		t.Fatalf("release: exit %d\n%s", code, errOut)
	}
	waitRetries(true)
	if n := attempts(); n != 3 {
		t.Errorf("released: %d attempts, want 3", n)
	}
}
