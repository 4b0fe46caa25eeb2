package flagd_test

import (
	"context"
	"testing"
	"time"

	gofd "github.com/open-feature/go-sdk-contrib/providers/flagd/pkg"
	"github.com/open-feature/go-sdk/openfeature"
	"github.com/open-feature/go-sdk/openfeature/isolated"

	"github.com/stormctl/stormctl/flags/flagd"
	"github.com/stormctl/stormctl/lever"
)

// goClient is an OpenFeature client on the official Go flagd provider.
func goClient(t *testing.T, opts ...gofd.ProviderOption) openfeature.IClient {
	t.Helper()
	p, err := gofd.NewProvider(append([]gofd.ProviderOption{gofd.WithHost("127.0.0.1"), gofd.WithoutCache()}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	api := isolated.NewAPI()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := api.SetProviderAndWait(ctx, p); err != nil {
		t.Fatalf("the flagd provider did not get ready: %v", err)
	}
	t.Cleanup(func() { _ = api.Shutdown(context.Background()) })
	return api.NewClient()
}

func ctxOf(service, dependency string) openfeature.EvaluationContext {
	attrs := map[string]any{"service": service}
	if dependency != "" {
		attrs["dependency"] = dependency
	}
	return openfeature.NewTargetlessEvaluationContext(attrs)
}

// TestGoFlagdProviderObeysLevers: the official Go flagd provider, in-process
// (sync) and RPC (evaluation v2 over Connect), reads the levers written to a
// real redis-server: retries off for checkout->payments only, then release,
// then a lever that expires by itself with no other write.
func TestGoFlagdProviderObeysLevers(t *testing.T) {
	e := startEnv(t, flagd.Options{})
	modes := map[string]openfeature.IClient{
		"in-process": goClient(t, gofd.WithInProcessResolver(), gofd.WithPort(port(t, e.srv.Addr("sync")))),
		"rpc":        goClient(t, gofd.WithRPCResolver(), gofd.WithPort(port(t, e.srv.Addr("eval")))),
	}
	bg := context.Background()
	retries := func(c openfeature.IClient, svc, dep string) bool {
		return c.Boolean(bg, lever.RetriesEnabled, true, ctxOf(svc, dep)) // default true: a miss cannot pass as off
	}
	wait := func(what string, cond func(c openfeature.IClient) bool) {
		t.Helper()
		for mode, c := range modes {
			eventually(t, 5*time.Second, mode+": "+what, func() bool { return cond(c) })
		}
	}

	e.w.set(t, lever.Retries, "checkout->payments", "off", 10*time.Minute)
	wait("retries off for checkout->payments", func(c openfeature.IClient) bool { return !retries(c, "checkout", "payments") })
	for mode, c := range modes {
		if !retries(c, "checkout", "ledger") || !retries(c, "search", "") {
			t.Errorf("%s: retries off leaked to checkout->ledger or search", mode)
		}
		d, err := c.BooleanValueDetails(bg, lever.RetriesEnabled, true, ctxOf("checkout", "payments"))
		if err != nil || d.Variant != "off" || d.FlagMetadata["checkout->payments.actor"] != "alice" {
			t.Errorf("%s: details %+v, %v; want variant off and the actor in the metadata", mode, d, err)
		}
	}

	e.w.release(t, lever.Retries, "checkout->payments")
	wait("retries back after release", func(c openfeature.IClient) bool { return retries(c, "checkout", "payments") })

	e.w.set(t, lever.Shed, "search", "40", 10*time.Minute)
	e.w.set(t, lever.Breaker, "payments", "open", 10*time.Minute)
	wait("shed 40 for search", func(c openfeature.IClient) bool {
		return c.Int(bg, lever.ShedPercent, -1, ctxOf("search", "")) == 40
	})
	wait("breaker open for payments from any caller", func(c openfeature.IClient) bool {
		return c.Boolean(bg, lever.BreakerForcedOpen, false, ctxOf("checkout", "payments"))
	})

	e.w.set(t, lever.Retries, "checkout->payments", "off", 2*time.Second)
	wait("retries off with a 2s TTL", func(c openfeature.IClient) bool { return !retries(c, "checkout", "payments") })
	wait("retries back at expiry, with no other write", func(c openfeature.IClient) bool { return retries(c, "checkout", "payments") })
}
