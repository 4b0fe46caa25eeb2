package testenv

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// RoundTrips is a go-redis hook that records every client→server round
// trip: one per command sent alone, one per pipeline. Add it with
// client.AddHook; Take returns what was sent since the last Take.
type RoundTrips struct {
	mu    sync.Mutex
	trips []string
}

// Take returns the round trips recorded since the last Take, each as its
// command names (a pipeline as "pipeline[get hget …]"), and forgets them.
func (r *RoundTrips) Take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.trips
	r.trips = nil
	return out
}

func (r *RoundTrips) record(s string) {
	r.mu.Lock()
	r.trips = append(r.trips, s)
	r.mu.Unlock()
}

// DialHook implements redis.Hook; dialing is not a command.
func (r *RoundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook implements redis.Hook.
func (r *RoundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		r.record(cmd.Name())
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook implements redis.Hook.
func (r *RoundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		names := make([]string, len(cmds))
		for i, c := range cmds {
			names[i] = c.Name()
		}
		r.record("pipeline[" + strings.Join(names, " ") + "]")
		return next(ctx, cmds)
	}
}

// Op is one operation a benchmark measures against a PING.
type Op struct {
	Name string
	Run  func()
}

// BenchVsPing runs a benchmark loop over client, which must carry rt as a
// hook: each iteration times a plain PING and then each op. It reports, per
// op, p50 and p99 in µs, round trips per op, and p50 and p99 as multiples of
// the PING's, so the figures hold across machines. Each op runs once before
// the loop, so that its scripts are loaded and connections dialed.
func BenchVsPing(b *testing.B, client redis.UniversalClient, rt *RoundTrips, ops ...Op) {
	ctx := context.Background()
	for _, op := range ops {
		op.Run()
	}
	var pings []time.Duration
	times := make([][]time.Duration, len(ops))
	trips := make([]int, len(ops))
	rt.Take()
	for b.Loop() {
		t := time.Now()
		if err := client.Ping(ctx).Err(); err != nil {
			b.Fatal(err)
		}
		pings = append(pings, time.Since(t))
		rt.Take()
		for i, op := range ops {
			t = time.Now()
			op.Run()
			times[i] = append(times[i], time.Since(t))
			trips[i] += len(rt.Take())
		}
	}
	ping50, ping99 := percentile(pings, 0.5), percentile(pings, 0.99)
	b.ReportMetric(float64(ping50.Microseconds()), "ping-p50-µs")
	for i, op := range ops {
		p50, p99 := percentile(times[i], 0.5), percentile(times[i], 0.99)
		b.ReportMetric(float64(p50.Microseconds()), op.Name+"-p50-µs")
		b.ReportMetric(float64(p99.Microseconds()), op.Name+"-p99-µs")
		b.ReportMetric(float64(trips[i])/float64(len(times[i])), op.Name+"-round-trips/op")
		b.ReportMetric(float64(p50)/float64(ping50), op.Name+"-p50-x-ping")
		b.ReportMetric(float64(p99)/float64(ping99), op.Name+"-p99-x-ping")
	}
}

func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(ds))
	return s[min(len(s)-1, int(p*float64(len(s))))]
}
