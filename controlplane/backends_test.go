package controlplane_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stormctl/stormctl/controlplane"
	"github.com/stormctl/stormctl/internal/testenv"
	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/lab/labtest"
	"github.com/stormctl/stormctl/lever"
)

// onBackends runs f once per backend with a fresh store: each of the
// lab's backends, and a Redis Cluster of three masters reached through a
// cluster client seeded with one node that does not own the namespace's
// slot, so every command is routed.
func onBackends(t *testing.T, f func(t *testing.T, s *controlplane.Store)) {
	run := func(name string, client func(t *testing.T) redis.UniversalClient) {
		t.Run(name, func(t *testing.T) {
			s, err := controlplane.NewStore(context.Background(), client(t), "same")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			f(t, s)
		})
	}
	for _, b := range labtest.RedisBackends() {
		run(b.Name, func(t *testing.T) redis.UniversalClient { return redis.NewClient(&redis.Options{Addr: b.Start(t)}) })
	}
	run("cluster-3-masters", func(t *testing.T) redis.UniversalClient {
		return redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{clusterSeed(t, testenv.StartCluster(t, 3), "same")}})
	})
}

// clusterSeed is a node of the cluster at addrs that does not own the
// slot of namespace's keys.
func clusterSeed(t *testing.T, addrs []string, namespace string) string {
	t.Helper()
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	defer c.Close()
	owner, err := c.MasterForKey(context.Background(), controlplane.NewKeys(namespace).Journal())
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if a != owner.Options().Addr {
			return a
		}
	}
	t.Fatalf("every node is %s", owner.Options().Addr)
	return ""
}

func applyLever(t *testing.T, s *controlplane.Store, target string, ttl time.Duration, key string) controlplane.Result {
	t.Helper()
	ctx := context.Background()
	cur, ver, head, err := s.Get(ctx, lever.Retries, target)
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Apply(ctx, controlplane.ApplyRequest{Lever: lever.Lever{Kind: lever.Retries, Target: target,
		Value: "off", Actor: "alice", Reason: "test", ExpiresAt: time.Now().Add(ttl)},
		Expected: ver, Current: cur, Head: head, IdempotencyKey: key})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// Scripts (version checks, idempotency, conflicts), the journal stream and
// its hash chain, and the change feed.
func TestBackendsScriptsStreamFeed(t *testing.T) {
	onBackends(t, func(t *testing.T, s *controlplane.Store) {
		ctx := context.Background()
		feed, stop := s.Subscribe(ctx)
		defer stop()
		first := applyLever(t, s, "checkout", time.Hour, "k1")
		if again := applyLever(t, s, "checkout", time.Hour, "k1"); !again.Replayed || again.Version != first.Version {
			t.Errorf("idempotent apply: %+v, want the first result replayed", again)
		}
		_, err := s.Apply(ctx, controlplane.ApplyRequest{Lever: lever.Lever{Kind: lever.Retries, Target: "checkout",
			Value: "cap:2", Actor: "bob", Reason: "test", ExpiresAt: time.Now().Add(time.Hour)}})
		var conflict *controlplane.ConflictError
		if !errors.As(err, &conflict) || conflict.Actual != 1 || conflict.Holder == nil || conflict.Holder.Actor != "alice" {
			t.Fatalf("stale apply: %v, want a conflict with alice's lever at version 1", err)
		}
		ext, err := s.Extend(ctx, controlplane.ExtendRequest{Current: first.Lever, ExpiresAt: time.Now().Add(2 * time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Release(ctx, controlplane.ReleaseRequest{Current: ext.Lever}); err != nil {
			t.Fatal(err)
		}
		l, ver, _, err := s.Get(ctx, lever.Retries, "checkout")
		if err != nil || l != nil || ver != 3 {
			t.Fatalf("after release: %v version %d %v, want absent at version 3", l, ver, err)
		}
		for i, want := range []struct {
			op      lever.Op
			version int64
		}{{lever.OpSet, 1}, {lever.OpSet, 2}, {lever.OpDel, 3}} {
			select {
			case c := <-feed:
				if c.Op != want.op || c.Version != want.version || c.Target != "checkout" {
					t.Errorf("change %d: %+v, want %s at version %d", i, c, want.op, want.version)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("change %d not published", i)
			}
		}
		checkJournal(t, s, journal.ActionApplied, journal.ActionRefused, journal.ActionExtended, journal.ActionReleased)
	})
}

// A lever is absent at its expiry for every reader and its key is gone
// from Redis; the expiry is journaled once. A rate-limit window ends by
// expiry too.
func TestBackendsExpiry(t *testing.T) {
	onBackends(t, func(t *testing.T, s *controlplane.Store) {
		ctx := context.Background()
		res := applyLever(t, s, "search", 300*time.Millisecond, "")
		time.Sleep(time.Until(res.Lever.ExpiresAt))
		if l, _, _, err := s.Get(ctx, lever.Retries, "search"); err != nil || l != nil {
			t.Fatalf("at expiry: %v %v, want absent", l, err)
		}
		// Redis drops the key itself in the millisecond after expires_at;
		// poll with a generous deadline rather than assert at the instant.
		key := s.Keys().Lever(lever.Retries, "search")
		deadline := res.Lever.ExpiresAt.Add(5 * time.Second)
		for s.Client().Exists(ctx, key).Val() != 0 {
			if time.Now().After(deadline) {
				t.Fatal("the lever's key outlived its expiry by 5s")
			}
			time.Sleep(10 * time.Millisecond)
		}
		for range 2 {
			if _, err := s.Levers(ctx); err != nil {
				t.Fatal(err)
			}
		}
		checkJournal(t, s, journal.ActionApplied, journal.ActionExpired)

		// The window is long enough that both takes fall inside it on a
		// loaded machine; its end is polled for, not slept to.
		limit := controlplane.RateLimit{Window: 2 * time.Second, PerActor: 1}
		start := time.Now()
		for i, want := range []string{"", "actor"} {
			st, err := s.Rate(ctx, "alice", limit, true)
			if err != nil || (st.Limited != want && time.Since(start) < limit.Window) {
				t.Fatalf("take %d: %+v %v, want limited %q", i, st, err, want)
			}
		}
		for {
			st, err := s.Rate(ctx, "alice", limit, true)
			if err != nil {
				t.Fatal(err)
			}
			if st.Limited == "" {
				break
			}
			if time.Since(start) > limit.Window+10*time.Second {
				t.Fatalf("10s after the window: %+v, want a fresh budget", st)
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
}

// checkJournal verifies the journal's hash chain from the stream and its
// events in order.
func checkJournal(t *testing.T, s *controlplane.Store, want ...journal.Event) {
	t.Helper()
	ctx := context.Background()
	if n, err := s.VerifyJournal(ctx); err != nil || n != len(want) {
		t.Fatalf("journal verify: %d entries, %v; want %d", n, err, len(want))
	}
	i := 0
	for e, err := range journal.Entries(s.Journal().Range(ctx, "-", "+")) {
		if err != nil {
			t.Fatal(err)
		}
		if e.Event != want[i] {
			t.Errorf("entry %d: %s, want %s", i, e.Event, want[i])
		}
		i++
	}
}
