package controlplane

import (
	"context"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stormctl/stormctl/internal/testenv"
	"github.com/stormctl/stormctl/journal"
)

// roundTrips counts client→server round trips: one per command, one per
// pipeline.
type roundTrips struct{ n atomic.Int64 }

func (h *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { h.n.Add(1); return next(ctx, cmd) }
}

func (h *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { h.n.Add(1); return next(ctx, cmds) }
}

func percentile(ds []time.Duration, p float64) time.Duration {
	slices.Sort(ds)
	return ds[min(len(ds)-1, int(p*float64(len(ds))))]
}

// BenchmarkApply measures an uncontended apply as the actions layer makes
// it (read the lever, version and journal head; run the apply script that
// writes, journals and publishes) against a real redis-server, beside a
// plain PING on the same connection pool as the baseline.
func BenchmarkApply(b *testing.B) {
	ctx := context.Background()
	s := openStore(b, testenv.StartRedis(b, testenv.RedisOptions{}), "", "")
	hook := &roundTrips{}
	s.Client().AddHook(hook)
	ev := []journal.Evidence{{Query: "amplification", Pack: "stormctl", Value: 3.2, Threshold: "> 1.3", Status: "firing", Time: time.Now()}}
	applyOnce := func(i int) {
		l := lever("svc-"+strconv.Itoa(i%200)+"->db", "cap:"+strconv.Itoa(i%5+1), time.Hour)
		cur, ver, head, err := s.Get(ctx, l.Kind, l.Target)
		if err != nil {
			b.Fatal(err)
		}
		e := journal.Entry{TTL: journal.Duration(time.Hour), Evidence: ev, Incident: "INC-1"}
		if _, err := s.Apply(ctx, ApplyRequest{Lever: l, Expected: ver, Current: cur, Head: head, Entry: e}); err != nil {
			b.Fatal(err)
		}
	}
	applyOnce(-1) // load the script, so the figures are the steady state
	var pings, applies []time.Duration
	trips := int64(0)
	i := 0
	for b.Loop() {
		t := time.Now()
		if err := s.Client().Ping(ctx).Err(); err != nil {
			b.Fatal(err)
		}
		pings = append(pings, time.Since(t))
		before := hook.n.Load()
		t = time.Now()
		applyOnce(i)
		applies = append(applies, time.Since(t))
		trips += hook.n.Load() - before
		i++
	}
	ping50, ping99 := percentile(pings, 0.5), percentile(pings, 0.99)
	p50, p99 := percentile(applies, 0.5), percentile(applies, 0.99)
	b.ReportMetric(float64(p50.Microseconds()), "p50-µs")
	b.ReportMetric(float64(p99.Microseconds()), "p99-µs")
	b.ReportMetric(float64(trips)/float64(len(applies)), "round-trips/apply")
	b.ReportMetric(float64(ping50.Microseconds()), "ping-p50-µs")
	b.ReportMetric(float64(p50)/float64(ping50), "p50-x-ping")
	b.ReportMetric(float64(p99)/float64(ping99), "p99-x-ping")
}
