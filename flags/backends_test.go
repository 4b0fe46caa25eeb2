package flags_test

import (
	"context"
	"testing"
	"time"

	"github.com/open-feature/go-sdk/openfeature"
	"github.com/redis/go-redis/v9"

	"github.com/stormctl/stormctl/controlplane"
	"github.com/stormctl/stormctl/flags"
	"github.com/stormctl/stormctl/lab/labtest"
	"github.com/stormctl/stormctl/lever"
)

// onBackends runs f once per backend, with the server's address and a
// lever writer on it.
func onBackends(t *testing.T, f func(t *testing.T, addr string, w levers)) {
	for _, b := range labtest.RedisBackends() {
		t.Run(b.Name, func(t *testing.T) {
			addr := b.Start(t)
			c := redis.NewClient(&redis.Options{Addr: addr})
			t.Cleanup(func() { _ = c.Close() })
			f(t, addr, levers{c: c, keys: lever.NewKeys("")})
		})
	}
}

// Pub/sub pushes, the resync that repairs a lost message, and expiry at
// ExpiresAt with the key gone from the server.
func TestBackendsPushResyncExpiry(t *testing.T) {
	onBackends(t, func(t *testing.T, _ string, w levers) {
		c, ev := sdk(t, flags.NewProvider(w.c, flags.ResyncInterval(300*time.Millisecond)))
		ctx, checkout := context.Background(), evalCtx("checkout", "payments")

		w.set(t, lever.Retries, "checkout->payments", "cap:2", time.Hour, true)
		ev.wait(t, openfeature.ProviderConfigChange, 5*time.Second)
		if v := c.Int(ctx, flags.RetriesMaxAttempts, 5, checkout); v != 2 {
			t.Errorf("pushed cap: %d, want 2", v)
		}
		w.set(t, lever.Breaker, "payments", "open", time.Hour, false)
		eventually(t, 5*time.Second, "the resync repairs an unpublished lever", func() bool {
			return c.Boolean(ctx, flags.BreakerForcedOpen, false, checkout)
		})
		w.release(t, lever.Retries, "checkout->payments")
		eventually(t, 5*time.Second, "the release is pushed", func() bool {
			return c.Int(ctx, flags.RetriesMaxAttempts, 5, checkout) == 5
		})

		l := w.set(t, lever.Shed, "checkout", "40", 500*time.Millisecond, true)
		eventually(t, 5*time.Second, "the shed lever is pushed", func() bool {
			return c.Int(ctx, flags.ShedPercent, 0, checkout) == 40 || time.Now().After(l.ExpiresAt)
		})
		time.Sleep(time.Until(l.ExpiresAt))
		if v := c.Int(ctx, flags.ShedPercent, 9, checkout); v != 0 {
			t.Errorf("at ExpiresAt: shed %d, want 0", v)
		}
		key := w.keys.Lever(lever.Shed, "checkout")
		eventually(t, 200*time.Millisecond, "the key expires on the server", func() bool {
			return w.c.Exists(ctx, key).Val() == 0
		})
		time.Sleep(400 * time.Millisecond) // a resync after the expiry
		if v := c.Int(ctx, flags.ShedPercent, 9, checkout); v != 0 {
			t.Errorf("after a resync: shed %d, want 0", v)
		}
	})
}

// Acknowledgements (a transaction of sorted-set, hash and expiry commands)
// are read by the control plane; a crashed instance's expire with their TTL.
func TestBackendsAcknowledgements(t *testing.T) {
	onBackends(t, func(t *testing.T, addr string, w levers) {
		ctx := context.Background()
		const heartbeat = 100 * time.Millisecond
		var clients []*redis.Client
		for _, id := range []string{"a", "b"} {
			c := redis.NewClient(&redis.Options{Addr: addr})
			t.Cleanup(func() { _ = c.Close() })
			p := flags.NewProvider(c, flags.ResyncInterval(time.Hour), flags.Heartbeat(heartbeat), flags.InstanceID(id))
			if err := p.Init(openfeature.EvaluationContext{}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(p.Shutdown)
			clients = append(clients, c)
		}
		store, err := controlplane.NewStore(ctx, w.c, "")
		if err != nil {
			t.Fatal(err)
		}
		member := lever.Member(lever.Degraded, "checkout")
		seen := func(want, live int) func() bool {
			return func() bool {
				got, n, err := store.Acks(ctx)
				return err == nil && got[member] == want && n == live
			}
		}
		w.set(t, lever.Degraded, "checkout", "on", time.Hour, true)
		eventually(t, 5*time.Second, "both instances acknowledge", seen(2, 2))
		_ = clients[1].Close() // b crashes: it cannot withdraw
		eventually(t, 10*heartbeat, "b's acknowledgements expire", seen(1, 1))
	})
}
