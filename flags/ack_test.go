package flags_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/open-feature/go-sdk/openfeature"
	"github.com/redis/go-redis/v9"

	"github.com/stormctl/stormctl/controlplane"
	"github.com/stormctl/stormctl/flags"
	"github.com/stormctl/stormctl/internal/testenv"
	"github.com/stormctl/stormctl/lever"
)

func TestAcknowledgementsSeenBy(t *testing.T) {
	srv, rc, w := newRedis(t, testenv.RedisOptions{})
	const n, heartbeat = 4, 200 * time.Millisecond
	ctx := context.Background()
	var providers []*flags.Provider
	var clients []*redis.Client
	for i := range n {
		c := redis.NewClient(&redis.Options{Addr: srv.Addr, PoolSize: 2})
		t.Cleanup(func() { _ = c.Close() })
		p := flags.NewProvider(c, flags.ResyncInterval(time.Hour), flags.Heartbeat(heartbeat), flags.InstanceID(fmt.Sprint("i", i)))
		if err := p.Init(openfeature.EvaluationContext{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Shutdown)
		providers, clients = append(providers, p), append(clients, c)
	}
	// The control plane reads the acknowledgements for `stormctl status`.
	store, err := controlplane.NewStore(ctx, rc, "")
	if err != nil {
		t.Fatal(err)
	}
	member := lever.Member(lever.Retries, "checkout")
	expect := func(what string, seen, live int) {
		t.Helper()
		var got map[string]int
		var gotLive int
		eventually(t, 5*time.Second, what, func() bool {
			var err error
			got, gotLive, err = store.Acks(ctx)
			if err != nil {
				t.Fatal(err)
			}
			return got[member] == seen && gotLive == live
		})
	}

	w.set(t, lever.Retries, "checkout", "off", time.Hour, true)
	expect("every instance acknowledges version 1", n, n)
	w.set(t, lever.Retries, "checkout", "cap:2", time.Hour, true)
	expect("every instance acknowledges version 2", n, n)
	// A version no instance has seen: written without a message.
	w.set(t, lever.Retries, "checkout", "cap:3", time.Hour, false)
	if got, live, _ := store.Acks(ctx); got[member] != 0 || live != n {
		t.Errorf("unpublished version: seen by %d of %d, want 0 of %d", got[member], live, n)
	}
	w.set(t, lever.Retries, "checkout", "cap:4", time.Hour, true)
	expect("version 4", n, n)

	providers[0].Shutdown()
	if got, live, _ := store.Acks(ctx); got[member] != n-1 || live != n-1 {
		t.Errorf("after a clean shutdown: seen by %d of %d, want %d", got[member], live, n-1)
	}
	// A crash: the instance can no longer reach Redis to withdraw, so its
	// acknowledgements expire with their TTL.
	_ = clients[1].Close()
	providers[1].Shutdown()
	if _, live, _ := store.Acks(ctx); live != n-1 {
		t.Errorf("right after the crash: live %d, want %d until the TTL passes", live, n-1)
	}
	expect("the crashed instance's acknowledgements expire", n-2, n-2)
}
