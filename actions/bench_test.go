package actions

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stormctl/stormctl/controlplane"
	"github.com/stormctl/stormctl/internal/config"
	"github.com/stormctl/stormctl/internal/testenv"
	"github.com/stormctl/stormctl/journal"
)

// roundTrips counts commands and pipelines sent to Redis.
type roundTrips struct{ n atomic.Int64 }

func (r *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }
func (r *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { r.n.Add(1); return next(ctx, cmd) }
}
func (r *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { r.n.Add(1); return next(ctx, cmds) }
}

type knowsAll struct{}

func (knowsAll) Known(context.Context, NameRole, string) (bool, []string, error) {
	return true, nil, nil
}

// BenchmarkApply compares a guarded apply (every guard; evidence from a
// fake, so Prometheus is not measured) with the bare control-plane apply it
// ends in, against a real redis-server in the same run. It reports the
// ratio of their times and the Redis round trips of each.
func BenchmarkApply(b *testing.B) {
	r := testenv.StartRedis(b, testenv.RedisOptions{})
	ctx := context.Background()
	store, err := controlplane.Open(ctx, config.Redis{URL: r.URL("", ""), Namespace: "bench"}, func(string) string { return "" })
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	rt := &roundTrips{}
	store.Client().AddHook(rt)
	pol, _ := NewPolicy(config.Policy{RateLimit: config.RateLimit{PerActor: 1 << 30, Overall: 1 << 30}}, nil)
	s := &Service{Store: FromStore(store), Journal: journal.NewWriter(store, b.TempDir()+"/p.jsonl"), Policy: pol,
		Inventory: knowsAll{}, Clock: SystemClock{},
		Evidence: fakeEvidence{values: map[string]journal.Evidence{}}}
	var n atomic.Int64
	target := func() string { return "svc" + strconv.FormatInt(n.Add(1), 10) }

	bare := measure(b, rt, func() {
		l := controlplane.Lever{Kind: controlplane.Retries, Target: target(), Value: "off", Actor: "alice", Reason: "bench", ExpiresAt: time.Now().Add(time.Minute)}
		cur, ver, head, err := store.Get(ctx, l.Kind, l.Target)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := store.Apply(ctx, controlplane.ApplyRequest{Lever: l, Expected: ver, Current: cur, Head: head}); err != nil {
			b.Fatal(err)
		}
	})
	guarded := measure(b, rt, func() {
		spec := Spec{Kind: "retries", Target: target(), Value: "off", TTL: time.Minute, Reason: "bench", Actor: "alice", Yes: true, Force: true}
		if _, err := s.Apply(ctx, spec); err != nil {
			b.Fatal(err)
		}
	})
	b.ReportMetric(float64(guarded.perOp)/float64(bare.perOp), "guarded/bare-time")
	b.ReportMetric(guarded.trips, "guarded-round-trips/op")
	b.ReportMetric(bare.trips, "bare-round-trips/op")
	b.ReportMetric(float64(guarded.perOp.Microseconds()), "guarded-µs/op")
}

type measured struct {
	perOp time.Duration
	trips float64
}

// measure times b.N calls of f and counts their round trips.
func measure(b *testing.B, rt *roundTrips, f func()) measured {
	f() // load the scripts
	rt.n.Store(0)
	start := time.Now()
	for i := 0; i < b.N; i++ {
		f()
	}
	return measured{perOp: time.Since(start) / time.Duration(b.N), trips: float64(rt.n.Load()) / float64(b.N)}
}
